package sched

import (
	"sync/atomic"

	"yolk/drivers/x86"
)

// Spinlock is a test-and-test-and-set lock for short kernel critical
// sections with interrupts off.
type Spinlock struct {
	v uint32
}

// Lock spins until it holds l.
func (l *Spinlock) Lock() {
	for !atomic.CompareAndSwapUint32(&l.v, 0, 1) {
		for atomic.LoadUint32(&l.v) != 0 {
			x86.Pause()
		}
	}
}

// Unlock releases l.
func (l *Spinlock) Unlock() { atomic.StoreUint32(&l.v, 0) }
