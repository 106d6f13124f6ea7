package sched

import "sync/atomic"

// Broken invariants. die records which one and faults; the kernel's fault
// report prints DieReason.
const (
	dieIntsOn       = 1 + iota // kernel code or a queue operation ran with interrupts on
	dieRunTwice                // a task was switched to while running, or while not ready
	dieSwitchLocked            // a task switched while its CPU held a spin lock
	dieArena                   // the ready queue's node arena ran out
	dieUnlock                  // a mutex was unlocked by a task that does not own it
	dieTimers                  // a timer heap overflowed
	dieIdleBlocks              // an idle task tried to block, wait or exit
)

var dieText = [...]string{
	dieIntsOn:       "kernel code ran with interrupts enabled",
	dieRunTwice:     "task switched to while running or not ready (it would run twice)",
	dieSwitchLocked: "task switch while holding a spin lock",
	dieArena:        "ready-queue node arena exhausted (breaks the tasks+1+2*CPUs bound)",
	dieUnlock:       "kernel mutex unlocked by a task that does not own it",
	dieTimers:       "timer heap overflow",
	dieIdleBlocks:   "an idle task tried to block, wait for a mutex or exit",
}

var dieWhy uint32

// DieReason describes the scheduler invariant that stopped the machine, or
// is empty.
func DieReason() string {
	if w := atomic.LoadUint32(&dieWhy); w < uint32(len(dieText)) {
		return dieText[w]
	}
	return ""
}

// die stops the machine with a fault report when a scheduler invariant is
// broken: an undefined instruction traps (in kernel context, so no signal
// is delivered) into the kernel's fault reporter, which prints the reason,
// the registers and this backtrace; sched cannot call the kernel directly.
// (Not a page fault: the fault path takes the address space's lock, which
// the broken code may hold.)
func die(why uint32) {
	atomic.StoreUint32(&dieWhy, why)
	trapNow()
}

// assertKernel checks that the caller runs as kernel code must: with
// interrupts off. Every queue operation, task switch and spin lock checks
// it, so that a path that forgot to disable them fails loudly instead of
// racing with an interrupt handler on the same processor slot.
func assertKernel() {
	if intsOn() {
		die(dieIntsOn)
	}
}

// AssertKernel is assertKernel for the kernel's own entry paths.
func AssertKernel() { assertKernel() }
