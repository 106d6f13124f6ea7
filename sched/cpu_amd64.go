package sched

import (
	"yolk/drivers/lapic"
	"yolk/drivers/x86"
)

// setCPUBase points GS at the per-CPU block c.
func setCPUBase(c uintptr) { x86.Wrmsr(x86.MSR_GS_BASE, uint64(c)) }

func intsOn() bool { return x86.IntsOn() }

func pause() { x86.Pause() }

// trapNow raises an invalid-opcode trap.
func trapNow()

// kick interrupts c with the wake-up vector.
func kick(c *CPU) { lapic.IPI(uint32(c.IRQ), wakeVector) }
