package ces

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Mutual exclusion: a non-atomic counter and an occupancy flag, with the
// critical section sometimes yielding so that owners are descheduled while
// holding the lock.
func TestMutexExclusion(t *testing.T) {
	for _, lk := range lockers {
		t.Run(lk.name, func(t *testing.T) {
			withProcs(t, []int{1, 2}, func(t *testing.T) {
				m := lk.new()
				const G = 64
				iters := scale(2000)
				var inside atomic.Int32
				counter := 0
				var wg sync.WaitGroup
				for g := range G {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := rand.New(rand.NewPCG(1, uint64(g)))
						for range iters {
							m.Lock()
							if n := inside.Add(1); n != 1 {
								t.Errorf("%d goroutines inside the critical section", n)
							}
							counter++
							if r.IntN(8) == 0 {
								runtime.Gosched()
							}
							inside.Add(-1)
							m.Unlock()
						}
					}()
				}
				waitOrDump(t, &wg, 30*time.Second, "exclusion")
				if counter != G*iters {
					t.Fatalf("counter = %d, want %d", counter, G*iters)
				}
				if !m.TryLock() {
					t.Fatal("mutex not free after all goroutines finished")
				}
			})
		})
	}
}

// FIFO admission, deterministic: N goroutines queue one after another
// while the test holds the mutex; they must enter in queue order, and a
// goroutine that tries to barge in (TryLock, then Lock) after they queued
// must come after all of them.
func TestMutexFIFOOrderedArrival(t *testing.T) {
	for _, lk := range lockers {
		t.Run(lk.name, func(t *testing.T) {
			withProcs(t, []int{1, 2}, func(t *testing.T) {
				m := lk.new()
				const N = 50
				m.Lock()
				var mu sync.Mutex // guards order
				var order []int
				var wg sync.WaitGroup
				for i := range N {
					wg.Add(1)
					go func() {
						defer wg.Done()
						m.Lock()
						mu.Lock()
						order = append(order, i)
						mu.Unlock()
						runtime.Gosched()
						m.Unlock()
					}()
					waitFor(t, 5*time.Second, "waiter to queue", func() bool { return m.core().queued() == i+1 })
				}
				var bargerTried atomic.Bool
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !m.TryLock() {
						bargerTried.Store(true)
						runtime.Gosched()
					}
					mu.Lock()
					order = append(order, -1)
					mu.Unlock()
					m.Unlock()
				}()
				waitFor(t, 5*time.Second, "barger to try", bargerTried.Load)
				m.Unlock()
				waitOrDump(t, &wg, 10*time.Second, "ordered arrival")
				if len(order) != N+1 {
					t.Fatalf("order has %d entries, want %d", len(order), N+1)
				}
				for i := range N {
					if order[i] != i {
						t.Fatalf("admission order %v: position %d is %d", order, i, order[i])
					}
				}
				if order[N] != -1 {
					t.Fatalf("barger admitted before a queued goroutine: %v", order)
				}
			})
		})
	}
}

// FIFO admission under stress: every queued goroutine gets an arrival
// ticket under the lock's guard, and the tickets of the goroutines that
// entered through the queue must be admitted as 1, 2, 3, ... with no
// gap and no reordering.
func TestMutexFIFOTickets(t *testing.T) {
	withProcs(t, []int{1, 2}, func(t *testing.T) {
		var m Mutex
		const G = 32
		iters := scale(3000)
		var last uint64 // guarded by m
		queuedAdmissions := 0
		var wg sync.WaitGroup
		for g := range G {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(2, uint64(g)))
				for range iters {
					ticket := uint64(0)
					if !m.l.tryFast() {
						ticket, _ = m.lockSlow(false)
					}
					if ticket != 0 {
						if ticket != last+1 {
							t.Errorf("admitted ticket %d after %d", ticket, last)
						}
						last = ticket
						queuedAdmissions++
					}
					if r.IntN(4) == 0 {
						runtime.Gosched()
					}
					m.Unlock()
				}
			}()
		}
		waitOrDump(t, &wg, 30*time.Second, "tickets")
		if queuedAdmissions == 0 {
			t.Fatal("no goroutine ever queued: the test did not exercise the queue")
		}
		if uint64(queuedAdmissions) != last {
			t.Fatalf("%d queued admissions, last ticket %d", queuedAdmissions, last)
		}
		t.Logf("%d of %d acquisitions went through the queue", queuedAdmissions, G*iters)
	})
}

