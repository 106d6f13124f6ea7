package ces

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

func (c *Cond) waiting() int {
	c.guard()
	defer c.unguard()
	return c.q.len()
}

// Signal under the mutex moves the longest waiter onto the mutex queue
// without running it; it runs when the signaller unlocks, in signal order.
func TestCondSignalMovesToMutexQueue(t *testing.T) {
	var m Mutex
	c := NewCond(&m)
	const N = 5
	var order []int // guarded by m
	var wg sync.WaitGroup
	for i := range N {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Lock()
			c.Wait()
			order = append(order, i)
			m.Unlock()
		}()
		waitFor(t, 5*time.Second, "waiter", func() bool { return c.waiting() == i+1 })
	}
	m.Lock()
	c.Signal()
	c.Signal()
	if got := c.waiting(); got != N-2 {
		t.Fatalf("%d on the cond queue after two Signals, want %d", got, N-2)
	}
	if got := m.l.queued(); got != 2 {
		t.Fatalf("%d on the mutex queue after two Signals, want 2", got)
	}
	if len(order) != 0 {
		t.Fatal("a signalled waiter ran while the signaller held the mutex")
	}
	m.Unlock()
	waitFor(t, 5*time.Second, "two signalled waiters", func() bool {
		m.Lock()
		defer m.Unlock()
		return len(order) == 2
	})
	m.Lock()
	c.Broadcast()
	if c.waiting() != 0 || m.l.queued() != N-2 {
		t.Fatalf("after Broadcast: cond %d, mutex %d", c.waiting(), m.l.queued())
	}
	m.Unlock()
	waitOrDump(t, &wg, 5*time.Second, "broadcast")
	for i := range N {
		if order[i] != i {
			t.Fatalf("wake order %v", order)
		}
	}
}

// Signal without the mutex: if the mutex is free the waiter becomes its
// owner at once; if another goroutine holds it, the waiter queues for it.
func TestCondSignalUnlocked(t *testing.T) {
	var m Mutex
	c := NewCond(&m)
	woke := make(chan bool, 1)
	done := make(chan struct{})
	go func() {
		m.Lock()
		c.Wait()
		woke <- m.TryLock() // must be false: Wait returns holding m
		m.Unlock()
		close(done)
	}()
	waitFor(t, 5*time.Second, "waiter", func() bool { return c.waiting() == 1 })
	c.Signal() // m is free: the waiter is granted m
	if held := <-woke; held {
		t.Fatal("Wait returned without the mutex")
	}
	<-done
	if !m.TryLock() {
		t.Fatal("mutex not free after the waiter unlocked")
	}
	m.Unlock()
	c.Signal() // no waiter: no effect
	c.Broadcast()
}

// A bounded buffer with two conditions: items are conserved, none is
// consumed twice, and the producers and consumers all finish.
func TestCondBoundedBuffer(t *testing.T) {
	withProcs(t, []int{1, 2}, func(t *testing.T) {
		var m Mutex
		notFull, notEmpty := NewCond(&m), NewCond(&m)
		const cap_, P, C = 4, 8, 8
		per := scale(2000)
		var buf []int
		seen := make([]bool, P*per)
		var wg sync.WaitGroup
		for p := range P {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(6, uint64(p)))
				for i := range per {
					m.Lock()
					for len(buf) == cap_ {
						notFull.Wait()
					}
					buf = append(buf, p*per+i)
					if r.IntN(2) == 0 {
						notEmpty.Signal()
					} else {
						notEmpty.Broadcast()
					}
					m.Unlock()
				}
			}()
		}
		for range C {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range P * per / C {
					m.Lock()
					for len(buf) == 0 {
						notEmpty.Wait()
					}
					v := buf[0]
					buf = buf[1:]
					if seen[v] {
						t.Errorf("item %d consumed twice", v)
					}
					seen[v] = true
					notFull.Signal()
					m.Unlock()
					runtime.Gosched()
				}
			}()
		}
		waitOrDump(t, &wg, 30*time.Second, "bounded buffer")
		for v, ok := range seen {
			if !ok {
				t.Fatalf("item %d never consumed", v)
			}
		}
	})
}
