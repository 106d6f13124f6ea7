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
