package main

import (
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// preemptPoint is a call with a stack check, where Go can preempt a
// goroutine synchronously. A benchmark loop that spins on shared memory
// and would otherwise make no such call (inlined fast paths, frameless
// leaf functions) calls it once per iteration, so that a stop-the-world
// (ReadMemStats in the benchmark framework) waits at most one iteration
// for it rather than for asynchronous preemption (10 ms or more: sysmon's
// period). It costs two calls; benchmarks that use it do so on every
// system they are compared on.
//
//go:noinline
func preemptPoint() { preemptLeaf() }

//go:noinline
func preemptLeaf() {}

// spin counts until stop is set, in a loop without calls: only
// asynchronous preemption (a signal) can take its CPU from it.
//
//go:noinline
func spin(stop *atomic.Uint32, started *atomic.Int32, n *uint64) {
	started.Add(1)
	for stop.Load() == 0 {
		*n++
	}
}

// spinners starts n spinning goroutines and returns when all run; the
// returned function stops them.
func spinners(n int) (stopAll func()) {
	var stop atomic.Uint32
	var started atomic.Int32
	counts := make([]uint64, 8*n) // a cache line each
	for i := 0; i < n; i++ {
		go spin(&stop, &started, &counts[8*i])
	}
	for started.Load() < int32(n) {
		time.Sleep(time.Millisecond)
	}
	return func() { stop.Store(1) }
}

// testPreemptSleep is the program: goroutines in loops without
// calls on every P, and main asleep beside them must wake. Without
// asynchronous preemption it never does on one CPU.
func testPreemptSleep(t *T) {
	before := stats(t)
	t0 := time.Now()
	stop := spinners(runtime.GOMAXPROCS(0))
	t.Logf("spinners started in %v", time.Since(t0))
	start := time.Now()
	time.Sleep(20 * time.Millisecond)
	slept := time.Since(start)
	stop()
	after := stats(t)
	t.Logf("slept 20ms in %v beside %d spinning goroutines; %d preemptions, %d signals",
		slept, runtime.GOMAXPROCS(0), after.Preempts-before.Preempts, after.Signals-before.Signals)
	if slept > 5*time.Second {
		t.Errorf("time.Sleep(20ms) beside spinning goroutines took %v", slept)
	}
	if after.Signals == before.Signals {
		t.Errorf("no signal delivered: main cannot have been scheduled by preemption")
	}
}

// testPreemptGC runs a collection, which must stop every goroutine, while
// goroutines spin without calls. The garbage earlier tests left is
// collected first, without spinners. The bound catches a livelock (before
// preemption the collection never ended); it is not a performance bar:
// after TestGoroutines10k the three collections take 7.5 s under TCG on
// both architectures (0.2 s when run alone), which is a scheduling
// weakness to chase (docs/preemption.md), not a hang.
func testPreemptGC(t *T) {
	start := time.Now()
	runtime.GC()
	t.Logf("a GC of what earlier tests left: %v", time.Since(start))
	stop := spinners(runtime.GOMAXPROCS(0))
	start = time.Now()
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	took := time.Since(start)
	stop()
	t.Logf("3 GCs beside %d spinning goroutines: %v", runtime.GOMAXPROCS(0), took)
	if took > 30*time.Second {
		t.Errorf("3 GCs beside spinning goroutines took %v", took)
	}
}

// regSpin (regspin_$GOARCH.s) spins with a pattern in every register and
// reports which it found changed (the bits: regSpinBits).
func regSpin(rounds, spins uint64) (bad uint64)

// testSignalRoundTrip spins in assembly with every register, the flags
// (direction flag set) and X0-X15 holding known values while signals
// arrive: sysmon's preemption signals (assembly is never a safe point, so
// each signal only runs the handler and returns) and, with more than one
// CPU, SIGURG from another goroutine through tgkill. Every register must
// come back.
func testSignalRoundTrip(t *T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	const spins = 1 << 16
	start := time.Now()
	if bad := regSpin(4, spins); bad != 0 {
		t.Fatalf("calibration round: registers changed: %#x", bad)
	}
	rounds := uint64(500*time.Millisecond/max(time.Since(start)/4, time.Microsecond)) + 1
	var stop atomic.Bool
	done := make(chan int)
	go func() {
		n := 0
		for runtime.NumCPU() > 1 && !stop.Load() {
			if unix.Tgkill(unix.Getpid(), tid, unix.SIGURG) == nil {
				n++
			}
			time.Sleep(500 * time.Microsecond)
		}
		done <- n
	}()
	// The spin lasts at least 500 ms whatever the calibration measured (a
	// calibration the host slowed would make it short): chunks of a fifth
	// of the calibrated rounds until then.
	before := stats(t)
	start = time.Now()
	var bad uint64
	chunk, total := rounds/5+1, uint64(0)
	for bad == 0 && (total < rounds || time.Since(start) < 500*time.Millisecond) {
		bad = regSpin(chunk, spins)
		total += chunk
	}
	rounds = total
	took := time.Since(start)
	after := stats(t)
	stop.Store(true)
	sent := <-done
	got := after.Signals - before.Signals
	t.Logf("%d rounds in %v; %d signals delivered (all threads), %d sent by tgkill", rounds, took, got, sent)
	if bad != 0 {
		t.Errorf("registers changed across signals: %#x (bits: %s)", bad, regSpinBits)
	}
	if got < 3 {
		t.Errorf("only %d signals delivered during a %v spin", got, took)
	}
}

// testSignalNotify sends SIGUSR1 to the process with kill and SIGUSR2 to
// this thread with tgkill; os/signal must see both.
func testSignalNotify(t *T) {
	c := make(chan os.Signal, 2)
	signal.Notify(c, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(c)
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatalf("kill: %v", err)
	}
	wait := func(want os.Signal) {
		select {
		case s := <-c:
			if s != want {
				t.Errorf("got %v, want %v", s, want)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%v not received in 5s", want)
		}
	}
	wait(syscall.SIGUSR1)
	runtime.LockOSThread()
	err := unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGUSR2)
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatalf("tgkill: %v", err)
	}
	wait(syscall.SIGUSR2)
	if err := unix.Tgkill(unix.Getpid(), 1<<30, unix.SIGUSR2); err != unix.ESRCH {
		t.Errorf("tgkill to no such thread: %v, want ESRCH", err)
	}
	if err := syscall.Kill(12345, syscall.SIGUSR1); err != syscall.ESRCH {
		t.Errorf("kill of another pid: %v, want ESRCH", err)
	}
}

// testStopSignals: with one process and no job control, the stop signals'
// default action is to do nothing (Linux would stop the process until a
// SIGCONT nobody could send): the program goes on. They used to end the
// machine with status 128+N.
func testStopSignals(t *T) {
	for _, s := range []syscall.Signal{syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGSTOP} {
		if err := syscall.Kill(syscall.Getpid(), s); err != nil {
			t.Errorf("kill(%v): %v", s, err)
		}
	}
	time.Sleep(20 * time.Millisecond) // the signals are delivered (and ignored) on the way
	t.Logf("still running after SIGTSTP, SIGTTIN, SIGTTOU and SIGSTOP")
}
