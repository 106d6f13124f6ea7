package cqs

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"yolk/internal/testwait"

	"golang.org/x/sync/semaphore"
)

// Benchmarks after the paper's evaluation (section 6), against what Go
// programs use today: golang.org/x/sync/semaphore, a buffered channel,
// sync.WaitGroup, sync.Mutex. Each benchmark op is one operation pair of
// one goroutine; ns/op is wall time divided by ops of all goroutines.

// prng is a per-goroutine xorshift generator; one step is the paper's
// "uncontended loop iteration".
type prng uint64

func (r *prng) next() uint64 {
	x := uint64(*r)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*r = prng(x)
	return x
}

// geoWork does a geometrically distributed number of PRNG steps with the
// given mean (each step stops with probability 1/mean), as the paper's
// benchmarks do between operations.
func geoWork(r *prng, mean uint64) {
	stop := ^uint64(0) / mean
	for r.next() > stop {
	}
}

// runOps runs b.N ops spread over g goroutines, handed out in batches.
func runOps(b *testing.B, g int, op func(r *prng)) {
	const batch = 16
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := prng(0x9E3779B97F4A7C15 ^ uint64(i+1)*0xBF58476D1CE4E5B9)
			for {
				n := next.Add(batch)
				if n-batch >= int64(b.N) {
					return
				}
				for j := n - batch; j < n && j < int64(b.N); j++ {
					op(&r)
				}
			}
		}()
	}
	wg.Wait()
}

// sem is the common face of the three semaphores under test.
type sem interface {
	acquire(ctx context.Context) error
	release()
}

type cqsSem struct{ *Semaphore }

func (s cqsSem) acquire(ctx context.Context) error { return s.Acquire(ctx) }
func (s cqsSem) release()                          { s.Release() }

type xSem struct{ *semaphore.Weighted }

func (s xSem) acquire(ctx context.Context) error { return s.Acquire(ctx, 1) }
func (s xSem) release()                          { s.Release(1) }

// chanSem is the idiomatic abortable channel semaphore.
type chanSem chan struct{}

func (s chanSem) acquire(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	default:
	}
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (s chanSem) release() { <-s }

var semImpls = []struct {
	name string
	make func(k int) sem
}{
	{"cqs", func(k int) sem { return cqsSem{NewSemaphore(k)} }},
	{"xsync", func(k int) sem { return xSem{semaphore.NewWeighted(int64(k))} }},
	{"chan", func(k int) sem { return make(chanSem, k) }},
}

// Paper Fig. 7: each op does work (mean 100 steps), acquires, does work
// (mean 100) holding the permit, releases. goroutines == permits: no
// waiting (the "threads <= permits" regime); goroutines = 32: contended.
func BenchmarkSemaphore(b *testing.B) {
	for _, k := range []int{1, 4, 16} {
		for _, g := range []int{k, 32} {
			for _, impl := range semImpls {
				b.Run(fmt.Sprintf("permits=%d/g=%d/impl=%s", k, g, impl.name), func(b *testing.B) {
					s := impl.make(k)
					runOps(b, g, func(r *prng) {
						geoWork(r, 100)
						if s.acquire(bg) != nil {
							panic("acquire failed")
						}
						geoWork(r, 100)
						s.release()
					})
				})
			}
		}
	}
}

// The bare uncontended cost of one acquire/release pair on one goroutine,
// with sync.Mutex and our Mutex for reference.
func BenchmarkUncontended(b *testing.B) {
	for _, impl := range semImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			s := impl.make(1)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s.acquire(bg)
				s.release()
			}
		})
	}
	b.Run("impl=cqs-mutex", func(b *testing.B) {
		m := NewMutex()
		for i := 0; i < b.N; i++ {
			m.Lock(bg)
			m.Unlock()
		}
	})
	b.Run("impl=sync.Mutex", func(b *testing.B) {
		var m sync.Mutex
		for i := 0; i < b.N; i++ {
			m.Lock()
			m.Unlock()
		}
	})
}

// Paper Fig. 6: b.N countDowns spread over g goroutines, each followed by
// work (mean 100 steps), while one goroutine awaits the latch; "work" is
// the baseline without countDown.
func BenchmarkLatch(b *testing.B) {
	for _, g := range []int{2, 8} {
		b.Run(fmt.Sprintf("g=%d/impl=cqs", g), func(b *testing.B) {
			l := NewCountDownLatch(b.N)
			done := make(chan struct{})
			go func() { l.Await(bg); close(done) }()
			runOps(b, g, func(r *prng) { l.CountDown(); geoWork(r, 100) })
			<-done
		})
		b.Run(fmt.Sprintf("g=%d/impl=waitgroup", g), func(b *testing.B) {
			var wg sync.WaitGroup
			wg.Add(b.N)
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			runOps(b, g, func(r *prng) { wg.Done(); geoWork(r, 100) })
			<-done
		})
		b.Run(fmt.Sprintf("g=%d/impl=work-only", g), func(b *testing.B) {
			runOps(b, g, func(r *prng) { geoWork(r, 100) })
		})
	}
}

