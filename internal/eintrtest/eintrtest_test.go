package eintrtest

import "testing"

// TestLinux runs the cases on the host: Linux's behaviour, the reference
// the guest's TestEINTR is held to.
func TestLinux(t *testing.T) {
	for _, c := range Cases {
		t.Run(c.Name, func(t *testing.T) { c.Run(t) })
	}
}
