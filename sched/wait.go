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
	head, tail uintptr // head: stored atomically, so that Wake may look at it without the lock
	wakes      uint32  // Wake's calls: its atomic increment orders the caller's change before Wake reads head
}

func (q *WaitQueue) addr() uintptr { return uintptr(unsafe.Pointer(q)) }

func wqAt(a uintptr) *WaitQueue { return (*WaitQueue)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

// Woken says why a wait ended.
type Woken uint8

const (
	WakeUp      Woken = iota // Wake named the task, or its condition changed
	WakeTimeout              // the deadline passed
	WakeSignal               // interrupted (BlockIntr)
)

// Block stops the current task until Wake names it with key, or until the
// monotonic time deadline (0: none) passes, unless *condAddr != condVal when
// checked after the task is queued (condAddr 0: no condition). wq may be nil
// for a pure sleep. It reports whether the deadline ended the wait; then it
// returns at or after the deadline.
func Block(wq *WaitQueue, key, condAddr uintptr, condVal uint32, deadline int64) (timedOut bool) {
	return block(wq, key, condAddr, condVal, deadline, 0, 0, 0) == WakeTimeout
}

// BlockIntr is Block made interruptible: the wait also ends, with
// WakeSignal, when the 64-bit word at intrAddr has a bit outside mask —
// already when the task is queued, or later when a CPU that set such a bit
// calls Interrupt (the kernel's pending signals and the task's signal
// mask). The deadline has a timer slack of slack ns, as Linux's
// hrtimer ranges: the wait times out at the earliest at deadline and at
// the latest about deadline+slack — when this CPU's timer interrupt
// comes by then for another task, or else at the latest time, for which
// the timer is armed. Sleeps of nearby ends then share one interrupt, and
// a sleep shorter than the slack halts its CPU instead of costing a
// wake-up at once.
func BlockIntr(wq *WaitQueue, key, condAddr uintptr, condVal uint32, deadline, slack int64, intrAddr uintptr, mask uint64) Woken {
	return block(wq, key, condAddr, condVal, deadline, slack, intrAddr, mask)
}

func block(wq *WaitQueue, key, condAddr uintptr, condVal uint32, deadline, slack int64, intrAddr uintptr, mask uint64) Woken {
	t := Current()
	t.wq = 0
	if wq != nil {
		t.wq = wq.addr()
	}
	t.key, t.condAddr, t.condVal, t.deadline = key, condAddr, condVal, deadline
	t.latest = deadline
	if deadline != 0 && slack > 0 {
		t.latest = deadline + slack
		if t.latest < deadline { // overflow: no latest end
			t.latest = 1<<63 - 1
		}
	}
	t.intrAddr, t.intrMask = intrAddr, mask
	t.woken = WakeUp
	t.newWait()
	switchTo(pickNext(), finBlock)
	if t.woken == WakeTimeout {
		// The timer interrupt is armed early by its usual lateness and
		// may have woken this task up to that much before the deadline.
		for clock.Nanotime() < deadline {
			pause()
		}
	}
	return t.woken
}

// Interrupt ends t's wait, as WakeSignal, if t is blocked in BlockIntr and
// the word it named has a bit outside its mask. The caller has set that
// bit first (an atomic store). No lost wake-up: the caller stores the bit,
// then loads t's state; commitBlock stores the blocked state, then loads
// the word. Both are sequentially consistent atomics, so at least one of
// the two sees the other's store — Interrupt sees t blocked, or
// commitBlock sees the bit and ends the wait itself. A task not yet
// blocked (running, or switched away and not yet committed) is covered by
// the second, a task already woken needs nothing.
func (t *Task) Interrupt() {
	s := atomic.LoadUint64(&t.state)
	if uint32(s) != stBlocked {
		return
	}
	// Read after the state: if the wait is still s's (the compare-and-swap
	// in wake checks that), these are the fields that wait published.
	a, m := t.intrAddr, t.intrMask
	if a == 0 || atomic.LoadUint64((*uint64)(*(*unsafe.Pointer)(unsafe.Pointer(&a))))&^m == 0 {
		return
	}
	t.wake(uint32(s>>32), WakeSignal)
}

// commitBlock is the finBlock finalizer, run by the next task on t. t goes
// into this CPU's timer heap and onto its wait queue before its state says
// blocked, so any waker that sees it blocked finds it complete; then the
// condition is checked once more, which catches a change made before t was
// on the queue (no lost wake-up), and so is an interruptible wait's word
// (Interrupt says why that catches a bit set before t was blocked).
func (t *Task) commitBlock() {
	// Everything the re-check needs is read before t is published: once it
	// is marked blocked another CPU may wake it, run it and start its next
	// wait, whose condition and wait count are not this one's.
	seq, condAddr, condVal := t.seq(), t.condAddr, t.condVal
	intrAddr, intrMask := t.intrAddr, t.intrMask
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
			atomic.StoreUintptr(&q.head, t.addr())
		}
		q.tail = t.addr()
		t.blockState()
		q.lock.Unlock()
	} else {
		t.blockState()
	}
	// A futex word is the program's memory, which another thread may
	// have unmapped: it is read through the user copy, and a fault wakes
	// the task (the caller sees a spurious wake-up).
	if condAddr != 0 && condChanged(condAddr, condVal) {
		t.wake(seq, WakeUp)
	} else if intrAddr != 0 && atomic.LoadUint64((*uint64)(*(*unsafe.Pointer)(unsafe.Pointer(&intrAddr))))&^intrMask != 0 {
		t.wake(seq, WakeSignal)
	}
}

