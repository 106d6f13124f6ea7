package cqs

import (
	"context"
	"sync/atomic"
)

// A Barrier lets a fixed number of parties wait for each other; it is used
// once. A waiter whose ctx is done stops waiting, but its arrival still
// counts: the barrier never breaks (the paper's choice, since no system can
// resume a set of waiters atomically). It uses Simple cancellation: the
// last arrival's Resume on a cancelled waiter just fails.
type Barrier struct {
	parties   int64
	remaining atomic.Int64
	q         Queue
}

// NewBarrier returns a barrier for the given number of parties (>= 1).
func NewBarrier(parties int, opts ...Option) *Barrier {
	if parties < 1 {
		panic("cqs: Barrier needs at least one party")
	}
	b := &Barrier{parties: int64(parties)}
	b.remaining.Store(int64(parties))
	b.q.Init(Config{Resume: Async, Cancel: Simple, Waiting: collect(opts).waiting})
	return b
}

// Arrive registers the caller's arrival and waits until all parties have
// arrived or ctx is done (then it returns ctx.Err(); the arrival stands).
// It panics if called more than parties times.
func (b *Barrier) Arrive(ctx context.Context) error {
	r := b.remaining.Add(-1)
	switch {
	case r > 0:
		if _, st := b.q.Suspend(ctx); st == Cancelled {
			return ctx.Err()
		}
		return nil
	case r < 0:
		panic("cqs: Barrier.Arrive called more often than parties")
	}
	for i := int64(1); i < b.parties; i++ {
		b.q.Resume(struct{}{}) // fails only on a cancelled waiter: ignore
	}
	return nil
}
