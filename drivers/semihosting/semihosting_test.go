//go:build !arm64

package semihosting

import (
	"fmt"
	"testing"
)

func TestExitBlock(t *testing.T) {
	calls = nil
	Exit(3)
	Exit(125)
	Exit(-1) // the host sees 255
	ExitReason(RunTimeErrorUnknown, 0)
	want := "[[0x20026 0x3] [0x20026 0x7d] [0x20026 0xffffffffffffffff] [0x20023 0x0]]"
	if got := fmt.Sprintf("%#x", calls); got != want {
		t.Errorf("blocks %s, want %s", got, want)
	}
}
