// Package locktest is the test harness shared by the tests of yolk/sync/twa
// and yolk/sync/twa/baseline: one set of checks — mutual exclusion, FIFO
// admission, TryLock semantics, no lost wake-up across bursts — run against
// every lock and policy. It is for tests only. Every check is bounded by a
// watchdog, so a lost wake-up or a deadlock fails the test with the locks'
// state instead of hanging it; all randomness comes from fixed seeds.
package locktest

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"yolk/internal/testwait"
)

// A Subject is a lock under test. Worker w (0 ≤ w < the worker count the
// check was given, plus the extra indices a check documents) calls Lock(w),
// TryLock(w) and Unlock(w); locks that need a queue node per acquisition
// use w to pick it. If a Subject implements fmt.Stringer, its String is
// printed when a check times out.
type Subject interface {
	Lock(w int)
	Unlock(w int)
	TryLock(w int) bool
}

// sink keeps the PRNG work of critical sections from being optimised away.
var sink atomic.Uint64

// A Depther is a Subject that can tell how many Lock calls hold or wait
// for it (for a ticket lock, ticket − grant). The stress checks sample it
// inside critical sections and compare the deepest queue with
// Load.MinDepth; a depth of three is a holder, an immediate successor and
// a waiter behind it, which in TWA is a long-term waiter.
type Depther interface {
	Depth() int
}

// depth records the deepest queue seen.
type depth struct{ max atomic.Int64 }

func (d *depth) sample(s Subject) {
	if ds, ok := s.(Depther); ok {
		n := int64(ds.Depth())
		for {
			m := d.max.Load()
			if n <= m || d.max.CompareAndSwap(m, n) {
				return
			}
		}
	}
}

func (d *depth) check(t testing.TB, min int, subjects ...Subject) {
	t.Helper()
	if _, ok := subjects[0].(Depther); !ok {
		return
	}
	if m := d.max.Load(); m < int64(min) {
		t.Errorf("deepest queue seen was %d, want ≥ %d: the waiting paths were not exercised", m, min)
	} else {
		t.Logf("deepest queue seen: %d", m)
	}
}

// Timeout bounds each check: a lock that leaves a waiter behind shows up as
// a check that does not finish in time.
var Timeout = 20 * time.Second

// wait waits for wg, failing t with the subjects' state after Timeout.
func wait(t testing.TB, wg *sync.WaitGroup, what string, subjects ...Subject) {
	t.Helper()
	if !testwait.Wait(wg, Timeout) {
		t.Fatalf("%s: not finished after %v (lost wake-up or deadlock); %s", what, Timeout, state(subjects))
	}
}

// await polls cond, yielding, until it holds, failing t after Timeout.
func await(t testing.TB, cond func() bool, what string, subjects ...Subject) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached after %v; %s", what, Timeout, state(subjects))
		}
		runtime.Gosched()
	}
}

func state(subjects []Subject) string {
	var b strings.Builder
	b.WriteString("state:")
	for i, s := range subjects {
		if st, ok := s.(fmt.Stringer); ok {
			fmt.Fprintf(&b, " [%d] %s", i, st)
		}
	}
	return b.String()
}

// xorshift is Marsaglia's xorshift64 generator, the per-goroutine PRNG of
// the checks and of the benchmarks. The state must not be zero.
type xorshift uint64

func (x *xorshift) next() uint64 {
	v := uint64(*x)
	v ^= v << 13
	v ^= v >> 7
	v ^= v << 17
	*x = xorshift(v)
	return v
}

// Load describes the goroutines of a stress check.
type Load struct {
	Workers int    // goroutines, started together
	Iters   int    // acquisitions per goroutine (per round, for Bursts)
	Seed    uint64 // seeds every goroutine's PRNG
	// HoldYield, if not zero, makes one in HoldYield critical sections
	// yield the processor while holding the lock, so that queues form
	// even with one processor.
	HoldYield int
	// MinDepth, if not zero, is the queue depth (see Depther) the check
	// must have seen at least once, so that it cannot pass without
	// exercising the waiting paths. Loads with HoldYield and more workers
	// than MinDepth reach it by construction; others depend on scheduling.
	MinDepth int
}

