package cqs

import (
	"context"
	"sync/atomic"
)

// ResumeMode says what a Resume does when it reaches its cell before the
// matching Suspend.
type ResumeMode uint8

const (
	// Async leaves the value in the cell and returns at once; the Suspend
	// takes it later without parking (elimination). Resume never fails
	// because of this race.
	Async ResumeMode = iota
	// Sync leaves the value and waits (Waiting.Spin) for the Suspend to take
	// it; if it does not come in time, Resume breaks the cell and both it
	// and that Suspend fail (Broken) and must restart. No value is ever left
	// behind in the queue, which is what non-blocking siblings such as
	// TryAcquire need.
	Sync
)

// CancelMode says how a Resume treats a cancelled waiter.
type CancelMode uint8

const (
	// Simple: Resume fails on a cancelled waiter; the primitive restarts
	// it, so each cancelled waiter costs one failed Resume later.
	Simple CancelMode = iota
	// Smart: the cancelled waiter de-registers itself at once through
	// Handlers.OnCancellation, and Resume skips its cell (whole removed
	// segments in one step). If OnCancellation says no waiter is left for
	// the Resume that is bound to come, the cell becomes REFUSE and that
	// Resume hands its value to Handlers.CompleteRefusedResume instead.
	Smart
)

// Handlers are the primitive's part of smart cancellation.
type Handlers interface {
	// OnCancellation runs on the cancelled goroutine, before its Suspend
	// returns, and undoes the waiter's registration in the primitive's
	// state. It returns true if the Resume that will visit this cell can
	// skip it and still find another waiter, false if that Resume must be
	// refused.
	OnCancellation() bool
	// CompleteRefusedResume takes the value of a refused Resume back into
	// the primitive (it may run on the resuming or the cancelled goroutine).
	CompleteRefusedResume(v any)
}

// Config selects the modes of a Queue.
type Config struct {
	Resume   ResumeMode
	Cancel   CancelMode
	Handlers Handlers // required for Smart
	Waiting  Waiting  // nil means GoroutineWaiting
}

// Status is the outcome of a Suspend.
type Status uint8

const (
	Resumed   Status = iota // got a value, from a Resume or by elimination
	Cancelled               // ctx was done first; the cancellation is complete
	Broken                  // Sync only: the Resume for this cell gave up; restart
)

func (s Status) String() string {
	switch s {
	case Resumed:
		return "Resumed"
	case Cancelled:
		return "Cancelled"
	case Broken:
		return "Broken"
	}
	return "Status(?)"
}

// A Queue is the CQS waiter queue: an infinite array of cells with a
// Fetch-and-Add counter for Suspend and one for Resume. Suspend and Resume
// operations are matched in FIFO order, cell by cell; either may come first.
// A Queue must be initialised with Init before use and must not be copied.
type Queue struct {
	cells array[atomic.Pointer[node]]
	cfg   Config
	hook  func(hookPoint) // tests only: injection points, nil in production
}

type qsegment = segment[atomic.Pointer[node]]

// Init sets the modes and allocates the first segment.
func (q *Queue) Init(c Config) {
	if c.Cancel == Smart && c.Handlers == nil {
		panic("cqs: smart cancellation needs Handlers")
	}
	if c.Waiting == nil {
		c.Waiting = GoroutineWaiting{}
	}
	q.cfg = c
	q.cells.init()
}

// A node is what a cell points to: a waiter, a value left by a Resume, or
// one of the marker states of the cell life-cycle.
type node struct {
	kind   nodeKind
	state  atomic.Uint32 // waiters: waiting → wokenUp | givenUp, once
	val    any           // values; for waiters, what the Resume handed over
	parker Parker
}

type nodeKind uint8

const (
	kindMarker nodeKind = iota
	kindWaiter
	kindValue
)

// Waiter states.
const (
	waiting uint32 = iota
	wokenUp
	givenUp
)

// The cell life-cycle markers.
var (
	resumedMark   = &node{} // a waiter was resumed
	takenMark     = &node{} // a Suspend took the value a Resume left
	brokenMark    = &node{} // a Sync Resume gave up waiting for its Suspend
	cancelledMark = &node{} // the waiter was cancelled; Resume skips or fails
	refuseMark    = &node{} // the waiter was cancelled; its Resume is refused
)

// unitValue stands for struct{}{} so that permit-passing primitives never
// allocate a value node; a value node's identity only matters within its
// cell, so one shared node is safe.
var unitValue = &node{kind: kindValue, val: struct{}{}}

// cancelledWaiter is installed by a Suspend whose ctx is already done: it
// goes straight to the cancellation path without allocating or parking.
var cancelledWaiter = func() *node {
	n := &node{kind: kindWaiter}
	n.state.Store(givenUp)
	return n
}()

func boxValue(v any) *node {
	if _, ok := v.(struct{}); ok {
		return unitValue
	}
	return &node{kind: kindValue, val: v}
}

// Suspend claims the next cell and waits there for a Resume, unless one
// already left its value (elimination: no parking). If ctx is done first it
// cancels: with Simple the cell becomes CANCELLED; with Smart the
// Handlers.OnCancellation decision is applied before Suspend returns. A
// Resume that wins the race against the cancellation delivers its value
// and Suspend reports Resumed even though ctx is done.
func (q *Queue) Suspend(ctx context.Context) (any, Status) {
	s, i := q.cells.claimEnq()
	c := &s.cells[i%SegmentSize]
	q.at(hookSuspendClaimed)
	cur := c.Load()
	if cur == nil {
		w := cancelledWaiter
		if ctx.Err() == nil {
			w = &node{kind: kindWaiter, parker: q.cfg.Waiting.NewParker()}
		}
		if c.CompareAndSwap(nil, w) {
			return q.park(ctx, s, c, w)
		}
		cur = c.Load()
	}
	// A Resume came first. Take its value unless a Sync Resume gave up and
	// broke the cell (then both restart).
	if cur != brokenMark && c.CompareAndSwap(cur, takenMark) {
		return cur.val, Resumed
	}
	return nil, Broken
}

