package cqs

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"yolk/internal/testwait"
)

// Deterministic tests of the cell life-cycle: each forces one interleaving
// with injection points and checks the outcome and the cell's final state.

func newQueue(r ResumeMode, c CancelMode, h Handlers, w Waiting) *Queue {
	q := new(Queue)
	q.Init(Config{Resume: r, Cancel: c, Handlers: h, Waiting: w})
	return q
}

// Resume before Suspend, Async: the value waits in the cell and the
// Suspend takes it without parking (elimination).
func TestEliminationAsync(t *testing.T) {
	w := &countingWaiting{}
	q := newQueue(Async, Simple, nil, w)
	claimed := stopAt(hookSuspendClaimed, 1)
	install(q, claimed)
	res := suspendAsync(q, context.Background())
	claimed.wait(t)
	if !q.Resume(42) {
		t.Fatal("Async Resume into an empty cell failed")
	}
	if n := q.cell(0); n == nil || n.kind != kindValue || n.val != 42 {
		t.Fatalf("cell 0 after Resume = %+v, want the value 42", n)
	}
	claimed.go_()
	if o := recv(t, res); o.st != Resumed || o.v != 42 {
		t.Fatalf("Suspend = %v %v, want 42 Resumed", o.v, o.st)
	}
	if q.cell(0) != takenMark {
		t.Fatal("cell 0 not TAKEN after elimination")
	}
	if n := w.parkers.Load(); n != 0 {
		t.Fatalf("elimination created %d parkers, want 0", n)
	}
}

// Resume before Suspend, Sync: the Resume waits, gives up, breaks the
// cell; both it and the Suspend fail.
func TestBrokenCellSync(t *testing.T) {
	q := newQueue(Sync, Simple, nil, nil)
	claimed := stopAt(hookSuspendClaimed, 1)
	install(q, claimed)
	res := suspendAsync(q, context.Background())
	claimed.wait(t)
	if q.Resume(1) {
		t.Fatal("Sync Resume succeeded although its Suspend was held back")
	}
	if q.cell(0) != brokenMark {
		t.Fatal("cell 0 not BROKEN")
	}
	claimed.go_()
	if o := recv(t, res); o.st != Broken {
		t.Fatalf("Suspend on a broken cell = %v, want Broken", o.st)
	}
	// Both restart on fresh cells and meet. Each side restarts on Broken:
	// if the Resume comes first again and gives up before the Suspend
	// arrives (a loaded machine), both fail once more and retry.
	again := make(chan outcome, 1)
	go func() {
		for {
			if v, st := q.Suspend(context.Background()); st != Broken {
				again <- outcome{v, st}
				return
			}
		}
	}()
	for deadline := time.Now().Add(stuck); !q.Resume(2); {
		if time.Now().After(deadline) {
			t.Fatalf("Resume and Suspend did not meet within %v:\n%s", stuck, testwait.Stacks())
		}
	}
	if o := recv(t, again); o.st != Resumed || o.v != 2 {
		t.Fatalf("after restart Suspend = %v %v", o.v, o.st)
	}
}

// rendezvousWaiting lets the held-back Suspend run during the first Spin
// of the Sync Resume and waits until it has taken the value.
type rendezvousWaiting struct {
	GoroutineWaiting
	first func()
	done  bool
}

func (w *rendezvousWaiting) Spin(a int) bool {
	if !w.done {
		w.done = true
		w.first()
	}
	return w.GoroutineWaiting.Spin(a)
}

// Resume before Suspend, Sync, and the Suspend arrives within the bounded
// wait: a rendezvous, no parking.
func TestSyncRendezvous(t *testing.T) {
	claimed := stopAt(hookSuspendClaimed, 1)
	var res <-chan outcome
	var got outcome
	w := &rendezvousWaiting{}
	w.first = func() {
		claimed.go_()
		got = recv(t, res)
	}
	q := newQueue(Sync, Simple, nil, w)
	install(q, claimed)
	res = suspendAsync(q, context.Background())
	claimed.wait(t)
	if !q.Resume(5) {
		t.Fatal("Sync Resume failed although its Suspend took the value")
	}
	if got.st != Resumed || got.v != 5 || q.cell(0) != takenMark {
		t.Fatalf("Suspend = %v %v, cell %p; want 5 Resumed, TAKEN", got.v, got.st, q.cell(0))
	}
}

