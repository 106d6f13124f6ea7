package ces

import "sync/atomic"

// Mutex state bits (besides guardBit).
const (
	mLocked  = 1 << 1 // some goroutine owns the mutex
	mWaiters = 1 << 2 // the queue is not empty
)

// lock is the queue logic shared by Mutex, DispatchMutex and Cond: who owns
// the mutex and who waits, in arrival order. It never blocks.
//
// Invariant: if the mutex is not locked, its queue is empty. Releasing a
// mutex that has waiters does not unlock it: ownership passes to the head
// waiter, so a goroutine arriving later cannot overtake it.
type lock struct {
	state    atomic.Uint32
	q        queue  // guarded
	arrivals uint64 // tickets handed out to queued waiters; guarded
}

// tryFast takes a free mutex with one compare-and-swap.
func (l *lock) tryFast() bool { return l.state.CompareAndSwap(0, mLocked) }

// tryLock takes the mutex if it is free. It fails only if the mutex was
// held at the moment of the attempt (a concurrent guard holder is waited
// out, not reported as contention).
func (l *lock) tryLock() bool {
	for i := 0; ; i++ {
		s := l.state.Load()
		if s&mLocked != 0 {
			return false
		}
		if s == 0 && l.state.CompareAndSwap(0, mLocked) {
			return true
		}
		backoff(i)
	}
}

// acquireOrEnqueue takes the mutex for w's goroutine if it is free and
// reports true; otherwise it queues w (FIFO) and reports false, and w will
// be handed the mutex by a later release.
func (l *lock) acquireOrEnqueue(w *waiter) bool {
	s := guard32(&l.state)
	if s&mLocked == 0 {
		l.state.Store(mLocked)
		return true
	}
	l.arrivals++
	w.ticket = l.arrivals
	l.q.push(w)
	l.state.Store(mLocked | mWaiters)
	return false
}

// enqueueList queues a list of waiters (Cond.Broadcast). If the mutex is
// free, the first of them becomes the owner and is returned; the rest are
// queued behind it.
func (l *lock) enqueueList(w *waiter) (owner *waiter) {
	if w == nil {
		return nil
	}
	s := guard32(&l.state)
	if s&mLocked == 0 {
		owner, w = w, w.next
		owner.next = nil
	}
	for w != nil {
		next := w.next
		l.arrivals++
		w.ticket = l.arrivals
		l.q.push(w)
		w = next
	}
	ns := uint32(mLocked)
	if !l.q.empty() {
		ns |= mWaiters
	}
	l.state.Store(ns)
	return owner
}

// release gives up ownership. If waiters are queued, the head waiter now
// owns the mutex and is returned; the caller must resume it. Otherwise the
// mutex is free and release returns nil.
func (l *lock) release() *waiter {
	if l.state.CompareAndSwap(mLocked, 0) {
		return nil
	}
	s := guard32(&l.state)
	if s&mLocked == 0 {
		l.state.Store(0)
		panic("ces: unlock of unlocked mutex")
	}
	w := l.q.pop()
	if w == nil {
		l.state.Store(0)
		return nil
	}
	ns := uint32(mLocked)
	if !l.q.empty() {
		ns |= mWaiters
	}
	l.state.Store(ns)
	return w
}

// queued reports the number of waiters (tests).
func (l *lock) queued() int {
	s := guard32(&l.state)
	n := l.q.len()
	l.state.Store(s &^ guardBit)
	return n
}

// A Mutex is a mutual exclusion lock with combine-and-exchange handoff.
// The zero value is an unlocked mutex. A Mutex must not be copied after
// first use.
//
// Lock admits goroutines in arrival order once the mutex is contended, and
// Unlock of a contended mutex runs the next owner on the unlocking
// goroutine's processor while the unlocking goroutine continues elsewhere
// (see the package documentation).
type Mutex struct {
	l lock
}

// Lock locks m. If m is locked, the calling goroutine queues behind the
// goroutines already waiting and blocks until Unlock hands m to it.
func (m *Mutex) Lock() {
	if m.l.tryFast() {
		return
	}
	m.lockSlow(false)
}

// TryLock locks m if it is free and reports whether it did. It never
// overtakes queued goroutines: a mutex with waiters is locked.
func (m *Mutex) TryLock() bool { return m.l.tryLock() }

// Unlock unlocks m. If goroutines are waiting, the first of them becomes
// the owner and runs next on this processor; the calling goroutine is put
// on the global run queue and Unlock returns when a processor resumes it.
// It is a run-time error (panic) if m is not locked.
func (m *Mutex) Unlock() {
	if m.l.state.CompareAndSwap(mLocked, 0) {
		return
	}
	m.unlockSlow()
}

// unlockSlow releases m to its head waiter, if any, and reports whether
// it handed m off.
func (m *Mutex) unlockSlow() bool {
	w := m.l.release()
	if w == nil {
		return false
	}
	exchange(w)
	return true
}

// lockSlow queues the caller. It returns the caller's arrival ticket (0 if
// it got the mutex without queuing) and, if stamp, the queuing delay: the
// time from the releaser making it runnable to this point.
func (m *Mutex) lockSlow(stamp bool) (ticket uint64, delay int64) {
	return lockSlow(&m.l, stamp)
}

func lockSlow(l *lock, stamp bool) (ticket uint64, delay int64) {
	w := getWaiter()
	w.stamp = stamp
	if l.acquireOrEnqueue(w) {
		putWaiter(w)
		return 0, 0
	}
	w.park()
	ticket = w.ticket
	if stamp {
		delay = monotime() - w.wokeAt
	}
	putWaiter(w)
	return ticket, delay
}

// A DispatchMutex is the comparison point for Mutex: the same state word,
// the same FIFO queue and the same direct ownership handoff, but Unlock
// only makes the next owner runnable and keeps running (the classic
// "notify the next waiter" design the paper calls dispatch scheduling).
// The next owner waits in the unlocking processor's runnext slot until that
// processor schedules (the unlocker blocks or is preempted) or an idle
// processor steals it; the mutex stays locked, idle, for that time.
type DispatchMutex struct {
	l lock
}

// Lock locks m; see Mutex.Lock.
func (m *DispatchMutex) Lock() {
	if m.l.tryFast() {
		return
	}
	m.lockSlow(false)
}

func (m *DispatchMutex) lockSlow(stamp bool) (ticket uint64, delay int64) {
	return lockSlow(&m.l, stamp)
}

// TryLock locks m if it is free; see Mutex.TryLock.
func (m *DispatchMutex) TryLock() bool { return m.l.tryLock() }

// Unlock unlocks m. If goroutines are waiting, the first of them becomes
// the owner and is made runnable; the caller continues.
func (m *DispatchMutex) Unlock() {
	if m.l.state.CompareAndSwap(mLocked, 0) {
		return
	}
	m.unlockSlow()
}

func (m *DispatchMutex) unlockSlow() bool {
	w := m.l.release()
	if w == nil {
		return false
	}
	dispatch(w)
	return true
}
