package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
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

// spinCount (spincount_$GOARCH.s) adds one to *n until *stop is set, in
// assembly, which asynchronous preemption never stops.
func spinCount(stop *uint32, n *uint64)

// testWokenFirst: a task woken while CPU-bound ones hold every CPU runs
// before the one it displaced. A thread per CPU spins in assembly (never
// blocking, never preempted by the runtime) long enough to have used a
// scheduler slice. Each round, thread X wakes from a 2 ms nanosleep —
// the kernel preempts a spinner for it, which goes back on the ready
// queue — finds which spinner stopped counting (the one X displaced),
// wakes thread W with a futex and blocks (with more CPUs: waits for W
// first). The displaced spinner must not count again before W has run:
// W, which blocked, goes ahead of a thread that used its slice (sched's
// two ready queues), and with more CPUs preempts another spinner. A FIFO
// ready queue runs the spinner first, for its whole slice, and fails
// every round at one CPU.
//
// It is an ordering, not a timing: W reads the spinner's counter when it
// runs. A round is inconclusive, and not counted, when X cannot tell the
// displaced spinner within 0.5 ms (not exactly one stopped), when W was
// not waiting in its futex (the wake-up woke nobody: W's thread was still
// starting, or the budget had preempted it on its way back to the wait,
// and a thread that has not blocked is rightly not served first), when the
// spinner moved between X's look and its wake-up of W (X lost its CPU, or
// another CPU's slice ended and took the spinner), when X's part took
// over half a slice, or when the scheduler's starvation bound ran a
// CPU-bound task ahead of woken ones during the round (the host stopped a
// vCPU for long: then the spinner rightly goes first, having waited a
// slice — also when the stall falls after W's dispatch and before its
// look, W's slice ending there; the kernel counts these,
// abi.Stats.SpentFirst). At one CPU no
// conclusive round may fail, and at least half must count. With more CPUs X keeps
// its CPU until W has looked, and since "W ran first" is seen only when W
// reads, a vCPU the host stops between W's dispatch and its read can make
// a round fail: up to a tenth may; with too few conclusive rounds (the
// host did not run the other vCPUs: 4 vCPUs on 2 cores) the test skips,
// saying so.
func testWokenFirst(t *T) {
	n := runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n + 3))
	// A collection would have to stop the spinners, which only stop
	// when this test ends.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))

	var stop uint32
	counts := make([]uint64, 8*n) // a cache line each
	count := func(i int) uint64 { return atomic.LoadUint64(&counts[8*i]) }
	var spinning sync.WaitGroup
	tids := make([]int32, n+2) // the spinners', W's, X's: for a late round's trace
	for i := 0; i < n; i++ {
		spinning.Add(1)
		go func() {
			defer spinning.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			atomic.StoreInt32(&tids[i], int32(unix.Gettid()))
			spinCount(&stop, &counts[8*i])
		}()
	}
	defer spinning.Wait()
	defer atomic.StoreUint32(&stop, 1)
	for i := 0; i < n; i++ {
		for count(i) == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	// Each spinner uses more than a slice (10 ms).
	time.Sleep(50 * time.Millisecond)

	const rounds, attempts = 30, 200
	var wake, done uint32 // futex words: W's turn number, X's
	var observed uint64   // the displaced spinner's count when W ran
	var stuck atomic.Int32
	wDone := make(chan struct{})
	go func() {
		defer close(wDone)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		atomic.StoreInt32(&tids[n], int32(unix.Gettid()))
		for turn := uint32(1); turn <= attempts; turn++ {
			// Waits of at most 4 ms with a Gosched between: to the
			// runtime a raw wait is a goroutine running, and one of
			// over 10 ms (the first turn's, which X's set-up and the
			// trace's start can make 20 ms) gets sysmon's preemption
			// signal, which reached W as X woke it in a failed run:
			// W spent its budget in the handler and the hand-off of
			// its locked thread before it looked.
			giveUp := time.Now().Add(time.Second)
			for atomic.LoadUint32(&wake) < turn {
				if rawFutexWait(&wake, turn-1, 4*time.Millisecond) == syscall.ETIMEDOUT {
					if time.Now().After(giveUp) {
						return
					}
					runtime.Gosched()
				}
			}
			if i := stuck.Load(); i >= 0 {
				atomic.StoreUint64(&observed, count(int(i)))
			}
			atomic.StoreUint32(&done, turn)
			rawFutexWake(&done)
			runtime.Gosched() // keeps sysmon's preemption signal away (below)
		}
	}()

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tids[n+1] = int32(unix.Gettid())
	// The scheduler's trace, restarted each round: a late round prints
	// its own switches (the first one only).
	defer syscall.Syscall(abi.SysTrace, 0, 0, 0)
	conclusive, late, noStuck, notWaiting, moved, slow, bound := 0, 0, 0, 0, 0, 0, 0
	var lateSeen []string
	c1 := make([]uint64, n)
	start := time.Now()
	for turn := uint32(1); turn <= attempts && conclusive < rounds && time.Since(start) < 3*time.Second; turn++ {
		// W and X each reschedule once a round: a goroutine that has
		// run for 10 ms without (their raw system calls do not count)
		// gets the runtime's preemption signal, and a signal that
		// reaches W between its wake-up and its look costs it its
		// budget (handler, asynchronous preemption, the locked thread's
		// handoff: 0.8 ms under TCG) and sends it to qSpent behind the
		// spinner, rightly (seen in a failed round's trace).
		runtime.Gosched()
		bound0 := spentFirst()
		if late == 0 {
			syscall.Syscall(abi.SysTrace, 1, 0, 0)
		}
		ts := unix.NsecToTimespec(int64(2 * time.Millisecond))
		syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
		woke := time.Now()
		// The spinner X displaced is the one that does not count while
		// the others (one per other CPU) do.
		for i := range c1 {
			c1[i] = count(i)
		}
		s, deadline := -1, time.Now().Add(500*time.Microsecond)
		for time.Now().Before(deadline) {
			moved, still := 0, -1
			for i := range c1 {
				if count(i) != c1[i] {
					moved++
				} else {
					still = i
				}
			}
			if moved == n-1 && still >= 0 {
				s = still
				break
			}
		}
		stuck.Store(int32(s))
		var before uint64
		if s >= 0 {
			before = count(s)
		}
		atomic.StoreUint32(&wake, turn)
		// W is a woken thread only if it was waiting: one that has not
		// reached its wait yet (its first turns, while its thread still
		// starts) runs as a CPU-bound one, behind the spinner, rightly.
		waiting := rawFutexWake(&wake) > 0
		after := uint64(0)
		if s >= 0 {
			after = count(s)
		}
		const half = 5 * time.Millisecond // half a slice
		if n > 1 {
			// Keep this CPU until W has looked: W runs on another,
			// whose spinner it preempts, and the one displaced here
			// cannot run meanwhile; on this CPU it could, at the same
			// time as W, and W's look would not tell which ran first.
			for atomic.LoadUint32(&done) < turn && time.Since(woke) < half {
			}
		}
		inTime := time.Since(woke) < half && (n == 1 || atomic.LoadUint32(&done) >= turn)
		for atomic.LoadUint32(&done) < turn {
			if rawFutexWait(&done, turn-1, time.Second) == syscall.ETIMEDOUT {
				t.Fatalf("turn %d: W did not run within 1 s", turn)
			}
		}
		// sched's bound on how long qSpent may wait (a slice, by the
		// wall clock) rightly runs the spinner first if the host stopped
		// the vCPU for long anywhere from its displacement to W's
		// dispatch, or woken runtime threads ran ahead of W meanwhile:
		// the kernel counts each time the bound chose.
		starved := spentFirst() != bound0
		switch {
		case s < 0:
			noStuck++
			continue
		case !waiting:
			notWaiting++
			continue
		case after != before:
			moved++
			continue
		case !inTime:
			slow++
			continue
		case starved:
			bound++
			continue
		}
		conclusive++
		if obs := atomic.LoadUint64(&observed); obs != before {
			late++
			if len(lateSeen) < 3 {
				lateSeen = append(lateSeen, fmt.Sprintf("turn %d: spinner %d counted %d more before W ran", turn, s, obs-before))
			}
			if late == 1 {
				syscall.Syscall(abi.SysTrace, 0, 0, 0)
				t.Logf("turn %d's schedule (spinners %v, W %d, X %d):\n%s", turn, tids[:n], tids[n], tids[n+1], roundTrace(readTrace()))
			}
		}
	}
	atomic.StoreUint32(&wake, attempts+1) // W runs through its remaining turns
	rawFutexWake(&wake)
	<-wDone
	t.Logf("%d CPUs: %d conclusive rounds, the displaced spinner ran before the woken thread in %d %v; inconclusive: %d no single spinner stopped, %d W was not waiting, %d it moved, %d over 5 ms, %d the starvation bound ran a CPU-bound task first",
		n, conclusive, late, lateSeen, noStuck, notWaiting, moved, slow, bound)
	if n > 1 && conclusive < rounds/2 {
		// A round needs the other vCPUs to run, which an
		// oversubscribed host may not do.
		t.Skipf("only %d of %d rounds could tell the displaced spinner (in %d W was not waiting): the host did not run the other vCPUs enough", conclusive, rounds, notWaiting)
	}
	if n == 1 && late > 0 || late*10 > conclusive {
		t.Errorf("the woken thread ran after the spinner it displaced in %d of %d rounds", late, conclusive)
	}
	// At one CPU a round does not count only when X itself lost its CPU
	// to the spinner (or the host stopped the vCPU for long).
	if conclusive < rounds/2 {
		t.Errorf("only %d of %d rounds could tell the displaced spinner", conclusive, rounds)
	}
}

