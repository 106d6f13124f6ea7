// Package pcihost says how the kernel reaches PCI bus 0 on an amd64
// machine: on a hardware-reduced ACPI machine (Cloud Hypervisor, QEMU
// microvm with pcie=on: no firmware between the VMM and the kernel)
// through the ECAM of the host bridge ACPI describes (the MCFG, else the
// DSDT's _CBA), BARs placed in the bridge's 32-bit window where they are
// unassigned or beyond the physical map, and MSI-X (those machines wire
// no INTx for virtio); elsewhere (pc, q35, a PC) through the
// configuration ports, with the firmware's BARs and INTx lines. It also
// writes the boot's line about it.
//
// Kernel-context: it runs at boot. No allocation, no runtime calls, no
// pointer stores; it reads the tables through package acpi and writes
// the line into the caller's buffer.
package pcihost

import (
	"unsafe"

	"yolk/drivers/acpi"
	"yolk/drivers/virtio"
)

// Limit is how far the kernel's physical map reaches on amd64: BARs and
// the ECAM must lie below it.
const Limit = 4 << 30

// msiBase is the local APICs' MSI address window (Intel SDM 11.11.1): a
// message to APIC ID d is written at msiBase | d<<12, fixed delivery,
// physical destination, its data the vector (edge-triggered).
const msiBase = 0xfee00000

// Bus is bus 0 as this machine offers it (the tables through the RSDP,
// physical memory at physOff), MSI-X messages going to the local APIC
// apicID as vector. line is the boot's line about an ECAM bus, in buf;
// empty for the ports.
func Bus(rsdp, physOff uintptr, apicID uint64, vector uint8, buf *[128]byte) (b virtio.PCIBus, line string) {
	b = virtio.PCIBus{PhysOff: physOff, Limit: Limit}
	f, _ := acpi.ReadFADT(rsdp, physOff)
	h, e := acpi.FindPCIHost(rsdp, physOff)
	if !f.HWReduced || e != acpi.OK || h.ECAM == 0 || h.ECAM+1<<20 > Limit {
		return b, ""
	}
	b.Config.ECAM = uintptr(h.ECAM) + physOff
	b.MSIAddr, b.MSIData = msiBase|apicID<<12, uint32(vector)
	if h.Mem32Size != 0 {
		b.Window = virtio.NewWindow(uint64(h.Mem32Base), uint64(h.Mem32Size))
		b.Reserve()
	}
	return b, describe(h, buf)
}

// describe writes "pci: ECAM 0x... (MCFG), BAR window 0x...+0x..., MSI-X"
// into buf.
func describe(h acpi.PCIHost, buf *[128]byte) string {
	w := writer{buf: buf}
	w.str("pci: ECAM ")
	w.hex(h.ECAM)
	if h.FromMCFG {
		w.str(" (MCFG)")
	} else {
		w.str(" (DSDT _CBA)")
	}
	if h.Mem32Size != 0 {
		w.str(", BAR window ")
		w.hex(uint64(h.Mem32Base))
		w.str("+")
		w.hex(uint64(h.Mem32Size))
	} else {
		w.str(", no BAR window")
	}
	w.str(", MSI-X\n")
	return unsafe.String(&buf[0], w.n)
}

type writer struct {
	buf *[128]byte
	n   int
}

func (w *writer) str(s string) {
	w.n += copy(w.buf[w.n:], s)
}

func (w *writer) hex(v uint64) {
	const digits = "0123456789abcdef"
	w.str("0x")
	i := 60
	for i > 0 && v>>i == 0 {
		i -= 4
	}
	for ; i >= 0 && w.n < len(w.buf); i -= 4 {
		w.buf[w.n] = digits[v>>i&15]
		w.n++
	}
}
