package ces

import "sync/atomic"

// Semaphore state: guardBit, sWaiters, then the available permits.
const (
	sWaiters = 1 << 1
	sShift   = 2
	// MaxPermits is the largest semaphore size.
	MaxPermits = 1<<(64-sShift) - 1
)

// A Semaphore is a weighted counting semaphore with FIFO admission: a
// goroutine that must wait queues behind earlier waiters, and permits are
// granted to the queue in order, so a large request at the head is not
// overtaken by smaller ones behind it. It must not be copied after first
// use; create it with NewSemaphore.
//
// Release that admits waiters follows combine-and-exchange: the first
// admitted waiter runs next on the releasing goroutine's processor, the
// other admitted waiters are made runnable (dispatched), and the releasing
// goroutine moves to the global run queue.
type Semaphore struct {
	_     noCopy
	state atomic.Uint64
	size  int64
	q     queue // guarded
}

// NewSemaphore returns a semaphore with n permits, all available.
func NewSemaphore(n int64) *Semaphore {
	if n < 0 || n > MaxPermits {
		panic("ces: semaphore size out of range")
	}
	s := &Semaphore{size: n}
	s.state.Store(uint64(n) << sShift)
	return s
}

// Acquire takes n permits, blocking until they are granted. Acquire(0)
// returns at once.
func (s *Semaphore) Acquire(n int64) {
	s.check(n)
	if n == 0 {
		return
	}
	v := s.state.Load()
	if v&(guardBit|sWaiters) == 0 && int64(v>>sShift) >= n &&
		s.state.CompareAndSwap(v, v-uint64(n)<<sShift) {
		return
	}
	w := getWaiter()
	w.n = n
	v = guard64(&s.state)
	if v&sWaiters == 0 && int64(v>>sShift) >= n {
		s.state.Store((v - uint64(n)<<sShift) &^ guardBit)
		putWaiter(w)
		return
	}
	s.q.push(w)
	s.state.Store((v | sWaiters) &^ guardBit)
	w.park()
	putWaiter(w)
}

// TryAcquire takes n permits if they are available and no goroutine is
// waiting, and reports whether it did.
func (s *Semaphore) TryAcquire(n int64) bool {
	s.check(n)
	for i := 0; ; i++ {
		v := s.state.Load()
		if v&sWaiters != 0 || int64(v>>sShift) < n {
			return false
		}
		if v&guardBit == 0 && s.state.CompareAndSwap(v, v-uint64(n)<<sShift) {
			return true
		}
		backoff(i)
	}
}

// Release returns n permits. If this admits waiters, the first of them
// runs next on this processor and Release returns when a processor resumes
// the caller; see the type documentation. It panics if more permits are
// released than the semaphore holds.
func (s *Semaphore) Release(n int64) {
	s.check(n)
	if n == 0 {
		return
	}
	v := s.state.Load()
	if v&(guardBit|sWaiters) == 0 && int64(v>>sShift)+n <= s.size &&
		s.state.CompareAndSwap(v, v+uint64(n)<<sShift) {
		return
	}
	v = guard64(&s.state)
	avail := int64(v>>sShift) + n
	if avail > s.size {
		s.state.Store(v &^ guardBit)
		panic("ces: semaphore released more than held")
	}
	var first, last *waiter
	for w := s.q.head; w != nil && w.n <= avail; w = s.q.head {
		avail -= w.n
		s.q.pop()
		if first == nil {
			first = w
		} else {
			last.next = w
		}
		last = w
	}
	nv := uint64(avail) << sShift
	if !s.q.empty() {
		nv |= sWaiters
	}
	s.state.Store(nv)
	exchangeList(first)
}

// Available reports the permits not held, a snapshot for tests and
// monitoring.
func (s *Semaphore) Available() int64 { return int64(s.state.Load() >> sShift) }

func (s *Semaphore) check(n int64) {
	if n < 0 || n > s.size {
		panic("ces: semaphore request out of range")
	}
}
