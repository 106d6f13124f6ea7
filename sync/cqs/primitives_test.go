package cqs

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
)

// FIFO: goroutines that wait are served in the order in which they began
// waiting (arrival is sequenced with the parking hook).
func TestFIFO(t *testing.T) {
	const n = 100
	type prim struct {
		name    string
		q       func() *Queue
		wait    func(i int) func() int // returns what the waiter got
		release func(i int)
	}
	s := NewSemaphore(0)
	m := NewMutex()
	m.Lock(bg)
	qp, sp := NewQueuePool[int](), NewStackPool[int]()
	for _, p := range []prim{
		{"semaphore", func() *Queue { return &s.p.q }, func(i int) func() int { return func() int { s.Acquire(bg); return i } }, func(int) { s.Release() }},
		{"mutex", func() *Queue { return &m.p.q }, func(i int) func() int { return func() int { m.Lock(bg); return i } }, func(int) { m.Unlock() }},
		{"queuepool", func() *Queue { return &qp.q }, func(int) func() int { return func() int { v, _ := qp.Take(bg); return v } }, func(i int) { qp.Put(i) }},
		{"stackpool", func() *Queue { return &sp.q }, func(int) func() int { return func() int { v, _ := sp.Take(bg); return v } }, func(i int) { sp.Put(i) }},
	} {
		t.Run(p.name, func(t *testing.T) {
			stops := make([]*stop, n)
			for i := range stops {
				stops[i] = notifyAt(hookParked, int32(i+1))
			}
			install(p.q(), stops...)
			got := make(chan [2]int, n)
			for i := 0; i < n; i++ {
				f := p.wait(i)
				go func() { got <- [2]int{i, f()} }()
				stops[i].wait(t) // waiter i is parked before i+1 starts
			}
			for i := 0; i < n; i++ {
				p.release(i)
				r := recv(t, got)
				// The i-th release must wake waiter i (pools: with element i).
				if r[0] != i || r[1] != i {
					t.Fatalf("release %d woke waiter %d (got %d)", i, r[0], r[1])
				}
			}
		})
	}
}

func TestSemaphoreBasics(t *testing.T) {
	s := NewSemaphore(2)
	if !s.TryAcquire() || s.Acquire(bg) != nil || s.TryAcquire() {
		t.Fatal("two permits expected")
	}
	if err := s.Acquire(cancelled()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with done ctx and no permit = %v", err)
	}
	if s.Available() != 0 {
		t.Fatalf("cancelled Acquire left Available = %d", s.Available())
	}
	s.Release()
	if err := s.Acquire(cancelled()); err != nil {
		t.Fatal("a free permit must be taken even with a done ctx")
	}
	s.Release()
	s.Release()
	mustPanic(t, "Release beyond k", s.Release)
	mustPanic(t, "negative permits", func() { NewSemaphore(-1) })
}

func TestMutexBasics(t *testing.T) {
	m := NewMutex()
	mustPanic(t, "Unlock of unlocked", m.Unlock)
	m = NewMutex()
	if !m.TryLock() || m.TryLock() {
		t.Fatal("TryLock")
	}
	if err := m.Lock(cancelled()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock on held mutex with done ctx = %v", err)
	}
	m.Unlock()
	if err := m.Lock(bg); err != nil {
		t.Fatal(err)
	}
	m.Unlock()
}

func TestLatchBasics(t *testing.T) {
	l := NewCountDownLatch(0)
	if err := l.Await(cancelled()); err != nil {
		t.Fatal("latch with count 0 must be open")
	}
	l = NewCountDownLatch(2)
	if err := l.Await(cancelled()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Await on a closed latch with done ctx = %v", err)
	}
	res := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() { res <- l.Await(bg) }()
	}
	l.CountDown()
	pending(t, res, "Await before the count reached zero")
	l.CountDown()
	for i := 0; i < 3; i++ {
		if err := recv(t, res); err != nil {
			t.Fatal(err)
		}
	}
	l.CountDown() // extra calls are harmless
	if l.Count() != -1 || l.Await(bg) != nil {
		t.Fatal("latch after extra CountDown")
	}
}

func TestBarrierBasics(t *testing.T) {
	b := NewBarrier(3)
	res := make(chan error, 2)
	ctx, cancel := context.WithCancel(bg)
	parked := notifyAt(hookParked, 1)
	install(&b.q, parked)
	go func() { res <- b.Arrive(ctx) }()
	parked.wait(t)
	cancel()
	if err := recv(t, res); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Arrive = %v", err)
	}
	go func() { res <- b.Arrive(bg) }()
	pending(t, res, "second party")
	if err := b.Arrive(bg); err != nil { // the third; the cancelled one counted
		t.Fatal(err)
	}
	if err := recv(t, res); err != nil {
		t.Fatal(err)
	}
	mustPanic(t, "fourth Arrive", func() { b.Arrive(bg) })
	mustPanic(t, "zero parties", func() { NewBarrier(0) })
}

// WithWaiting swaps the park policy without touching the queue logic.
func TestWithWaiting(t *testing.T) {
	w := &countingWaiting{}
	s := NewSemaphore(0, WithWaiting(w))
	done := make(chan error)
	go func() { done <- s.Acquire(bg) }()
	for s.Available() != -1 {
		runtime.Gosched()
	}
	s.Release()
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
	if w.parkers.Load() > 1 {
		t.Fatalf("%d parkers for one suspension", w.parkers.Load())
	}
	if fmt.Sprint(Resumed, Cancelled, Broken) != "Resumed Cancelled Broken" {
		t.Fatal("Status.String")
	}
	mustPanic(t, "Smart without handlers", func() { new(Queue).Init(Config{Cancel: Smart}) })
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatalf("%s: no panic", what)
		}
	}()
	f()
}

// The paper's suspend-and-abort cycle (ctx already done, no permit free)
// goes through the queue without allocating, apart from a new segment
// every SegmentSize cycles.
func TestSuspendCancelAllocatesNothing(t *testing.T) {
	s := NewSemaphore(0)
	ctx := cancelled()
	allocs := testing.AllocsPerRun(10*SegmentSize, func() {
		if s.Acquire(ctx) == nil {
			t.Fatal("acquired")
		}
	})
	if allocs > 1.0/SegmentSize+0.01 {
		t.Fatalf("%.3f allocations per cancelled Acquire, want ~1/%d (one segment)", allocs, SegmentSize)
	}
}
