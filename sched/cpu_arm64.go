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

// LockKickSGI is the GIC interrupt that ends a lock waiter's halt
// (lockhalt.go), and KickPriority its priority, more urgent than every
// other (gic.DefaultPriority): a CPU halted in a lock wait masks the others
// below it (haltForKick). Its handler has nothing to do.
const (
	LockKickSGI  = 3
	KickPriority = 0x80
)

// kickLock interrupts c, halted in a lock wait: with LockKickSGI, or on
// the Raspberry Pi 3 with the wake-up interrupt.
func kickLock(c *CPU) {
	if boot.Board == boot.BoardRPi3 {
		kick(c)
		return
	}
	gic.SendSGI(gic.Target(c.IRQ), LockKickSGI)
}

// haltForKick waits for an interrupt (WFI) with interrupts masked. WFI
// ends when an interrupt is signalled although PSTATE.I masks it, and
// interrupts that arrived while the lock waiter ran stay pending (and
// signalled) until the kernel unmasks: so with a GIC the CPU first raises
// its priority mask to let only LockKickSGI through, and afterwards
// acknowledges the kick if one came, so that a kick is not left pending
// to end the next halt at once. The Raspberry Pi 3's local controller has
// no priorities: there any pending interrupt ends WFI, and the waiter
// polls.
func haltForKick() {
	if boot.Board == boot.BoardRPi3 {
		wfi()
		return
	}
	gic.SetPriorityMask(KickPriority + 0x10)
	wfi()
	if iar := gic.Ack(); gic.ID(iar) != gic.Spurious {
		gic.EOI(iar) // only LockKickSGI passes the mask
	}
	gic.SetPriorityMask(0xFF)
}

// wfi waits for an interrupt.
func wfi()
