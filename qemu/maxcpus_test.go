package qemu

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"yolk/qemu/image"
	"yolk/sched"
)

// The host tools' CPU limit is the kernel's.
func TestMaxCPUsMatchesKernel(t *testing.T) {
	if MaxCPUs != sched.MaxCPUs {
		t.Errorf("qemu.MaxCPUs = %d, sched.MaxCPUs = %d", MaxCPUs, sched.MaxCPUs)
	}
}

// TestTooManyCPUs boots a machine with one CPU more than the kernel
// supports, past yolk run's own check: the kernel must refuse at boot with
// a report naming both counts and the fault status, not hang or run on a
// subset.
func TestTooManyCPUs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots an image")
	}
	needQEMU(t)
	img := filepath.Join(t.TempDir(), "hello.elf")
	var buildLog bytes.Buffer
	if _, err := image.Build(t.Context(), "yolk/examples/hello", image.Options{Output: img, Stderr: &buildLog}); err != nil {
		t.Fatalf("build: %v\n%s", err, buildLog.String())
	}
	var out bytes.Buffer
	res, err := Run(t.Context(), Config{Image: img, Machine: "q35", SMP: MaxCPUs + 1, Timeout: 2 * time.Minute, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("yolk: smp: the machine has %d CPUs; this kernel supports at most %d", MaxCPUs+1, MaxCPUs)
	if res.ExitCode != 125 || !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "more CPUs than the kernel supports") {
		t.Errorf("exit %d, want 125 and %q in:\n%s", res.ExitCode, want, out.String())
	}
}
