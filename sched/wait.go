package sched

import (
	"sync/atomic"
	"unsafe"

	"yolk/drivers/clock"
)

// WaitQueue is a list of blocked tasks (futex hash buckets, epoll
// instances), protected by a TWA spin lock and linked through the tasks'
// own fields (no allocation). It is not the paper's lock-free queue: a
// wake-up takes the waiters with one key out of the middle of the list,
// and a timed-out waiter unlinks itself from wherever it is, which a FIFO
// with operations only at its ends cannot do.
type WaitQueue struct {
	lock       TWALock
	head, tail uintptr
}

func (q *WaitQueue) addr() uintptr { return uintptr(unsafe.Pointer(q)) }

func wqAt(a uintptr) *WaitQueue { return (*WaitQueue)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

// Block stops the current task until Wake names it with key, or until the
// monotonic time deadline (0: none) passes, unless *condAddr != condVal when
// checked after the task is queued (condAddr 0: no condition). wq may be nil
// for a pure sleep. It reports whether the deadline ended the wait; then it
// returns at or after the deadline.
func Block(wq *WaitQueue, key, condAddr uintptr, condVal uint32, deadline int64) (timedOut bool) {
	t := Current()
	t.wq = 0
	if wq != nil {
		t.wq = wq.addr()
	}
	t.key, t.condAddr, t.condVal, t.deadline = key, condAddr, condVal, deadline
	t.timedOut = false
	t.newWait()
	switchTo(pickNext(), finBlock)
	if t.timedOut {
		// The timer interrupt is armed early by its usual lateness and
		// may have woken this task up to that much before the deadline.
		for clock.Nanotime() < deadline {
			pause()
		}
	}
	return t.timedOut
}

// commitBlock is the finBlock finalizer, run by the next task on t. t goes
// into this CPU's timer heap and onto its wait queue before its state says
// blocked, so any waker that sees it blocked finds it complete; then the
// condition is checked once more, which catches a change made before t was
// on the queue (no lost wake-up).
func (t *Task) commitBlock() {
	// Everything the re-check needs is read before t is published: once it
	// is marked blocked another CPU may wake it, run it and start its next
	// wait, whose condition and wait count are not this one's.
	seq, condAddr, condVal := t.seq(), t.condAddr, t.condVal
	if t.deadline != 0 {
		t.timerAdd(seq)
	}
	if t.wq != 0 {
		q := wqAt(t.wq)
		q.lock.Lock()
		t.wnext, t.wprev = 0, q.tail
		if q.tail != 0 {
			taskAt(q.tail).wnext = t.addr()
		} else {
			q.head = t.addr()
		}
		q.tail = t.addr()
		t.setState(stBlocked)
		q.lock.Unlock()
	} else {
		t.setState(stBlocked)
	}
	if condAddr != 0 && atomic.LoadUint32((*uint32)(*(*unsafe.Pointer)(unsafe.Pointer(&condAddr)))) != condVal {
		t.wake(seq, false)
	}
}

// unlink removes t from q; q is locked.
func (q *WaitQueue) unlink(t *Task) {
	if t.wprev != 0 {
		taskAt(t.wprev).wnext = t.wnext
	} else {
		q.head = t.wnext
	}
	if t.wnext != 0 {
		taskAt(t.wnext).wprev = t.wprev
	} else {
		q.tail = t.wprev
	}
	t.wnext, t.wprev = 0, 0
}

// wake makes t ready if it is still blocked in wait seq; false if someone
// else woke that wait first.
func (t *Task) wake(seq uint32, timedOut bool) bool {
	if !t.casState(seq, stBlocked, stReady) {
		return false
	}
	t.timerCancel()
	t.finishWake(timedOut)
	return true
}

// finishWake completes the wake-up of t, whose state the caller has just
// moved from blocked to ready (so nobody else touches its wait fields):
// off its wait queue, and onto the ready queue.
func (t *Task) finishWake(timedOut bool) {
	if t.wq != 0 {
		q := wqAt(t.wq)
		q.lock.Lock()
		q.unlink(t)
		q.lock.Unlock()
	}
	t.timedOut = timedOut
	makeReady(t)
}

// Wake makes up to n tasks blocked on q with key ready, oldest first, and
// returns how many it woke.
func (q *WaitQueue) Wake(key uintptr, n int) int {
	var woken uintptr // singly linked through wnext
	count := 0
	q.lock.Lock()
	for a := q.head; a != 0 && count < n; {
		t := taskAt(a)
		a = t.wnext
		if t.key != key || !t.casState(t.seq(), stBlocked, stReady) {
			continue
		}
		q.unlink(t)
		t.wnext = woken
		woken = t.addr()
		count++
	}
	q.lock.Unlock()
	// Make them ready oldest first: reverse the list.
	var rev uintptr
	for woken != 0 {
		t := taskAt(woken)
		woken = t.wnext
		t.wnext = rev
		rev = t.addr()
	}
	for rev != 0 {
		t := taskAt(rev)
		rev = t.wnext
		t.wnext = 0
		t.timerCancel()
		t.timedOut = false
		makeReady(t)
	}
	return count
}

// Interrupt ends the wait t is in, as a wake-up that is not a timeout,
// for a signal sent to it: the kernel sets *waiting while t is on its way
// into (and in) a wait a signal may end. If t is blocked, Interrupt wakes
// it; if t is ready, it is leaving the wait anyway; if t runs (or is being
// switched away from) on another CPU, it is on its way into the wait or
// out of it, in the kernel with interrupts off, and Interrupt spins until
// it is blocked or *waiting is clear. (On this CPU t cannot be running:
// the caller is.)
func (t *Task) Interrupt(waiting *uint32) {
	for atomic.LoadUint32(waiting) != 0 {
		s := atomic.LoadUint64(&t.state)
		switch uint32(s) {
		case stBlocked:
			if t.wake(uint32(s>>32), false) {
				return
			}
		case stRunning, stLimbo:
			pause()
		default:
			return
		}
	}
}
