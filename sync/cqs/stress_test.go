package cqs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Randomised stress with cancellations, under GOMAXPROCS 1 and 2, checking
// conservation invariants. Seeds are fixed; the interleavings are whatever
// the scheduler makes of them.

func iterations() int {
	if testing.Short() {
		return 300
	}
	return 2000
}

func forProcs(t *testing.T, f func(t *testing.T)) {
	for _, p := range []int{1, 2} {
		t.Run(fmt.Sprintf("procs=%d", p), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(p))
			f(t)
		})
	}
}

// Permits held + available + in flight = K: while running, no more than K
// are ever held; at quiescence (nothing in flight) exactly K are free, no
// value sits in any cell, and exactly K TryAcquires succeed.
func TestSemaphoreConservation(t *testing.T) {
	for _, k := range []int{1, 3} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			forProcs(t, func(t *testing.T) {
				s := NewSemaphore(k)
				var held, maxHeld atomic.Int64
				var cancels atomic.Int64
				var wg sync.WaitGroup
				for g := 0; g < 8; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(uint64(k), uint64(g)))
						for i := 0; i < iterations(); i++ {
							var ok bool
							if rng.IntN(4) == 0 {
								ok = s.TryAcquire()
							} else {
								ctx, cancel := waitCtx(rng)
								ok = s.Acquire(ctx) == nil
								cancel()
								if !ok {
									cancels.Add(1)
								}
							}
							if !ok {
								continue
							}
							h := held.Add(1)
							for m := maxHeld.Load(); h > m && !maxHeld.CompareAndSwap(m, h); m = maxHeld.Load() {
							}
							if h > int64(k) {
								t.Errorf("%d permits held, k=%d", h, k)
							}
							work(rng)
							held.Add(-1)
							s.Release()
						}
					}()
				}
				waitAll(t, &wg)
				if got := s.Available(); got != k {
					t.Fatalf("%d permits free at quiescence, want %d", got, k)
				}
				if _, vals := s.p.q.reachable(); vals != 0 {
					t.Fatalf("%d permits left in cells", vals)
				}
				for i := 0; i < k; i++ {
					if !s.TryAcquire() {
						t.Fatalf("TryAcquire %d of %d failed", i+1, k)
					}
				}
				if s.TryAcquire() {
					t.Fatal("more than k permits")
				}
				if cancels.Load() == 0 || maxHeld.Load() != int64(k) {
					t.Fatalf("stress too weak: %d cancellations, max held %d", cancels.Load(), maxHeld.Load())
				}
				t.Logf("%d cancelled acquires, %d suspensions", cancels.Load(), s.p.q.cells.enqIdx.Load())
			})
		})
	}
}

// Mutual exclusion under the race detector: the unsynchronised counter
// below is a data race if two goroutines are ever inside together.
func TestMutexExclusion(t *testing.T) {
	forProcs(t, func(t *testing.T) {
		m := NewMutex()
		var inside, total int
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(7, uint64(g)))
				for i := 0; i < iterations(); i++ {
					ctx, cancel := waitCtx(rng)
					err := m.Lock(ctx)
					cancel()
					if err != nil {
						continue
					}
					inside++
					if inside != 1 {
						t.Errorf("%d goroutines inside", inside)
					}
					total++
					work(rng)
					inside--
					m.Unlock()
				}
			}()
		}
		waitAll(t, &wg)
		if !m.TryLock() {
			t.Fatal("mutex not free at the end")
		}
		t.Logf("%d critical sections", total)
	})
}

// Pools never lose or duplicate an element: each element has an owner
// flag that a Take must find clear; at the end all elements are back.
func TestPoolConservation(t *testing.T) {
	for _, pk := range pools {
		for _, elems := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/elems=%d", pk.name, elems), func(t *testing.T) {
				forProcs(t, func(t *testing.T) {
					p := pk.make()
					owned := make([]atomic.Bool, elems)
					for e := 0; e < elems; e++ {
						p.Put(e)
					}
					var cancels atomic.Int64
					var wg sync.WaitGroup
					for g := 0; g < 8; g++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							rng := rand.New(rand.NewPCG(uint64(elems), uint64(g)))
							for i := 0; i < iterations(); i++ {
								ctx, cancel := waitCtx(rng)
								e, err := p.Take(ctx)
								cancel()
								if err != nil {
									cancels.Add(1)
									continue
								}
								if e < 0 || e >= elems || !owned[e].CompareAndSwap(false, true) {
									t.Errorf("element %d taken twice or invented", e)
									return
								}
								work(rng)
								owned[e].Store(false)
								p.Put(e)
							}
						}()
					}
					waitAll(t, &wg)
					got := drain(p)
					seen := make([]bool, elems)
					for _, e := range got {
						if seen[e] {
							t.Fatalf("element %d twice in the pool", e)
						}
						seen[e] = true
					}
					if len(got) != elems {
						t.Fatalf("pool holds %v at the end, want all %d elements", got, elems)
					}
					if _, vals := p.queue().reachable(); vals != 0 {
						t.Fatalf("%d elements left in queue cells", vals)
					}
					if cancels.Load() == 0 {
						t.Fatal("stress too weak: no cancellation")
					}
				})
			})
		}
	}
}

// The latch: every Await that succeeds returns after the count reached
// zero; every Await without a deadline returns (no lost wake-up).
func TestLatchStress(t *testing.T) {
	forProcs(t, func(t *testing.T) {
		for round := 0; round < iterations()/10; round++ {
			const n = 5
			l := NewCountDownLatch(n)
			var wg sync.WaitGroup
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
					if g < n {
						work(rng)
						l.CountDown()
						return
					}
					for i := 0; i < 4; i++ {
						ctx, cancel := waitCtx(rng)
						if g == 7 {
							ctx = bg
						}
						err := l.Await(ctx)
						cancel()
						if err == nil && l.Count() > 0 {
							t.Errorf("Await returned with count %d", l.Count())
						}
					}
				}()
			}
			waitAll(t, &wg)
			if _, vals := l.q.reachable(); vals != 0 {
				t.Fatalf("%d values left in the latch queue", vals)
			}
		}
	})
}

// The barrier: all parties without a deadline pass once the last arrives;
// cancelled ones still count.
func TestBarrierStress(t *testing.T) {
	forProcs(t, func(t *testing.T) {
		for round := 0; round < iterations()/10; round++ {
			const parties = 6
			b := NewBarrier(parties)
			var arrived atomic.Int32
			var wg sync.WaitGroup
			for g := 0; g < parties; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
					work(rng)
					ctx, cancel := waitCtx(rng)
					defer cancel()
					if g == 0 {
						ctx = context.Background()
					}
					arrived.Add(1)
					if err := b.Arrive(ctx); err == nil && arrived.Load() != parties {
						t.Errorf("passed the barrier with %d of %d arrived", arrived.Load(), parties)
					}
				}()
			}
			waitAll(t, &wg)
		}
	})
}
