//go:build amd64

// Package acpipm drives ACPI's power management on a PC-like machine:
// the power button, which arrives as the fixed-feature event PWRBTN_STS
// through the SCI (QEMU pc and q35, a PC) or as the Generic Event
// Device's power-down event (hardware-reduced ACPI: QEMU microvm, Cloud
// Hypervisor), and soft off (S5), through PM1 control or, on
// hardware-reduced machines, the FADT's sleep control register, with the
// SLP_TYP of the DSDT's \_S5. The tables are read by package acpi.
//
// Kernel-context: no allocation, no runtime calls; PM holds no pointers.
package acpipm

import (
	"yolk/arch/amd64"
	"yolk/drivers/acpi"
	"yolk/drivers/mmio"
)

// PM is a machine's power-management registers, found by Init.
type PM struct {
	// The power button's interrupt: a GSI, its trigger and polarity.
	// HasButton is false when there is no button Init could enable.
	GSI              uint32
	Level, ActiveLow bool
	HasButton        bool

	// How the button reports: the GED's event register (a virtual
	// address) or PM1a's status and enable ports.
	ged           uintptr
	evtSts, evtEn uint16
	cnt           uint16 // PM1a control
	sleepCtl      acpi.GAS
	sleepAt       uintptr // sleepCtl's virtual address (memory space)
	slpTyp        uint8
	s5, hwReduced bool
}

// PM1 register bits (ACPI 6.5, 4.8.3.1 and 4.8.3.2).
const (
	pwrbtnSts = 1 << 8  // PM1 status and enable: the power button
	sciEn     = 1 << 0  // PM1 control: the chipset is in ACPI mode
	slpEn     = 1 << 13 // PM1 control: enter the sleep state SLP_TYP
	slpTypSh  = 10
	// The sleep control register (hardware-reduced, 4.8.3.7).
	sleepEn    = 1 << 5
	sleepTypSh = 2
)

// Init reads the FADT and the DSDT through the RSDP (physical address
// p is read at p+off, registers in memory space too) and arms the power
// button: on a hardware-reduced machine the GED's interrupt (its events
// are read and cleared by Button); else it puts the chipset in ACPI mode
// if the firmware left it in legacy mode (the SMI command), clears a
// stale press and enables PWRBTN_EN, the SCI's GSI and trigger taken
// from the MADT's override (the SCI is level-triggered, active low,
// where no override says otherwise). The error is the tables' (then PM
// is empty: no button, Off does nothing).
func Init(rsdp, off uintptr) (PM, acpi.Error) {
	var p PM
	f, e := acpi.ReadFADT(rsdp, off)
	if e != acpi.OK {
		return p, e
	}
	p.slpTyp, p.s5 = acpi.SleepType(f.DSDT, off)
	p.hwReduced = f.HWReduced
	if f.HWReduced {
		p.sleepCtl = f.SleepCtl
		if f.SleepCtl.Space == acpi.SpaceMemory && f.SleepCtl.Addr != 0 && f.SleepCtl.Addr < 1<<32 {
			p.sleepAt = uintptr(f.SleepCtl.Addr) + off
		}
		if g, ok := acpi.FindGED(f.DSDT, off); ok && g.Base < 1<<32 {
			p.ged = uintptr(g.Base) + off
			p.GSI, p.Level, p.ActiveLow, p.HasButton = g.GSI, g.Level, g.ActiveLow, true
			mmio.Read32(p.ged) // events from before the boot
		}
		return p, acpi.OK
	}
	if f.PM1aCnt < 1<<16 {
		p.cnt = uint16(f.PM1aCnt)
	}
	if p.cnt != 0 && f.SMICmd != 0 && f.SMICmd < 1<<16 && f.ACPIEnable != 0 && amd64.Inw(p.cnt)&sciEn == 0 {
		amd64.Outb(uint16(f.SMICmd), f.ACPIEnable)
		for i := 0; i < 1e6 && amd64.Inw(p.cnt)&sciEn == 0; i++ {
			amd64.Pause()
		}
	}
	if f.PM1aEvt == 0 || f.PM1aEvt >= 1<<16 || f.PM1EvtLen < 4 || f.SCI == 0 || f.SCI >= 16 {
		return p, acpi.OK
	}
	p.evtSts, p.evtEn = uint16(f.PM1aEvt), uint16(f.PM1aEvt)+uint16(f.PM1EvtLen/2)
	amd64.Outw(p.evtSts, pwrbtnSts)
	amd64.Outw(p.evtEn, amd64.Inw(p.evtEn)|pwrbtnSts)
	gsi, flags, ok := acpi.ISAOverride(rsdp, off, uint8(f.SCI))
	if !ok {
		flags = 0 // conforming: the SCI's own, level-triggered and active low
	}
	p.GSI, p.HasButton = gsi, true
	p.Level, p.ActiveLow = flags&0xC != 0x4, flags&0x3 != 0x1
	return p, acpi.OK
}

// Button reports whether the power button was pressed since the last
// call, and acknowledges it; the GSI's interrupt handler calls it.
func (p *PM) Button() bool {
	switch {
	case p.ged != 0:
		return mmio.Read32(p.ged)&acpi.GEDPowerDown != 0
	case p.evtSts != 0:
		if amd64.Inw(p.evtSts)&pwrbtnSts == 0 {
			return false
		}
		amd64.Outw(p.evtSts, pwrbtnSts)
		return true
	}
	return false
}

// Off powers the machine off (S5) if the tables said how, and waits a
// while for it to happen; it returns when it could not (no \_S5, no
// register, or the machine went on running). A second PM1 control block
// (PM1b, which QEMU and most chipsets do not have) is not written.
func (p *PM) Off() {
	if !p.s5 {
		return
	}
	switch {
	case p.hwReduced && p.sleepAt != 0:
		mmio.Write8(p.sleepAt, p.slpTyp&7<<sleepTypSh|sleepEn)
	case p.hwReduced && p.sleepCtl.Space == acpi.SpaceIO && p.sleepCtl.Addr != 0 && p.sleepCtl.Addr < 1<<16:
		amd64.Outb(uint16(p.sleepCtl.Addr), p.slpTyp&7<<sleepTypSh|sleepEn)
	case !p.hwReduced && p.cnt != 0:
		amd64.Outw(p.cnt, amd64.Inw(p.cnt)&^(7<<slpTypSh)|uint16(p.slpTyp&7)<<slpTypSh|slpEn)
	default:
		return
	}
	for i := 0; i < 1e7; i++ {
		amd64.Pause()
	}
}
