package cqs

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"yolk/internal/testwait"
)

// cycles is the number of suspend-and-cancel cycles per memory test: a
// million by default, 100 000 with -short.
func cycles() int {
	if testing.Short() {
		return 100_000
	}
	return 1_000_000
}

func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// checkBounded asserts that q keeps at most maxSegs segments reachable,
// that the run really went through many segments, and (default run) that
// the heap did not grow by more than a small fraction of what keeping
// every segment would cost.
func checkBounded(t *testing.T, q *Queue, maxSegs int, created int64, n int, before uint64) {
	t.Helper()
	segs, vals := q.reachable()
	if segs > maxSegs {
		t.Errorf("%d segments reachable after %d cycles, want <= %d", segs, n, maxSegs)
	}
	if vals != 0 {
		t.Errorf("%d values left in cells", vals)
	}
	if min := int64(n/SegmentSize) - 1; created < min {
		t.Errorf("only %d segments created for %d suspensions, want >= %d", created, n, min)
	}
	after := heapAlloc()
	leak := uint64(n/SegmentSize) * 544 // every segment kept
	if grow := int64(after) - int64(before); !testing.Short() && grow > int64(leak/8) {
		t.Errorf("heap grew by %d bytes over %d cycles (keeping all segments: %d)", grow, n, leak)
	}
	t.Logf("%d cycles: %d segments created, %d reachable, heap %+d bytes",
		n, created, segs, int64(after)-int64(before))
}

// A million Suspends whose ctx is already done (the paper's suspend-and-
// abort cycle) in every cancellation mode: the array stays a few segments.
// Nothing parks here (the waiter is the shared pre-cancelled node);
// TestMemoryBoundedMillionParkedCancel parks every waiter.
func TestMemoryBoundedSuspendCancel(t *testing.T) {
	for _, m := range []struct {
		r ResumeMode
		c CancelMode
	}{{Async, Simple}, {Async, Smart}, {Sync, Smart}} {
		t.Run(fmt.Sprintf("resume=%d/cancel=%d", m.r, m.c), func(t *testing.T) {
			h := &testHandlers{}
			h.keep.Store(true)
			q := newQueue(m.r, m.c, h, nil)
			ctx := cancelled()
			n := cycles()
			before := heapAlloc()
			c0 := segmentsCreated.Load()
			for i := 0; i < n; i++ {
				if _, st := q.Suspend(ctx); st != Cancelled {
					t.Fatalf("Suspend %d = %v", i, st)
				}
			}
			checkBounded(t, q, 3, segmentsCreated.Load()-c0, n, before)
		})
	}
}

// The same on a Semaphore with no permits, with 1000 goroutines parked
// in it the whole time: the live waiters' segments stay, the cancelled
// ones go; then a Release still reaches the first live waiter.
func TestMemoryBoundedWithLiveWaiters(t *testing.T) {
	const live = 1000
	s := NewSemaphore(0)
	wctx, stopWaiters := context.WithCancel(bg)
	var wg sync.WaitGroup
	errs := make(chan error, live)
	parked := notifyAt(hookParked, live)
	install(&s.p.q, parked)
	for i := 0; i < live; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- s.Acquire(wctx) }()
	}
	parked.wait(t)
	n := cycles()
	before := heapAlloc()
	c0 := segmentsCreated.Load()
	ctx := cancelled()
	for i := 0; i < n; i++ {
		if err := s.Acquire(ctx); err == nil {
			t.Fatal("Acquire with no permits succeeded")
		}
	}
	checkBounded(t, &s.p.q, live/SegmentSize+4, segmentsCreated.Load()-c0, n, before)
	if got := s.Available(); got != -live {
		t.Fatalf("Available = %d, want %d", got, -live)
	}
	s.Release() // goes to a live waiter, not into a cancelled cell
	if err := recv(t, errs); err != nil {
		t.Fatalf("first resumed waiter: %v", err)
	}
	stopWaiters()
	waitAll(t, &wg)
	close(errs)
	for err := range errs {
		if err == nil {
			t.Fatal("a second waiter acquired the single permit")
		}
	}
	if got := s.Available(); got != 0 {
		t.Fatalf("Available = %d after all waiters left, want 0", got)
	}
}

// Waiters that really park and are then cancelled, in batches: the same
// bound holds on the parking path.
func TestMemoryBoundedParkedCancel(t *testing.T) {
	rounds, batch := 200, 100
	if testing.Short() {
		rounds = 40
	}
	m := NewMutex()
	m.Lock(bg)
	c0 := segmentsCreated.Load()
	for r := 0; r < rounds; r++ {
		ctx, cancel := context.WithCancel(bg)
		var wg sync.WaitGroup
		for i := 0; i < batch; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := m.Lock(ctx); err == nil {
					t.Error("Lock on a held mutex succeeded")
				}
			}()
		}
		cancel()
		waitAll(t, &wg)
	}
	segs, _ := m.p.q.reachable()
	if segs > 3 {
		t.Fatalf("%d segments reachable after %d cancelled Locks (%d created), want <= 3", segs, rounds*batch, segmentsCreated.Load()-c0)
	}
	m.Unlock()
	if !m.TryLock() {
		t.Fatal("mutex not free")
	}
}

