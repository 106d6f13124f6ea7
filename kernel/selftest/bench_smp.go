package main

import (
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"yolk/kernel/abi"
)

// Multiprocessor benchmarks. Each reports Go's ns/op plus its own metrics;
// the numbers differ by CPU count, which is the point: boot the image at
// -smp 1, 2 and 4 and compare (docs/smp.md has the commands).

func init() {
	benches = append(benches,
		bench{"BenchmarkParallelCPU", benchParallelCPU, false},
		bench{"BenchmarkSchedYieldParallel", benchYieldParallel, false},
		bench{"BenchmarkKernelLock/TWA", benchKernelLock(abi.LockTWA), true},
		bench{"BenchmarkKernelLock/Ticket", benchKernelLock(abi.LockTicket), true},
		bench{"BenchmarkKernelLock/TTAS", benchKernelLock(abi.LockTTAS), true},
		bench{"BenchmarkKernelLock/TWASpin", benchKernelLock(abi.LockTWASpin), true},
		bench{"BenchmarkKernelMutex/CES", benchKernelLock(abi.LockCES), true},
		bench{"BenchmarkKernelMutex/Dispatch", benchKernelLock(abi.LockDispatch), true},
		bench{"BenchmarkWakeupIPI", benchWakeupIPI, false},
	)
}

// cpuWork is a fixed amount of CPU-bound work (no memory traffic) and a
// preemption point.
func cpuWork() uint64 {
	preemptPoint()
	x := uint64(88172645463325252)
	for i := 0; i < 2000; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

var workSink atomic.Uint64

// benchParallelCPU: one op is cpuWork, run by GOMAXPROCS goroutines at
// once. Its ns/op falls as CPUs are added if they really run in parallel:
// the speed-up from 1 to 2 CPUs is ns/op(-smp 1) / ns/op(-smp 2).
func benchParallelCPU(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		var s uint64
		for pb.Next() {
			s += cpuWork()
		}
		workSink.Add(s)
	})
}

// benchYieldParallel: 2×GOMAXPROCS threads call sched_yield in a loop, so
// every CPU switches tasks through the ready queue as fast as it can. One
// op is one sched_yield; switches/s is the kernel's count of task switches
// on all CPUs per second (the figure of "On the Design and Implementation
// of an Efficient Lock-Free Scheduler", compared with the baseline queue by
// booting with yolk.readyq=locked); preempt-ipis/op counts the interrupts
// one CPU sent another to preempt its task for a woken one.
func benchYieldParallel(b *testing.B) {
	threads := 2 * runtime.GOMAXPROCS(0)
	var next atomic.Int64
	var ks0, ks1 []abi.CPUStats
	t0 := time.Now()
	ks0 = cpuCounters(b)
	b.ResetTimer()
	locked(threads, func(int) {
		for next.Add(1) <= int64(b.N) {
			syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
		}
	})
	b.StopTimer()
	el := time.Since(t0)
	ks1 = cpuCounters(b)
	var sw, pi uint64
	for i := range ks1 {
		sw += ks1[i].Switches - ks0[i].Switches
		pi += ks1[i].PreemptIPIs - ks0[i].PreemptIPIs
	}
	b.ReportMetric(float64(sw)/el.Seconds(), "switches/s")
	b.ReportMetric(float64(pi)/float64(b.N), "preempt-ipis/op")
}

func cpuCounters(b *testing.B) []abi.CPUStats {
	s := make([]abi.CPUStats, 64)
	n, _, e := syscall.Syscall(abi.SysCPUStats, uintptr(unsafe.Pointer(&s[0])), uintptr(len(s)), 0)
	if e != 0 {
		return make([]abi.CPUStats, 64) // not on yolk: no counters
	}
	return s[:n]
}

