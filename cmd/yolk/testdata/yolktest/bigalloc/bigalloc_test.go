// Package bigalloc holds a value larger than yolk test's guest once had
// memory for, as a database's test suite does (a 2 GiB value): a host
// with gigabytes takes it, so the guest must have them too — Linux's
// heuristic overcommit, which yolk's kernel follows, refuses a single
// mapping larger than the machine's memory, and the runtime then stops
// with "out of memory".
package bigalloc

import "testing"

func TestTwoGiBValue(t *testing.T) {
	b := make([]byte, 2<<30)
	b[0], b[len(b)-1] = 1, 2
	if b[0]+b[len(b)-1] != 3 {
		t.Fatal("lost a write")
	}
}