// A waiter whose ctx is done while a Resume hands it a value, and the
// Resume's CAS wins: the waiter gets the value, no cancellation handler runs.
func TestCancelLosesToResume(t *testing.T) {
	for _, m := range []struct {
		r ResumeMode
		c CancelMode
	}{{Async, Simple}, {Async, Smart}, {Sync, Simple}, {Sync, Smart}} {
		t.Run(fmt.Sprintf("resume=%d/cancel=%d", m.r, m.c), func(t *testing.T) {
			h := &testHandlers{}
			q := newQueue(m.r, m.c, h, nil)
			parked := notifyAt(hookParked, 1)
			interrupted := stopAt(hookParkInterrupted, 1)
			install(q, parked, interrupted)
			ctx, cancel := context.WithCancel(context.Background())
			res := suspendAsync(q, ctx)
			parked.wait(t)
			cancel()
			interrupted.wait(t) // Park saw ctx.Done; the cancel CAS is next
			if !q.Resume("v") {
				t.Fatal("Resume of a not-yet-cancelled waiter failed")
			}
			interrupted.go_()
			if o := recv(t, res); o.st != Resumed || o.v != "v" {
				t.Fatalf("Suspend = %v %v, want v Resumed", o.v, o.st)
			}
			if h.calls.Load() != 0 || q.cell(0) != resumedMark {
				t.Fatalf("OnCancellation calls %d, cell %p; want 0, RESUMED", h.calls.Load(), q.cell(0))
			}
		})
	}
}

// parkCancelled parks a waiter, cancels it and holds it right after it
// won the cancellation, before its handler runs.
func parkCancelled(t *testing.T, q *Queue, parked, cancelledStop *stop) <-chan outcome {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res := suspendAsync(q, ctx)
	parked.wait(t)
	cancel()
	cancelledStop.wait(t)
	return res
}

// Simple cancellation: the Resume that meets a cancelled waiter fails.
func TestSimpleCancelFailsResume(t *testing.T) {
	q := newQueue(Async, Simple, nil, nil)
	c := stopAt(hookCancelled, 1)
	parked := notifyAt(hookParked, 1)
	install(q, parked, c)
	res := parkCancelled(t, q, parked, c)
	if q.Resume(1) {
		t.Fatal("Simple Resume on a cancelled waiter succeeded")
	}
	c.go_()
	if o := recv(t, res); o.st != Cancelled {
		t.Fatalf("Suspend = %v, want Cancelled", o.st)
	}
	if q.cell(0) != cancelledMark {
		t.Fatal("cell 0 not CANCELLED")
	}
	if q.Resume(1) { // the next cell is empty: elimination
		if n := q.cell(1); n == nil || n.val != 1 {
			t.Fatal("value not left in cell 1")
		}
	}
}

// Smart + Async, the cancellation wins and the Resume delegates its value
// to the cancellation handler. keep=true: the handler passes it on to the
// next waiter. keep=false: the cell becomes REFUSE and the value goes to
// CompleteRefusedResume.
func TestCancelWinsAsyncDelegates(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			h := &testHandlers{}
			h.keep.Store(keep)
			q := newQueue(Async, Smart, h, nil)
			c := stopAt(hookCancelled, 1)
			first, second := notifyAt(hookParked, 1), notifyAt(hookParked, 2)
			install(q, c, first, second)
			res1 := parkCancelled(t, q, first, c)
			res2 := suspendAsync(q, context.Background())
			second.wait(t)
			if !q.Resume("x") {
				t.Fatal("Smart Async Resume failed")
			}
			if n := q.cell(0); n == nil || n.kind != kindValue || n.val != "x" {
				t.Fatal("Resume did not delegate its value into the cancelled waiter's cell")
			}
			pending(t, res2, "second waiter")
			c.go_()
			if o := recv(t, res1); o.st != Cancelled {
				t.Fatalf("first waiter = %v, want Cancelled", o.st)
			}
			if keep {
				if o := recv(t, res2); o.st != Resumed || o.v != "x" {
					t.Fatalf("second waiter = %v %v, want x", o.v, o.st)
				}
				if q.cell(0) != cancelledMark || len(h.refusedValues()) != 0 {
					t.Fatal("want cell 0 CANCELLED and nothing refused")
				}
				return
			}
			if r := h.refusedValues(); len(r) != 1 || r[0] != "x" {
				t.Fatalf("refused values = %v, want [x]", r)
			}
			if q.cell(0) != refuseMark {
				t.Fatal("cell 0 not REFUSE")
			}
			pending(t, res2, "second waiter")
			q.Resume("y")
			if o := recv(t, res2); o.v != "y" {
				t.Fatalf("second waiter got %v, want y", o.v)
			}
		})
	}
}

