package cqs

import (
	"context"
	"sync/atomic"
)

// permits is the semaphore algorithm shared by Semaphore and Mutex: state
// holds the number of free permits when positive and minus the number of
// waiters otherwise; it is changed by Fetch-and-Add only, except in
// tryAcquire and OnCancellation. The queue uses Sync resumption (so no permit is ever parked in
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
		p.q.at(hookCounted)
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
	s := p.state.Add(1)
	if s > p.max {
		panic("cqs: " + what)
	}
	p.give(s)
}

// give hands the permit just added to state (which is now s) to the first
// waiter, if s says there is one. The limit check is release's only: after
// a broken cell the acquirer that was counted restarts, and until it does,
// state may exceed max by one per such acquirer (a semaphore created with
// no permits and used as a signal goes to 1 here).
func (p *permits) give(s int64) {
	for s <= 0 {
		p.q.at(hookCounted)
		if p.q.Resume(struct{}{}) {
			return
		}
		// Broken cell: the acquirer restarts; give the permit back again.
		s = p.state.Add(1)
	}
}

type permitHandlers permits

// OnCancellation unregisters the cancelled waiter if some waiter is still
// uncovered by a release (state < 0): then the release that may come to
// this cell skips it and finds another waiter. Otherwise (state >= 0)
// every waiter, this one included, has been counted by a release that is
// on its way: the cell is refused and the state left alone; that release
// puts its permit back itself (CompleteRefusedResume).
//
// The paper's handler increments state in both cases, putting the refused
// permit back at once. That is not linearizable with TryAcquire: Resumes
// that skip cancelled cells can overtake one another, so the refused cell
// may be reached by a later release R2 while the release R1 whose permit
// was put back is still on its way to another waiter. R2 then returns
// (its permit "already back") while its permit in fact travels with R1,
// and a TryAcquire after R2 returned can fail with no permit held. Found
// by TestLinearizableSemaphore with chaos injection. Leaving the permit
// with its release keeps every permit of a returned Release either in
// state or with a resumed waiter.
func (h *permitHandlers) OnCancellation() bool {
	for {
		s := h.state.Load()
		if s >= 0 {
			return false
		}
		if h.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

// CompleteRefusedResume runs on a release whose waiter was cancelled after
// the release counted it: the permit was not put back by OnCancellation,
// so it is released again (to state, or to the next waiter).
func (h *permitHandlers) CompleteRefusedResume(any) {
	p := (*permits)(h)
	p.give(p.state.Add(1))
}

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
