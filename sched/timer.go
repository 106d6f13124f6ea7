package sched

import "sync/atomic"

// Timers. Each CPU keeps the tasks that blocked on it with a deadline in a
// binary min-heap ordered by the latest time each may wake (its deadline
// plus its wait's timer slack: BlockIntr), under its own spin lock, and
// arms its own one-shot timer for the earliest of those (the kernel does,
// from TimerNext); an interrupt expires the tasks at the front whose
// deadlines have passed, as Linux's hrtimer_interrupt does with soft and
// hard expiry times. Adding and expiring cost O(log n); the idle loop
// reads the time to arm for in O(1). Only the owning CPU adds entries (in
// the blocking task's finalizer) and expires them (in its timer interrupt);
// another CPU takes the lock only to remove a task it woke first.
type timers struct {
	lock TWALock
	n    int32
	next int64 // atomic: the front's latest wake-up (TimerNext), 0 if none
	heap [MaxTasks]uintptr
}

// TimerNext is the time c's timer is to interrupt, in monotonic ns (the
// earliest latest wake-up in its heap), 0 if none.
func (c *CPU) TimerNext() int64 { return atomic.LoadInt64(&c.timers.next) }

func (tm *timers) less(i, j int32) bool {
	return taskAt(tm.heap[i]).latest < taskAt(tm.heap[j]).latest
}

func (tm *timers) swap(i, j int32) {
	tm.heap[i], tm.heap[j] = tm.heap[j], tm.heap[i]
	taskAt(tm.heap[i]).tidx = i
	taskAt(tm.heap[j]).tidx = j
}

func (tm *timers) up(i int32) {
	for i > 0 {
		p := (i - 1) / 2
		if !tm.less(i, p) {
			return
		}
		tm.swap(i, p)
		i = p
	}
}

func (tm *timers) down(i int32) {
	for {
		l := 2*i + 1
		if l >= tm.n {
			return
		}
		m := l
		if r := l + 1; r < tm.n && tm.less(r, l) {
			m = r
		}
		if !tm.less(m, i) {
			return
		}
		tm.swap(i, m)
		i = m
	}
}

// remove takes entry i out of the heap; the lock is held.
func (tm *timers) remove(i int32) {
	t := taskAt(tm.heap[i])
	atomic.StoreInt32(&t.tcpu, 0)
	tm.n--
	if i != tm.n {
		tm.heap[i] = tm.heap[tm.n]
		taskAt(tm.heap[i]).tidx = i
		tm.down(i)
		tm.up(i)
	}
	tm.heap[tm.n] = 0
}

// publish updates next; the lock is held.
func (tm *timers) publish() {
	var d int64
	if tm.n > 0 {
		d = taskAt(tm.heap[0]).latest
	}
	atomic.StoreInt64(&tm.next, d)
}

// timerAdd puts t, which is about to block in wait seq on this CPU with
// t.deadline set, into this CPU's heap. t is not yet visible to any waker.
func (t *Task) timerAdd(seq uint32) {
	c := This()
	tm := &c.timers
	tm.lock.Lock()
	if int(tm.n) == len(tm.heap) {
		die(dieTimers)
	}
	i := tm.n
	tm.n++
	tm.heap[i] = t.addr()
	t.tidx, t.tseq = i, seq
	atomic.StoreInt32(&t.tcpu, int32(c.ID+1))
	tm.up(i)
	tm.publish()
	tm.lock.Unlock()
}

// timerCancel removes t from the heap that holds it, if any. The caller has
// just woken t, so t cannot be added to a heap concurrently.
func (t *Task) timerCancel() {
	ci := atomic.LoadInt32(&t.tcpu)
	if ci == 0 {
		return
	}
	tm := &cpus[uint(ci-1)%MaxCPUs].timers
	tm.lock.Lock()
	// The owner may have expired t meanwhile (and the entry at tidx may be
	// another task): remove only what is still t's.
	if atomic.LoadInt32(&t.tcpu) == ci && t.tidx < tm.n && tm.heap[t.tidx] == t.addr() {
		tm.remove(t.tidx)
		tm.publish()
	}
	tm.lock.Unlock()
}

// ExpireTimers wakes, as timed out, the tasks at the front of this CPU's
// heap whose deadlines are at or before until (in the heap's order: it
// stops at the first whose deadline is later, as Linux's hrtimers do), and
// returns the time the timer is to interrupt next (TimerNext; 0: none)
// and whether this CPU is to switch to a task it woke. The kernel calls it from the timer interrupt with until a little past the present
// (the interrupt's usual lateness): a task woken before its deadline waits
// out the rest itself (Block), so the interrupt can be armed early by its
// expected lateness.
//
// fromUser: the interrupt took application code, whose task Preempt
// switches out for a woken one (the front of qWoken) if woke is true. A
// task woken then goes to an idle CPU if there is one (wakeIdle), and the
// interrupted task keeps its own, as on Linux, where a timer-woken task
// goes to an idle CPU rather than preempt a busy one. With no CPU idle
// the first task woken is left to this CPU, and only the others interrupt
// spent CPUs (preemptSpent): interrupting another for it too would cost
// that CPU an interrupt that finds nothing. Not when this CPU was itself
// interrupted for a woken task and has not taken it yet (preemptKicked):
// its one switch is that task's, so every task woken here goes the usual
// way. Without fromUser (the idle loop, halted, which looks at the ready
// queues next) the tasks are made ready as by any waker, and woke
// reports whether there were any. The expired list is in reverse heap
// order (of latest ends): the latest-due task gets the first idle CPU.
//
// The blocked-to-ready transition is made under the heap's lock, for the
// wait the entry was made for (tseq, read while the entry is in the heap),
// and only the tasks whose transition it won are listed (through tnext)
// and finished after the lock is dropped: a task another CPU woke first
// may run and wait again meanwhile, and its fields are then that wait's.
// (Once remove has cleared tcpu, that waker's timerCancel no longer waits
// for this lock: the task can be blocked in its next wait before the
// transition below is tried, which must then fail — with the task's
// current seq it would time out a wait that has no deadline.)
func ExpireTimers(until int64, fromUser bool) (next int64, woke bool) {
	tm := &This().timers
	var expired uintptr
	tm.lock.Lock()
	for tm.n > 0 {
		t := taskAt(tm.heap[0])
		if t.deadline > until {
			break
		}
		seq := t.tseq
		tm.remove(0)
		if t.casState(seq, stBlocked, stReady) {
			t.tnext, expired = expired, t.addr()
		}
	}
	tm.publish()
	next = atomic.LoadInt64(&tm.next)
	tm.lock.Unlock()
	here := fromUser && atomic.LoadUint32(&This().preemptKicked) == 0
	for expired != 0 {
		t := taskAt(expired)
		expired = t.tnext
		if !here {
			t.finishWake(WakeTimeout)
			woke = true
			continue
		}
		t.leaveWait(WakeTimeout)
		q := queueReady(t)
		switch {
		case wakeIdle():
		case q != qWoken:
		case !woke:
			woke = true
		default:
			preemptSpent()
		}
	}
	return next, woke
}
