package ces

import (
	"flag"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user + system CPU time in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// Benchmarks reproducing the CES paper's evaluation at this machine's
// scale. Results and commands: docs/sync-ces.md.

// primes are the Fig. 8 task's "large primes": the 64 primes following
// 10^7. Factorising one by trial division takes about 6 µs on the
// reference machine (the paper does not give its prime size; its
// throughput implies a far longer non-critical section).
var primes = func() []uint64 {
	var ps []uint64
	for n := uint64(10_000_000); len(ps) < 64; n++ {
		if factors(n) == 1 {
			ps = append(ps, n)
		}
	}
	return ps
}()

// factors counts the prime factors of n by trial division: the
// parallelisable part of the Fig. 8 task. It does not allocate, so the
// benchmark measures scheduling, not the garbage collector.
func factors(n uint64) int {
	k := 0
	for d := uint64(2); d*d <= n; d++ {
		for n%d == 0 {
			k++
			n /= d
		}
	}
	if n > 1 {
		k++
	}
	return k
}

// busyWait spins for d of wall time: the paper's critical-section padding.
func busyWait(d time.Duration) {
	if d <= 0 {
		return
	}
	start := time.Now()
	for time.Since(start) < d {
	}
}

type lockKind struct {
	name string
	new  func() sync.Locker
}

var mutexKinds = []lockKind{
	{"ces", func() sync.Locker { return new(Mutex) }},
	{"dispatch", func() sync.Locker { return new(DispatchMutex) }},
	{"sync", func() sync.Locker { return new(sync.Mutex) }},
}

// split runs body(g, n) on G goroutines, n being goroutine g's share of
// b.N iterations, and waits for all of them. The timer covers goroutine
// start-up, as the paper's throughput includes task creation. Besides
// ns/op it reports cpu-ns/op, the process's CPU time (user + system, all
// threads, including the runtime's) per op: wall time on this shared
// machine depends on how much CPU the other tenants leave, CPU time much
// less so.
func split(b *testing.B, G int, body func(g, n int)) {
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	defer func() {
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	}()
	b.ResetTimer()
	for g := range G {
		n := b.N / G
		if g < b.N%G {
			n++
		}
		if n == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(g, n)
		}()
	}
	wg.Wait()
}

// fig8 is the paper's Fig. 8 task: pick a prime, insert it into a shared
// map under the lock (plus cs of busy-waiting), factorise it outside.
// One op is one loop cycle of one task.
func fig8(b *testing.B, l sync.Locker, G int, cs time.Duration) {
	m := map[uint64]uint64{}
	split(b, G, func(g, n int) {
		r := rand.New(rand.NewPCG(8, uint64(g)))
		for range n {
			p := primes[r.IntN(len(primes))]
			l.Lock()
			m[p] = p
			busyWait(cs)
			l.Unlock()
			if factors(p) != 1 {
				panic("not a prime")
			}
		}
	})
}

// BenchmarkFig8 is the paper's mutex microbenchmark (Fig. 8 task, Fig. 9
// plot): 5000 tasks. The paper runs 1000 iterations per task; here b.N
// iterations are spread over the 5000 goroutines.
func BenchmarkFig8(b *testing.B) {
	for _, k := range mutexKinds {
		b.Run("lock="+k.name, func(b *testing.B) { fig8(b, k.new(), 5000, 0) })
	}
}

var fig8Full = flag.Bool("fig8full", false, "run BenchmarkFig8Full, the paper's full Fig. 8 workload (about 30 s per lock and GOMAXPROCS)")

