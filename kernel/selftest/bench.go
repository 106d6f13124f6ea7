package main

import (
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"yolk/kernel/abi"
)

// benches is every guest benchmark, in the order they run. It is a
// package-level initialiser, so it is set before any init function runs;
// an init that wants to add one must append (bench_preempt.go's and
// bench_smp.go's do). Benchmarks print as Name-GOMAXPROCS.
var benches = []bench{
	{"BenchmarkSyscallGetpid", benchSyscall, false},
	{"BenchmarkTimeNow", benchTimeNow, false},
	{"BenchmarkChanPingPong", benchPingPong, false},
	{"BenchmarkSchedYield", benchYield, false},
	{"BenchmarkTaskSwitchMinimal", func(b *testing.B) { benchSwitch(b, false) }, true},
	{"BenchmarkTaskSwitchSaveAll", func(b *testing.B) { benchSwitch(b, true) }, true},
	{"BenchmarkNanosleep/20us", benchNanosleep(20 * time.Microsecond), false},
	{"BenchmarkNanosleep/100us", benchNanosleep(100 * time.Microsecond), false},
	{"BenchmarkNanosleep/1ms", benchNanosleep(time.Millisecond), false},
	{"BenchmarkTimeSleep/20us", benchTimeSleep(20 * time.Microsecond), false},
	{"BenchmarkTimeSleep/100us", benchTimeSleep(100 * time.Microsecond), false},
	{"BenchmarkTimeSleep/1ms", benchTimeSleep(time.Millisecond), false},
	// The goroutine set (with ChanPingPong above), last so that the
	// rows above run in the same state as before they were added.
	{"BenchmarkMutexContended", benchMutexContended, false},
	{"BenchmarkGosched", benchGosched, false},
	{"BenchmarkSpawnJoin", benchSpawnJoin, false},
}

func benchSyscall(b *testing.B) {
	for i := 0; i < b.N; i++ {
		syscall.Getpid()
	}
}

func benchTimeNow(b *testing.B) {
	for i := 0; i < b.N; i++ {
		time.Now()
	}
}

// benchPingPong: one op is one round trip over two unbuffered channels
// (this goroutine sends, the echo goroutine receives and sends back).
func benchPingPong(b *testing.B) {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
	}()
	for i := 0; i < b.N; i++ {
		ping <- i
		<-pong
	}
	close(ping)
}

// benchYield measures sched_yield between two OS threads (kernel tasks):
// each call is a syscall plus a task switch through the ready queue.
func benchYield(b *testing.B) {
	stop := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		for {
			select {
			case <-stop:
				return
			default:
				syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
			}
		}
	}()
	runtime.LockOSThread()
	for i := 0; i < b.N; i++ {
		syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
	}
	runtime.UnlockOSThread()
	close(stop)
}

// benchSwitch times kernel task switches in the kernel: one op is a round
// trip (two switches) between two kernel tasks, with the minimal switch or
// the save-everything variant. The kernel times the loop with the TSC and
// that time, divided by b.N, is reported as ns/op (replacing the wall-clock
// figure, which would include the one system call per b.N), so benchstat's
// sec/op rows are the kernel-timed ones.
func benchSwitch(b *testing.B, all bool) {
	v := uintptr(0)
	if all {
		v = 1
	}
	ns, _, e := syscall.Syscall(abi.SysSwitch, uintptr(b.N), v, 0)
	if e != 0 {
		b.Fatalf("switch benchmark syscall: %v", e)
	}
	b.ReportMetric(float64(ns)/float64(b.N), "ns/op")
}

// benchMutexContended: two goroutines take one sync.Mutex around a
// one-increment critical section. One op is one Lock+Unlock by the
// measured goroutine (the benchmark's own); the other goroutine, the
// contender, takes the same lock in a loop until the measured side is
// done. other-locks/op is how many Lock+Unlocks the contender did per op:
// the share of the lock it got, 0 when there was no contention.
//
// At GOMAXPROCS >= 2 the contender spins on its own P, so the two contend
// in parallel (this assumes each P has a CPU of its own: on a cooperative
// kernel with fewer CPUs than Ps the contender would keep its CPU). At
// GOMAXPROCS 1 they cannot run at once: the contender calls runtime.Gosched
// after every Unlock so that it never holds the only P for long, and it
// runs only when the measured goroutine is preempted (sysmon, every ~10
// ms) or blocks; the figure is then close to the uncontended Lock+Unlock.
//
// Both loops pass a preemption point per iteration (preemptPoint, outside
// the critical section), so that a stop-the-world — the benchmark
// framework's ReadMemStats, a GC — waits one iteration, not sysmon's 10 ms.
func benchMutexContended(b *testing.B) {
	var (
		mu     sync.Mutex
		shared int
	)
	yield := runtime.GOMAXPROCS(0) == 1
	stop := alongside(func() {
		mu.Lock()
		shared++
		mu.Unlock()
		preemptPoint()
		if yield {
			runtime.Gosched()
		}
	})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mu.Lock()
		shared++
		mu.Unlock()
		preemptPoint()
	}
	b.StopTimer()
	others := stop()
	if shared != b.N+others {
		b.Fatalf("counter %d, want %d+%d: the mutex let two holders in", shared, b.N, others)
	}
	b.ReportMetric(float64(others)/float64(b.N), "other-locks/op")
}

// benchGosched: two goroutines call runtime.Gosched in a loop. One op is
// one Gosched by the measured goroutine; the other loops until the
// measured side is done. At GOMAXPROCS 1 every Gosched switches to the
// other goroutine (both wait their turn on the global run queue); at
// GOMAXPROCS 2 each may mostly find itself again on its own P.
// other-gosched/op is how many Gosched calls the other goroutine made per
// op (about 1 at GOMAXPROCS 1).
func benchGosched(b *testing.B) {
	stop := alongside(runtime.Gosched)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.Gosched()
	}
	b.StopTimer()
	b.ReportMetric(float64(stop())/float64(b.N), "other-gosched/op")
}

// alongside calls f in a loop on a goroutine of its own, started before it
// returns, until stop is called; stop waits for the loop to end and
// returns how many times f ran.
func alongside(f func()) (stop func() int) {
	var halt atomic.Bool
	started, done := make(chan struct{}), make(chan struct{})
	n := 0
	go func() {
		defer close(done)
		close(started)
		for !halt.Load() {
			f()
			n++
		}
	}()
	<-started
	return func() int {
		halt.Store(true)
		<-done
		return n
	}
}

// benchSpawnJoin: one op is starting one goroutine (go statement, through
// WaitGroup.Go) whose body is empty, and waiting in WaitGroup.Wait until it
// has finished. At GOMAXPROCS 1 the new goroutine runs when Wait blocks;
// at GOMAXPROCS 2 another P may be woken to run it.
func benchSpawnJoin(b *testing.B) {
	var wg sync.WaitGroup
	for i := 0; i < b.N; i++ {
		wg.Go(func() {})
		wg.Wait()
	}
}
