package kernel

import (
	"math/bits"

	"yolk/drivers/acpi"
	"yolk/drivers/acpipm"
	"yolk/drivers/ioapic"
	"yolk/drivers/lapic"
	"yolk/drivers/pcihost"
	"yolk/drivers/virtio"
	"yolk/kernel/mm"
	"yolk/sched"
)

// The virtio devices' interrupt vectors: GSI g is vecVirtio+g, so that a
// handler knows its line and asks only the devices on it (a PCI INTx line
// may be shared by the NIC and shares).
const (
	vecVirtio    = 0x40
	maxVirtioGSI = 0xF0 - vecVirtio
	msiLine      = maxVirtioGSI - 1 // the line MSI-X devices share (no GSI this high)
)

// virtioInit finds the network device and the shares (share.go) and
// routes their interrupts to this (the boot) CPU: on microvm the virtio-mmio transports its ACPI DSDT lists
// (LNRO0005 devices: registers and a level-triggered, active-high GSI) or
// the command line names (virtio_mmio.device=, which QEMU appends only
// when ACPI is off and Firecracker always: a transport both name is
// opened once), else
// the virtio functions on PCI bus 0 (drivers/pcihost): through the configuration
// ports (pc, q35: INTx on the ISA IRQ firmware wrote in the Interrupt
// Line register, level-triggered, active high as QEMU's MADT overrides
// say) or, on a hardware-reduced machine, through ECAM with MSI-X. The
// first network device that opens is the NIC.
func virtioInit(c *sched.CPU) {
	netConfCheck()
	// microvm: its DSDT's transports, and those the command line names
	// (QEMU appends them when ACPI is off).
	var devs [24]acpi.MMIODevice
	n, _ := acpi.VirtioMMIO(bootInfo.RSDP, mm.PhysOff(), devs[:])
	n = min(n, len(devs))
	// Firecracker 1.8 and later announce each device both ways: the
	// DSDT's entry (with its trigger mode) wins.
	acpiDevs := n
	for i := 0; i < nmmioDevices && n < len(devs); i++ {
		if mmioListed(devs[:acpiDevs], mmioDevices[i].base) {
			continue
		}
		devs[n] = acpi.MMIODevice{Base: uint32(mmioDevices[i].base), Size: virtio.MMIOSize, GSI: uint32(mmioDevices[i].irq), Level: true}
		n++
	}
	for _, m := range devs[:n] {
		if m.Base == 0 || m.Size < virtio.MMIOSize || m.GSI >= maxVirtioGSI {
			continue
		}
		d, e := virtio.OpenMMIO(mm.Phys(uintptr(m.Base)))
		if e != virtio.OK {
			if e == virtio.ErrLegacy {
				nicRefused("mmio", uint64(m.Base), e)
			}
			continue
		}
		if virtioAttach(d, "mmio", uint64(m.Base), m.GSI) {
			nicRoute(c, m.GSI, m.Level, m.ActiveLow)
			virtioCatchUp(m.GSI)
		}
	}
	// PCI: pc, q35, and microvm with pcie=on (its DSDT lists the
	// virtio-mmio transports too, empty).
	var buf [128]byte
	pb, desc := pcihost.Bus(bootInfo.RSDP, mm.PhysOff(), c.IRQ, vecVirtio+msiLine, &buf)
	if desc != "" {
		klog(desc)
	}
	for i, f := pb.Config.NextVirtio(0, 0); i >= 0; i, f = pb.Config.NextVirtio(0, i+1) { // every one: no table to overflow
		if f.Type != virtio.TypeNet && f.Type != virtio.Type9P && f.Type != virtio.TypeBlock {
			continue
		}
		d, line, e := pb.Open(f.BDF)
		irq := uint32(line)
		if line == 0 {
			irq = msiLine
		}
		if e != virtio.OK {
			nicRefused("pci", uint64(f.BDF), e)
		} else if virtioAttach(d, "pci", uint64(f.BDF), irq) && line != 0 {
			nicRoute(c, irq, true, false)
			virtioCatchUp(irq)
		}
	}
	if pb.MSIAddr != 0 {
		return // NVMe through INTx only: not on the MSI-X machine (Cloud Hypervisor's has none)
	}
	for m := blks.ProbeNVMe(pb.Config, mm.PhysOff(), sched.NumCPU()); m != 0; m &= m - 1 { // NVMe (kernel/blk/nvme.go)
		g := uint32(bits.TrailingZeros32(m))
		nicRoute(c, g, true, false)
		virtioCatchUp(g)
	}
}

// mmioListed reports whether a transport at base is in devs.
func mmioListed(devs []acpi.MMIODevice, base uint64) bool {
	for _, d := range devs {
		if uint64(d.Base) == base {
			return true
		}
	}
	return false
}

// nicRoute routes GSI gsi to this CPU as vecVirtio+gsi.
func nicRoute(c *sched.CPU, gsi uint32, level, low bool) {
	base := ioapicFor(gsi)
	pin := gsi
	if base == 0 {
		base = ioapic.Default
	} else {
		for _, a := range madtIOAPICs[:nIOAPICs] {
			if uintptr(a.Addr) == base {
				pin = gsi - a.GSIBase
			}
		}
	}
	if level {
		ioapic.RouteLevel(base, pin, vecVirtio+uint8(gsi), uint32(c.IRQ), low)
	} else {
		ioapic.Route(base, pin, vecVirtio+uint8(gsi), uint32(c.IRQ))
	}
}

// acpiPM is the ACPI power button and soft off (powerInit), if any.
var acpiPM acpipm.PM

// powerInit arms the ACPI power button (the SCI's fixed event, or the
// GED's on hardware-reduced ACPI) on this CPU, through virtioTrap.
func powerInit(c *sched.CPU) {
	var e acpi.Error
	if acpiPM, e = acpipm.Init(bootInfo.RSDP, mm.PhysOff()); e == acpi.OK && acpiPM.HasButton && acpiPM.GSI < maxVirtioGSI {
		nicRoute(c, acpiPM.GSI, acpiPM.Level, acpiPM.ActiveLow)
	}
}

// virtioTrap handles GSI gsi's vector: the devices on that line.
func virtioTrap(gsi uint32) {
	if gsi == acpiPM.GSI && acpiPM.HasButton && acpiPM.Button() {
		powerButton()
	}
	if gsi == nicIRQ {
		nicInterrupt()
	}
	shares.Interrupt(gsi)
	blks.Interrupt(gsi)
	lapic.EOI()
}
