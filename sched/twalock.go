package sched

import (
	"sync/atomic"

	"yolk/sync/twa"
)

// TWALock is the kernel's spin lock: the ticket lock augmented with a
// waiting array of "TWA – Ticket Locks Augmented with a Waiting Array"
// (package sync/twa with the lockWait policy: nosplit, no allocation, no
// runtime calls; a waiter halts its CPU after a while, see lockhalt.go),
// for short critical sections. It adds two checks that a
// kernel needs: Lock asserts that interrupts are off (an interrupt handler
// taking a lock that the code it interrupted holds would deadlock, and
// kernel code never runs with them on), and the CPU counts the spin locks
// it holds, so that a task switch while one is held — which would leave
// other CPUs spinning on a lock whose holder is not running — fails loudly
// in switchTo.
//
// The zero value is unlocked. Waiters are served in FIFO order and cannot
// give up (see twa.Lock).
type TWALock struct {
	l     twa.Lock[lockWait]
	owner int32 // 1 + the CPU holding l, 0 if free (for fault handlers)
}

// Lock acquires l.
func (l *TWALock) Lock() {
	c := kernelCPU() // with interrupts off the task stays on c
	if c == nil {
		die(dieIntsOn)
	}
	l.l.Lock()
	c.locks++
	l.owner = int32(c.ID + 1)
}

// TryLock acquires l if it is free and nobody waits, and reports whether
// it did.
func (l *TWALock) TryLock() bool {
	c := kernelCPU()
	if c == nil {
		die(dieIntsOn)
	}
	if !l.l.TryLock() {
		return false
	}
	c.locks++
	l.owner = int32(c.ID + 1)
	return true
}

// Unlock releases l, which this CPU holds.
func (l *TWALock) Unlock() {
	cpus[l.owner-1].locks-- // this CPU's, without a call to This
	l.owner = 0
	s := l.l.UnlockSlot()
	if atomic.LoadUint64(&lockHalted) != 0 {
		kickHalted(l.l.Grant(), s)
	}
}

// HeldHere reports whether this CPU holds l: a fault handler that needs l
// must not wait for it when the fault happened inside l's critical
// section.
func (l *TWALock) HeldHere() bool { return l.owner == int32(This().ID+1) }
