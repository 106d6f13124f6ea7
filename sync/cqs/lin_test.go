package cqs

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Linearizability: concurrent histories of each primitive, with waits,
// non-blocking attempts and cancellations, are checked against sequential
// specifications with porcupine. An operation that returned a ctx error
// is specified as a no-op. Histories are short (a few hundred operations)
// so that the search stays fast; many seeded rounds make up for it.
//
// Every history runs with chaos on the primitive's queue: at each
// injection point of the algorithm (Queue.hook, nil in production: where
// a Suspend or Resume has claimed its cell, a waiter is about to park or
// has been interrupted, a cancellation has won but its handler has not
// run, a Sync Resume waits for a handler, a primitive has changed its
// counter but not yet called Suspend or Resume, the latch's registration)
// a seeded pseudo-random choice yields the processor, sleeps a few
// microseconds or goes on. Those are the points of the paper's named
// races; without the yields their windows are a few instructions wide and
// random histories almost never hit them. Each test runs at GOMAXPROCS 1
// and 2.

// A recorder collects operations with timestamps from one atomic clock.
type recorder struct {
	clock atomic.Int64
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func (r *recorder) op(client int, in any, f func() any) any {
	call := r.clock.Add(1)
	out := f()
	ret := r.clock.Add(1)
	r.mu.Lock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	r.mu.Unlock()
	return out
}

func rounds() int {
	if testing.Short() {
		return 6
	}
	return 30
}

// waitCtx returns a context for a blocking call: no deadline, already
// cancelled, or cancelled after a few microseconds, chosen by rng.
func waitCtx(rng *rand.Rand) (context.Context, context.CancelFunc) {
	switch rng.IntN(3) {
	case 0:
		return context.WithCancel(bg)
	case 1:
		ctx, cancel := context.WithCancel(bg)
		cancel()
		return ctx, cancel
	}
	return context.WithTimeout(bg, time.Duration(rng.IntN(30))*time.Microsecond)
}

// work yields a few times, so that holders overlap with waiters.
func work(rng *rand.Rand) {
	for n := rng.IntN(3); n > 0; n-- {
		runtime.Gosched()
	}
}

// chaos installs on q a hook that, at every injection point, yields with
// probability 1/4 and sleeps 0-19 µs with probability 1/32, as decided by
// a pseudo-random sequence fixed by seed (which choice falls to which
// goroutine still depends on the schedule).
func chaos(q *Queue, seed uint64) {
	var n atomic.Uint64
	q.hook = func(hookPoint) {
		x := splitmix(seed<<20 + n.Add(1))
		switch {
		case x%4 == 0:
			runtime.Gosched()
		case x%32 == 1:
			time.Sleep(time.Duration(x>>40%20) * time.Microsecond)
		}
	}
}

// splitmix is the SplitMix64 finaliser.
func splitmix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func check(t *testing.T, name string, m porcupine.Model, ops []porcupine.Operation) {
	t.Helper()
	switch res := porcupine.CheckOperationsTimeout(m, ops, 20*time.Second); res {
	case porcupine.Ok:
	default:
		for _, o := range ops {
			t.Logf("client %d [%d,%d] %v -> %v", o.ClientId, o.Call, o.Return, o.Input, o.Output)
		}
		t.Fatalf("%s: history of %d operations: %s", name, len(ops), res)
	}
}

type semOp uint8

const (
	opAcquire semOp = iota
	opTryAcquire
	opRelease
)

func (o semOp) String() string { return [...]string{"acquire", "tryAcquire", "release"}[o] }

// semModel is a semaphore with k permits; state = free permits.
func semModel(k int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return k },
		Step: func(state, in, out any) (bool, any) {
			free := state.(int)
			switch in.(semOp) {
			case opAcquire:
				if !out.(bool) {
					return true, free // cancelled: no-op
				}
				return free > 0, free - 1
			case opTryAcquire:
				if out.(bool) {
					return free > 0, free - 1
				}
				return free == 0, free
			default:
				return free < k, free + 1
			}
		},
	}
}

// semaphoreLike is Semaphore or Mutex under one interface for the test.
type semaphoreLike struct {
	acquire func(context.Context) error
	try     func() bool
	release func()
}

func runSemHistory(t *testing.T, seed uint64, k, clients, opsPerClient int, s semaphoreLike) []porcupine.Operation {
	var r recorder
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			held := false
			for i := 0; i < opsPerClient; i++ {
				if held {
					work(rng)
					r.op(c, opRelease, func() any { s.release(); return true })
					held = false
					continue
				}
				if rng.IntN(3) == 0 {
					held = r.op(c, opTryAcquire, func() any { return s.try() }).(bool)
					continue
				}
				ctx, cancel := waitCtx(rng)
				held = r.op(c, opAcquire, func() any { return s.acquire(ctx) == nil }).(bool)
				cancel()
			}
			if held {
				r.op(c, opRelease, func() any { s.release(); return true })
			}
		}()
	}
	waitAll(t, &wg)
	return r.ops
}