// No lost wake-up: bursts of contention separated by idle periods in which
// the lock is free and nobody waits. Every burst must complete; a lost
// wake-up leaves a goroutine parked forever.
func TestMutexBurstsNoLostWakeup(t *testing.T) {
	for _, lk := range lockers {
		t.Run(lk.name, func(t *testing.T) {
			withProcs(t, []int{1, 2}, func(t *testing.T) {
				m := lk.new()
				r := rand.New(rand.NewPCG(3, 3))
				rounds := scale(200)
				for round := range rounds {
					n := 2 + r.IntN(63)
					k := 1 + r.IntN(20)
					count := 0
					var wg sync.WaitGroup
					for range n {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for range k {
								m.Lock()
								count++
								m.Unlock()
							}
						}()
					}
					waitOrDump(t, &wg, 10*time.Second, "burst "+itoa(round))
					if count != n*k {
						t.Fatalf("round %d: count %d, want %d", round, count, n*k)
					}
					if q := m.core().queued(); q != 0 {
						t.Fatalf("round %d: %d waiters left in an idle lock", round, q)
					}
					time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond)
				}
			})
		})
	}
}

// No goroutine is lost or resumed twice: each goroutine's own count of
// critical sections must equal its iterations, and the total must match.
// (A second resume of a waiter panics in resume; a resume without a grant
// panics in park.)
func TestMutexEachGoroutineAccounted(t *testing.T) {
	for _, lk := range lockers {
		t.Run(lk.name, func(t *testing.T) {
			m := lk.new()
			const G = 200
			iters := scale(200)
			per := make([]int, G) // per[g] written only by g, under m
			owner := -1
			var wg sync.WaitGroup
			for g := range G {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range iters {
						m.Lock()
						if owner != -1 {
							t.Errorf("goroutine %d entered while %d owns the lock", g, owner)
						}
						owner = g
						per[g]++
						runtime.Gosched()
						owner = -1
						m.Unlock()
					}
				}()
			}
			waitOrDump(t, &wg, 30*time.Second, "accounting")
			for g, n := range per {
				if n != iters {
					t.Fatalf("goroutine %d ran %d critical sections, want %d", g, n, iters)
				}
			}
		})
	}
}

func TestMutexMisuse(t *testing.T) {
	mustPanic(t, "Unlock of unlocked Mutex", func() { new(Mutex).Unlock() })
	mustPanic(t, "Unlock of unlocked DispatchMutex", func() { new(DispatchMutex).Unlock() })
	var m Mutex
	if !m.TryLock() || m.TryLock() {
		t.Fatal("TryLock on free / held mutex")
	}
	m.Unlock()
	if !m.TryLock() {
		t.Fatal("TryLock after Unlock")
	}
	m.Unlock()
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatalf("%s did not panic", what)
		}
	}()
	f()
}

// A handoff never runs the next owner on the releasing goroutine's stack:
// with 10,000 goroutines queued and handed the lock one after another, the
// call depth inside every critical section is the same, and the goroutine
// that started the chain returns from Unlock at its own depth. An inline
// (nested-resume) handoff would add frames per link of the chain.
func TestHandoffChainStackDepth(t *testing.T) {
	for _, lk := range lockers {
		t.Run(lk.name, func(t *testing.T) {
			m := lk.new()
			N := scale(10000)
			depth := func() int {
				var pcs [512]uintptr
				return runtime.Callers(0, pcs[:])
			}
			depths := make([]int, N)
			m.Lock()
			var wg sync.WaitGroup
			for i := range N {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m.Lock()
					depths[i] = depth()
					m.Unlock()
				}()
			}
			waitFor(t, 20*time.Second, "all waiters to queue", func() bool { return m.core().queued() == N })
			before := depth()
			m.Unlock()
			after := depth()
			waitOrDump(t, &wg, 30*time.Second, "handoff chain")
			if before != after {
				t.Errorf("releaser's depth %d before Unlock, %d after", before, after)
			}
			for i, d := range depths {
				if d != depths[0] {
					t.Fatalf("critical section %d ran at call depth %d, first at %d", i, d, depths[0])
				}
			}
			if depths[0] > 32 {
				t.Fatalf("critical section at depth %d", depths[0])
			}
		})
	}
}
