// Package vetfail compiles but fails go test's vet (printf), a yolk test
// fixture: it is never booted.
package vetfail

import (
	"fmt"
	"testing"
)

func TestPrintf(t *testing.T) { fmt.Printf("%d\n", "not a number") }
