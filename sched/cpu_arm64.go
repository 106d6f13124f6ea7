package sched

import "yolk/drivers/gic"

// setCPUBase points TPIDR_EL1 at the per-CPU block c.
func setCPUBase(c uintptr)

// intsOn reports whether IRQs are unmasked (PSTATE.I clear).
func intsOn() bool

// pause is the spin-loop hint (YIELD).
func pause()

// trapNow raises an undefined-instruction exception (UDF).
func trapNow()

// kick interrupts c with the wake-up software-generated interrupt.
func kick(c *CPU) { gic.SendSGI(gic.Target(c.IRQ), uint32(wakeVector)) }
