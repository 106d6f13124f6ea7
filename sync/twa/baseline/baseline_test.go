package baseline

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"yolk/sync/twa"
	"yolk/sync/twa/internal/locktest"
)

// ticketSubject adapts a Ticket to locktest.Subject.
type ticketSubject[P twa.Policy] struct {
	l     Ticket[P]
	start atomic.Uint32 // ticket of worker 0's latest Lock
}

func (s *ticketSubject[P]) Lock(w int) {
	if tx := s.l.lock(); w == 0 {
		s.start.Store(tx)
	}
}
func (s *ticketSubject[P]) Unlock(int)       { s.l.Unlock() }
func (s *ticketSubject[P]) TryLock(int) bool { return s.l.TryLock() }
func (s *ticketSubject[P]) Depth() int {
	return int(atomic.LoadUint32(&s.l.ticket) - atomic.LoadUint32(&s.l.grant))
}
func (s *ticketSubject[P]) String() string {
	return fmt.Sprintf("ticket=%d grant=%d", atomic.LoadUint32(&s.l.ticket), atomic.LoadUint32(&s.l.grant))
}
func (s *ticketSubject[P]) arrived(w int) bool {
	return atomic.LoadUint32(&s.l.ticket)-s.start.Load() >= uint32(w)+1
}

// mcsSubject adapts an MCS lock to locktest.Subject: worker w uses node w.
type mcsSubject[P twa.Policy] struct {
	l     MCS[P]
	nodes [32]MCSNode
}

func (s *mcsSubject[P]) Lock(w int)         { s.l.Lock(&s.nodes[w]) }
func (s *mcsSubject[P]) Unlock(w int)       { s.l.Unlock(&s.nodes[w]) }
func (s *mcsSubject[P]) TryLock(w int) bool { return s.l.TryLock(&s.nodes[w]) }
func (s *mcsSubject[P]) String() string {
	tail := (*MCSNode)(atomic.LoadPointer(&s.l.tail))
	for i := range s.nodes {
		if tail == &s.nodes[i] {
			return fmt.Sprintf("tail=node %d", i)
		}
	}
	return fmt.Sprintf("tail=%p", tail)
}

// arrived reports whether worker w has swapped its node into the tail.
// Workers arrive one at a time in locktest.FIFO, so until the next one
// arrives the tail is w's node.
func (s *mcsSubject[P]) arrived(w int) bool {
	return atomic.LoadPointer(&s.l.tail) == unsafe.Pointer(&s.nodes[w])
}

func scale(n int) int {
	if testing.Short() {
		return max(n/5, 1)
	}
	return n
}

// spinWorkers: one goroutine per CPU for the Spin policy, as in package
// twa's tests (see spinWorkers and spinEnv there).
var spinWorkers = min(runtime.NumCPU(), 4)

// spinEnv runs a Spin-policy test with procs Ps and the garbage collector
// off: Spin waiters cannot be preempted, so a stop-the-world that stopped
// the holder would wait for them forever.
func spinEnv(t *testing.T, procs int, f func(t *testing.T)) {
	t.Run(fmt.Sprintf("Spin/procs=%d", procs), func(t *testing.T) {
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		f(t)
	})
}

func withProcs(t *testing.T, n int, f func(t *testing.T)) {
	t.Run(fmt.Sprintf("procs=%d", n), func(t *testing.T) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
		f(t)
	})
}

func TestTicket(t *testing.T) {
	for _, procs := range []int{1, runtime.NumCPU()} {
		withProcs(t, procs, func(t *testing.T) {
			locktest.MutualExclusion(t, new(ticketSubject[twa.Yield]), locktest.Load{Workers: 8, Iters: scale(1000), Seed: 21, HoldYield: 8, MinDepth: 3})
			s := new(ticketSubject[twa.Yield])
			locktest.FIFO(t, s, 16, s.arrived)
			s = new(ticketSubject[twa.Yield])
			locktest.TryLock(t, s, s.arrived)
			var ls []locktest.Subject
			for range 4 {
				ls = append(ls, new(ticketSubject[twa.Yield]))
			}
			locktest.Bursts(t, ls, locktest.Load{Workers: 8, Iters: 100, Seed: 22, HoldYield: 8, MinDepth: 3}, scale(10), time.Millisecond)
		})
	}
	spinEnv(t, spinWorkers+1, func(t *testing.T) {
		locktest.MutualExclusion(t, new(ticketSubject[twa.Spin]), locktest.Load{Workers: spinWorkers, Iters: scale(1000), Seed: 23})
		s := new(ticketSubject[twa.Spin])
		locktest.TryLock(t, s, s.arrived)
	})
	spinEnv(t, 8, func(t *testing.T) {
		s := new(ticketSubject[twa.Spin])
		locktest.FIFO(t, s, 6, s.arrived)
	})
}

func TestMCS(t *testing.T) {
	for _, procs := range []int{1, runtime.NumCPU()} {
		withProcs(t, procs, func(t *testing.T) {
			if locktest.MutualExclusion(t, new(mcsSubject[twa.Yield]), locktest.Load{Workers: 2, Iters: scale(5000), Seed: 31}) == 0 && procs > 1 {
				t.Error("no TryLock succeeded: the TryLock path was not exercised")
			}
			locktest.MutualExclusion(t, new(mcsSubject[twa.Yield]), locktest.Load{Workers: 8, Iters: scale(1000), Seed: 32, HoldYield: 8, MinDepth: 3})
			s := new(mcsSubject[twa.Yield])
			locktest.FIFO(t, s, 16, s.arrived)
			s = new(mcsSubject[twa.Yield])
			locktest.TryLock(t, s, s.arrived)
			var ls []locktest.Subject
			for range 4 {
				ls = append(ls, new(mcsSubject[twa.Yield]))
			}
			locktest.Bursts(t, ls, locktest.Load{Workers: 8, Iters: 100, Seed: 33, HoldYield: 8, MinDepth: 3}, scale(10), time.Millisecond)
		})
	}
	spinEnv(t, spinWorkers+1, func(t *testing.T) {
		locktest.MutualExclusion(t, new(mcsSubject[twa.Spin]), locktest.Load{Workers: spinWorkers, Iters: scale(1000), Seed: 34})
		s := new(mcsSubject[twa.Spin])
		locktest.TryLock(t, s, s.arrived)
	})
	spinEnv(t, 8, func(t *testing.T) {
		s := new(mcsSubject[twa.Spin])
		locktest.FIFO(t, s, 6, s.arrived)
	})
}

// ttasSubject adapts a TTAS lock to locktest.Subject.
type ttasSubject[P twa.Policy] struct{ l TTAS[P] }

func (s *ttasSubject[P]) Lock(int)         { s.l.Lock() }
func (s *ttasSubject[P]) Unlock(int)       { s.l.Unlock() }
func (s *ttasSubject[P]) TryLock(int) bool { return s.l.TryLock() }

// TestTTAS checks mutual exclusion only: TTAS promises no order.
func TestTTAS(t *testing.T) {
	for _, procs := range []int{1, runtime.NumCPU()} {
		withProcs(t, procs, func(t *testing.T) {
			locktest.MutualExclusion(t, new(ttasSubject[twa.Yield]), locktest.Load{Workers: 8, Iters: scale(1000), Seed: 41, HoldYield: 8})
		})
	}
	spinEnv(t, spinWorkers+1, func(t *testing.T) {
		locktest.MutualExclusion(t, new(ttasSubject[twa.Spin]), locktest.Load{Workers: spinWorkers, Iters: scale(1000), Seed: 42})
	})
}