func (q *Queue) park(ctx context.Context, s *qsegment, c *atomic.Pointer[node], w *node) (any, Status) {
	if w != cancelledWaiter {
		q.at(hookParked)
		if w.parker.Park(ctx) {
			return w.val, Resumed
		}
		q.at(hookParkInterrupted)
		if !w.state.CompareAndSwap(waiting, givenUp) {
			// A Resume won the race; its Unpark is on the way.
			w.parker.Park(context.Background())
			return w.val, Resumed
		}
	}
	q.at(hookCancelled)
	q.cancelCell(s, c, w)
	return nil, Cancelled
}

// cancelCell is the cancellation handler, run by the cancelled goroutine
// after it won the race against any Resume.
func (q *Queue) cancelCell(s *qsegment, c *atomic.Pointer[node], w *node) {
	if q.cfg.Cancel == Simple {
		c.Store(cancelledMark)
		s.onCancelledCell()
		return
	}
	if q.cfg.Handlers.OnCancellation() {
		if old := c.Swap(cancelledMark); old != w {
			// An Async Resume delegated its completion to us: its value
			// goes to the next waiter. (Smart Async Resume cannot fail.)
			q.Resume(old.val)
			return
		}
		s.onCancelledCell()
		return
	}
	if old := c.Swap(refuseMark); old != w {
		q.cfg.Handlers.CompleteRefusedResume(old.val)
	}
}

type resumeResult uint8

const (
	resumeOK resumeResult = iota
	resumeCancelled
	resumeBroken
)

// Resume hands v to the first waiter that has not been resumed yet, or
// leaves it for the next Suspend. It reports false only with Simple
// cancellation when that waiter was cancelled, or in Sync mode when the
// cell broke; the caller then restarts its operation. With Smart
// cancellation cancelled cells are skipped, and a refused Resume counts as
// success (its value went to CompleteRefusedResume).
func (q *Queue) Resume(v any) bool {
	for {
		switch q.tryResume(v) {
		case resumeOK:
			return true
		case resumeBroken:
			return false
		case resumeCancelled:
			if q.cfg.Cancel == Simple {
				return false
			}
		}
	}
}

func (q *Queue) tryResume(v any) resumeResult {
	s, i := q.cells.claimDeq()
	q.at(hookResumeClaimed)
	if s.id > i/SegmentSize {
		// Cell i is in a removed segment, all of whose cells are cancelled.
		if q.cfg.Cancel == Smart {
			q.cells.skipDeqTo(s.id * SegmentSize)
		}
		return resumeCancelled
	}
	c := &s.cells[i%SegmentSize]
	for {
		cur := c.Load()
		switch {
		case cur == nil:
			val := boxValue(v)
			if !c.CompareAndSwap(nil, val) {
				continue
			}
			if q.cfg.Resume == Async {
				return resumeOK
			}
			for a := 0; ; a++ {
				if c.Load() == takenMark {
					return resumeOK
				}
				if !q.cfg.Waiting.Spin(a) {
					break
				}
			}
			if c.CompareAndSwap(val, brokenMark) {
				return resumeBroken
			}
			return resumeOK // taken at the last moment
		case cur == cancelledMark:
			return resumeCancelled
		case cur == refuseMark:
			q.cfg.Handlers.CompleteRefusedResume(v)
			return resumeOK
		case cur.kind == kindWaiter:
			if cur.state.CompareAndSwap(waiting, wokenUp) {
				cur.val = v
				c.Store(resumedMark)
				cur.parker.Unpark()
				return resumeOK
			}
			// The waiter is cancelled; its handler has not finished.
			if q.cfg.Cancel == Simple {
				return resumeCancelled
			}
			if q.cfg.Resume == Async {
				// Delegate: the handler will pass v on or refuse it.
				if c.CompareAndSwap(cur, boxValue(v)) {
					return resumeOK
				}
				continue
			}
			// Sync must not leave v behind: wait for the handler to mark
			// the cell CANCELLED or REFUSE. This wait is the one place where
			// Resume is blocking (on one cancelling goroutine).
			q.at(hookResumeWaitsHandler)
			for a := 0; c.Load() == cur; a++ {
				q.cfg.Waiting.Spin(a)
			}
		default:
			panic("cqs: unexpected cell state")
		}
	}
}

// hookPoint names an injection point where tests stop a goroutine to force
// an interleaving.
type hookPoint uint8

const (
	hookSuspendClaimed     hookPoint = iota // Suspend owns its cell index, cell untouched
	hookParked                              // the waiter is in its cell, about to park
	hookParkInterrupted                     // Park returned on ctx.Done, cancellation not yet attempted
	hookCancelled                           // the waiter won the cancellation, handler not yet run
	hookResumeClaimed                       // Resume owns its cell index, cell untouched
	hookResumeWaitsHandler                  // Sync+Smart Resume waits for a cancellation handler
	hookLatchRegister                       // Await saw count > 0, not yet registered as a waiter
	hookCounted                             // a primitive changed its counter, its Suspend or Resume not begun
)

func (q *Queue) at(p hookPoint) {
	if q.hook != nil {
		q.hook(p)
	}
}