// MutualExclusion runs l.Workers goroutines that each acquire s l.Iters
// times — a quarter of the time with TryLock first, falling back to Lock
// when it fails — and checks inside every critical section that no one else
// is in it (an owner word set on entry and checked on exit) and, at the
// end, that a counter incremented non-atomically under the lock counts
// every critical section. Under the race detector the counter also checks
// that Unlock→Lock orders memory. Each critical section reads the counter,
// spends a random few PRNG steps, then writes it back, to widen the window
// in which a second holder would be seen.
//
// It returns how many acquisitions were made by a successful TryLock: in a
// FIFO lock under a deep queue the lock may never be free, so whether
// TryLock must have succeeded is for the caller to say.
func MutualExclusion(t testing.TB, s Subject, l Load) (tryLocked int) {
	t.Helper()
	var (
		owner    atomic.Int64 // 0, or 1+the worker in the critical section
		counter  int          // protected by s
		tries    atomic.Int64 // successful TryLocks
		failures atomic.Int64
		deepest  depth
		start    = make(chan struct{})
		wg       sync.WaitGroup
	)
	for w := range l.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(l.Seed, uint64(w)))
			x := xorshift(rng.Uint64() | 1)
			<-start
			for range l.Iters {
				if rng.IntN(4) == 0 && s.TryLock(w) {
					tries.Add(1)
				} else {
					s.Lock(w)
				}
				if prev := owner.Swap(int64(w) + 1); prev != 0 {
					failures.Add(1)
					t.Errorf("worker %d entered the critical section held by worker %d", w, prev-1)
				}
				c := counter
				for range rng.IntN(8) {
					x.next()
				}
				if l.HoldYield != 0 && rng.IntN(l.HoldYield) == 0 {
					runtime.Gosched()
				}
				deepest.sample(s)
				counter = c + 1
				if cur := owner.Swap(0); cur != int64(w)+1 {
					failures.Add(1)
					t.Errorf("worker %d left the critical section owned by %d", w, cur-1)
				}
				s.Unlock(w)
				for range rng.IntN(64) {
					x.next()
				}
				if rng.IntN(16) == 0 {
					runtime.Gosched()
				}
				if failures.Load() > 10 {
					break
				}
			}
			sink.Add(uint64(x))
		}()
	}
	close(start)
	wait(t, &wg, "MutualExclusion", s)
	if want := l.Workers * l.Iters; counter != want && failures.Load() == 0 {
		t.Errorf("counter = %d after %d critical sections", counter, want)
	}
	deepest.check(t, l.MinDepth, s)
	return int(tries.Load())
}

// FIFO checks admission in arrival order. The test goroutine, worker 0,
// holds s; then workers 1..n call Lock one at a time, each only after the
// previous one has arrived — arrived(w) reports that worker w's Lock has
// taken its place in the queue (its ticket, its tail swap) behind the
// latest Lock by worker 0. While all n
// wait, a TryLock by worker n+1 must fail. After Unlock the workers must be
// admitted exactly in the order 1..n. Workers 0..n+1 are used.
func FIFO(t testing.TB, s Subject, n int, arrived func(w int) bool) {
	t.Helper()
	s.Lock(0)
	var (
		order []int // appended under s
		wg    sync.WaitGroup
	)
	for w := 1; w <= n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Lock(w)
			order = append(order, w)
			s.Unlock(w)
		}()
		await(t, func() bool { return arrived(w) }, fmt.Sprintf("FIFO: arrival of worker %d", w), s)
	}
	if s.TryLock(n + 1) {
		t.Errorf("TryLock succeeded on a held lock with %d waiters", n)
		s.Unlock(n + 1)
	}
	s.Unlock(0)
	wait(t, &wg, "FIFO", s)
	if len(order) != n {
		t.Fatalf("%d of %d workers admitted: %v", len(order), n, order)
	}
	for i, w := range order {
		if w != i+1 {
			t.Fatalf("admission order %v, want arrival order 1..%d", order, n)
		}
	}
}

