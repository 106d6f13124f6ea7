// Package fail has a failing test (a yolk test fixture).
package fail

import "testing"

func TestOK(t *testing.T) {}

func TestFails(t *testing.T) {
	t.Error("expected failure")
}
