package baseline

import (
	"sync/atomic"

	"yolk/sync/twa"
)

// TTAS is a test-and-test-and-set spin lock: waiters poll the lock word
// with plain loads and race with a compare-and-swap when it reads free. It
// is neither fair nor FIFO, and every release makes all waiters contend
// for the line at once. It was yolk's kernel spin lock before the kernel
// took TWA; it is kept as the baseline the kernel lock benchmark compares
// with. The zero value is an unlocked lock.
type TTAS[P twa.Policy] struct {
	v uint32
}

// Lock acquires l.
//
//go:nosplit
func (l *TTAS[P]) Lock() {
	for !atomic.CompareAndSwapUint32(&l.v, 0, 1) {
		var p P
		p.AwaitEqual(&l.v, 0)
	}
}

// Unlock releases l.
//
//go:nosplit
func (l *TTAS[P]) Unlock() { atomic.StoreUint32(&l.v, 0) }

// TryLock acquires l if it is free and reports whether it did.
//
//go:nosplit
func (l *TTAS[P]) TryLock() bool { return atomic.CompareAndSwapUint32(&l.v, 0, 1) }
