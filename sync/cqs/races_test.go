package cqs

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// Deterministic reproductions of the races the paper names, on the
// primitives themselves.

var bg = context.Background()

// naiveMutex is the paper's Figure 3 strawman: smart cancellation without
// the REFUSE state (OnCancellation always lets the Resume skip the cell).
type naiveMutex struct {
	state atomic.Int64
	q     Queue
}

func newNaiveMutex() *naiveMutex {
	m := &naiveMutex{}
	m.state.Store(1)
	m.q.Init(Config{Resume: Async, Cancel: Smart, Handlers: m})
	return m
}
func (m *naiveMutex) OnCancellation() bool      { m.state.Add(1); return true }
func (m *naiveMutex) CompleteRefusedResume(any) {}
func (m *naiveMutex) Lock(ctx context.Context) error {
	if m.state.Add(-1) >= 0 {
		return nil
	}
	if _, st := m.q.Suspend(ctx); st == Cancelled {
		return ctx.Err()
	}
	return nil
}
func (m *naiveMutex) Unlock() {
	if m.state.Add(1) <= 0 {
		m.q.Resume(struct{}{})
	}
}

// The schedule of Figure 3: the mutex is held; a Lock suspends and is
// cancelled; Unlock runs before the cancellation handler; then two Locks.
// Without REFUSE both Locks enter: the strawman must show the bug.
func TestNaiveSmartCancellationDoubleEntry(t *testing.T) {
	m := newNaiveMutex()
	parked, c := notifyAt(hookParked, 1), stopAt(hookCancelled, 1)
	install(&m.q, parked, c)
	m.Lock(bg)
	ctx, cancel := context.WithCancel(bg)
	lockRes := make(chan error, 1)
	go func() { lockRes <- m.Lock(ctx) }()
	parked.wait(t)
	cancel()
	c.wait(t)
	m.Unlock() // delegates its permit into the cancelled cell
	c.go_()    // handler: state back to 1, passes the permit to the next cell
	if err := recv(t, lockRes); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock = %v", err)
	}
	entered := 0
	for i := 0; i < 2; i++ {
		done := make(chan error, 1)
		go func() { done <- m.Lock(bg) }()
		if err := recv(t, done); err == nil {
			entered++
		}
	}
	if entered != 2 {
		t.Fatalf("strawman admitted %d lockers; the schedule should reproduce the double entry", entered)
	}
}

// The same schedule on Mutex: the handler finds the Unlock already counted
// this waiter, moves the cell to REFUSE, and the lock is simply free.
func TestMutexCancelRacingUnlockRefuses(t *testing.T) {
	m := NewMutex()
	parked, c := notifyAt(hookParked, 1), stopAt(hookCancelled, 1)
	waits, parked2 := notifyAt(hookResumeWaitsHandler, 1), notifyAt(hookParked, 2)
	install(&m.p.q, parked, c, waits, parked2)
	if err := m.Lock(bg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	lockRes := make(chan error, 1)
	go func() { lockRes <- m.Lock(ctx) }()
	parked.wait(t)
	cancel()
	c.wait(t)
	unlocked := make(chan struct{})
	go func() { m.Unlock(); close(unlocked) }()
	waits.wait(t) // Sync: Unlock's Resume waits for the handler's decision
	pending(t, unlocked, "Unlock")
	c.go_()
	if err := recv(t, lockRes); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock = %v", err)
	}
	recv(t, unlocked)
	if m.p.q.cell(0) != refuseMark {
		t.Fatal("cell 0 not REFUSE")
	}
	if !m.TryLock() {
		t.Fatal("lock not free after the refused Unlock")
	}
	second := make(chan error, 1)
	go func() { second <- m.Lock(bg) }()
	parked2.wait(t)
	pending(t, second, "second Lock") // nothing can wake it: no double entry
	if m.TryLock() {
		t.Fatal("TryLock succeeded while the mutex is held")
	}
	m.Unlock()
	if err := recv(t, second); err != nil {
		t.Fatal(err)
	}
	m.Unlock()
	if s := m.p.state.Load(); s != 1 {
		t.Fatalf("state %d after all unlocks, want 1", s)
	}
}

