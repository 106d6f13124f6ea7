package ces

import (
	"sync"
	"sync/atomic"
)

// RWMutex state: guardBit, rwWriter, rwWaiters, then the reader count.
const (
	rwWriter  = 1 << 1 // a writer owns the lock
	rwWaiters = 1 << 2 // the queue is not empty
	rwShift   = 3
	rwReader  = 1 << rwShift
)

// An RWMutex is a fair reader/writer mutual exclusion lock with
// combine-and-exchange handoff. The zero value is unlocked. It must not be
// copied after first use.
//
// Fairness: once any goroutine waits, every later RLock and Lock queues
// behind it (no barging), and the queue is served in arrival order. A
// writer therefore waits at most for the readers and writers that arrived
// before it, and a reader at most for the writers queued before it. When a
// writer unlocks and the head of the queue is a reader, the whole run of
// readers at the head is admitted at once.
//
// Handoff: when the last reader or a writer releases the lock to waiters,
// one admitted waiter runs next on the releasing goroutine's processor and
// the releasing goroutine moves to the global run queue; further admitted
// readers are made runnable (dispatched). A releasing reader that is not the
// last one just leaves.
type RWMutex struct {
	state atomic.Uint64
	q     queue // guarded
}

// RLock locks rw for reading. It blocks while a writer holds rw or any
// goroutine is queued.
func (rw *RWMutex) RLock() {
	v := rw.state.Load()
	if v&(guardBit|rwWriter|rwWaiters) == 0 && rw.state.CompareAndSwap(v, v+rwReader) {
		return
	}
	rw.rlockSlow()
}

func (rw *RWMutex) rlockSlow() {
	w := getWaiter()
	v := guard64(&rw.state)
	if v&(rwWriter|rwWaiters) == 0 {
		rw.state.Store((v + rwReader) &^ guardBit)
		putWaiter(w)
		return
	}
	rw.enqueue(w, v)
	w.park()
	putWaiter(w)
}

// TryRLock locks rw for reading if that needs no waiting, and reports
// whether it did.
func (rw *RWMutex) TryRLock() bool {
	for i := 0; ; i++ {
		v := rw.state.Load()
		if v&(rwWriter|rwWaiters) != 0 {
			return false
		}
		if v&guardBit == 0 && rw.state.CompareAndSwap(v, v+rwReader) {
			return true
		}
		backoff(i)
	}
}

// RUnlock undoes one RLock. If it is the last reader and a writer waits,
// the writer becomes the owner and runs next on this processor. It panics
// if rw is not read-locked.
func (rw *RWMutex) RUnlock() {
	v := rw.state.Load()
	if v&(guardBit|rwWaiters) == 0 && v>>rwShift != 0 && rw.state.CompareAndSwap(v, v-rwReader) {
		return
	}
	v = guard64(&rw.state)
	if v>>rwShift == 0 {
		rw.state.Store(v &^ guardBit)
		panic("ces: RUnlock of unlocked RWMutex")
	}
	v -= rwReader
	if v>>rwShift != 0 || v&rwWaiters == 0 {
		rw.state.Store(v &^ guardBit)
		return
	}
	// Last reader with waiters: readers only wait behind a writer, so the
	// head is a writer.
	w := rw.q.pop()
	rw.state.Store(rw.waitBits() | rwWriter)
	exchange(w)
}

// Lock locks rw for writing. It blocks while rw is held or any goroutine is
// queued.
func (rw *RWMutex) Lock() {
	if rw.state.CompareAndSwap(0, rwWriter) {
		return
	}
	w := getWaiter()
	w.writer = true
	v := guard64(&rw.state)
	if v&(rwWriter|rwWaiters) == 0 && v>>rwShift == 0 {
		rw.state.Store(rwWriter)
		putWaiter(w)
		return
	}
	rw.enqueue(w, v)
	w.park()
	putWaiter(w)
}

// TryLock locks rw for writing if it is free, and reports whether it did.
func (rw *RWMutex) TryLock() bool {
	for i := 0; ; i++ {
		v := rw.state.Load()
		if v&^guardBit != 0 {
			return false
		}
		if v == 0 && rw.state.CompareAndSwap(0, rwWriter) {
			return true
		}
		backoff(i)
	}
}

// Unlock unlocks rw for writing. If the head waiter is a writer it becomes
// the owner; if it is a reader, it and the readers directly behind it are
// admitted. The first admitted goroutine runs next on this processor. It
// panics if rw is not write-locked.
func (rw *RWMutex) Unlock() {
	if rw.state.CompareAndSwap(rwWriter, 0) {
		return
	}
	v := guard64(&rw.state)
	if v&rwWriter == 0 {
		rw.state.Store(v &^ guardBit)
		panic("ces: Unlock of unlocked RWMutex")
	}
	first := rw.q.pop()
	if first == nil {
		rw.state.Store(0)
		return
	}
	if first.writer {
		rw.state.Store(rw.waitBits() | rwWriter)
		exchange(first)
		return
	}
	readers, last := uint64(1), first
	for h := rw.q.head; h != nil && !h.writer; h = rw.q.head {
		rw.q.pop()
		last.next = h
		last = h
		readers++
	}
	rw.state.Store(rw.waitBits() | readers<<rwShift)
	exchangeList(first)
}

// RLocker returns a Locker whose Lock and Unlock call rw.RLock and
// rw.RUnlock.
func (rw *RWMutex) RLocker() sync.Locker { return (*rlocker)(rw) }

type rlocker RWMutex

func (r *rlocker) Lock()   { (*RWMutex)(r).RLock() }
func (r *rlocker) Unlock() { (*RWMutex)(r).RUnlock() }

// enqueue queues w under the guard (v is the guarded word) and releases
// the guard.
func (rw *RWMutex) enqueue(w *waiter, v uint64) {
	rw.q.push(w)
	rw.state.Store((v | rwWaiters) &^ guardBit)
}

func (rw *RWMutex) waitBits() uint64 {
	if rw.q.empty() {
		return 0
	}
	return rwWaiters
}
