package sched

import (
	"yolk/arch/amd64"
	"yolk/drivers/lapic"
)

// setCPUBase points GS at the per-CPU block c.
func setCPUBase(c uintptr) { amd64.Wrmsr(amd64.MSR_GS_BASE, uint64(c)) }

func intsOn() bool { return amd64.IntsOn() }

func pause() { amd64.Pause() }

// trapNow raises an invalid-opcode trap.
func trapNow()

// kick interrupts c with the wake-up vector.
func kick(c *CPU) { lapic.IPI(uint32(c.IRQ), wakeVector) }

// LockKickVector is the vector of the interrupt that ends a lock waiter's
// halt (lockhalt.go): priority class 15, the only one haltForKick lets
// through. Its handler only acknowledges it.
const LockKickVector = 0xF0

// kickLock interrupts c, halted in a lock wait, with LockKickVector.
func kickLock(c *CPU) { lapic.IPI(uint32(c.IRQ), LockKickVector) }

// haltForKick halts this CPU, whose interrupts are masked, until an
// interrupt of priority class 15 (LockKickVector) arrives: it raises the
// task priority (CR8) to 14, enables interrupts and halts (STI's shadow
// covers HLT, so a kick already pending ends the halt), then masks them
// and lowers the priority again. Interrupts of lower classes stay pending
// until the kernel enables interrupts as usual.
func haltForKick()
