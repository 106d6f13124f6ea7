package ces

import (
	"runtime"
	"sync/atomic"
)

// Every primitive keeps its state in one atomic word. Bit 0 of that word is
// the guard: a test-and-set spin lock that protects the rest of the word and
// the primitive's intrusive waiter queue. The fast paths are a single
// compare-and-swap from a value with the guard clear, so while a goroutine
// holds the guard no other goroutine can change the word; the holder
// releases the guard by storing the new value.
const guardBit = 1

// guard64 acquires the guard of *s and returns the word (guard bit set).
// The guard is held for a few dozen instructions and never across a park or
// a yield, so waiters spin briefly and then yield to the Go scheduler (the
// holder may have been preempted on this very P).
func guard64(s *atomic.Uint64) uint64 {
	for i := 0; ; i++ {
		v := s.Load()
		if v&guardBit == 0 && s.CompareAndSwap(v, v|guardBit) {
			return v | guardBit
		}
		backoff(i)
	}
}

func guard32(s *atomic.Uint32) uint32 {
	for i := 0; ; i++ {
		v := s.Load()
		if v&guardBit == 0 && s.CompareAndSwap(v, v|guardBit) {
			return v | guardBit
		}
		backoff(i)
	}
}

// backoff is the wait between two failed guard attempts: 64 re-reads, then
// a yield per attempt.
func backoff(i int) {
	if i >= 64 {
		runtime.Gosched()
	}
}

// queue is an intrusive FIFO of waiters. It is always accessed under the
// owning primitive's guard.
type queue struct {
	head, tail *waiter
}

func (q *queue) empty() bool { return q.head == nil }

func (q *queue) push(w *waiter) {
	w.next = nil
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
}

func (q *queue) pop() *waiter {
	w := q.head
	if w == nil {
		return nil
	}
	q.head = w.next
	if q.head == nil {
		q.tail = nil
	}
	w.next = nil
	return w
}

// take removes and returns the whole queue as a list linked by next.
func (q *queue) take() *waiter {
	w := q.head
	q.head, q.tail = nil, nil
	return w
}

// pushList appends a list linked by next.
func (q *queue) pushList(w *waiter) {
	for w != nil {
		next := w.next
		q.push(w)
		w = next
	}
}

func (q *queue) len() int {
	n := 0
	for w := q.head; w != nil; w = w.next {
		n++
	}
	return n
}
