package ces

import (
	"math/rand/v2"
	"sync"
)

// Workloads shared by the locality test and the benchmarks.

// spin burns roughly n iterations of a dependent xorshift chain (a few ns
// each) and returns a value the compiler cannot drop.
func spin(n int, x uint64) uint64 {
	if x == 0 {
		x = 1
	}
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

var sink uint64

// localityRun is the validation experiment of the CES paper (section 5.4):
// G goroutines, each repeatedly locking one of R resources chosen at
// random, recording inside the critical section which processor (P) it
// runs on. It returns, per resource, the share of its critical sections
// that ran on its most frequent P, and the mean over the resources.
func localityRun(newLock func() sync.Locker, G, R, iters, csWork, ncsWork int, seed uint64) (shares []float64, mean float64) {
	type resource struct {
		mu     sync.Locker
		counts map[int]int // P id -> critical sections; guarded by mu
		x      uint64
	}
	res := make([]*resource, R)
	for i := range res {
		res[i] = &resource{mu: newLock(), counts: map[int]int{}}
	}
	var wg sync.WaitGroup
	for g := range G {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			x := uint64(g + 1)
			for range iters {
				rs := res[r.IntN(R)]
				rs.mu.Lock()
				rs.counts[currentP()]++
				rs.x = spin(csWork, rs.x)
				rs.mu.Unlock()
				x = spin(ncsWork, x)
			}
			sink += x & 0 // keep x live without a data race
		}()
	}
	wg.Wait()
	for _, rs := range res {
		total, top := 0, 0
		for _, n := range rs.counts {
			total += n
			top = max(top, n)
		}
		s := float64(top) / float64(total)
		shares = append(shares, s)
		mean += s / float64(R)
	}
	return shares, mean
}