// roundTrace formats the scheduler's events of one round (its trace was
// restarted at the round's start): times in ms from the first event.
func roundTrace(ev []traceEvent) string {
	if len(ev) == 0 {
		return "(no events)"
	}
	why := [...]string{"block", "yield", "sysbudget", "slice", "woke", "budget", "handoff"}
	var b strings.Builder
	for _, e := range ev {
		t := float64(e.At-ev[0].At) / 1e6
		if e.Ev == traceReady {
			fmt.Fprintf(&b, "  %8.3f c%d ready %d q%d used %.2f\n", t, e.CPU, e.To, e.Q, float64(e.ToUsed)/1e6)
		} else {
			fmt.Fprintf(&b, "  %8.3f c%d switch %d->%d %s from-used %.2f q%d to-used %.2f\n", t, e.CPU, e.From, e.To, why[e.Why%7], float64(e.FromUsed)/1e6, e.Q, float64(e.ToUsed)/1e6)
		}
	}
	return b.String()
}

// spentFirst is how many times the scheduler's starvation bound has run a
// CPU-bound task ahead of woken ones (abi.Stats.SpentFirst), read with a
// raw system call.
func spentFirst() int64 {
	var s abi.Stats
	syscall.RawSyscall(abi.SysStats, uintptr(unsafe.Pointer(&s)), 0, 0)
	return s.SpentFirst
}

