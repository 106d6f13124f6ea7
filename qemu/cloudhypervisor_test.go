package qemu

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCloudHypervisorShapes boots examples/hello, exiting 3, on Cloud
// Hypervisor's machine as QEMU reproduces it (CloudHypervisorMachine) at
// 2 CPUs with a NIC, and checks what the boot found: the PCIe host
// bridge's ECAM and window (QEMU 7.2's microvm has no MCFG, and ignores
// -acpitable: the DSDT's _CBA; the MCFG Cloud Hypervisor writes is
// drivers/acpi's hosted tests'), the NIC on PCI with MSI-X (line 175, no INTx), the TSC
// calibrated against the CMOS clock (no PIT, no HPET, no PM timer), and
// the power-off: ACPI S5 through the FADT's sleep control register after
// the exit line (QMP's SHUTDOWN event says guest-shutdown, not a reset;
// the machine has no i8042 and no isa-debug-exit). The guest suite's
// subset runs there as TestGuest's cloud-hypervisor:2.
func TestCloudHypervisorShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots an image")
	}
	needQEMU(t)
	img := fixtureImage(t, "yolk/examples/hello", t.TempDir(), "")
	want := []string{"2 CPUs", "(CMOS clock)", "yolk: pci: ECAM 0xe0000000 (DSDT _CBA), BAR window 0xc0000000+0x20000000, MSI-X",
		"yolk: net: virtio-net (pci 0x8, irq 175)"}
	sock := filepath.Join(t.TempDir(), "qmp")
	reason := make(chan string, 1)
	go func() {
		r, err := qmpShutdown(sock) // QEMU waits for the connection (wait=on): no event before it
		if err != nil {
			r = "QMP: " + err.Error()
		}
		reason <- r
	}()
	var out bytes.Buffer
	res, err := Run(t.Context(), Config{Image: img, Machine: CloudHypervisor, SMP: 2, Net: NetUser, Args: []string{"-exit", "3"},
		Extra: []string{"-qmp", "unix:" + sock + ",server=on,wait=on"}, Timeout: 2 * time.Minute, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || res.QEMUStatus != 0 || res.Mismatch != "" {
		t.Errorf("exit %d, QEMU status %d, %q; want 3 from the line, QEMU 0 (a power-off)", res.ExitCode, res.QEMUStatus, res.Messages)
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("no %q in the output", w)
		}
	}
	if n := strings.Count(out.String(), "yolk: net: virtio-net"); n != 1 {
		t.Errorf("%d NICs, want 1", n)
	}
	select {
	case r := <-reason:
		if r != "guest-shutdown" {
			t.Errorf("QEMU's SHUTDOWN event: %q, want guest-shutdown (S5, not a reset)", r)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("no SHUTDOWN event from QMP")
	}
	if t.Failed() {
		t.Logf("output:\n%s", out.String())
	}
}
