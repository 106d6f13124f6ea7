// Package timeout has a test that blocks until the test binary's -timeout
// (a yolk test fixture).
package timeout

import (
	"testing"
	"time"
)

func TestBlocks(t *testing.T) {
	time.Sleep(time.Hour)
}