// benchKernelLock runs critical sections of a kernel lock in kernel
// context from GOMAXPROCS threads at once (yolk's lock-test system call:
// each section reads a shared counter, pauses 10 times, writes it back).
// One op is one acquire+release; ns/op is the elapsed time per section,
// all threads together (the inverse of throughput). The threads take the
// b.N sections from a shared pool, 100 at a time, so a thread that gets
// the lock more often takes more: spread is the most sections one thread
// ran divided by the fewest (1 is perfectly fair). For the mutexes, handoff-ns is the mean time from a contended
// Unlock to the new owner running, and same-cpu the share of handoffs
// that ran the new owner on the unlocker's CPU.
func benchKernelLock(kind int) func(*testing.B) {
	return func(b *testing.B) {
		threads := runtime.GOMAXPROCS(0)
		if kind >= abi.LockCES {
			threads = 2 * runtime.GOMAXPROCS(0) // blocking: more waiters than CPUs
		}
		const chunk = 100
		var taken atomic.Int64 // sections handed out, chunk by chunk
		counts := make([]int64, threads)
		var waited, same, handoff atomic.Int64
		ks0 := cpuCounters(b)
		b.ResetTimer()
		t0 := time.Now()
		locked(threads, func(i int) {
			for taken.Add(chunk) <= int64(b.N)+chunk-1 {
				o, err := lockTest(kind, chunk, 10)
				if err != nil {
					b.Errorf("lock test: %v", err)
					return
				}
				counts[i] += o.Done
				waited.Add(o.Waited)
				same.Add(o.SameCPU)
				handoff.Add(o.HandoffNS)
			}
		})
		el := time.Since(t0)
		b.StopTimer()
		total := int64(0)
		for _, c := range counts {
			total += c
		}
		b.ReportMetric(float64(el.Nanoseconds())/float64(total), "ns/op")
		if kind == abi.LockTWA {
			ks1 := cpuCounters(b)
			var halts uint64
			for i := range ks1 {
				halts += ks1[i].LockHalts - ks0[i].LockHalts
			}
			b.ReportMetric(float64(halts)/float64(total), "halts/op")
		}
		slices.Sort(counts)
		if counts[0] > 0 {
			b.ReportMetric(float64(counts[len(counts)-1])/float64(counts[0]), "spread")
		}
		if w := waited.Load(); w > 0 {
			b.ReportMetric(float64(handoff.Load())/float64(w), "handoff-ns")
			b.ReportMetric(float64(same.Load())/float64(w), "same-cpu")
		}
	}
}

// benchWakeupIPI measures how long a task made ready on one CPU takes to
// run on another, halted one: a thread blocked in FUTEX_WAIT (its CPU
// halts) is woken by a thread that then spins, holding its own CPU, until
// the sleeper reports the time it started running. ns/op is the mean of
// that latency, p50-ns and max-ns its median and largest. Needs two CPUs
// (benchMinCPUs).
func benchWakeupIPI(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var word uint32
	var ranAt atomic.Int64 // when the sleeper ran, ns since base
	base := time.Now()
	lat := make([]time.Duration, 0, b.N)
	var wakeCost time.Duration
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for r := uint32(0); r < uint32(b.N); r++ {
			for atomic.LoadUint32(&word) == r {
				futexWait(&word, r, 10*time.Second)
			}
			ranAt.Store(int64(time.Since(base)))
		}
		close(done)
	}()
	runtime.LockOSThread()
	b.ResetTimer()
	for r := uint32(0); r < uint32(b.N); r++ {
		spinUntil(50*time.Microsecond, func() bool { return false }) // let it block and its CPU halt
		ranAt.Store(0)
		woke := int64(time.Since(base))
		atomic.StoreUint32(&word, r+1)
		futexWake(&word, 1)
		wakeCost += time.Duration(int64(time.Since(base)) - woke)
		spinUntil(10*time.Second, func() bool { return ranAt.Load() != 0 })
		lat = append(lat, time.Duration(ranAt.Load()-woke))
	}
	b.StopTimer()
	runtime.UnlockOSThread()
	<-done
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	slices.Sort(lat)
	b.ReportMetric(float64(sum)/float64(len(lat)), "ns/op")
	b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)-1]), "max-ns")
	b.ReportMetric(float64(lat[len(lat)*9/10]), "p90-ns")
	b.ReportMetric(float64(wakeCost)/float64(len(lat)), "waker-ns")
}
