// Package panic has a test that panics (a yolk test fixture).
package panic

import "testing"

func TestPanics(t *testing.T) {
	panic("boom")
}