// Plain traffic, no cancellation: segments behind both ends are dropped
// (the resume end cuts the prev links behind it).
func TestMemoryBoundedPlainTraffic(t *testing.T) {
	q := newQueue(Async, Simple, nil, nil)
	n := cycles() / 10
	c0 := segmentsCreated.Load()
	before := heapAlloc()
	for i := 0; i < n; i++ {
		q.Resume(i)
		if v, st := q.Suspend(bg); st != Resumed || v != i {
			t.Fatalf("cycle %d: Suspend = %v %v", i, v, st)
		}
	}
	checkBounded(t, q, 2, segmentsCreated.Load()-c0, n, before)
}

// blockWaiting is GoroutineWaiting that counts the Parks that found
// neither a value nor a done ctx and went on to block.
type blockWaiting struct{ blocked atomic.Int64 }

func (w *blockWaiting) NewParker() Parker {
	return &blockParker{GoroutineWaiting{}.NewParker().(chanParker), w}
}
func (w *blockWaiting) Spin(a int) bool { return GoroutineWaiting{}.Spin(a) }

type blockParker struct {
	chanParker
	w *blockWaiting
}

func (p *blockParker) Park(ctx context.Context) bool {
	select {
	case <-p.chanParker:
		return true
	case <-ctx.Done():
		return false
	default:
	}
	p.w.blocked.Add(1)
	return p.chanParker.Park(ctx)
}

// parkedCycles is the number of really parked suspend-and-cancel cycles
// per cancellation mode of TestMemoryBoundedMillionParkedCancel: four
// modes × 250,000 = a million (with -short, 25,000 per mode).
func parkedCycles() int {
	if testing.Short() {
		return 25_000
	}
	return 250_000
}

// A million suspend-and-cancel cycles in which every waiter really
// suspends: 1000 goroutines each Suspend on a queue that is never resumed;
// only when all 1000 are in Park with nothing to take (counted by
// blockWaiting) is their shared ctx cancelled; all must return Cancelled,
// and the next round starts. Run in each of the four mode pairs (Async and
// Sync resumption, Simple and Smart cancellation; with no Resume the two
// resumption modes take the same cancellation path, but they are distinct
// queue configurations). While 1000 waiters are parked, at most the
// segments holding them (plus the ends) may be reachable; at the end, a
// few; and the heap must not have kept the cancelled segments.
func TestMemoryBoundedMillionParkedCancel(t *testing.T) {
	const live = 1000
	for _, m := range []struct {
		r ResumeMode
		c CancelMode
	}{{Async, Simple}, {Async, Smart}, {Sync, Simple}, {Sync, Smart}} {
		name := [...]string{"Async", "Sync"}[m.r] + "/" + [...]string{"Simple", "Smart"}[m.c]
		t.Run(name, func(t *testing.T) {
			w := &blockWaiting{}
			h := &testHandlers{}
			h.keep.Store(true)
			q := newQueue(m.r, m.c, h, w)
			ctxs := make(chan context.Context, live)
			var wg sync.WaitGroup
			var notCancelled atomic.Int64
			for i := 0; i < live; i++ {
				go func() {
					for ctx := range ctxs {
						if _, st := q.Suspend(ctx); st != Cancelled {
							notCancelled.Add(1)
						}
						wg.Done()
					}
				}()
			}
			defer close(ctxs)
			n := parkedCycles() / live * live
			maxLive := live/SegmentSize + 4
			before := heapAlloc()
			c0 := segmentsCreated.Load()
			peak := 0
			for r := 0; r < n/live; r++ {
				ctx, cancel := context.WithCancel(bg)
				wg.Add(live)
				for i := 0; i < live; i++ {
					ctxs <- ctx
				}
				waitFor(t, func() bool { return w.blocked.Load() >= int64((r+1)*live) }, "1000 waiters to park")
				if r%50 == 0 {
					segs, _ := q.reachable()
					peak = max(peak, segs)
					if segs > maxLive {
						cancel()
						t.Fatalf("round %d: %d segments reachable with %d waiters parked, want <= %d", r, segs, live, maxLive)
					}
				}
				cancel()
				waitAll(t, &wg)
			}
			if got := w.blocked.Load(); got != int64(n) {
				t.Fatalf("%d suspensions blocked in Park, want all %d", got, n)
			}
			if bad := notCancelled.Load(); bad != 0 {
				t.Fatalf("%d of %d parked suspensions did not return Cancelled", bad, n)
			}
			t.Logf("peak %d segments reachable with %d parked", peak, live)
			checkBounded(t, q, 3, segmentsCreated.Load()-c0, n, before)
		})
	}
}

// waitFor polls cond, yielding, until it holds; it fails the test with
// all goroutine stacks after hang.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: timed out waiting for %s; all goroutines:\n%s", t.Name(), what, testwait.Stacks())
		}
		runtime.Gosched()
	}
}
