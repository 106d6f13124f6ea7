package qemu

import (
	"testing"

	"yolk/sched"
)

// The host tools' CPU limit is the kernel's.
func TestMaxCPUsMatchesKernel(t *testing.T) {
	if MaxCPUs != sched.MaxCPUs {
		t.Errorf("qemu.MaxCPUs = %d, sched.MaxCPUs = %d", MaxCPUs, sched.MaxCPUs)
	}
}