// unlink removes t from q; q is locked.
func (q *WaitQueue) unlink(t *Task) {
	if t.wprev != 0 {
		taskAt(t.wprev).wnext = t.wnext
	} else {
		atomic.StoreUintptr(&q.head, t.wnext)
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
func (t *Task) wake(seq uint32, why Woken) bool {
	if !t.casState(seq, stBlocked, stReady) {
		return false
	}
	t.timerCancel()
	t.finishWake(why)
	return true
}

// finishWake completes the wake-up of t, whose state the caller has just
// moved from blocked to ready (so nobody else touches its wait fields):
// off its wait queue, and onto the ready queue.
func (t *Task) finishWake(why Woken) {
	t.leaveWait(why)
	makeReady(t)
}

// leaveWait takes t, woken, off the wait queue it waited on and records
// why it woke.
func (t *Task) leaveWait(why Woken) {
	if t.wq != 0 {
		q := wqAt(t.wq)
		q.lock.Lock()
		q.unlink(t)
		q.lock.Unlock()
	}
	t.woken = why
}

// Wake makes up to n tasks blocked on q with key ready, oldest first, and
// returns how many it woke.
//
// An empty q costs no lock. No lost wake-up: the caller has changed the
// condition its waiters named (Block's condAddr) before it calls Wake,
// and the increment of q.wakes, an atomic read-modify-write, orders that
// change before the load of q.head; commitBlock stores q.head, then
// (after the lock's release, as atomic) loads the condition. At least one
// of the two sees the other's store: Wake sees the waiter queued, or the
// waiter sees the condition changed and wakes itself.
func (q *WaitQueue) Wake(key uintptr, n int) int {
	atomic.AddUint32(&q.wakes, 1)
	if atomic.LoadUintptr(&q.head) == 0 {
		return 0
	}
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
		t.woken = WakeUp
		makeReady(t)
	}
	return count
}

// condChanged reports whether the word at a, the program's, no longer
// holds v or cannot be read.
func condChanged(a uintptr, v uint32) bool {
	w, ok := loadCond(a)
	return !ok || w != v
}

// BlockedInterruptibly reports whether t is blocked in a wait a signal
// ends (BlockIntr). A hint: the answer may change as soon as it is given.
func (t *Task) BlockedInterruptibly() bool { return t.st() == stBlocked && t.intrAddr != 0 }

// WaitInfo is a snapshot of a task's scheduling state, for the
// self-tests' report of a wait that did not end (racy: each field is read
// once, not all at one instant).
type WaitInfo struct {
	State    uint32 // stFree, stRunning, stReady, stBlocked (0 to 3), or another internal state
	Seq      uint32 // the wait count
	OnCPU    int32  // 1 + the CPU running it, 0 if none
	Queued   bool   // on its wait queue's list
	Wq       uintptr
	Key      uintptr
	CondAddr uintptr
	CondVal  uint32
	Woken    Woken
	IntrAddr uintptr
	IntrMask uint64
	Deadline int64
	Latest   int64 // the deadline plus the wait's timer slack
}

// Info returns t's WaitInfo; Queued is looked up under the wait queue's
// lock.
func (t *Task) Info() WaitInfo {
	s := atomic.LoadUint64(&t.state)
	w := WaitInfo{
		State: uint32(s), Seq: uint32(s >> 32), OnCPU: atomic.LoadInt32(&t.oncpu),
		Wq: t.wq, Key: t.key, CondAddr: t.condAddr, CondVal: t.condVal, Woken: t.woken,
		IntrAddr: t.intrAddr, IntrMask: t.intrMask, Deadline: t.deadline, Latest: t.latest,
	}
	if w.Wq != 0 {
		q := wqAt(w.Wq)
		q.lock.Lock()
		for a := q.head; a != 0; a = taskAt(a).wnext {
			if a == t.addr() {
				w.Queued = true
				break
			}
		}
		q.lock.Unlock()
	}
	return w
}
