package twa_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"yolk/sync/twa"
	"yolk/sync/twa/baseline"
)

// xorshift is Marsaglia's xorshift64, the thread-local PRNG of the paper's
// MutexBench (which used std::mt19937; any cheap generator serves: the
// steps only have to take time and not touch shared memory).
type xorshift uint64

func (x *xorshift) next() uint64 {
	v := uint64(*x)
	v ^= v << 13
	v ^= v >> 7
	v ^= v << 17
	*x = xorshift(v)
	return v
}

// steps advances x n times.
func (x *xorshift) steps(n uint64) {
	for range n {
		x.next()
	}
}

// sink keeps the PRNG work from being optimised away.
var sink atomic.Uint64

// padded keeps a benchmark's lock, or an MCS node, alone in its 128-byte
// sectors, as the paper sequesters its shared variables.
type padded[T any] struct {
	_ [128]byte
	v T
	_ [128]byte
}

// goroutineCounts are the paper's thread counts that fit a small machine:
// up to and beyond GOMAXPROCS, since the benchmarks run at -cpu 1,2.
var goroutineCounts = []int{1, 2, 4, 8}

// mutexBench runs the paper's MutexBench: g goroutines, started together,
// each looping "acquire the central lock; critical section of 4 PRNG
// steps; release; non-critical section of a uniformly random [0,200) PRNG
// steps", b.N acquisitions in all. ns/op is the wall time per acquisition,
// the inverse of the paper's aggregate throughput. worker(id, n, x) must
// run that loop n times with its own lock calls written out, so that each
// lock is called the way its users call it (inlined where Go inlines it).
func mutexBench(b *testing.B, g int, worker func(id, n int, x *xorshift)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for id := range g {
		n := b.N / g
		if id < b.N%g {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := xorshift(0x9E3779B97F4A7C15 ^ uint64(id+1)*0xBF58476D1CE4E5B9)
			<-start
			worker(id, n, &x)
			sink.Add(uint64(x))
		}()
	}
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
}

// BenchmarkMutexBench reproduces the paper's MutexBench (its Fig. 2,
// throughput against thread count) for TWA, the classic ticket lock, MCS
// (all with the goroutine policy, twa.Yield) and sync.Mutex.
func BenchmarkMutexBench(b *testing.B) {
	for _, g := range goroutineCounts {
		b.Run(fmt.Sprintf("lock=TWA/goroutines=%d", g), func(b *testing.B) {
			l := &new(padded[twa.Lock[twa.Yield]]).v
			mutexBench(b, g, func(_, n int, x *xorshift) {
				for range n {
					l.Lock()
					x.steps(4)
					l.Unlock()
					x.steps(x.next() % 200)
				}
			})
		})
		b.Run(fmt.Sprintf("lock=Ticket/goroutines=%d", g), func(b *testing.B) {
			l := &new(padded[baseline.Ticket[twa.Yield]]).v
			mutexBench(b, g, func(_, n int, x *xorshift) {
				for range n {
					l.Lock()
					x.steps(4)
					l.Unlock()
					x.steps(x.next() % 200)
				}
			})
		})
		b.Run(fmt.Sprintf("lock=MCS/goroutines=%d", g), func(b *testing.B) {
			l := &new(padded[baseline.MCS[twa.Yield]]).v
			mutexBench(b, g, func(_, n int, x *xorshift) {
				node := &new(padded[baseline.MCSNode]).v
				for range n {
					l.Lock(node)
					x.steps(4)
					l.Unlock(node)
					x.steps(x.next() % 200)
				}
			})
		})
		b.Run(fmt.Sprintf("lock=sync.Mutex/goroutines=%d", g), func(b *testing.B) {
			l := &new(padded[sync.Mutex]).v
			mutexBench(b, g, func(_, n int, x *xorshift) {
				for range n {
					l.Lock()
					x.steps(4)
					l.Unlock()
					x.steps(x.next() % 200)
				}
			})
		})
	}
}

// BenchmarkUncontended measures one Lock+Unlock pair by one goroutine on a
// lock no one else uses: the fast paths. TWA-spin is the kernel-context
// variant. Its fast path is compiled apart from TWA's: Lock[Spin] takes
// the ticket in nosplit code, Lock[Yield] in the noinline lockSplit (one
// more call, which takes a requested preemption before the ticket).
func BenchmarkUncontended(b *testing.B) {
	b.Run("lock=TWA", func(b *testing.B) {
		var l twa.Lock[twa.Yield]
		for range b.N {
			l.Lock()
			l.Unlock()
		}
	})
	b.Run("lock=TWA-spin", func(b *testing.B) {
		var l twa.Lock[twa.Spin]
		for range b.N {
			l.Lock()
			l.Unlock()
		}
	})
	b.Run("lock=Ticket", func(b *testing.B) {
		var l baseline.Ticket[twa.Yield]
		for range b.N {
			l.Lock()
			l.Unlock()
		}
	})
	b.Run("lock=MCS", func(b *testing.B) {
		var l baseline.MCS[twa.Yield]
		node := new(baseline.MCSNode)
		for range b.N {
			l.Lock(node)
			l.Unlock(node)
		}
	})
	b.Run("lock=sync.Mutex", func(b *testing.B) {
		var l sync.Mutex
		for range b.N {
			l.Lock()
			l.Unlock()
		}
	})
}