// Sync mode on the Semaphore: Release meets an Acquire that has counted
// itself but not reached its cell, breaks the cell, and both restart; the
// permit ends up with the Acquire.
func TestSemaphoreBrokenCellRestart(t *testing.T) {
	s := NewSemaphore(1)
	claimed := stopAt(hookSuspendClaimed, 1)
	install(&s.p.q, claimed)
	s.Acquire(bg)
	acq := make(chan error, 1)
	go func() { acq <- s.Acquire(bg) }()
	claimed.wait(t)
	s.Release() // resume breaks cell 0, then Release gives the permit back to state
	if s.p.q.cell(0) != brokenMark {
		t.Fatal("cell 0 not BROKEN")
	}
	// The Release added twice: its permit, and the undoing of the broken
	// registration (the Acquire will register again).
	if st := s.Available(); st != 1 {
		t.Fatalf("Available = %d after the broken Release, want 1", st)
	}
	claimed.go_()
	if err := recv(t, acq); err != nil {
		t.Fatal(err)
	}
	if s.TryAcquire() {
		t.Fatal("a second permit appeared")
	}
	s.Release()
	if !s.TryAcquire() {
		t.Fatal("permit lost")
	}
}

type pool interface {
	Put(int)
	Take(context.Context) (int, error)
	queue() *Queue
}

func (p *QueuePool[T]) queue() *Queue { return &p.q }
func (p *StackPool[T]) queue() *Queue { return &p.q }

var pools = []struct {
	name string
	make func() pool
}{
	{"queue", func() pool { return NewQueuePool[int]() }},
	{"stack", func() pool { return NewStackPool[int]() }},
}

// drain takes every free element without blocking.
func drain(p pool) []int {
	var got []int
	for {
		v, err := p.Take(cancelled())
		if err != nil {
			return got
		}
		got = append(got, v)
	}
}

// A Take cancelled while a Put hands it an element, in the three ways it
// can go: the hand-over wins; the cancellation wins and the element goes to
// the next waiter; the cancellation wins, nobody else waits, and the
// element is refused back into the pool.
func TestPoolTakeCancelledDuringHandOver(t *testing.T) {
	for _, pk := range pools {
		t.Run(pk.name+"/hand-over-wins", func(t *testing.T) {
			p := pk.make()
			parked, interrupted := notifyAt(hookParked, 1), stopAt(hookParkInterrupted, 1)
			install(p.queue(), parked, interrupted)
			ctx, cancel := context.WithCancel(bg)
			res := takeAsync(p, ctx)
			parked.wait(t)
			cancel()
			interrupted.wait(t)
			p.Put(7)
			interrupted.go_()
			if r := recv(t, res); r.err != nil || r.v != 7 {
				t.Fatalf("Take = %v %v, want 7 (the hand-over won)", r.v, r.err)
			}
			if left := drain(p); len(left) != 0 {
				t.Fatalf("pool holds %v, want nothing", left)
			}
		})
		t.Run(pk.name+"/next-waiter", func(t *testing.T) {
			p := pk.make()
			p1, p2, c := notifyAt(hookParked, 1), notifyAt(hookParked, 2), stopAt(hookCancelled, 1)
			install(p.queue(), p1, p2, c)
			ctx, cancel := context.WithCancel(bg)
			res1 := takeAsync(p, ctx)
			p1.wait(t)
			res2 := takeAsync(p, bg)
			p2.wait(t)
			cancel()
			c.wait(t)
			p.Put(7) // delegated to the cancelled cell
			pending(t, res2, "second Take")
			c.go_()
			if r := recv(t, res1); !errors.Is(r.err, context.Canceled) {
				t.Fatalf("first Take = %v %v, want Canceled", r.v, r.err)
			}
			if r := recv(t, res2); r.err != nil || r.v != 7 {
				t.Fatalf("second Take = %v %v, want 7", r.v, r.err)
			}
			if left := drain(p); len(left) != 0 {
				t.Fatalf("pool holds %v, want nothing", left)
			}
		})
		t.Run(pk.name+"/refused", func(t *testing.T) {
			p := pk.make()
			parked, c := notifyAt(hookParked, 1), stopAt(hookCancelled, 1)
			install(p.queue(), parked, c)
			ctx, cancel := context.WithCancel(bg)
			res := takeAsync(p, ctx)
			parked.wait(t)
			cancel()
			c.wait(t)
			p.Put(7)
			c.go_()
			if r := recv(t, res); !errors.Is(r.err, context.Canceled) {
				t.Fatalf("Take = %v %v, want Canceled", r.v, r.err)
			}
			if p.queue().cell(0) != refuseMark {
				t.Fatal("cell 0 not REFUSE")
			}
			if left := drain(p); len(left) != 1 || left[0] != 7 {
				t.Fatalf("pool holds %v, want [7]", left)
			}
		})
	}
}

type taken struct {
	v   int
	err error
}

func takeAsync(p pool, ctx context.Context) <-chan taken {
	ch := make(chan taken, 1)
	go func() {
		v, err := p.Take(ctx)
		ch <- taken{v, err}
	}()
	return ch
}