// Smart + Sync, the cancellation wins: the Resume must not leave its value
// in the cell, so it waits for the handler's decision, then skips the cell
// (keep=true) or is refused (keep=false).
func TestCancelWinsSyncWaitsForHandler(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			h := &testHandlers{}
			h.keep.Store(keep)
			q := newQueue(Sync, Smart, h, nil)
			c := stopAt(hookCancelled, 1)
			first, second := notifyAt(hookParked, 1), notifyAt(hookParked, 2)
			waits := notifyAt(hookResumeWaitsHandler, 1)
			install(q, c, first, second, waits)
			res1 := parkCancelled(t, q, first, c)
			res2 := suspendAsync(q, context.Background())
			second.wait(t)
			resumed := make(chan bool, 1)
			go func() { resumed <- q.Resume("x") }()
			waits.wait(t)
			pending(t, resumed, "Sync Resume")
			c.go_()
			if !recv(t, resumed) {
				t.Fatal("Smart Sync Resume failed")
			}
			if o := recv(t, res1); o.st != Cancelled {
				t.Fatalf("first waiter = %v, want Cancelled", o.st)
			}
			if keep {
				if o := recv(t, res2); o.v != "x" {
					t.Fatalf("second waiter got %v, want x", o.v)
				}
				return
			}
			if r := h.refusedValues(); len(r) != 1 || r[0] != "x" {
				t.Fatalf("refused = %v, want [x]", r)
			}
			pending(t, res2, "second waiter")
			q.Resume("y")
			if o := recv(t, res2); o.v != "y" {
				t.Fatalf("second waiter got %v, want y", o.v)
			}
		})
	}
}

// Smart cancellation skips segments full of cancelled cells in one step:
// a Resume after 3 segments of cancelled waiters visits the first segment
// (pinned by the resume end) cell by cell, then jumps.
func TestSmartSkipsRemovedSegments(t *testing.T) {
	h := &testHandlers{}
	h.keep.Store(true)
	q := newQueue(Async, Smart, h, nil)
	tries := notifyAt(hookResumeClaimed, 1<<30) // counts, never fires
	install(q, tries)
	for i := 0; i < 3*SegmentSize; i++ {
		if _, st := q.Suspend(cancelled()); st != Cancelled {
			t.Fatalf("Suspend %d = %v", i, st)
		}
	}
	parked := notifyAt(hookParked, 1)
	install(q, parked, tries)
	res := suspendAsync(q, context.Background())
	parked.wait(t)
	if n, _ := q.reachable(); n > 2 {
		t.Fatalf("%d segments reachable, want <= 2 (head + live tail)", n)
	}
	q.Resume(7)
	if o := recv(t, res); o.v != 7 {
		t.Fatalf("live waiter got %v", o.v)
	}
	if n := tries.hits.Load(); n > SegmentSize+2 {
		t.Fatalf("Resume made %d attempts, want <= %d", n, SegmentSize+2)
	}
	if got := q.cells.deqIdx.Load(); got != 3*SegmentSize+1 {
		t.Fatalf("resume index %d, want %d", got, 3*SegmentSize+1)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records instead of failing.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper()                           {}
func (f *fatalRecorder) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

// The watchdog itself: a goroutine that never finishes makes waitAll fail
// with the test's name and the stuck goroutine's stack, instead of hanging.
func TestWaitAllWatchdog(t *testing.T) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	wg.Add(1)
	go func() { defer wg.Done(); stuckForWatchdogTest(release) }()
	f := &fatalRecorder{TB: t}
	waitAllFor(f, &wg, 50*time.Millisecond)
	close(release)
	wg.Wait()
	if !strings.Contains(f.msg, t.Name()) || !strings.Contains(f.msg, "stuckForWatchdogTest") {
		t.Fatalf("watchdog message lacks the test name or the stuck goroutine's stack:\n%s", f.msg)
	}
	f.msg = ""
	waitAllFor(f, &wg, time.Second)
	if f.msg != "" {
		t.Fatalf("watchdog fired on a finished group: %s", f.msg)
	}
}

//go:noinline
func stuckForWatchdogTest(release chan struct{}) { <-release }
