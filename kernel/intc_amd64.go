package kernel

import (
	"yolk/drivers/lapic"
	"yolk/drivers/pit"
	"yolk/sched"
)

// The interrupt controllers on amd64: each CPU's local APIC (timer, IPIs,
// end of interrupt) and the I/O APICs the MADT lists, which route device
// interrupts (the console's, conin_amd64.go); the legacy PIC is masked.

// lapicReady is set once the boot CPU has found the local APIC.
var lapicReady bool

// intcInit masks the legacy PIC and enables the boot CPU's local APIC.
func intcInit(c *sched.CPU) {
	pit.MaskPIC(vecPICBase)
	cpuInterrupts(0, c)
}

// cpuInterrupts enables this CPU's local APIC.
func cpuInterrupts(id int, c *sched.CPU) {
	if !lapicReady {
		lapic.Setup()
		lapicReady = true
	}
	lapic.Init(vecSpurious)
	percpu[id].timerLVT = false
}

// sendIPI raises vec at CPU cpu.
func sendIPI(cpu int, vec uint8) { lapic.IPI(uint32(sched.CPUAt(cpu).IRQ), vec) }

// ioapicFor is the address of the I/O APIC serving global system interrupt
// gsi according to the MADT, 0 if the MADT did not say.
func ioapicFor(gsi uint32) uintptr {
	for _, a := range madtIOAPICs[:nIOAPICs] {
		if a.GSIBase <= gsi && gsi < a.GSIBase+24 {
			return uintptr(a.Addr)
		}
	}
	return 0
}
