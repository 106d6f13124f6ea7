package cqs

import (
	"context"
	"sync/atomic"
)

// doneBit is set in CountDownLatch.waiters once the count has reached zero;
// from then on nobody registers or suspends.
const doneBit = 1 << 62

// A CountDownLatch lets goroutines wait until CountDown has been called a
// given number of times. Waiting is abortable; a cancelled Await costs the
// final CountDown nothing (Smart cancellation), so that CountDown resumes
// exactly the waiters still waiting.
type CountDownLatch struct {
	count   atomic.Int64
	waiters atomic.Int64 // registered waiters, | doneBit once open
	q       Queue
}

// NewCountDownLatch returns a latch that opens after n calls of CountDown
// (at once if n <= 0).
func NewCountDownLatch(n int, opts ...Option) *CountDownLatch {
	l := new(CountDownLatch)
	l.count.Store(int64(n))
	l.q.Init(Config{Resume: Async, Cancel: Smart, Handlers: (*latchHandlers)(l), Waiting: collect(opts).waiting})
	if n <= 0 {
		l.waiters.Store(doneBit)
	}
	return l
}

// CountDown decrements the count and opens the latch when it reaches zero.
// Extra calls are harmless.
func (l *CountDownLatch) CountDown() {
	if l.count.Add(-1) <= 0 {
		l.resumeWaiters()
	}
}

// Count returns the number of CountDown calls still needed (<= 0: open).
func (l *CountDownLatch) Count() int { return int(l.count.Load()) }

// Await waits until the latch is open or ctx is done; it returns nil at
// once if the latch is already open, ctx.Err() if ctx was done first.
func (l *CountDownLatch) Await(ctx context.Context) error {
	if l.count.Load() <= 0 {
		return nil
	}
	l.q.at(hookLatchRegister)
	// The last CountDown may have set doneBit since we read count: then it
	// did not count us, and we must not suspend.
	if l.waiters.Add(1)&doneBit != 0 {
		return nil
	}
	l.q.at(hookCounted)
	if _, st := l.q.Suspend(ctx); st == Cancelled {
		return ctx.Err()
	}
	return nil
}

func (l *CountDownLatch) resumeWaiters() {
	for {
		w := l.waiters.Load()
		if w&doneBit != 0 {
			return
		}
		if l.waiters.CompareAndSwap(w, w|doneBit) {
			l.q.at(hookCounted)
			for ; w > 0; w-- {
				l.q.Resume(struct{}{})
			}
			return
		}
	}
}

type latchHandlers CountDownLatch

// OnCancellation unregisters the waiter. If doneBit is already set, the
// opening CountDown counted this waiter and its Resume is coming: refuse it.
func (h *latchHandlers) OnCancellation() bool { return (h.waiters.Add(-1)+1)&doneBit == 0 }

// CompleteRefusedResume ignores the resumption of a cancelled Await.
func (h *latchHandlers) CompleteRefusedResume(any) {}
