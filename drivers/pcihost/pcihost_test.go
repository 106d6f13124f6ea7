package pcihost

import (
	"testing"

	"yolk/drivers/acpi"
)

func TestDescribe(t *testing.T) {
	var buf [128]byte
	for _, c := range []struct {
		h    acpi.PCIHost
		want string
	}{
		{acpi.PCIHost{ECAM: 0xe0000000, Mem32Base: 0xc0000000, Mem32Size: 0x20000000},
			"pci: ECAM 0xe0000000 (DSDT _CBA), BAR window 0xc0000000+0x20000000, MSI-X\n"},
		{acpi.PCIHost{ECAM: 0xe8000000, FromMCFG: true}, "pci: ECAM 0xe8000000 (MCFG), no BAR window, MSI-X\n"},
		{acpi.PCIHost{ECAM: 0, FromMCFG: true}, "pci: ECAM 0x0 (MCFG), no BAR window, MSI-X\n"},
	} {
		if got := describe(c.h, &buf); got != c.want {
			t.Errorf("describe(%+v) = %q, want %q", c.h, got, c.want)
		}
	}
}

// TestBusWithoutACPI: no tables, the configuration ports and the
// firmware's BARs and INTx lines.
func TestBusWithoutACPI(t *testing.T) {
	var buf [128]byte
	b, line := Bus(0, 0, 1, 0xef, &buf)
	if line != "" || b.Config.ECAM != 0 || b.MSIAddr != 0 || b.Window.End != 0 || b.Limit != Limit {
		t.Errorf("Bus without an RSDP = %+v, %q; want the ports, no window, INTx", b, line)
	}
}
