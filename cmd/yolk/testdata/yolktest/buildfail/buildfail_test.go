// Package buildfail has a test file that does not compile (a yolk test
// fixture).
package buildfail

import "testing"

func TestNotCompiled(t *testing.T) {
	var n int = "not an int"
	_ = n
}
