package jbd2

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNothingEscapes: the compiler's escape analysis puts nothing of
// this package or of its CRC on the heap. (kernel/kcontext_test.go
// checks the packages the kernel's images link; this one is linked once
// kernel/ext4 uses it — until then this is the check.)
func TestNothingEscapes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with the compiler's diagnostics")
	}
	out, err := exec.Command("go", "build", "-gcflags=-m", "yolk/kernel/jbd2", "yolk/kernel/internal/crc32c").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "escapes to heap") || strings.Contains(l, "moved to heap") {
			t.Errorf("%s", l)
		}
	}
}
