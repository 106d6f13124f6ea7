package cqs

import (
	"context"
	"runtime"
)

// A Parker blocks and wakes one suspended operation. The queue creates one
// per suspension (Waiting.NewParker), calls Unpark at most once, and may call
// Park again after Park returned false.
type Parker interface {
	// Park blocks until Unpark has been called (then it returns true) or
	// ctx is done (then it may return false). If Unpark came first, Park
	// returns without blocking.
	Park(ctx context.Context) bool
	// Unpark wakes the parked operation, or makes its next Park return
	// at once. It must not block.
	Unpark()
}

// Waiting is the waiting policy of a Queue: how a suspended operation parks,
// and how a Resume pauses while it waits for another operation to act on
// the same cell. The queue logic never blocks in any other way, so a
// kernel-level variant only has to supply its own Waiting.
type Waiting interface {
	NewParker() Parker
	// Spin pauses a Resume that waits for another operation on the same
	// cell; attempt counts the pauses of this wait from 0. It reports
	// whether a bounded wait may go on (a synchronous Resume that still
	// sees its value untaken breaks the cell once Spin returns false).
	// Unbounded waits ignore the result and keep calling Spin.
	Spin(attempt int) bool
}

// GoroutineWaiting is the default policy for goroutines: a suspended
// goroutine blocks on a buffered channel of one element (one allocation per
// suspension) selected together with ctx.Done(); a spinning Resume busy-waits
// briefly and yields to the Go scheduler every few attempts, so that on a
// single processor the goroutine it waits for can run.
type GoroutineWaiting struct{}

// SyncSpins bounds the wait of a synchronous Resume for its Suspend under
// GoroutineWaiting.
const SyncSpins = 64

// NewParker returns a channel-based Parker.
func (GoroutineWaiting) NewParker() Parker { return make(chanParker, 1) }

// Spin busy-waits for about 30 calls and calls runtime.Gosched every
// eighth attempt.
func (GoroutineWaiting) Spin(attempt int) bool {
	if attempt&7 == 7 {
		runtime.Gosched()
	} else {
		for i := 0; i < 30; i++ {
			pause()
		}
	}
	return attempt < SyncSpins
}

// pause is an empty call the compiler may not remove: one busy-wait step.
//
//go:noinline
func pause() {}

type chanParker chan struct{}

func (p chanParker) Park(ctx context.Context) bool {
	select {
	case <-p:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p chanParker) Unpark() { p <- struct{}{} }

// An Option configures a primitive built on a Queue.
type Option func(*options)

type options struct{ waiting Waiting }

// WithWaiting makes the primitive park and spin with w instead of
// GoroutineWaiting.
func WithWaiting(w Waiting) Option { return func(o *options) { o.waiting = w } }

func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}
