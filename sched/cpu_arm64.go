package sched

import (
	"yolk/boot"
	"yolk/drivers/bcm2836"
	"yolk/drivers/gic"
)

// setCPUBase points TPIDR_EL1 at the per-CPU block c.
func setCPUBase(c uintptr)

// intsOn reports whether IRQs are unmasked (PSTATE.I clear).
func intsOn() bool

// pause is the spin-loop hint (YIELD).
func pause()

// trapNow raises an undefined-instruction exception (UDF).
func trapNow()

// kick interrupts c with the wake-up interrupt: a GIC SGI, or a mailbox
// bit on the Raspberry Pi 3.
func kick(c *CPU) {
	if boot.Board == boot.BoardRPi3 {
		bcm2836.Send(int(c.IRQ), uint32(wakeVector))
		return
	}
	gic.SendSGI(gic.Target(c.IRQ), uint32(wakeVector))
}
