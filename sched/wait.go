package sched

import (
	"sync/atomic"
	"unsafe"

	"yolk/drivers/tsc"
)

// WaitQueue is a list of blocked tasks, protected by a spin lock. Tasks are
// linked through their own fields (no allocation).
type WaitQueue struct {
	lock       Spinlock
	head, tail uintptr
}

func (q *WaitQueue) addr() uintptr { return uintptr(unsafe.Pointer(q)) }

func wqAt(a uintptr) *WaitQueue { return (*WaitQueue)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

// Block stops the current task until Wake names it with key, or until the
// monotonic time deadline (0: none) passes, unless *condAddr != condVal when
// checked after the task is queued (condAddr 0: no condition). wq may be nil
// for a pure sleep. It reports whether the deadline ended the wait.
func Block(wq *WaitQueue, key, condAddr uintptr, condVal uint32, deadline int64) (timedOut bool) {
	t := Current()
	t.wq = 0
	if wq != nil {
		t.wq = wq.addr()
	}
	t.key, t.condAddr, t.condVal, t.deadline = key, condAddr, condVal, deadline
	t.timedOut = false
	switchTo(pickNext(), finBlock)
	return t.timedOut
}

// commitBlock is the finBlock finalizer, run by the next task on t.
func (t *Task) commitBlock() {
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
		atomic.StoreUint32(&t.state, stBlocked)
		q.lock.Unlock()
	} else {
		atomic.StoreUint32(&t.state, stBlocked)
	}
	if t.deadline != 0 {
		atomic.StoreInt64(&t.wakeAt, t.deadline)
	}
	if t.condAddr != 0 && atomic.LoadUint32((*uint32)(*(*unsafe.Pointer)(unsafe.Pointer(&t.condAddr)))) != t.condVal {
		t.wake(false)
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

// wake makes a blocked t ready; false if someone else already did.
func (t *Task) wake(timedOut bool) bool {
	if !atomic.CompareAndSwapUint32(&t.state, stBlocked, stReady) {
		return false
	}
	if t.wq != 0 {
		q := wqAt(t.wq)
		q.lock.Lock()
		q.unlink(t)
		q.lock.Unlock()
	}
	atomic.StoreInt64(&t.wakeAt, 0)
	t.timedOut = timedOut
	makeReady(t)
	return true
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
		if t.key != key || !atomic.CompareAndSwapUint32(&t.state, stBlocked, stReady) {
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
		atomic.StoreInt64(&t.wakeAt, 0)
		t.timedOut = false
		makeReady(t)
	}
	return count
}

// PollTimers wakes every task whose deadline has passed.
func PollTimers() {
	now := tsc.Nanotime()
	n := atomic.LoadInt32(&ntasks)
	for i := int32(0); i < n; i++ {
		t := &tasks[i]
		if d := atomic.LoadInt64(&t.wakeAt); d != 0 && d <= now {
			t.wake(true)
		}
	}
}

// nextDeadline is the earliest published deadline, 0 if none.
func nextDeadline() int64 {
	var min int64
	n := atomic.LoadInt32(&ntasks)
	for i := int32(0); i < n; i++ {
		if d := atomic.LoadInt64(&tasks[i].wakeAt); d != 0 && (min == 0 || d < min) {
			min = d
		}
	}
	return min
}
