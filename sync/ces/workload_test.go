package ces

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
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

var sink atomic.Uint64

// A localityLock is a lock under test in localityRun. lock reports whether
// the caller queued and was handed the lock by an Unlock (a contended
// handoff); locks that cannot tell report false.
type localityLock struct {
	lock   func() (handedOff bool)
	unlock func()
}

func lockerLocality(l locker) localityLock {
	return localityLock{
		lock:   func() bool { ticket, _ := lockT(l, false); return ticket != 0 },
		unlock: l.Unlock,
	}
}

func plainLocality(l sync.Locker) localityLock {
	return localityLock{lock: func() bool { l.Lock(); return false }, unlock: l.Unlock}
}

// localityStats is what localityRun measured for one resource.
type localityStats struct {
	sections int // critical sections
	top      int // ... of them on the resource's most frequent P
	handoffs int // contended handoffs (the new owner had queued)
	sameP    int // ... of them whose new owner ran its critical section on the unlocker's P
	next     int // ... of those with nothing in between on that P: the new owner ran next
}

// share is the paper's locality measure: the share of the resource's
// critical sections that ran on its most frequent P.
func (s localityStats) share() float64 { return float64(s.top) / float64(s.sections) }

// handoffSameP is the share of contended handoffs in which the new owner's
// critical section ran on the P that the unlocker released from.
func (s localityStats) handoffSameP() float64 {
	if s.handoffs == 0 {
		return 0
	}
	return float64(s.sameP) / float64(s.handoffs)
}

// runNext is the share of contended handoffs in which the new owner ran
// next on the unlocker's P: on that P, nothing the workload does (no other
// critical section, and not the unlocker's return from Unlock) came between
// the unlocker's last step before Unlock and the new owner's first step
// after Lock. That is the combine-and-exchange guarantee.
func (s localityStats) runNext() float64 {
	if s.handoffs == 0 {
		return 0
	}
	return float64(s.next) / float64(s.handoffs)
}

// localityRun is the validation experiment of the CES paper (section 5.4):
// G goroutines, each repeatedly locking one of R resources chosen at
// random, recording inside the critical section which processor (P) it
// runs on. Besides the paper's per-resource share it records, for every
// contended handoff, whether the new owner's critical section ran on the P
// the unlocker was on just before its Unlock (read inside the unlocker's
// critical section, so a preemption between that read and the Unlock can
// make a handoff count as a miss; it never makes a miss count as a hit),
// and whether the new owner ran next on that P. For the latter every
// goroutine counts its steps per P: entering a critical section and
// returning from Unlock each add one to the counter of the P they run on
// (read and incremented with the goroutine pinned to its P). The unlocker
// reads its P's counter last thing before Unlock; the new owner ran next
// if its entry step is the very next count on the same P.
// wait waits for the goroutines (a watchdog in tests).
func localityRun(newLock func() localityLock, G, R, iters, csWork, ncsWork int, seed uint64, wait func(*sync.WaitGroup)) []localityStats {
	type resource struct {
		mu     localityLock
		counts map[int]int // P id -> critical sections; guarded by mu
		lastP  int         // P of the latest holder before its Unlock; guarded by mu
		lastC  uint64      // lastP's step count then; guarded by mu
		stats  localityStats
		x      uint64
	}
	events := make([]atomic.Uint64, runtime.GOMAXPROCS(0))
	step := func() (p int, c uint64) {
		p = procPin()
		c = events[p].Add(1)
		procUnpin()
		return p, c
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
				handedOff := rs.mu.lock()
				p, c := step()
				rs.counts[p]++
				rs.stats.sections++
				if handedOff {
					rs.stats.handoffs++
					if p == rs.lastP {
						rs.stats.sameP++
						if c == rs.lastC+1 {
							rs.stats.next++
						}
					}
				}
				rs.x = spin(csWork, rs.x)
				rs.lastP = procPin()
				rs.lastC = events[rs.lastP].Load()
				procUnpin()
				rs.mu.unlock()
				step()
				x = spin(ncsWork, x)
			}
			sink.Add(x & 0)
		}()
	}
	wait(&wg)
	out := make([]localityStats, R)
	for i, rs := range res {
		for _, n := range rs.counts {
			rs.stats.top = max(rs.stats.top, n)
		}
		out[i] = rs.stats
	}
	return out
}