// BenchmarkFig8Full is the paper's Fig. 8 workload at its full size: 5000
// goroutines × 1000 loop cycles each (5,000,000 map inserts under the lock
// and 5,000,000 factorisations of primes just above 10^7 outside it), all
// started together; one op is the whole workload, and ns/cycle and
// cpu-ns/cycle are per loop cycle. It runs only with -fig8full (use
// -benchtime=1x): each op takes about 30 s of CPU on the reference
// machine. Give -cpu one value per run: with -benchtime=1x the testing
// package runs a sub-benchmark only in its first probe (b.N = 1), which
// does not apply the -cpu setting when -cpu lists several values (it ran
// at GOMAXPROCS=2 for "-cpu 1,2" in go1.26.8); the gomaxprocs metric
// reports what the run really had.
func BenchmarkFig8Full(b *testing.B) {
	if !*fig8Full {
		b.Skip("the full Fig. 8 workload runs only with -fig8full")
	}
	const G, iters = 5000, 1000
	for _, k := range mutexKinds {
		b.Run("lock="+k.name, func(b *testing.B) {
			var wall, cpu int64
			for range b.N {
				l := k.new()
				m := map[uint64]uint64{}
				var wg sync.WaitGroup
				start := make(chan struct{})
				for g := range G {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := rand.New(rand.NewPCG(8, uint64(g)))
						<-start
						for range iters {
							p := primes[r.IntN(len(primes))]
							l.Lock()
							m[p] = p
							l.Unlock()
							if factors(p) != 1 {
								panic("not a prime")
							}
						}
					}()
				}
				runtime.GC()
				t0, c0 := time.Now(), cpuTime()
				close(start)
				wg.Wait()
				wall += int64(time.Since(t0))
				cpu += cpuTime() - c0
				if len(m) != len(primes) {
					b.Fatalf("map has %d primes, want %d", len(m), len(primes))
				}
			}
			n := float64(b.N) * G * iters
			b.ReportMetric(float64(wall)/n, "ns/cycle")
			b.ReportMetric(float64(cpu)/n, "cpu-ns/cycle")
			b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "gomaxprocs")
		})
	}
}

// BenchmarkCSLength is the critical-section sweep (paper Fig. 10): the
// Fig. 8 task with 0, 250 ns, 1 µs, 2.5 µs and 7.5 µs of busy-waiting added
// inside the critical section.
func BenchmarkCSLength(b *testing.B) {
	for _, cs := range []time.Duration{0, 250 * time.Nanosecond, time.Microsecond, 2500 * time.Nanosecond, 7500 * time.Nanosecond} {
		for _, k := range mutexKinds {
			b.Run("cs="+cs.String()+"/lock="+k.name, func(b *testing.B) { fig8(b, k.new(), 5000, cs) })
		}
	}
}

type rwLocker interface {
	sync.Locker
	RLock()
	RUnlock()
}

// BenchmarkRW is the reader-writer microbenchmark (paper Fig. 11): the
// Fig. 8 task where a writer inserts under Lock and a reader looks the
// prime up under RLock, with 50 % and 6.25 % writers.
func BenchmarkRW(b *testing.B) {
	kinds := []struct {
		name string
		new  func() rwLocker
	}{
		{"ces", func() rwLocker { return new(RWMutex) }},
		{"sync", func() rwLocker { return new(sync.RWMutex) }},
	}
	for _, wp := range []struct {
		name string
		one  int // one writer in every `one` operations
	}{{"writers=50%", 2}, {"writers=6.25%", 16}} {
		for _, k := range kinds {
			b.Run(wp.name+"/lock="+k.name, func(b *testing.B) {
				l := k.new()
				m := map[uint64]uint64{}
				for _, p := range primes {
					m[p] = p
				}
				split(b, 5000, func(g, n int) {
					r := rand.New(rand.NewPCG(9, uint64(g)))
					for range n {
						p := primes[r.IntN(len(primes))]
						if r.IntN(wp.one) == 0 {
							l.Lock()
							m[p] = p
							l.Unlock()
						} else {
							l.RLock()
							p = m[p]
							l.RUnlock()
						}
						if factors(p) != 1 {
							panic("not a prime")
						}
					}
				})
			})
		}
	}
}