// TryLock checks TryLock's semantics on a lock with no other users:
// it succeeds on a free lock, fails on a held one and on one with a queued
// waiter, never overtakes that waiter, and a failed TryLock leaves the lock
// usable. arrived is as for FIFO. Workers 0..3 are used. Failures are
// reported after the lock is released, so that no goroutine is left
// waiting on it.
func TryLock(t testing.TB, s Subject, arrived func(w int) bool) {
	t.Helper()
	if !s.TryLock(0) {
		t.Fatal("TryLock failed on a free lock")
	}
	for range 100 {
		if s.TryLock(1) {
			t.Fatal("TryLock succeeded on a held lock")
		}
	}
	s.Unlock(0)
	if !s.TryLock(1) {
		t.Fatal("TryLock failed on a lock after its holder's Unlock")
	}
	s.Unlock(1)

	// A queued waiter is admitted before any TryLock.
	s.Lock(0)
	var admitted atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.Lock(1)
		admitted.Store(true)
		s.Unlock(1)
	}()
	await(t, func() bool { return arrived(1) }, "TryLock: arrival of worker 1", s)
	if s.TryLock(2) {
		t.Error("TryLock succeeded on a held lock with a waiter")
		s.Unlock(2)
	}
	s.Unlock(0)
	overtaken := false
	await(t, func() bool {
		if admitted.Load() {
			return true
		}
		if s.TryLock(2) {
			overtaken = !admitted.Load()
			s.Unlock(2)
			return true
		}
		return false
	}, "TryLock: admission of the waiter", s)
	wait(t, &wg, "TryLock: waiter", s)
	if overtaken {
		t.Fatal("TryLock overtook a queued waiter")
	}

	// The lock still works after all the failed TryLocks.
	s.Lock(3)
	s.Unlock(3)
	if !s.TryLock(3) {
		t.Fatal("TryLock failed on a free lock after failed attempts")
	}
	s.Unlock(3)
}

// Bursts checks that no waiter is left behind when locks go idle between
// bursts of contention — the failure mode of a lock whose waiters sleep on
// a shared event word, like TWA's waiting array. For rounds rounds,
// l.Workers goroutines start together and each make l.Iters acquisitions,
// every one on a lock drawn at random from subjects (half of them on the
// first two, so queues form), with a short critical section; then every
// lock idles for idle before the next round starts. Each round must finish
// within Timeout; every critical section is checked for exclusion and
// counted.
func Bursts(t testing.TB, subjects []Subject, l Load, rounds int, idle time.Duration) {
	t.Helper()
	owners := make([]atomic.Int64, len(subjects))
	counts := make([]int, len(subjects)) // counts[i] protected by subjects[i]
	total := 0
	var (
		bad     atomic.Int64
		deepest depth
	)
	for r := range rounds {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range l.Workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(l.Seed+uint64(r), uint64(w)))
				<-start
				for range l.Iters {
					i := rng.IntN(len(subjects))
					if rng.IntN(2) == 0 {
						i = rng.IntN(min(2, len(subjects)))
					}
					s := subjects[i]
					s.Lock(w)
					if prev := owners[i].Swap(int64(w) + 1); prev != 0 {
						bad.Add(1)
					}
					counts[i]++
					if l.HoldYield != 0 && rng.IntN(l.HoldYield) == 0 {
						runtime.Gosched()
					}
					deepest.sample(s)
					owners[i].Store(0)
					s.Unlock(w)
					if rng.IntN(8) == 0 {
						runtime.Gosched()
					}
				}
			}()
		}
		close(start)
		wait(t, &wg, fmt.Sprintf("Bursts: round %d", r), subjects...)
		total += l.Workers * l.Iters
		time.Sleep(idle)
	}
	if n := bad.Load(); n != 0 {
		t.Errorf("%d critical sections overlapped another", n)
	}
	deepest.check(t, l.MinDepth, subjects...)
	sum := 0
	for _, c := range counts {
		sum += c
	}
	if sum != total {
		t.Errorf("%d critical sections counted, want %d", sum, total)
	}
}