type benchPool interface {
	take(ctx context.Context) (int, error)
	put(int)
}

type qPool struct{ *QueuePool[int] }

func (p qPool) take(ctx context.Context) (int, error) { return p.Take(ctx) }
func (p qPool) put(v int)                             { p.Put(v) }

type sPool struct{ *StackPool[int] }

func (p sPool) take(ctx context.Context) (int, error) { return p.Take(ctx) }
func (p sPool) put(v int)                             { p.Put(v) }

type chanPool chan int

func (p chanPool) take(ctx context.Context) (int, error) {
	select {
	case v := <-p:
		return v, nil
	default:
	}
	select {
	case v := <-p:
		return v, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
func (p chanPool) put(v int) { p <- v }

// Paper Fig. 8: each op does work (mean 100), takes an element, works with
// it (mean 100), puts it back; 32 goroutines share `elems` elements.
func BenchmarkPool(b *testing.B) {
	impls := []struct {
		name string
		make func(n int) benchPool
	}{
		{"queue", func(int) benchPool { return qPool{NewQueuePool[int]()} }},
		{"stack", func(int) benchPool { return sPool{NewStackPool[int]()} }},
		{"chan", func(n int) benchPool { return make(chanPool, n) }},
	}
	for _, n := range []int{1, 4, 16} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("elems=%d/g=32/impl=%s", n, impl.name), func(b *testing.B) {
				p := impl.make(n)
				for e := 0; e < n; e++ {
					p.put(e)
				}
				runOps(b, 32, func(r *prng) {
					geoWork(r, 100)
					e, err := p.take(bg)
					if err != nil {
						panic(err)
					}
					geoWork(r, 100)
					p.put(e)
				})
			})
		}
	}
}

// Paper Fig. 9: the cost of a waiting acquire that is cancelled, with 0 or
// 1000 other goroutines already waiting. "done" passes a ctx that is
// already done: CQS enqueues and cancels at once (the paper's
// suspend-and-abort without parking); x/sync and the channel check ctx
// first and never enqueue. "parked": a goroutine really parks in Acquire
// and is then cancelled (includes two goroutine switches).
func BenchmarkCancel(b *testing.B) {
	impls := []struct {
		name string
		make func() sem // a semaphore with no free permit
	}{
		{"cqs", func() sem { return cqsSem{NewSemaphore(0)} }},
		{"xsync", func() sem {
			w := semaphore.NewWeighted(1)
			w.Acquire(bg, 1)
			return xSem{w}
		}},
		{"chan", func() sem { s := make(chanSem, 1); s <- struct{}{}; return s }},
	}
	for _, mode := range []string{"done", "parked"} {
		for _, queued := range []int{0, 1000} {
			for _, impl := range impls {
				b.Run(fmt.Sprintf("mode=%s/queued=%d/impl=%s", mode, queued, impl.name), func(b *testing.B) {
					b.ReportAllocs()
					s := impl.make()
					wctx, stop := context.WithCancel(bg)
					var wg sync.WaitGroup
					for i := 0; i < queued; i++ {
						wg.Add(1)
						go func() { defer wg.Done(); queuedWaiter(s, wctx) }()
					}
					waitQueued(b, s, queued)
					if mode == "done" {
						ctx := cancelled()
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							if s.acquire(ctx) == nil {
								panic("acquired")
							}
						}
					} else {
						benchParkedCancel(b, s)
					}
					b.StopTimer()
					stop()
					wg.Wait()
				})
			}
		}
	}
}

// queuedWaiter is a goroutine queued in BenchmarkCancel: it blocks in
// acquire until the benchmark ends. It is a named function so that
// waitQueued can find it in goroutine stacks.
//
//go:noinline
func queuedWaiter(s sem, ctx context.Context) { s.acquire(ctx) }

// waitQueued waits until n queuedWaiter goroutines are blocked in their
// acquire: for CQS, until the semaphore counts n waiters and n cells are
// claimed; for every implementation, until n goroutine stacks show
// queuedWaiter parked in a select (the three acquires all block in one).
// It fails the benchmark if that takes more than 30 s.
func waitQueued(b *testing.B, s sem, n int) {
	if n == 0 {
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		if c, isCQS := s.(cqsSem); isCQS {
			ok = c.Available() == -n && c.p.q.cells.enqIdx.Load() == int64(n)
		}
		if ok && blockedIn("queuedWaiter", "[select") >= n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d waiters not all parked after 30 s", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// blockedIn counts the goroutines whose state starts with state (as
// runtime.Stack prints it, e.g. "[select") and whose stack contains fn.
func blockedIn(fn, state string) int {
	n := 0
	for _, g := range strings.Split(string(testwait.Stacks()), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(header, state) && strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

func benchParkedCancel(b *testing.B, s sem) {
	ctxs := make(chan context.Context)
	back := make(chan error)
	go func() {
		for ctx := range ctxs {
			back <- s.acquire(ctx)
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithCancel(bg)
		ctxs <- ctx
		runtime.Gosched()
		cancel()
		if <-back == nil {
			panic("acquired")
		}
	}
	b.StopTimer()
	close(ctxs)
}