// rawFutexWait (FUTEX_WAIT_PRIVATE) blocks on *addr while it holds val, for at most d, without
// giving up the goroutine's P (a raw system call). It returns the error.
func rawFutexWait(addr *uint32, val uint32, d time.Duration) syscall.Errno {
	ts := unix.NsecToTimespec(int64(d))
	_, _, e := syscall.RawSyscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), 0|128,
		uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
	return e
}

// rawFutexWake wakes the threads blocked on *addr.
func rawFutexWake(addr *uint32) (woken int) {
	n, _, _ := syscall.RawSyscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), 1|128, 1<<30, 0, 0, 0)
	return int(n)
}

// testSpentBudget: a task taken from sched's qSpent while woken tasks
// wait runs a budget of that dispatch before the budget preempts it for
// them, and keeps its CPU time, so a wake-up that preempts it sooner
// sends it back to qSpent. Two threads per CPU spin in assembly (spent:
// they never block) while two threads work 0.3 ms and sleep 50 µs in
// turn, so woken tasks keep coming and the spinners run mostly by
// qSpent's starvation bound, with woken tasks waiting. The scheduler's trace (sched/trace.go)
// shows each such dispatch: none may end by the budget within half a
// budget, and every spinner preempted from one for a woken task must go
// back on qSpent. Before the rule, each ended by the budget within
// microseconds: a task over its budget once (a host stall while it ran
// counts as its CPU time) was preempted at once after every dispatch
// until it blocked, one system call per slice-long trip through qSpent (a
// 1 ms sleep came back 1.05 s late). A host stall only lengthens a
// dispatch, which then does not count; the trace's switches carry the
// clock reading the scheduler decided by, so a stall between that reading
// and the trace's cannot shorten one.
func testSpentBudget(t *T) {
	n := runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2*n + 3))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var stop uint32
	counts := make([]uint64, 16*n)
	var spinning sync.WaitGroup
	for i := 0; i < 2*n; i++ {
		spinning.Add(1)
		go func() {
			defer spinning.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			spinCount(&stop, &counts[8*i])
		}()
	}
	defer spinning.Wait()
	defer atomic.StoreUint32(&stop, 1)
	for i := 0; i < 2*n; i++ {
		for atomic.LoadUint64(&counts[8*i]) == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	time.Sleep(30 * time.Millisecond) // the spinners are spent

	if _, _, e := syscall.Syscall(abi.SysTrace, 1, 0, 0); e != 0 {
		t.Fatalf("SysTrace on: %v", e)
	}
	var sleepers sync.WaitGroup
	for i := 0; i < 2; i++ {
		sleepers.Add(1)
		go func() {
			defer sleepers.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
				// Busy for less than a budget, then asleep: woken
				// each time, and often waiting on qWoken.
				for t0 := time.Now(); time.Since(t0) < 300*time.Microsecond; {
				}
				ts := unix.NsecToTimespec(int64(50 * time.Microsecond))
				syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
			}
		}()
	}
	sleepers.Wait()
	syscall.Syscall(abi.SysTrace, 0, 0, 0)
	ev := readTrace()

	const halfBudget = 500_000 // ns: sched.Budget/2
	woken := map[int32]bool{}  // ready on qWoken, not yet run
	type dispatch struct {
		tid    int32
		at     int64
		used   int64 // the task's CPU time since it blocked, as it started
		waited bool  // woken tasks waited when it was taken from qSpent
	}
	var cur [8]dispatch
	var left [8]int32 // a task just preempted from a qSpent dispatch: its next ready
	conclusive, early, back, wrongQ := 0, 0, 0, 0
	for _, e := range ev {
		if e.CPU >= 8 {
			continue
		}
		if e.Ev == traceReady {
			if e.Q == 0 {
				woken[e.To] = true
			}
			if left[e.CPU] == e.To {
				left[e.CPU] = 0
				back++
				if e.Q != 1 {
					wrongQ++
				}
			}
			continue
		}
		if e.Ev != traceSwitch {
			continue
		}
		delete(woken, e.To)
		d := &cur[e.CPU]
		left[e.CPU] = 0
		if d.tid == e.From && d.at != 0 {
			preempted := e.Why == whyWoke || e.Why == whyBudget || e.Why == whySysBudget
			if d.waited {
				conclusive++
				if (e.Why == whyBudget || e.Why == whySysBudget) && e.At-d.at < halfBudget {
					early++
					t.Logf("CPU %d: tid %d taken from qSpent with %v used ran %v (%v used as it left), ended by the budget (why %d)",
						e.CPU, e.From, time.Duration(d.used), time.Duration(e.At-d.at), time.Duration(e.FromUsed), e.Why)
				}
			}
			if preempted {
				left[e.CPU] = e.From
			}
		}
		*d = dispatch{tid: e.To}
		if e.Q == 1 {
			*d = dispatch{tid: e.To, at: e.At, used: e.ToUsed, waited: len(woken) > 0}
		}
	}
	t.Logf("%d CPUs: %d dispatches from qSpent with woken tasks waiting, %d of them ended by the budget within half a budget; %d tasks preempted from a qSpent dispatch, %d of them put on qWoken",
		n, conclusive, early, back, wrongQ)
	if early > 0 {
		t.Errorf("%d of %d dispatches from qSpent ended by the budget within half a budget", early, conclusive)
	}
	if wrongQ > 0 {
		t.Errorf("%d of %d tasks preempted from a qSpent dispatch went on qWoken, ahead of woken ones", wrongQ, back)
	}
	if conclusive == 0 {
		t.Skipf("no dispatch from qSpent with woken tasks waiting")
	}
}
