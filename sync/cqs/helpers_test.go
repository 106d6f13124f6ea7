package cqs

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"yolk/internal/testwait"
)

// stuck is how long a test waits for something that must happen before it
// declares a hang; it is a failure bound, not a timing assumption.
const stuck = 20 * time.Second

// hang bounds how long a test waits for its goroutines to finish (a
// stress round takes a few seconds under -race on a loaded machine); past
// it the run is declared stuck. Like stuck, it is a failure bound only.
const hang = 3 * stuck

// waitAll is wg.Wait with a watchdog: if the goroutines have not all
// finished after hang, it fails the test, naming it, and logs the stacks of
// all goroutines, so that a lost wake-up shows up as a failure with the
// parked goroutines instead of a hang until go test's global timeout.
func waitAll(t testing.TB, wg *sync.WaitGroup) {
	t.Helper()
	waitAllFor(t, wg, hang)
}

func waitAllFor(t testing.TB, wg *sync.WaitGroup, d time.Duration) {
	t.Helper()
	if !testwait.Wait(wg, d) {
		t.Fatalf("%s: goroutines not finished after %v (lost wake-up?); all goroutines:\n%s", t.Name(), d, testwait.Stacks())
	}
}

// A stop is an injection point that halts the n-th goroutine to reach it
// until the test releases it.
type stop struct {
	point   hookPoint
	n       int32
	hits    atomic.Int32
	reached chan struct{}
	release chan struct{}
}

func stopAt(p hookPoint, n int32) *stop {
	return &stop{point: p, n: n, reached: make(chan struct{}), release: make(chan struct{})}
}

// notifyAt reports the n-th arrival at p without halting it.
func notifyAt(p hookPoint, n int32) *stop {
	s := stopAt(p, n)
	close(s.release)
	return s
}

func (s *stop) wait(t *testing.T) {
	t.Helper()
	select {
	case <-s.reached:
	case <-time.After(stuck):
		t.Fatalf("no goroutine reached hook point %d (hit %d)", s.point, s.n)
	}
}

func (s *stop) go_() { close(s.release) }

// install sets q's hook to the given stops. It must run before any
// goroutine uses q.
func install(q *Queue, stops ...*stop) {
	q.hook = func(p hookPoint) {
		for _, s := range stops {
			if s.point == p && s.hits.Add(1) == s.n {
				close(s.reached)
				<-s.release
			}
		}
	}
}

// testHandlers are Smart-cancellation handlers whose decision the test sets.
type testHandlers struct {
	keep    atomic.Bool // OnCancellation's answer
	calls   atomic.Int32
	mu      sync.Mutex
	refused []any
}

func (h *testHandlers) OnCancellation() bool { h.calls.Add(1); return h.keep.Load() }
func (h *testHandlers) CompleteRefusedResume(v any) {
	h.mu.Lock()
	h.refused = append(h.refused, v)
	h.mu.Unlock()
}
func (h *testHandlers) refusedValues() []any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]any(nil), h.refused...)
}

// countingWaiting is GoroutineWaiting that counts parkers.
type countingWaiting struct {
	GoroutineWaiting
	parkers atomic.Int32
}

func (w *countingWaiting) NewParker() Parker { w.parkers.Add(1); return w.GoroutineWaiting.NewParker() }

type outcome struct {
	v  any
	st Status
}

// suspendAsync runs q.Suspend(ctx) on a new goroutine.
func suspendAsync(q *Queue, ctx context.Context) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		v, st := q.Suspend(ctx)
		ch <- outcome{v, st}
	}()
	return ch
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(stuck):
		t.Fatal("operation did not complete")
	}
	panic("unreachable")
}

// pending asserts that nothing has arrived on ch (yet).
func pending[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s completed too early: %v", what, v)
	default:
	}
}

// cell returns cell i of q's array (test inspection only).
func (q *Queue) cell(i int64) *node {
	for s := q.cells.head.Load(); s != nil; s = s.next.Load() {
		if s.id == i/SegmentSize {
			return s.cells[i%SegmentSize].Load()
		}
	}
	for s := q.cells.tail.Load(); s != nil; s = s.next.Load() {
		if s.id == i/SegmentSize {
			return s.cells[i%SegmentSize].Load()
		}
	}
	return nil
}

// reachable counts the segments reachable from q's ends (what the garbage
// collector must keep) and reports whether any cell in them still holds a
// value node (a value in flight: left by a Resume, not yet taken).
func (q *Queue) reachable() (segments int, values int) {
	seen := map[*qsegment]bool{}
	var walk func(s *qsegment)
	walk = func(s *qsegment) {
		for ; s != nil && !seen[s]; s = s.next.Load() {
			seen[s] = true
			for i := range s.cells {
				if n := s.cells[i].Load(); n != nil && n.kind == kindValue {
					values++
				}
			}
			if p := s.prev.Load(); p != nil {
				walk(p)
			}
		}
	}
	walk(q.cells.head.Load())
	walk(q.cells.tail.Load())
	return len(seen), values
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
