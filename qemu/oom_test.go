package qemu

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestOutOfMemory: a program that touches more memory than the machine
// has is killed as Linux's OOM killer kills it — status 137 (SIGKILL) and
// the out-of-memory line — not stopped by a kernel panic (the old
// behaviour: "kernel panic: out of physical memory", status 125), whether
// the program's own page faults or a system call's copy (read(2)) find no
// frame. On each architecture, 2 CPUs and 128 MiB.
func TestOutOfMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots an image")
	}
	needQEMU(t)
	const pkg = "yolk/qemu/testdata/oom"
	for _, c := range []struct{ arch, machine string }{{"amd64", "microvm"}, {"arm64", "virt"}} {
		t.Run(c.arch, func(t *testing.T) {
			if _, err := FindQEMUFor(c.arch); err != nil {
				t.Fatal(err)
			}
			img := fixtureImage(t, pkg, t.TempDir(), c.arch)
			for _, args := range [][]string{nil, {"read"}} {
				var serial bytes.Buffer
				res, err := Run(t.Context(), Config{Image: img, Arch: c.arch, Machine: c.machine, SMP: 2, Memory: "128M", Args: args,
					Timeout: 3 * time.Minute, Stdout: &serial, Stderr: &serial})
				if err != nil {
					t.Fatal(err)
				}
				out := serial.String()
				if res.ExitCode != 137 || !strings.Contains(out, "oom: filled 64 MiB") ||
					!strings.Contains(out, "yolk: out of memory: killed the program (free frames ") ||
					!strings.Contains(out, "yolk: killed by signal 9") || strings.Contains(out, "yolk: fault") {
					t.Errorf("oom %q: exit %d, want 137, the out-of-memory line and no fault report:\n%s", args, res.ExitCode, out)
				}
			}
		})
	}
}
