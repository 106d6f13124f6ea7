//go:build amd64

// Package ioapic routes a device interrupt through an I/O APIC to a local
// APIC: the console's serial receive interrupt (ISA IRQ 4, edge) and the
// network device's (level: virtio-mmio on microvm, PCI INTx on pc and
// q35). It programs the entries it is asked to; everything else stays
// masked, as firmware leaves it.
//
// Kernel-context: no allocation, no runtime calls. The registers are
// reached through the identity map of the first 4 GiB.
package ioapic

import "unsafe"

// Default is the I/O APIC's usual physical address (QEMU's pc, q35 and
// microvm), for machines whose ACPI tables do not say.
const Default = 0xFEC00000

const (
	regSel = 0x00
	regWin = 0x10

	redTbl = 0x10 // redirection entry n: registers 0x10+2n (low), 0x11+2n (high)
	masked = 1 << 16
)

func reg(a uintptr) *uint32 { return (*uint32)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

func write(base uintptr, r, v uint32) {
	*reg(base + regSel) = r
	*reg(base + regWin) = v
}

// Route delivers pin (the global system interrupt minus the I/O APIC's
// base) to the local APIC apicID as vector vec: fixed delivery, physical
// destination, edge-triggered, active high (an ISA interrupt without an
// ACPI source override).
func Route(base uintptr, pin uint32, vec uint8, apicID uint32) {
	write(base, redTbl+2*pin, masked)
	write(base, redTbl+2*pin+1, apicID<<24)
	write(base, redTbl+2*pin, uint32(vec))
}

// Redirection entry bits: polarity and trigger mode.
const (
	activeLow = 1 << 13
	level     = 1 << 15
)

// RouteLevel is Route for a level-triggered line, active high or low: the
// device holds it asserted until its driver acknowledges the device, and
// the local APIC's end of interrupt lets the I/O APIC deliver it again.
func RouteLevel(base uintptr, pin uint32, vec uint8, apicID uint32, low bool) {
	v := uint32(vec) | level
	if low {
		v |= activeLow
	}
	write(base, redTbl+2*pin, masked)
	write(base, redTbl+2*pin+1, apicID<<24)
	write(base, redTbl+2*pin, v)
}
