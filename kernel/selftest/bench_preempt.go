package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// Preemption benchmarks (docs/preemption.md).

func init() {
	benches = append(benches,
		bench{"BenchmarkPreemptWake/idle", benchPreemptWake(false), false},
		bench{"BenchmarkPreemptWake/spinner", benchPreemptWake(true), false},
		bench{"BenchmarkPreemptRate/idle", benchPreemptRate(false), true},
		bench{"BenchmarkPreemptRate/busy", benchPreemptRate(true), true},
	)
}

// benchPreemptWake: one op is a 1 ms nanosleep by a thread that keeps its
// P through it (a raw system call), on an otherwise idle machine (idle) or
// beside a thread per CPU spinning in a loop without calls (spinner). With
// spinners the sleeper's CPU is busy when its timer expires: it runs again
// only because the kernel preempts the spinner there (on Linux: CFS's
// wake-up preemption). p50-late-ns, p99-late-ns and max-late-ns are the
// overshoot beyond 1 ms; spinner minus idle is the cost of the involuntary
// switch over waking a halted CPU.
//
// The overshoot is read with raw clock_gettime calls on each side of the
// raw nanosleep, neither of which the runtime can preempt: it is the
// thread's wake-up lateness, the kernel's. The runtime's own scheduling of
// the goroutine comes after it: sysmon sees the sleeper running for 10 ms
// at a time and preempts it at its next function call, and a locked
// thread then hands its P on and waits for the goroutine's turn, which
// can be a spinner's 10 ms slice later (the same on Linux).
// max-op-late-ns is the overshoot with that included (time.Since around
// the sleep), as this benchmark measured it before.
func benchPreemptWake(spinning bool) func(*testing.B) {
	return func(b *testing.B) {
		if spinning {
			n := runtime.NumCPU()
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n + 1))
			defer spinners(n)()
		}
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		const d = time.Millisecond
		ts := unix.NsecToTimespec(int64(d))
		late := make([]time.Duration, b.N)
		var opLate time.Duration
		// On yolk, the scheduler's trace (sched/trace.go) is on while
		// spinners run, and the first op later than 50 ms (or
		// YOLK_TRACE_LATE, a duration) dumps it.
		dumpAfter := 50 * time.Millisecond
		if v, err := time.ParseDuration(os.Getenv("YOLK_TRACE_LATE")); err == nil {
			dumpAfter = v
		}
		tracing := false
		if spinning {
			_, _, e := syscall.Syscall(abi.SysTrace, 1, 0, 0)
			tracing = e == 0
		}
		if tracing {
			defer syscall.Syscall(abi.SysTrace, 0, 0, 0)
		}
		dumped := false
		b.ResetTimer()
		for i := range late {
			start := time.Now()
			// Linux ends the sleep early (EINTR) when the runtime's
			// preemption signal arrives; sleep out the rest. From the
			// first clock read to the second only nosplit calls run.
			req, rem := ts, unix.Timespec{}
			var t0, t1 unix.Timespec
			syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&t0)), 0)
			for {
				_, _, e := syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&req)), uintptr(unsafe.Pointer(&rem)), 0)
				if e == 0 {
					break
				}
				if e != syscall.EINTR {
					panic("nanosleep: " + e.Error())
				}
				req = rem
			}
			syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&t1)), 0)
			late[i] = time.Duration(t1.Nano()-t0.Nano()) - d
			opLate = max(opLate, time.Since(start)-d)
			if tracing && !dumped && late[i] > dumpAfter {
				dumped = true
				dumpTrace(late[i] + d)
			}
		}
		b.StopTimer()
		slices.Sort(late)
		b.ReportMetric(float64(late[len(late)/2]), "p50-late-ns")
		b.ReportMetric(float64(late[len(late)*99/100]), "p99-late-ns")
		b.ReportMetric(float64(late[len(late)-1]), "max-late-ns")
		b.ReportMetric(float64(opLate), "max-op-late-ns")
	}
}

// benchPreemptRate: one op is a 10 ms time.Sleep of main, alone (idle) or
// beside a goroutine per P spinning without calls (busy), which then runs
// only by asynchronous preemption. It reports how often the kernel
// switched involuntarily (preempts/s), delivered signals (signals/s: the
// runtime's SIGURG) and took timer interrupts (timer-irqs/s, all CPUs).
func benchPreemptRate(busy bool) func(*testing.B) {
	return func(b *testing.B) {
		if busy {
			defer spinners(runtime.GOMAXPROCS(0))()
		}
		read := func() (ks abi.Stats, irqs uint64) {
			syscall.Syscall(abi.SysStats, uintptr(unsafe.Pointer(&ks)), 0, 0)
			s := make([]abi.CPUStats, 64)
			n, _, _ := syscall.Syscall(abi.SysCPUStats, uintptr(unsafe.Pointer(&s[0])), uintptr(len(s)), 0)
			for _, c := range s[:n] {
				irqs += c.TimerIRQs
			}
			return ks, irqs
		}
		b.ResetTimer()
		k0, i0 := read()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		sec := time.Since(start).Seconds()
		k1, i1 := read()
		b.StopTimer()
		b.ReportMetric(float64(k1.Preempts-k0.Preempts)/sec, "preempts/s")
		b.ReportMetric(float64(k1.Signals-k0.Signals)/sec, "signals/s")
		b.ReportMetric(float64(i1-i0)/sec, "timer-irqs/s")
	}
}

// dumpTrace prints the scheduler's events from start to start+d (the
// sleeper's op), with the sleeper's TID, for docs/preemption.md.
func dumpTrace(d time.Duration) {
	ev := readTrace()
	end := ev[len(ev)-1].At
	from := end - int64(d) - 2e6
	fmt.Printf("trace: op late %v, sleeper tid %d; events of the last %v (t ms, cpu, event):\n", d-time.Millisecond, unix.Gettid(), d)
	why := [...]string{"block", "yield", "sysbudget", "slice", "woke", "budget", "handoff"}
	for _, e := range ev {
		if e.At < from {
			continue
		}
		t := float64(e.At-from) / 1e6
		if e.Ev == traceReady {
			fmt.Printf("trace %8.3f c%d ready %d q%d used %.2f\n", t, e.CPU, e.To, e.Q, float64(e.ToUsed)/1e6)
		} else {
			fmt.Printf("trace %8.3f c%d switch %d->%d %s from-used %.2f q%d to-used %.2f\n", t, e.CPU, e.From, e.To, why[e.Why%7], float64(e.FromUsed)/1e6, e.Q, float64(e.ToUsed)/1e6)
		}
	}
}

// traceEvent is sched.TraceEvent's layout (SysTrace copies them out).
type traceEvent struct {
	At               int64
	CPU, Ev, Why, Q  uint8
	From, To         int32
	FromUsed, ToUsed int64
}

// sched.TraceSwitch, TraceReady, WhyWoke, WhyBudget, WhySysBudget.
const (
	traceSwitch  = 1
	traceReady   = 2
	whySysBudget = 2
	whyWoke      = 4
	whyBudget    = 5
)

// readTrace copies out the scheduler's trace, in time order.
func readTrace() []traceEvent {
	ev := make([]traceEvent, 8*1024)
	n, _, _ := syscall.Syscall(abi.SysTrace, 2, uintptr(unsafe.Pointer(&ev[0])), uintptr(len(ev)))
	ev = ev[:n]
	slices.SortStableFunc(ev, func(a, b traceEvent) int { return int(a.At - b.At) })
	return ev
}
