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
// turns it on, through the I/O APIC the MADT names for GSI 4 (else the
// default one).
func conInInit(c *sched.CPU) {
	ioapicBase, apicID := ioapicFor(com1IRQ), uint32(c.IRQ)
	if ioapicBase == 0 {
		ioapicBase = ioapic.Default
	}
	ioapic.Route(ioapicBase, com1IRQ, vecConsoleRx, apicID)
	com1.EnableRx(true)
}

// conInInterrupt is the receive interrupt's handler.
func conInInterrupt() {
	got := conIn.Receive()
	lapic.EOI()
	if got {
		conIn.WQ.Wake(0, sched.MaxTasks)
	}
}

func conRxGet() (byte, bool) { return com1.Get() }
func conRxEnable(on bool)    { com1.EnableRx(on) }