// BenchmarkQueuingDelay measures the paper's queuing delay (section 6.5,
// Fig. 15) in the Fig. 8 task with a 1 µs critical section: for every
// acquisition that went through the queue, the time from the releaser
// making the waiter runnable to the waiter's Lock returning. Reported as
// the share of acquisitions that queued and the delay's median and 90th
// percentile; ns/op is the throughput as in BenchmarkCSLength.
func BenchmarkQueuingDelay(b *testing.B) {
	for _, k := range lockers {
		b.Run("lock="+k.name, func(b *testing.B) {
			l := k.new()
			const G = 5000
			m := map[uint64]uint64{}
			delays := make([][]int64, G)
			split(b, G, func(g, n int) {
				r := rand.New(rand.NewPCG(10, uint64(g)))
				var own []int64
				for range n {
					p := primes[r.IntN(len(primes))]
					if ticket, d := lockT(l, true); ticket != 0 {
						own = append(own, d)
					}
					m[p] = p
					busyWait(time.Microsecond)
					l.Unlock()
					_ = factors(p)
				}
				delays[g] = own
			})
			b.StopTimer()
			all := slices.Concat(delays...)
			slices.Sort(all)
			b.ReportMetric(100*float64(len(all))/float64(b.N), "queued-%")
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)/2]), "delay-p50-ns")
				b.ReportMetric(float64(all[len(all)*9/10]), "delay-p90-ns")
			}
		})
	}
}

// BenchmarkLocality is the paper's validation experiment (section 5.4):
// 1000 goroutines, each locking one of 4 resources at random. Reported:
// share-% is the mean over the resources of the share of the resource's
// critical sections that ran on its most frequent processor (P); with 2
// Ps, 50 % is an even spread and 100 % is one P per resource. share-r0-%
// to share-r3-% are the per-resource shares. For the two locks of this
// package, samep-% is the share of contended handoffs whose new owner ran
// on the unlocker's P, next-% the share whose new owner ran next there,
// before anything else on that P (TestLocality asserts both for Mutex),
// and handoff-% the share of critical sections entered by a contended
// handoff.
func BenchmarkLocality(b *testing.B) {
	kinds := []struct {
		name string
		new  func() localityLock
	}{
		{"ces", func() localityLock { return lockerLocality(new(Mutex)) }},
		{"dispatch", func() localityLock { return lockerLocality(new(DispatchMutex)) }},
		{"sync", func() localityLock { return plainLocality(new(sync.Mutex)) }},
	}
	for _, k := range kinds {
		b.Run("lock="+k.name, func(b *testing.B) {
			iters := max(b.N/1000, 1)
			b.ResetTimer()
			stats := localityRun(k.new, 1000, 4, iters, 100, 1000, 11, (*sync.WaitGroup).Wait)
			b.StopTimer()
			var mean float64
			var sections, handoffs, same, next int
			for i, s := range stats {
				mean += s.share() / float64(len(stats))
				b.ReportMetric(100*s.share(), "share-r"+itoa(i)+"-%")
				sections += s.sections
				handoffs += s.handoffs
				same += s.sameP
				next += s.next
			}
			b.ReportMetric(100*mean, "share-%")
			if k.name != "sync" {
				b.ReportMetric(100*float64(handoffs)/float64(sections), "handoff-%")
				if handoffs > 0 {
					b.ReportMetric(100*float64(same)/float64(handoffs), "samep-%")
					b.ReportMetric(100*float64(next)/float64(handoffs), "next-%")
				}
			}
		})
	}
}

// BenchmarkUncontended is one Lock/Unlock pair by a single goroutine.
func BenchmarkUncontended(b *testing.B) {
	for _, k := range mutexKinds {
		b.Run("lock="+k.name, func(b *testing.B) {
			l := k.new()
			for b.Loop() {
				l.Lock()
				l.Unlock()
			}
		})
	}
}
