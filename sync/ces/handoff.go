package ces

import "runtime"

// The handoff policies turn ownership decided by the queue logic into
// running goroutines. They are the only code in the package that decides
// where a goroutine runs; a kernel-level variant replaces this file (and
// park/resume in waiter.go) and keeps the queue logic.

// exchange is the combine-and-exchange handoff: w, which already owns the
// primitive, runs next on the caller's processor, and the caller moves to
// the global run queue, where any processor can take it.
//
// resume readies w into this P's runnext slot; runtime.Gosched then puts
// the caller on the global run queue and enters the scheduler, which takes
// runnext before the P's local run queue. See the package documentation for
// where this is only approximately the paper's guarantee.
//
// If w was not parked (it queued and was granted ownership before reaching
// park), it is already running on another P and will not be in runnext;
// the caller then keeps running instead of yielding for nothing.
func exchange(w *waiter) {
	if w.resume() {
		runtime.Gosched()
	}
}

// exchangeList resumes every waiter of a list that has been granted
// ownership: all but the first are dispatched, the first is exchanged with
// the caller. The rest are resumed first because each resume replaces the
// runnext slot (the previous occupant moves to the tail of the P's local run
// queue, from which idle processors steal); the first must be the one left
// in runnext when the caller yields.
func exchangeList(first *waiter) {
	if first == nil {
		return
	}
	dispatchList(first.next)
	first.next = nil
	exchange(first)
}

// dispatch makes w runnable and keeps running: the classic
// "notify the next waiter" handoff. w waits in a run queue until a
// processor picks it up.
func dispatch(w *waiter) { w.resume() }

func dispatchList(w *waiter) {
	for w != nil {
		next := w.next
		w.next = nil
		w.resume()
		w = next
	}
}
