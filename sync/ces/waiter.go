package ces

import (
	"sync"
	"time"
)

// A waiter is one blocked goroutine: the node the queue logic links into a
// lock's FIFO, plus the goroutine mechanism that parks and resumes it.
//
// The queue logic (queue.go and the primitives' state machines) only links
// nodes and decides who owns what; it never blocks and never touches the
// wake channel. Blocking and resuming are done by park, wake and the
// policies in handoff.go.
type waiter struct {
	next *waiter

	// Filled in by the primitive before the node is queued.
	writer bool   // RWMutex: waits for write access
	n      int64  // Semaphore: permits wanted
	ticket uint64 // Mutex: arrival order at the lock, assigned under its guard

	// granted is set by wake, exactly once per park; park checks it.
	granted bool

	// stamp asks wake to record wokeAt (monotonic ns since epoch) so the
	// resumed goroutine can measure its queuing delay.
	stamp  bool
	wokeAt int64

	// wake carries one token per park. Its capacity of one lets wake run
	// before the owner reaches park without blocking either side.
	wake chan struct{}
}

var waiterPool = sync.Pool{New: func() any {
	return &waiter{wake: make(chan struct{}, 1)}
}}

func getWaiter() *waiter {
	w := waiterPool.Get().(*waiter)
	w.next = nil
	w.writer = false
	w.n = 0
	w.ticket = 0
	w.granted = false
	w.stamp = false
	w.wokeAt = 0
	return w
}

func putWaiter(w *waiter) { waiterPool.Put(w) }

// park blocks the calling goroutine until wake(w). It is a receive on the
// waiter's channel: the runtime parks the goroutine on the channel's
// receive queue (gopark) and the sender readies it (goready).
func (w *waiter) park() {
	<-w.wake
	if !w.granted {
		panic("ces: waiter resumed without a grant")
	}
}

// resume makes w runnable and reports whether w's goroutine was parked.
// If it was parked in park, the channel send readies it into the runnext
// slot of the caller's processor (P): it is the next goroutine that P runs,
// ahead of the P's run queue. If w has not reached park yet, the token waits
// in the buffer, park returns at once, and resume reports false. The caller
// keeps running.
func (w *waiter) resume() (parked bool) {
	if w.granted {
		panic("ces: waiter resumed twice")
	}
	w.granted = true
	if w.stamp {
		w.wokeAt = monotime()
	}
	ch := w.wake // w may be reused as soon as the send completes
	ch <- struct{}{}
	// A parked receiver takes the token directly, bypassing the buffer. A
	// token still buffered means the owner was not parked; it is running
	// on some P and will find the token itself. (If it took the token in
	// the meantime, or w was reused, this reports true: a harmless extra
	// yield.)
	return len(ch) == 0
}

var epoch = time.Now()

// monotime is the monotonic clock in ns since package start.
func monotime() int64 { return int64(time.Since(epoch)) }