// The latch's done-bit race: Await reads count > 0, then the last
// CountDown opens the latch (sets doneBit, resumes the 0 waiters it
// counted), then Await registers. It must see doneBit and not suspend.
func TestLatchDoneBitRace(t *testing.T) {
	l := NewCountDownLatch(1)
	reg := stopAt(hookLatchRegister, 1)
	install(&l.q, reg)
	res := make(chan error, 1)
	go func() { res <- l.Await(bg) }()
	reg.wait(t)
	l.CountDown()
	if w := l.waiters.Load(); w != doneBit {
		t.Fatalf("waiters = %#x, want doneBit with no waiter counted", w)
	}
	reg.go_()
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}
	if w := l.waiters.Load(); w != doneBit|1 {
		t.Fatalf("waiters = %#x, want the late registration after doneBit", w)
	}
	if n := l.q.cells.enqIdx.Load(); n != 0 {
		t.Fatalf("the late Await suspended (%d cells claimed)", n)
	}
}

// A latch waiter cancelled while the opening CountDown resumes it: the
// handler sees doneBit and refuses the Resume; nothing is left behind.
func TestLatchCancelRacingOpen(t *testing.T) {
	l := NewCountDownLatch(1)
	parked, c := notifyAt(hookParked, 1), stopAt(hookCancelled, 1)
	install(&l.q, parked, c)
	ctx, cancel := context.WithCancel(bg)
	res := make(chan error, 1)
	go func() { res <- l.Await(ctx) }()
	parked.wait(t)
	cancel()
	c.wait(t)
	l.CountDown() // counts 1 waiter, its Resume delegates into the cell
	c.go_()
	if err := recv(t, res); !errors.Is(err, context.Canceled) {
		t.Fatalf("Await = %v, want Canceled", err)
	}
	if l.q.cell(0) != refuseMark {
		t.Fatal("cell 0 not REFUSE")
	}
	if err := l.Await(cancelled()); err != nil {
		t.Fatalf("Await on the open latch = %v", err)
	}
	if _, vals := l.q.reachable(); vals != 0 {
		t.Fatalf("%d values left in the queue", vals)
	}
}

// Why Sync resumption waits for a cancellation handler instead of
// delegating: a Release that returned has freed its permit, so a TryAcquire
// after it must succeed even if the waiter it was meant for is being
// cancelled at that moment (with delegation the permit would still be in
// the cell and TryAcquire would fail: not linearizable).
func TestSemaphoreReleaseRacingCancelThenTryAcquire(t *testing.T) {
	s := NewSemaphore(1)
	parked, c := notifyAt(hookParked, 1), stopAt(hookCancelled, 1)
	waits := notifyAt(hookResumeWaitsHandler, 1)
	install(&s.p.q, parked, c, waits)
	s.Acquire(bg)
	ctx, cancel := context.WithCancel(bg)
	acq := make(chan error, 1)
	go func() { acq <- s.Acquire(ctx) }()
	parked.wait(t)
	cancel()
	c.wait(t)
	released := make(chan struct{})
	go func() { s.Release(); close(released) }()
	select {
	case <-released: // returned while the waiter's handler is held back
		if !s.TryAcquire() {
			t.Fatal("TryAcquire failed after Release returned, with nobody holding")
		}
		s.Release()
	case <-waits.reached: // waits for the handler, as it must
		pending(t, released, "Release")
	case <-time.After(stuck):
		t.Fatal("Release neither returned nor waited")
	}
	c.go_()
	recv(t, released)
	if !s.TryAcquire() {
		t.Fatal("TryAcquire failed after Release returned, with nobody holding or waiting")
	}
	if err := recv(t, acq); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire = %v", err)
	}
}

// A semaphore created with no permits used as a signal, with the acquirer
// held between counting itself and suspending: the Sync Release breaks the
// cell and puts its permit back, so state is briefly 1 > n = 0. That must
// not be taken for a Release without Acquire (it panicked once, under
// load, in TestWithWaiting); the acquirer restarts and gets the permit.
func TestSemaphoreSignalBrokenCellNoPanic(t *testing.T) {
	s := NewSemaphore(0)
	counted := stopAt(hookCounted, 1)
	install(&s.p.q, counted)
	done := make(chan error, 1)
	go func() { done <- s.Acquire(bg) }()
	counted.wait(t)
	s.Release() // the Resume finds the cell empty, gives up, breaks it
	if got := s.Available(); got != 1 {
		t.Fatalf("Available = %d after the broken hand-over, want 1 (the permit back)", got)
	}
	counted.go_()
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
	if got := s.Available(); got != 0 {
		t.Fatalf("Available = %d at the end, want 0", got)
	}
}
