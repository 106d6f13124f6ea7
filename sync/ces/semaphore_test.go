package ces

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func (s *Semaphore) queued() int {
	v := guard64(&s.state)
	n := s.q.len()
	s.state.Store(v &^ guardBit)
	return n
}

// Conservation: permits held never exceed the size, and when everybody is
// done all permits are available again.
func TestSemaphoreConservation(t *testing.T) {
	for _, K := range []int64{1, 4, 16} {
		t.Run("K="+itoa(int(K)), func(t *testing.T) {
			withProcs(t, []int{1, 2}, func(t *testing.T) {
				s := NewSemaphore(K)
				var held atomic.Int64
				const G = 40
				iters := scale(1000)
				var wg sync.WaitGroup
				for g := range G {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := rand.New(rand.NewPCG(7, uint64(g)))
						for range iters {
							n := 1 + r.Int64N(K)
							if r.IntN(4) == 0 {
								if !s.TryAcquire(n) {
									continue
								}
							} else {
								s.Acquire(n)
							}
							if h := held.Add(n); h > K {
								t.Errorf("%d permits held of %d", h, K)
							}
							if r.IntN(2) == 0 {
								runtime.Gosched()
							}
							held.Add(-n)
							s.Release(n)
						}
					}()
				}
				waitOrDump(t, &wg, 30*time.Second, "semaphore")
				if a := s.Available(); a != K {
					t.Fatalf("%d permits available at the end, want %d", a, K)
				}
				if q := s.queued(); q != 0 {
					t.Fatalf("%d waiters left", q)
				}
			})
		})
	}
}

// FIFO: a large request at the head is not overtaken by a smaller one
// behind it, and one Release can admit several waiters.
func TestSemaphoreFIFO(t *testing.T) {
	s := NewSemaphore(4)
	s.Acquire(4)
	got := make(chan string, 3)
	var wg sync.WaitGroup
	enqueue := func(name string, n int64) {
		q := s.queued()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Acquire(n)
			got <- name
		}()
		waitFor(t, 5*time.Second, "queue", func() bool { return s.queued() == q+1 })
	}
	enqueue("A3", 3)
	enqueue("B1", 1)
	enqueue("C1", 1)
	s.Release(1)
	if s.TryAcquire(1) {
		t.Fatal("TryAcquire overtook queued waiters")
	}
	select {
	case name := <-got:
		t.Fatalf("%s admitted with 1 permit and A3 at the head", name)
	case <-time.After(20 * time.Millisecond):
	}
	s.Release(3) // 4 available: A3 and B1 admitted, C1 waits
	if a, b := <-got, <-got; a+b != "A3B1" && a+b != "B1A3" {
		t.Fatalf("admitted %s %s, want A3 and B1", a, b)
	}
	if s.queued() != 1 || s.Available() != 0 {
		t.Fatalf("queue %d, available %d", s.queued(), s.Available())
	}
	s.Release(1)
	if name := <-got; name != "C1" {
		t.Fatal(name)
	}
	waitOrDump(t, &wg, 10*time.Second, "semaphore FIFO waiters")
	s.Release(4)
	if s.Available() != 4 {
		t.Fatal("permits lost")
	}
}

func TestSemaphoreMisuse(t *testing.T) {
	s := NewSemaphore(2)
	mustPanic(t, "over-release", func() { s.Release(1) })
	mustPanic(t, "request above size", func() { s.Acquire(3) })
	mustPanic(t, "negative request", func() { s.TryAcquire(-1) })
	mustPanic(t, "negative size", func() { NewSemaphore(-1) })
	if s.Available() != 2 {
		t.Fatal("misuse changed the count")
	}
}
