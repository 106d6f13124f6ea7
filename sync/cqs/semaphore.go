package cqs

import (
	"context"
	"sync/atomic"
)

// permits is the semaphore algorithm shared by Semaphore and Mutex: state
// holds the number of free permits when positive and minus the number of
// waiters otherwise; it is changed by Fetch-and-Add only, except in
// tryAcquire. The queue uses Sync resumption (so no permit is ever parked in
// a cell where tryAcquire cannot see it) and Smart cancellation.
type permits struct {
	state atomic.Int64
	max   int64
	q     Queue
}

func (p *permits) init(n int64, opts []Option) {
	if n < 0 {
		panic("cqs: negative number of permits")
	}
	p.max = n
	p.state.Store(n)
	p.q.Init(Config{Resume: Sync, Cancel: Smart, Handlers: (*permitHandlers)(p), Waiting: collect(opts).waiting})
}

func (p *permits) acquire(ctx context.Context) error {
	for {
		if p.state.Add(-1) >= 0 {
			return nil
		}
		switch _, st := p.q.Suspend(ctx); st {
		case Resumed:
			return nil
		case Cancelled:
			return ctx.Err()
		}
		// Broken: the matching release gave up on this cell and restarts
		// too; so do we.
	}
}

func (p *permits) tryAcquire() bool {
	for {
		s := p.state.Load()
		if s <= 0 {
			return false
		}
		if p.state.CompareAndSwap(s, s-1) {
			return true
		}
	}
}

func (p *permits) release(what string) {
	for {
		s := p.state.Add(1)
		if s > p.max {
			panic("cqs: " + what)
		}
		if s > 0 {
			return // nobody waited
		}
		if p.q.Resume(struct{}{}) {
			return
		}
		// Broken cell: the acquirer restarts; give the permit back again.
	}
}

type permitHandlers permits

// OnCancellation returns the cancelled waiter's slot: if the state is still
// negative afterwards, another waiter is there for the release that may
// come to this cell; if it reached zero, a release already counted this
// waiter and is on its way: refuse it (its permit is already back in state).
func (h *permitHandlers) OnCancellation() bool { return h.state.Add(1) <= 0 }

// CompleteRefusedResume has nothing to do: OnCancellation already put the
// permit back.
func (h *permitHandlers) CompleteRefusedResume(any) {}

// A Semaphore is a fair, abortable counting semaphore: at most n permits
// are held at a time, and goroutines that have to wait get permits in the
// order in which they started waiting.
type Semaphore struct{ p permits }

// NewSemaphore returns a semaphore with n free permits.
func NewSemaphore(n int, opts ...Option) *Semaphore {
	s := new(Semaphore)
	s.p.init(int64(n), opts)
	return s
}

// Acquire takes a permit, waiting in FIFO order if none is free, until ctx
// is done. It succeeds without blocking when a permit is free, even if ctx
// is done. On failure it returns ctx.Err() and the semaphore is as if
// Acquire had never been called.
func (s *Semaphore) Acquire(ctx context.Context) error { return s.p.acquire(ctx) }

// TryAcquire takes a permit if one is free, without waiting. A permit is
// free only if no goroutine is waiting: TryAcquire never barges.
func (s *Semaphore) TryAcquire() bool { return s.p.tryAcquire() }

// Release returns a permit, handing it directly to the first waiter if
// there is one. It panics if more permits are released than acquired.
func (s *Semaphore) Release() { s.p.release("Semaphore.Release without Acquire") }

// Available returns the number of free permits, or minus the number of
// waiting goroutines (a snapshot, for monitoring).
func (s *Semaphore) Available() int { return int(s.p.state.Load()) }

// A Mutex is a fair, abortable mutual-exclusion lock: a semaphore with one
// permit. Once a goroutine waits, the lock is handed over in FIFO order and
// TryLock cannot barge in.
type Mutex struct{ p permits }

// NewMutex returns an unlocked mutex.
func NewMutex(opts ...Option) *Mutex {
	m := new(Mutex)
	m.p.init(1, opts)
	return m
}

// Lock locks m, waiting in FIFO order until ctx is done. It returns nil
// once m is held, or ctx.Err() and leaves m as if Lock had not been called.
func (m *Mutex) Lock(ctx context.Context) error { return m.p.acquire(ctx) }

// TryLock locks m if it is free and nobody waits, without waiting.
func (m *Mutex) TryLock() bool { return m.p.tryAcquire() }

// Unlock unlocks m, handing it to the first waiter if there is one. It
// panics if m is not locked.
func (m *Mutex) Unlock() { m.p.release("unlock of unlocked Mutex") }
