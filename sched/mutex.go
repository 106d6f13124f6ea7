package sched

import (
	"unsafe"

	"yolk/drivers/clock"
)

// Mutex is the kernel's blocking mutex for critical sections that may be
// long (the address space's), after "Minimize Your Critical Path with
// Combine-and-Exchange Locks" (König, Eppel, Becker) at the level of
// tasks: a contended Lock blocks the task through a task-switch finalizer,
// and a contended Unlock hands ownership to the first waiter and switches
// to it on this CPU, while the unlocking task goes back on the ready queue
// for any CPU to resume. Consecutive critical sections thus run on one CPU
// without a trip through the ready queue, and the code after them spreads
// over the others.
//
// Guarantees: mutual exclusion; FIFO, no barging (a released mutex with
// waiters is never free: the head waiter owns it before anyone else can
// try); a waiter cannot give up. It must be locked and unlocked by a task
// (not an interrupt handler) that holds no spin lock, since both may
// switch. The zero value is unlocked; Dispatch selects the wake-and-continue
// baseline for benchmarks.
type Mutex struct {
	lock       TWALock // guards owner and the queue
	owner      uintptr // *Task, 0 if free
	head, tail uintptr // waiting tasks, linked through wnext

	// Dispatch makes Unlock put the new owner on the ready queue and
	// continue, the classic alternative the exchange is measured against.
	Dispatch bool

	// HandoffCPU is 1 + the CPU of the last contended Unlock, and HandoffAt
	// its time (clock.Nanotime), for tests and benchmarks of the exchange:
	// the new owner should find itself on that CPU, soon after.
	HandoffCPU int32
	HandoffAt  int64
}

func (m *Mutex) addr() uintptr { return uintptr(unsafe.Pointer(m)) }

func mutexAt(a uintptr) *Mutex { return (*Mutex)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

// Lock acquires m for the current task, blocking while another task owns
// it. It reports whether m was handed over by a contended Unlock (rather
// than found free, possibly while the task was being queued).
func (m *Mutex) Lock() (handedOver bool) {
	t := Current()
	m.lock.Lock()
	if m.owner == 0 {
		m.owner = t.addr()
		m.lock.Unlock()
		return false
	}
	m.lock.Unlock()
	t.mx = m.addr()
	t.intrAddr = 0 // not interruptible: Interrupt leaves this wait alone
	t.newWait()
	switchTo(pickNext(), finMutex)
	// Resumed as the owner: by an Unlock (handed over) or by commitMutex.
	return t.mxHanded
}

// commitMutex is the finMutex finalizer, run by the next task on t: queue
// t on its mutex, unless the mutex was released since t saw it held; then
// t owns it and is made ready.
func (t *Task) commitMutex() {
	m := mutexAt(t.mx)
	m.lock.Lock()
	if m.owner == 0 {
		m.owner = t.addr()
		t.mxHanded = false
		m.lock.Unlock()
		makeReady(t)
		return
	}
	t.wnext = 0
	if m.tail != 0 {
		taskAt(m.tail).wnext = t.addr()
	} else {
		m.head = t.addr()
	}
	m.tail = t.addr()
	t.setState(stBlocked)
	m.lock.Unlock()
}

// Unlock releases m, which the current task owns. With waiters, the first
// becomes the owner and runs next on this CPU; the caller continues later,
// from the ready queue.
func (m *Mutex) Unlock() {
	t := Current()
	m.lock.Lock()
	if m.owner != t.addr() {
		die(dieUnlock)
	}
	w := m.head
	if w == 0 {
		m.owner = 0
		m.lock.Unlock()
		return
	}
	next := taskAt(w)
	m.head = next.wnext
	if m.head == 0 {
		m.tail = 0
	}
	next.wnext = 0
	next.mxHanded = true
	m.owner = w
	// Waiters of a mutex have no deadline and no other waker.
	next.setState(stReady)
	m.HandoffCPU = int32(This().ID + 1)
	m.HandoffAt = clock.Nanotime()
	m.lock.Unlock()
	if m.Dispatch {
		makeReady(next)
		return
	}
	This().why = WhyHandoff
	switchTo(next, finReady)
}

// Owned reports whether the current task owns m.
func (m *Mutex) Owned() bool {
	m.lock.Lock()
	o := m.owner == Current().addr()
	m.lock.Unlock()
	return o
}
