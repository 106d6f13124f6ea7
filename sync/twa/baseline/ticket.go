package baseline

import (
	"sync/atomic"

	"yolk/sync/twa"
)

// Ticket is the classic ticket lock (Reed and Kanodia's sequencer and
// eventcount, as a spin lock): Lock takes a ticket with one atomic add and
// polls grant until it reaches the ticket; Unlock increments grant. Every
// waiter polls grant, so each handover invalidates the line in every
// waiter's cache. The zero value is an unlocked lock.
//
// Like twa.Lock it uses sync/atomic's functions (compiler intrinsics)
// rather than atomic.Uint32's methods, so that the two differ only in the
// algorithm.
type Ticket[P twa.Policy] struct {
	ticket uint32 // next ticket to hand out
	grant  uint32 // ticket of the holder; == ticket when free
}

// Lock acquires l, waiting in ticket order if it is held.
func (l *Ticket[P]) Lock() {
	if tx := atomic.AddUint32(&l.ticket, 1) - 1; atomic.LoadUint32(&l.grant) != tx {
		var p P
		p.AwaitEqual(&l.grant, tx)
	}
}

// lock is Lock returning the ticket it was admitted with (for tests).
func (l *Ticket[P]) lock() uint32 {
	tx := atomic.AddUint32(&l.ticket, 1) - 1
	if atomic.LoadUint32(&l.grant) != tx {
		var p P
		p.AwaitEqual(&l.grant, tx)
	}
	return tx
}

// TryLock acquires l if it is free and nobody is queued, and reports
// whether it did. A failed TryLock takes no ticket.
func (l *Ticket[P]) TryLock() bool {
	t := atomic.LoadUint32(&l.ticket)
	return atomic.LoadUint32(&l.grant) == t && atomic.CompareAndSwapUint32(&l.ticket, t, t+1)
}

// Unlock releases l, handing it to the next ticket if one is queued.
func (l *Ticket[P]) Unlock() {
	atomic.StoreUint32(&l.grant, atomic.LoadUint32(&l.grant)+1) // only the holder writes grant
}
