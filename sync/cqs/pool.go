package cqs

import (
	"context"
	"sync/atomic"
)

// Both pools keep size = free elements when positive, minus the number of
// waiting Takes otherwise, changed by Fetch-and-Add; a Put that sees
// waiters hands its element to the first one through the queue (Smart
// cancellation, Async resumption: Put never waits).

// A QueuePool is a fair blocking pool of elements kept in an infinite array
// with Fetch-and-Add counters for insertion and retrieval. Take returns
// free elements roughly in the order they were put; goroutines waiting in
// Take are served in FIFO order. Put and Take are lock-free: a Take that
// finds its storage cell still empty waits briefly (Waiting.Spin), then
// breaks the cell, and it and the late Put both restart.
type QueuePool[T any] struct {
	size  atomic.Int64
	elems elements[T]
	q     Queue
}

// NewQueuePool returns an empty pool.
func NewQueuePool[T any](opts ...Option) *QueuePool[T] {
	o := collect(opts)
	p := new(QueuePool[T])
	p.elems.init(o.waiting)
	p.q.Init(Config{Resume: Async, Cancel: Smart, Handlers: (*queuePoolHandlers[T])(p), Waiting: o.waiting})
	return p
}

// Put adds v to the pool or gives it to the longest-waiting Take.
func (p *QueuePool[T]) Put(v T) {
	for {
		if p.size.Add(1) <= 0 {
			p.q.at(hookCounted)
			p.q.Resume(v) // Smart + Async: cannot fail
			return
		}
		if p.elems.tryInsert(v) {
			return
		}
		// A Take broke our storage cell; it restarts, and so do we.
	}
}

// Take removes and returns an element, waiting in FIFO order until one is
// put or ctx is done. It takes a free element without blocking even if ctx
// is done; on failure it returns ctx.Err() and the pool is unchanged.
func (p *QueuePool[T]) Take(ctx context.Context) (T, error) {
	for {
		if p.size.Add(-1) >= 0 {
			if v, ok := p.elems.tryRetrieve(); ok {
				return v, nil
			}
			continue // broke a late Put's cell: restart, as it does
		}
		p.q.at(hookCounted)
		v, st := p.q.Suspend(ctx)
		if st == Cancelled {
			var zero T
			return zero, ctx.Err()
		}
		t, _ := v.(T)
		return t, nil
	}
}

type queuePoolHandlers[T any] QueuePool[T]

func (h *queuePoolHandlers[T]) OnCancellation() bool { return h.size.Add(1) <= 0 }

// CompleteRefusedResume stores the element of a refused Put; size already
// counts it (OnCancellation incremented it). If a Take broke the storage
// cell, that Take restarts and so the element goes through a full Put.
func (h *queuePoolHandlers[T]) CompleteRefusedResume(v any) {
	t, _ := v.(T)
	if !h.elems.tryInsert(t) {
		(*QueuePool[T])(h).Put(t)
	}
}

// elements is the storage of a QueuePool: an infinite array of cells,
// filled by tryInsert and emptied by tryRetrieve in index order.
type elements[T any] struct {
	a       array[elemCell[T]]
	waiting Waiting
}

type elemCell[T any] struct {
	state atomic.Uint32
	v     T
}

const (
	cellEmpty uint32 = iota
	cellFull
	cellTaken
	cellBroken
)

func (e *elements[T]) init(w Waiting) {
	if w == nil {
		w = GoroutineWaiting{}
	}
	e.waiting = w
	e.a.init()
}

func (e *elements[T]) tryInsert(v T) bool {
	s, i := e.a.claimEnq()
	c := &s.cells[i%SegmentSize]
	c.v = v
	if c.state.CompareAndSwap(cellEmpty, cellFull) {
		return true
	}
	var zero T
	c.v = zero
	return false
}

func (e *elements[T]) tryRetrieve() (T, bool) {
	var zero T
	s, i := e.a.claimDeq()
	c := &s.cells[i%SegmentSize]
	for a := 0; c.state.Load() == cellEmpty; a++ {
		if !e.waiting.Spin(a) {
			if c.state.CompareAndSwap(cellEmpty, cellBroken) {
				return zero, false
			}
			break
		}
	}
	v := c.v
	c.v = zero
	c.state.Store(cellTaken)
	return v, true
}

// A StackPool is a fair blocking pool whose free elements form a lock-free
// (Treiber) stack, so Take returns the most recently put, "hottest"
// element; waiting Takes are served in FIFO order. Put pushes before it
// counts, so a Take that counted an element always finds one, except in one
// window: while a refused hand-over (a Take cancelled as a Put reached it)
// pushes its element back, a Take may spin (Waiting.Spin) for it. Each Put
// allocates a stack node.
type StackPool[T any] struct {
	size    atomic.Int64
	top     atomic.Pointer[stackNode[T]]
	waiting Waiting
	q       Queue
}

type stackNode[T any] struct {
	v    T
	next *stackNode[T]
}

// NewStackPool returns an empty pool.
func NewStackPool[T any](opts ...Option) *StackPool[T] {
	o := collect(opts)
	p := new(StackPool[T])
	p.waiting = o.waiting
	if p.waiting == nil {
		p.waiting = GoroutineWaiting{}
	}
	p.q.Init(Config{Resume: Async, Cancel: Smart, Handlers: (*stackPoolHandlers[T])(p), Waiting: o.waiting})
	return p
}

// Put adds v to the pool, or gives the top element to the longest-waiting
// Take.
func (p *StackPool[T]) Put(v T) {
	p.push(v)
	if p.size.Add(1) <= 0 {
		p.q.at(hookCounted)
		p.q.Resume(p.pop()) // Smart + Async: cannot fail
	}
}

// Take removes and returns the most recently put element, waiting in FIFO
// order until one is put or ctx is done. It takes a free element without
// blocking even if ctx is done; on failure it returns ctx.Err() and the
// pool is unchanged.
func (p *StackPool[T]) Take(ctx context.Context) (T, error) {
	if p.size.Add(-1) >= 0 {
		return p.pop(), nil
	}
	p.q.at(hookCounted)
	v, st := p.q.Suspend(ctx)
	if st == Cancelled {
		var zero T
		return zero, ctx.Err()
	}
	t, _ := v.(T)
	return t, nil
}

func (p *StackPool[T]) push(v T) {
	n := &stackNode[T]{v: v}
	for {
		n.next = p.top.Load()
		if p.top.CompareAndSwap(n.next, n) {
			return
		}
	}
}

// pop is called only by an operation that counted an element, so the
// stack is empty only while that element is being pushed back.
func (p *StackPool[T]) pop() T {
	for a := 0; ; a++ {
		n := p.top.Load()
		if n == nil {
			p.waiting.Spin(a)
			continue
		}
		if p.top.CompareAndSwap(n, n.next) {
			return n.v
		}
	}
}

type stackPoolHandlers[T any] StackPool[T]

func (h *stackPoolHandlers[T]) OnCancellation() bool { return h.size.Add(1) <= 0 }

// CompleteRefusedResume pushes the element of a refused hand-over back;
// size already counts it.
func (h *stackPoolHandlers[T]) CompleteRefusedResume(v any) {
	t, _ := v.(T)
	(*StackPool[T])(h).push(t)
}
