package qemu

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"yolk/qemu/image"
)

// TestFirecrackerShapes boots examples/hello, exiting 3, on the two shapes
// of Firecracker's machine QEMU can reproduce: up to 1.7 (FirecrackerMachine:
// no ACPI, the devices on the command line, the MP table) and 1.8 and
// later, which add ACPI tables (a MADT and a DSDT listing the virtio-mmio
// devices) but still put every device on the command line too. Both end
// with an i8042 reset after the exit line, whose status Run reports. The
// guest suite runs on the first shape (TestGuest's firecracker:2); this
// checks the boot and the exit of both at 2 CPUs with a NIC.
func TestFirecrackerShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots an image")
	}
	needQEMU(t)
	img := filepath.Join(t.TempDir(), "hello.elf")
	var buildLog bytes.Buffer
	if _, err := image.Build(t.Context(), "yolk/examples/hello", image.Options{Output: img, Stderr: &buildLog}); err != nil {
		t.Fatalf("build: %v\n%s", err, buildLog.String())
	}
	for _, c := range []struct {
		name  string
		extra []string
		args  []string
		want  []string
	}{
		{"1.7", nil, nil, []string{"yolk: time: no CMOS clock", "2 CPUs", "yolk: net: virtio-net (mmio 0xfeb00e00, irq 12)"}},
		// QEMU 7.2's microvm with ACPI puts its transports from
		// 0xfeb00000 on GSIs 24-47 (a second IO APIC) and fills them
		// from the last: the NIC is at 0xfeb02e00 on GSI 47. The
		// command line names it again, as Firecracker does.
		{"1.8", []string{"-machine", "acpi=on"}, []string{"virtio_mmio.device=512@0xfeb02e00:47"},
			[]string{"yolk: time: no CMOS clock", "2 CPUs", "yolk: net: virtio-net (mmio 0xfeb02e00, irq 47)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			res, err := Run(t.Context(), Config{Image: img, Machine: Firecracker, SMP: 2, Net: NetUser,
				Args: append(c.args, "-exit", "3"), Extra: c.extra, Timeout: 2 * time.Minute, Stdout: &out, Stderr: &out})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 3 || res.QEMUStatus != 0 || res.Mismatch != "" {
				t.Errorf("exit %d, QEMU status %d, %q; want 3 from the line, QEMU 0 (reset)", res.ExitCode, res.QEMUStatus, res.Messages)
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("no %q in the output", w)
				}
			}
			if n := strings.Count(out.String(), "yolk: net: virtio-net"); n != 1 {
				t.Errorf("%d NICs, want 1", n)
			}
			if t.Failed() {
				t.Logf("output:\n%s", out.String())
			}
		})
	}
}
