package kernel

import (
	"yolk/drivers/ioapic"
	"yolk/drivers/lapic"
	"yolk/sched"
)

const (
	vecConsoleRx = 0x24
	com1IRQ      = 4
)

// conInInit routes the UART's receive interrupt to this (the boot) CPU and
// turns it on. ioapicBase is the I/O APIC serving GSI 4 (0: the default).
func conInInit(ioapicBase uintptr, apicID uint32) {
	if ioapicBase == 0 {
		ioapicBase = ioapic.Default
	}
	ioapic.Route(ioapicBase, com1IRQ, vecConsoleRx, apicID)
	com1.EnableRx(true)
}

// conInInterrupt is the receive interrupt's handler.
func conInInterrupt() {
	got := conInReceive()
	lapic.EOI()
	if got {
		conIn.wq.Wake(0, sched.MaxTasks)
	}
}

func conRxGet() (byte, bool) { return com1.Get() }
func conRxEnable(on bool)    { com1.EnableRx(on) }