func TestLinearizableSemaphore(t *testing.T) {
	forProcs(t, func(t *testing.T) {
		for _, k := range []int{1, 2} {
			for seed := uint64(1); seed <= uint64(rounds()); seed++ {
				s := NewSemaphore(k)
				chaos(&s.p.q, seed)
				ops := runSemHistory(t, seed, k, 4, 40, semaphoreLike{s.Acquire, s.TryAcquire, s.Release})
				check(t, fmt.Sprintf("semaphore k=%d seed=%d", k, seed), semModel(k), ops)
				if got := s.Available(); got != k {
					t.Fatalf("seed %d: %d permits free at the end, want %d", seed, got, k)
				}
			}
		}
	})
}

func TestLinearizableMutex(t *testing.T) {
	forProcs(t, func(t *testing.T) {
		for seed := uint64(1); seed <= uint64(rounds()); seed++ {
			m := NewMutex()
			chaos(&m.p.q, seed)
			ops := runSemHistory(t, seed, 1, 4, 40, semaphoreLike{m.Lock, m.TryLock, m.Unlock})
			check(t, fmt.Sprintf("mutex seed=%d", seed), semModel(1), ops)
		}
	})
}

type latchOp uint8

const (
	opCountDown latchOp = iota
	opAwait
	opCount
)

type latchIn struct{ op latchOp }
type latchOut struct {
	ok    bool
	count int
}

// latchModel: state = remaining count (>= 0).
func latchModel(n int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return n },
		Step: func(state, in, out any) (bool, any) {
			c := state.(int)
			o := out.(latchOut)
			switch in.(latchIn).op {
			case opCountDown:
				return true, max(c-1, 0)
			case opAwait:
				if !o.ok {
					return true, c // cancelled: no-op
				}
				return c == 0, c
			default:
				return max(o.count, 0) == c, c
			}
		},
	}
}

func TestLinearizableLatch(t *testing.T) {
	forProcs(t, testLinearizableLatch)
}

func testLinearizableLatch(t *testing.T) {
	const n = 4
	for seed := uint64(1); seed <= uint64(2*rounds()); seed++ {
		l := NewCountDownLatch(n)
		chaos(&l.q, seed)
		var r recorder
		var wg sync.WaitGroup
		for c := 0; c < 6; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(c)))
				for i := 0; i < 8; i++ {
					work(rng)
					switch {
					case c < 2: // count-downers
						r.op(c, latchIn{opCountDown}, func() any { l.CountDown(); return latchOut{ok: true} })
					case rng.IntN(4) == 0:
						r.op(c, latchIn{opCount}, func() any { return latchOut{ok: true, count: l.Count()} })
					default:
						ctx, cancel := waitCtx(rng)
						if c == 5 { // one awaiter always waits for real
							ctx, cancel = context.WithCancel(bg)
						}
						r.op(c, latchIn{opAwait}, func() any { return latchOut{ok: l.Await(ctx) == nil} })
						cancel()
					}
				}
			}()
		}
		waitAll(t, &wg)
		check(t, fmt.Sprintf("latch seed=%d", seed), latchModel(n), r.ops)
	}
}

type poolOp uint8

const (
	opPut poolOp = iota
	opTake
)

type poolIn struct {
	op poolOp
	v  int
}
type poolOut struct {
	ok bool
	v  int
}

// bagModel: state = bitmask of the elements in the pool (all distinct).
func bagModel(full uint64) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return full },
		Step: func(state, in, out any) (bool, any) {
			bag := state.(uint64)
			i, o := in.(poolIn), out.(poolOut)
			if i.op == opPut {
				bit := uint64(1) << i.v
				return bag&bit == 0, bag | bit // a duplicate would be illegal
			}
			if !o.ok {
				return true, bag // cancelled: no-op
			}
			bit := uint64(1) << o.v
			return bag&bit != 0, bag &^ bit
		},
		DescribeState: func(s any) string { return fmt.Sprintf("%b (%d)", s, bits.OnesCount64(s.(uint64))) },
	}
}

func TestLinearizablePools(t *testing.T) {
	forProcs(t, testLinearizablePools)
}

func testLinearizablePools(t *testing.T) {
	for _, pk := range pools {
		for _, elems := range []int{1, 3} {
			for seed := uint64(1); seed <= uint64(rounds()); seed++ {
				p := pk.make()
				for e := 0; e < elems; e++ {
					p.Put(e)
				}
				chaos(p.queue(), seed)
				var r recorder
				var wg sync.WaitGroup
				for c := 0; c < 4; c++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(seed, uint64(c)))
						for i := 0; i < 20; i++ {
							ctx, cancel := waitCtx(rng)
							out := r.op(c, poolIn{op: opTake}, func() any {
								v, err := p.Take(ctx)
								return poolOut{err == nil, v}
							}).(poolOut)
							cancel()
							if out.ok {
								work(rng)
								r.op(c, poolIn{opPut, out.v}, func() any { p.Put(out.v); return poolOut{ok: true} })
							}
						}
					}()
				}
				waitAll(t, &wg)
				check(t, fmt.Sprintf("%s pool elems=%d seed=%d", pk.name, elems, seed), bagModel(1<<elems-1), r.ops)
				if got := drain(p); len(got) != elems {
					t.Fatalf("%s pool seed %d: %d elements left, want %d", pk.name, seed, len(got), elems)
				}
			}
		}
	}
}
