package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// CPU time and the timers on it: the CPU clocks, getrusage and times
// (testCPUClocks), POSIX and interval timers and their signals
// (testTimerSignals), their errors as Linux gives them (testTimerErrno:
// the same program passes on Linux), and the Go runtime's CPU profiler,
// which needs a thread's SIGPROF every 10 ms of its CPU time
// (testCPUProfile).

func clockNS(t *T, id int32) time.Duration {
	var ts unix.Timespec
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		t.Fatalf("clock_gettime(%d): %v", id, e)
	}
	return time.Duration(ts.Nano())
}

// threadClock is pthread_getcpuclockid's clock for thread tid (Linux's
// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)); processClock is
// clock_getcpuclockid's for pid.
func threadClock(tid int) int32  { return int32(^tid<<3 | 6) }
func processClock(pid int) int32 { return int32(^pid<<3 | 2) }

// sigCount counts the signals sigCounter (assembly) handled.
var sigCount uint64

func sigCounterPCs() (handler, restorer uintptr)

// vdsoClockGettime calls the kernel's vDSO clock_gettime (the code the
// runtime calls through the vDSO) with the C ABI.
func vdsoClockGettime(id int32, ts *unix.Timespec) int32

// spinCPU burns CPU for d of the calling thread's CPU time.
func spinCPU(t *T, d time.Duration) uint64 {
	start := clockNS(t, unix.CLOCK_THREAD_CPUTIME_ID)
	var x uint64
	for clockNS(t, unix.CLOCK_THREAD_CPUTIME_ID)-start < d {
		x = profHot(x, 20000)
	}
	return x
}

var cpuSink uint64

func testCPUClocks(t *T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()

	// Busy work advances the thread's clock, a sleep does not. The
	// process clock's readings bracket the thread's: between th0 and pr0
	// the host may stall this vCPU for milliseconds, which is the
	// thread's CPU time, so pr0 read after th0 could count more of it.
	// A host that stops the vCPU while the thread runs adds to its clock
	// (its time on the CPU, as steal time does on Linux): one-sided
	// noise, so a round that fails is tried again, up to three; a clock
	// that counts a sleep, or misses the spinning, fails every round.
	var clockErr string
	for round := 0; round < 3; round++ {
		pr0 := clockNS(t, unix.CLOCK_PROCESS_CPUTIME_ID)
		th0 := clockNS(t, unix.CLOCK_THREAD_CPUTIME_ID)
		w0 := time.Now()
		cpuSink += spinCPU(t, 50*time.Millisecond)
		th1 := clockNS(t, unix.CLOCK_THREAD_CPUTIME_ID)
		pr1 := clockNS(t, unix.CLOCK_PROCESS_CPUTIME_ID)
		wall := time.Since(w0)
		time.Sleep(100 * time.Millisecond)
		th2 := clockNS(t, unix.CLOCK_THREAD_CPUTIME_ID)
		// (CPU time is counted per CPU, on its own clock; the CPUs'
		// clocks may differ by what the kernel's TSC check could not
		// rule out under emulation: a few milliseconds.)
		switch d := th1 - th0; {
		case d < 50*time.Millisecond || d > wall+10*time.Millisecond:
			clockErr = fmt.Sprintf("50ms of spinning advanced the thread CPU clock by %v in %v of wall time", d, wall)
		case pr1-pr0 < th1-th0-time.Millisecond:
			clockErr = fmt.Sprintf("the process CPU clock advanced %v, less than the thread's %v", pr1-pr0, th1-th0)
		case th2-th1 > 20*time.Millisecond:
			clockErr = fmt.Sprintf("a 100ms sleep advanced the thread CPU clock by %v", th2-th1)
		default:
			clockErr = ""
		}
		if clockErr == "" {
			break
		}
		t.Logf("round %d: %s", round, clockErr)
	}
	if clockErr != "" {
		t.Errorf("%s (three rounds)", clockErr)
	}

	// The other names of the same clocks, and their resolution: each
	// read lies between two reads of the clock it names (no time bound:
	// a busy host may stop the vCPU between any two reads).
	for _, c := range []struct {
		name     string
		id, same int32
	}{
		{"pthread_getcpuclockid(self)", threadClock(tid), unix.CLOCK_THREAD_CPUTIME_ID},
		{"thread clock of tid 0", threadClock(0), unix.CLOCK_THREAD_CPUTIME_ID},
		{"clock_getcpuclockid(0)", processClock(0), unix.CLOCK_PROCESS_CPUTIME_ID},
		{"clock_getcpuclockid(getpid())", processClock(os.Getpid()), unix.CLOCK_PROCESS_CPUTIME_ID},
	} {
		before := clockNS(t, c.same)
		got := clockNS(t, c.id)
		after := clockNS(t, c.same)
		if got < before || got > after {
			t.Errorf("%s (%#x) reads %v, want between %v and %v", c.name, uint32(c.id), got, before, after)
		}
	}
	for _, id := range []int32{unix.CLOCK_THREAD_CPUTIME_ID, unix.CLOCK_PROCESS_CPUTIME_ID, threadClock(tid)} {
		var res unix.Timespec
		if err := unix.ClockGetres(id, &res); err != nil || res.Nano() != 1 {
			t.Errorf("clock_getres(%d) = %v, %v; want 1ns", id, res, err)
		}
	}

	// The vDSO's clock_gettime goes to the system call for the CPU
	// clocks, as Linux's does.
	for _, id := range []int32{unix.CLOCK_THREAD_CPUTIME_ID, unix.CLOCK_PROCESS_CPUTIME_ID} {
		before := clockNS(t, id)
		var ts unix.Timespec
		if r := vdsoClockGettime(id, &ts); r != 0 {
			t.Errorf("vDSO clock_gettime(%d) = %d", id, r)
		}
		after := clockNS(t, id)
		if v := time.Duration(ts.Nano()); v < before || v > after {
			t.Errorf("vDSO clock_gettime(%d) = %v, not between the system call's %v and %v", id, v, before, after)
		}
	}

	// Another thread's clock advances while it spins, not while it
	// sleeps; this thread's does not meanwhile.
	otid := make(chan int)
	phase := make(chan bool)
	go func() {
		runtime.LockOSThread()
		otid <- unix.Gettid()
		for busy := range phase {
			if busy {
				cpuSink += spinCPU(t, 50*time.Millisecond)
			} else {
				time.Sleep(50 * time.Millisecond)
			}
			otid <- 0
		}
	}()
	oc := threadClock(<-otid)
	var o0, o1, o2 time.Duration
	for round := 0; round < 3; round++ { // as above: a stall is one-sided
		o0 = clockNS(t, oc)
		phase <- true
		<-otid
		o1 = clockNS(t, oc)
		phase <- false
		<-otid
		o2 = clockNS(t, oc)
		if o1-o0 >= 50*time.Millisecond && o2-o1 <= 20*time.Millisecond {
			break
		}
		t.Logf("round %d: another thread's clock: +%v spinning 50ms, +%v sleeping 50ms", round, o1-o0, o2-o1)
	}
	close(phase)
	if o1-o0 < 50*time.Millisecond || o2-o1 > 20*time.Millisecond {
		t.Errorf("another thread's clock: +%v spinning 50ms, +%v sleeping 50ms (three rounds)", o1-o0, o2-o1)
	}

	// getrusage and times agree with the clocks.
	var self, thread, children unix.Rusage
	p0 := clockNS(t, unix.CLOCK_PROCESS_CPUTIME_ID)
	t0 := clockNS(t, unix.CLOCK_THREAD_CPUTIME_ID)
	if err := unix.Getrusage(unix.RUSAGE_SELF, &self); err != nil {
		t.Fatalf("getrusage(RUSAGE_SELF): %v", err)
	}
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &thread); err != nil {
		t.Fatalf("getrusage(RUSAGE_THREAD): %v", err)
	}
	var tms unix.Tms
	ticks, err := unix.Times(&tms)
	if err != nil {
		t.Fatalf("times: %v", err)
	}
	p1 := clockNS(t, unix.CLOCK_PROCESS_CPUTIME_ID)
	t1 := clockNS(t, unix.CLOCK_THREAD_CPUTIME_ID)
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &children); err != nil {
		t.Fatalf("getrusage(RUSAGE_CHILDREN): %v", err)
	}
	tv := func(v unix.Timeval) time.Duration { return time.Duration(v.Nano()) }
	ruSelf := tv(self.Utime) + tv(self.Stime)
	ruThread := tv(thread.Utime) + tv(thread.Stime)
	// getrusage gives utime and stime in µs, each cut down (Linux's
	// ns_to_kernel_old_timeval): their sum may be up to 2 µs short.
	if ruSelf < p0-2*time.Microsecond || ruSelf > p1 {
		t.Errorf("getrusage(RUSAGE_SELF) utime+stime %v, not within the process clock's %v..%v", ruSelf, p0, p1)
	}
	if ruThread < t0-2*time.Microsecond || ruThread > t1 {
		t.Errorf("getrusage(RUSAGE_THREAD) utime+stime %v, not within the thread clock's %v..%v", ruThread, t0, t1)
	}
	if tv(children.Utime)+tv(children.Stime) != 0 {
		t.Errorf("getrusage(RUSAGE_CHILDREN) = %v+%v, want 0: there are none", children.Utime, children.Stime)
	}
	tmsCPU := time.Duration(tms.Utime+tms.Stime) * 10 * time.Millisecond // USER_HZ 100
	// Linux's times samples user and system time at its tick: allow
	// three ticks of 10ms.
	if tmsCPU < p0-30*time.Millisecond || tmsCPU > p1 {
		t.Errorf("times: utime+stime %v, want the process clock's %v..%v in ticks", tmsCPU, p0, p1)
	}
	if ticks <= 0 || tms.Cutime != 0 || tms.Cstime != 0 {
		t.Errorf("times = %d, %+v: want a positive tick count and no children's time", ticks, tms)
	}
	t.Logf("thread %v, process %v, getrusage self %v, times %v", t1, p1, ruSelf, tmsCPU)

	// Context switches, as Linux counts them: five sleeps of this
	// (locked) thread are five voluntary switches at least; the
	// process's counts take in the thread's; /proc's status for the
	// thread says what getrusage says, read between two calls.
	ru := func(who int) unix.Rusage {
		var r unix.Rusage
		if err := unix.Getrusage(who, &r); err != nil {
			t.Fatalf("getrusage(%d): %v", who, err)
		}
		return r
	}
	th0 := ru(unix.RUSAGE_THREAD)
	for range 5 {
		time.Sleep(time.Millisecond)
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}
	th1 := ru(unix.RUSAGE_THREAD)
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/status", unix.Gettid()))
	th2, pr := ru(unix.RUSAGE_THREAD), ru(unix.RUSAGE_SELF)
	var vol, invol int64 = -1, -1
	if _, e := os.Stat("/proc/self"); err != nil && os.IsNotExist(e) {
		// Only Linux without /proc mounted (qemu/linuxref's init).
		t.Logf("no /proc: the thread's status not compared")
		vol, invol = th1.Nvcsw, th1.Nivcsw
	} else if err != nil {
		t.Fatalf("the thread's status: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "voluntary_ctxt_switches:"); ok {
			vol, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		} else if v, ok := strings.CutPrefix(l, "nonvoluntary_ctxt_switches:"); ok {
			invol, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if th1.Nvcsw-th0.Nvcsw < 5 {
		t.Errorf("getrusage(RUSAGE_THREAD): %d voluntary switches over five sleeps (%d before, %d after), want 5 or more", th1.Nvcsw-th0.Nvcsw, th0.Nvcsw, th1.Nvcsw)
	}
	if vol < th1.Nvcsw || vol > th2.Nvcsw || invol < th1.Nivcsw || invol > th2.Nivcsw {
		t.Errorf("the thread's status: %d voluntary and %d involuntary switches, want %d..%d and %d..%d (getrusage before and after)", vol, invol, th1.Nvcsw, th2.Nvcsw, th1.Nivcsw, th2.Nivcsw)
	}
	if pr.Nvcsw < th2.Nvcsw || pr.Nivcsw < th2.Nivcsw {
		t.Errorf("getrusage(RUSAGE_SELF): %d voluntary and %d involuntary switches, fewer than the thread's %d and %d", pr.Nvcsw, pr.Nivcsw, th2.Nvcsw, th2.Nivcsw)
	}
	// A thread that gives its CPU up with work left, at a sched_yield
	// while other threads wait for a CPU or preempted for one of them,
	// makes an involuntary switch, as Linux counts it (the guest runs
	// show the preemption often comes first, before any yield). One
	// thread more than there are CPUs spins until it comes, each
	// with a P of its own (GOMAXPROCS raised for them: a goroutine
	// without a P is no thread waiting for a CPU).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(runtime.NumCPU() + 2))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range runtime.NumCPU() + 1 {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for !stop.Load() {
			}
		})
	}
	iv0, yields := ru(unix.RUSAGE_THREAD).Nivcsw, 0
	for end := time.Now().Add(5 * time.Second); ru(unix.RUSAGE_THREAD).Nivcsw == iv0 && time.Now().Before(end); yields++ {
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	stop.Store(true)
	wg.Wait()
	if iv1 := ru(unix.RUSAGE_THREAD).Nivcsw; iv1 == iv0 {
		t.Errorf("getrusage(RUSAGE_THREAD): no involuntary switch after %d sched_yields with %d threads spinning (%d before and after)", yields, runtime.NumCPU()+1, iv0)
	} else {
		t.Logf("involuntary: %d → %d after %d sched_yields", iv0, iv1, yields)
	}
	t.Logf("switches: thread %d voluntary, %d involuntary; process %d, %d", th2.Nvcsw, th2.Nivcsw, pr.Nvcsw, pr.Nivcsw)
}

// sigevent is struct sigevent as the Go runtime fills it.
type sigevent struct {
	value  uint64
	signo  int32
	notify int32
	tid    int32
	_      [44]byte
}

const (
	sigevSignal   = 0
	sigevNone     = 1
	sigevThreadID = 4
)

type itimerspec struct{ Interval, Value unix.Timespec }

func timerCreate(clock int32, ev *sigevent) (int32, syscall.Errno) {
	var id int32
	_, _, e := syscall.RawSyscall(unix.SYS_TIMER_CREATE, uintptr(clock), uintptr(unsafe.Pointer(ev)), uintptr(unsafe.Pointer(&id)))
	return id, e
}

func timerSettime(id int32, flags int, v, old *itimerspec) syscall.Errno {
	_, _, e := syscall.RawSyscall6(unix.SYS_TIMER_SETTIME, uintptr(id), uintptr(flags), uintptr(unsafe.Pointer(v)), uintptr(unsafe.Pointer(old)), 0, 0)
	return e
}

func timerGettime(id int32, v *itimerspec) syscall.Errno {
	_, _, e := syscall.RawSyscall(unix.SYS_TIMER_GETTIME, uintptr(id), uintptr(unsafe.Pointer(v)), 0)
	return e
}

func timerGetoverrun(id int32) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(unix.SYS_TIMER_GETOVERRUN, uintptr(id), 0, 0)
	return int(r), e
}

func timerDelete(id int32) syscall.Errno {
	_, _, e := syscall.RawSyscall(unix.SYS_TIMER_DELETE, uintptr(id), 0, 0)
	return e
}

func setitimer(which int, v, old *unix.Itimerval) syscall.Errno {
	_, _, e := syscall.RawSyscall(unix.SYS_SETITIMER, uintptr(which), uintptr(unsafe.Pointer(v)), uintptr(unsafe.Pointer(old)))
	return e
}

func errnoName(e syscall.Errno) string {
	if e == 0 {
		return "ok"
	}
	return unix.ErrnoName(e)
}

// testTimerErrno checks the timer calls' errors against Linux's (run the
// self-test binary on Linux: the same cases pass there).
func testTimerErrno(t *T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	check := func(what string, got, want syscall.Errno) {
		if got != want {
			t.Errorf("%s: %s, want %s", what, errnoName(got), errnoName(want))
		}
	}
	ev := func(notify, signo, tid int32) *sigevent {
		return &sigevent{notify: notify, signo: signo, tid: tid}
	}
	const noTID = 0x3ffffff0 // above pid_max
	for _, c := range []struct {
		what  string
		clock int32
		ev    *sigevent
		want  syscall.Errno
	}{
		{"clock 10 (none)", 10, nil, unix.EINVAL},
		{"clock 100", 100, nil, unix.EINVAL},
		{"CLOCK_MONOTONIC_RAW", unix.CLOCK_MONOTONIC_RAW, nil, unix.EOPNOTSUPP},
		{"CLOCK_MONOTONIC_COARSE", unix.CLOCK_MONOTONIC_COARSE, nil, unix.EOPNOTSUPP},
		{"CLOCK_REALTIME_COARSE", unix.CLOCK_REALTIME_COARSE, nil, unix.EOPNOTSUPP},
		{"a clock on a descriptor", int32(^3<<3 | 3), nil, unix.EOPNOTSUPP},
		{"the thread clock of no thread", threadClock(noTID), nil, unix.EINVAL},
		{"the process clock of no process", processClock(noTID), nil, unix.EINVAL},
		{"sigev_notify 3", unix.CLOCK_MONOTONIC, ev(3, int32(unix.SIGALRM), 0), unix.EINVAL},
		{"sigev_notify 99", unix.CLOCK_MONOTONIC, ev(99, int32(unix.SIGALRM), 0), unix.EINVAL},
		{"SIGEV_SIGNAL, signal 0", unix.CLOCK_MONOTONIC, ev(sigevSignal, 0, 0), unix.EINVAL},
		{"SIGEV_SIGNAL, signal 65", unix.CLOCK_MONOTONIC, ev(sigevSignal, 65, 0), unix.EINVAL},
		{"SIGEV_THREAD_ID, no thread", unix.CLOCK_THREAD_CPUTIME_ID, ev(sigevThreadID, int32(unix.SIGPROF), noTID), unix.EINVAL},
		{"SIGEV_THREAD_ID, signal 0", unix.CLOCK_THREAD_CPUTIME_ID, ev(sigevThreadID, 0, int32(tid)), unix.EINVAL},
		{"SIGEV_NONE, signal 0", unix.CLOCK_MONOTONIC, ev(sigevNone, 0, 0), 0},
		{"CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID", unix.CLOCK_THREAD_CPUTIME_ID, ev(sigevThreadID, int32(unix.SIGPROF), int32(tid)), 0},
		{"CLOCK_PROCESS_CPUTIME_ID", unix.CLOCK_PROCESS_CPUTIME_ID, ev(sigevSignal, int32(unix.SIGPROF), 0), 0},
		{"pthread_getcpuclockid(self)", threadClock(tid), ev(sigevNone, 0, 0), 0},
		{"CLOCK_REALTIME, no sigevent", unix.CLOCK_REALTIME, nil, 0},
		{"CLOCK_BOOTTIME", unix.CLOCK_BOOTTIME, ev(sigevNone, 0, 0), 0},
	} {
		id, e := timerCreate(c.clock, c.ev)
		check("timer_create("+c.what+")", e, c.want)
		if e == 0 {
			check("timer_delete("+c.what+")", timerDelete(id), 0)
		}
	}
	var ts unix.Timespec
	_, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 10, uintptr(unsafe.Pointer(&ts)), 0)
	check("clock_gettime(10)", e, unix.EINVAL)
	_, _, e = syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, uintptr(threadClock(noTID)), uintptr(unsafe.Pointer(&ts)), 0)
	check("clock_gettime(the thread clock of no thread)", e, unix.EINVAL)
	_, _, e = syscall.RawSyscall(syscall.SYS_CLOCK_GETRES, 10, uintptr(unsafe.Pointer(&ts)), 0)
	check("clock_getres(10)", e, unix.EINVAL)
	var ru unix.Rusage
	_, _, e = syscall.RawSyscall(syscall.SYS_GETRUSAGE, 2, uintptr(unsafe.Pointer(&ru)), 0)
	check("getrusage(2)", e, unix.EINVAL)

	// (SIGURG, which the runtime takes in its stride, should it fire: a
	// disarmed SIGEV_NONE timer reads its old time on Linux 6.18.)
	id, e := timerCreate(unix.CLOCK_MONOTONIC, ev(sigevSignal, int32(unix.SIGURG), 0))
	if e != 0 {
		t.Fatalf("timer_create: %v", e)
	}
	defer timerDelete(id)
	one := itimerspec{Value: unix.Timespec{Sec: 1}}
	check("timer_settime(no value)", timerSettime(id, 0, nil, nil), unix.EINVAL)
	check("timer_settime(nsec 1e9)", timerSettime(id, 0, &itimerspec{Value: unix.Timespec{Nsec: 1e9}}, nil), unix.EINVAL)
	check("timer_settime(interval nsec -1)", timerSettime(id, 0, &itimerspec{Interval: unix.Timespec{Nsec: -1}}, nil), unix.EINVAL)
	check("timer_settime(sec -1)", timerSettime(id, 0, &itimerspec{Value: unix.Timespec{Sec: -1}}, nil), unix.EINVAL)
	check("timer_settime(bad id)", timerSettime(id+1000, 0, &one, nil), unix.EINVAL)
	check("timer_settime(bad id, bad value)", timerSettime(id+1000, 0, &itimerspec{Value: unix.Timespec{Nsec: 1e9}}, nil), unix.EINVAL)
	check("timer_settime(-1)", timerSettime(-1, 0, &one, nil), unix.EINVAL)
	check("timer_gettime(bad id)", timerGettime(id+1000, &one), unix.EINVAL)
	_, e = timerGetoverrun(id + 1000)
	check("timer_getoverrun(bad id)", e, unix.EINVAL)
	check("timer_delete(bad id)", timerDelete(id+1000), unix.EINVAL)

	// Armed: the time left counts down from the value; the old setting
	// comes back; disarmed it reads zero.
	set := itimerspec{Interval: unix.Timespec{Nsec: 250e6}, Value: unix.Timespec{Sec: 5}}
	check("timer_settime(5s every 250ms)", timerSettime(id, 0, &set, nil), 0)
	var cur, old itimerspec
	check("timer_gettime", timerGettime(id, &cur), 0)
	if cur.Interval != set.Interval || cur.Value.Nano() <= 0 || cur.Value.Nano() > 5e9 {
		t.Errorf("timer_gettime after setting 5s every 250ms: %+v", cur)
	}
	check("timer_settime(0)", timerSettime(id, 0, &itimerspec{}, &old), 0)
	if old.Interval != set.Interval || old.Value.Nano() <= 0 || old.Value.Nano() > 5e9 {
		t.Errorf("timer_settime's old setting: %+v", old)
	}
	check("timer_gettime", timerGettime(id, &cur), 0)
	if cur.Value.Nano() != 0 || cur.Interval.Nano() != 0 {
		t.Errorf("timer_gettime disarmed: %+v", cur)
	}
	n, e := timerGetoverrun(id)
	check("timer_getoverrun", e, 0)
	if n != 0 {
		t.Errorf("timer_getoverrun of a timer that never fired: %d", n)
	}
	id2, e := timerCreate(unix.CLOCK_MONOTONIC, ev(sigevNone, 0, 0))
	check("timer_create", e, 0)
	check("timer_delete", timerDelete(id2), 0)
	check("timer_delete again", timerDelete(id2), unix.EINVAL)

	// Interval timers.
	check("setitimer(3)", setitimer(3, &unix.Itimerval{}, nil), unix.EINVAL)
	check("setitimer(-1)", setitimer(-1, &unix.Itimerval{}, nil), unix.EINVAL)
	check("setitimer(usec 1e6)", setitimer(unix.ITIMER_PROF, &unix.Itimerval{Value: unix.Timeval{Usec: 1e6}}, nil), unix.EINVAL)
	check("setitimer(usec -1)", setitimer(unix.ITIMER_REAL, &unix.Itimerval{Interval: unix.Timeval{Usec: -1}}, nil), unix.EINVAL)
	var iv unix.Itimerval
	_, _, e = syscall.RawSyscall(unix.SYS_GETITIMER, 3, uintptr(unsafe.Pointer(&iv)), 0)
	check("getitimer(3)", e, unix.EINVAL)
	check("setitimer(ITIMER_VIRTUAL, 10s)", setitimer(unix.ITIMER_VIRTUAL, &unix.Itimerval{Value: unix.Timeval{Sec: 10}}, nil), 0)
	check("setitimer(ITIMER_VIRTUAL, 0)", setitimer(unix.ITIMER_VIRTUAL, &unix.Itimerval{}, &iv), 0)
	if v := time.Duration(iv.Value.Nano()); v <= 0 || v > 10*time.Second+10*time.Millisecond {
		t.Errorf("setitimer(ITIMER_VIRTUAL)'s old value %v, want up to 10s", v)
	}
}

// testTimerSignals: the signals of a monotonic POSIX timer, a
// thread-CPU timer (SIGEV_THREAD_ID, as the runtime's profiler arms it)
// on a thread that spins without system calls, ITIMER_REAL and
// ITIMER_PROF reach os/signal, at their period's pace.
func testTimerSignals(t *T) {
	got := make(chan os.Signal, 64)
	signal.Notify(got, unix.SIGUSR1, unix.SIGALRM)
	defer signal.Stop(got)
	wait := func(what string, want os.Signal, n int) {
		deadline := time.After(10 * time.Second)
		for i := 0; i < n; {
			select {
			case s := <-got:
				if s == want {
					i++
				}
			case <-deadline:
				t.Errorf("%s: %d of %d %v in 10s", what, i, n, want)
				return
			}
		}
	}

	// A monotonic timer every 20ms, to the process.
	id, e := timerCreate(unix.CLOCK_MONOTONIC, &sigevent{notify: sigevSignal, signo: int32(unix.SIGUSR1)})
	if e != 0 {
		t.Fatalf("timer_create(CLOCK_MONOTONIC): %v", e)
	}
	start := time.Now()
	every := itimerspec{Interval: unix.Timespec{Nsec: 20e6}, Value: unix.Timespec{Nsec: 20e6}}
	if e := timerSettime(id, 0, &every, nil); e != 0 {
		t.Fatalf("timer_settime: %v", e)
	}
	wait("CLOCK_MONOTONIC timer every 20ms", unix.SIGUSR1, 5)
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Errorf("5 signals of a 20ms timer in %v", el)
	}
	timerDelete(id)

	// On every P a thread spins with a thread-CPU timer every 10ms of
	// its time, to itself (SIGEV_THREAD_ID, as the runtime's profiler
	// arms it). The spin makes no system call but reading its clock
	// every few milliseconds, so the signals come from the timer
	// interrupt. The
	// signal has a handler of its own that counts it: os/signal would
	// merge signals its goroutine had no time to take.
	defer ownHandler(t, unix.SIGUSR2, sigCounterPCs)()
	count0 := atomic.LoadUint64(&sigCount)
	busy := runtime.GOMAXPROCS(0)
	type armedSpent struct {
		spent
		armed time.Duration // the thread's CPU time from before timer_settime to after timer_delete
	}
	cpus := make(chan armedSpent, busy)
	for range busy {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			id, e := timerCreate(unix.CLOCK_THREAD_CPUTIME_ID, &sigevent{notify: sigevThreadID, signo: int32(unix.SIGUSR2), tid: int32(unix.Gettid())})
			if e != 0 {
				t.Errorf("timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID): %v", e)
				cpus <- armedSpent{}
				return
			}
			every := itimerspec{Interval: unix.Timespec{Nsec: 10e6}, Value: unix.Timespec{Nsec: 10e6}}
			a0 := clockNS(t, unix.CLOCK_THREAD_CPUTIME_ID)
			timerSettime(id, 0, &every, nil)
			s := spinSpent(t, 300*time.Millisecond, 200000)
			timerDelete(id)
			cpus <- armedSpent{s, clockNS(t, unix.CLOCK_THREAD_CPUTIME_ID) - a0}
		}()
	}
	var cpu, steady, armed time.Duration
	for range busy {
		s := <-cpus
		cpu += s.cpu
		steady += s.steady
		armed += s.armed
	}
	n := int(atomic.LoadUint64(&sigCount) - count0)
	// At least 80% of the spin's CPU time without the host's gaps, at
	// most the CPU time the timer was armed for with them (testCPUProfile
	// says why), plus one a thread for a period cut by the clock reads.
	// The armed time is read around timer_settime and timer_delete: the
	// spin's own clock reads leave out the time before its first and
	// after its last, which a host's gap there makes long (on rpi3 under
	// load, 129 signals for a bound of the spin's 120 + 8 was seen).
	lo, hi := int(steady/(10*time.Millisecond))*8/10, int(armed/(10*time.Millisecond))+busy
	t.Logf("thread-CPU timers every 10ms on %d threads: %d signals in %v of their CPU time (%v at the median spin's, %v armed)", busy, n, cpu, steady, armed)
	if n < lo || n > hi {
		t.Errorf("thread-CPU timers every 10ms on %d threads: %d signals in %v of their CPU time (%v at the median spin's, %v armed), want %d to %d", busy, n, cpu, steady, armed, lo, hi)
	}

	// ITIMER_REAL, once.
	start = time.Now()
	if e := setitimer(unix.ITIMER_REAL, &unix.Itimerval{Value: unix.Timeval{Usec: 30000}}, nil); e != 0 {
		t.Fatalf("setitimer(ITIMER_REAL): %v", e)
	}
	wait("ITIMER_REAL 30ms", unix.SIGALRM, 1)
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Errorf("ITIMER_REAL of 30ms fired after %v", el)
	}
	var iv unix.Itimerval
	if _, _, e := syscall.RawSyscall(unix.SYS_GETITIMER, unix.ITIMER_REAL, uintptr(unsafe.Pointer(&iv)), 0); e != 0 || iv.Value.Nano() != 0 {
		t.Errorf("getitimer(ITIMER_REAL) after it fired: %+v, %v", iv, e)
	}
}

// profHot is the profile's hot function: n rounds of xorshift.
//
//go:noinline
func profHot(x uint64, n int) uint64 {
	x |= 1
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// spent is a thread's CPU time over a spin, and the same without the
// gaps the host made: the number of spins times the median spin's time.
type spent struct{ cpu, steady time.Duration }

// spinSpent runs profHot(n) until the thread's CPU clock has advanced d.
func spinSpent(t *T, d time.Duration, n int) spent {
	c0 := clockNS(t, unix.CLOCK_THREAD_CPUTIME_ID)
	var x uint64
	var spins []time.Duration
	c := c0
	for c-c0 < d {
		x = profHot(x, n)
		next := clockNS(t, unix.CLOCK_THREAD_CPUTIME_ID)
		spins = append(spins, next-c)
		c = next
	}
	cpuSink += x
	slices.Sort(spins)
	return spent{c - c0, time.Duration(len(spins)) * spins[len(spins)/2]}
}

// testCPUProfile runs the runtime's CPU profiler around a CPU-bound
// function on every P, each goroutine locked to its thread for 600 ms of
// that thread's CPU time: the busy goroutines' samples must be 100 per
// second of their threads' CPU time (±20%) — the rate of the per-thread
// timers the profiler arms — and the hot function must have at least 80%
// of them, of those not in the loop's own clock reads. TCG makes the
// machine slow, not the rate: it is measured against the thread CPU
// clock, never the wall clock.
//
// A thread's CPU clock also counts the time the host takes its virtual
// CPU away (on a loaded host, hundreds of milliseconds at a time); the
// kernel makes those periods' signals up when the thread runs again, but
// the ones due as the thread stops are lost. So the samples must be at
// least 80% of the busy time without such gaps (each spin of the loop
// counted at the median spin's CPU time) and at most 120% of the CPU
// time with them. (The whole profile's samples against the process's CPU
// time are logged, not checked: threads without a timer of their own are
// sampled only when the process's ITIMER_PROF signal lands on them, on
// Linux too.)
func testCPUProfile(t *T) {
	var buf bytes.Buffer
	st0, yolk := yolkStats()
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Fatalf("StartCPUProfile: %v", err)
	}
	p0 := clockNS(t, unix.CLOCK_PROCESS_CPUTIME_ID)
	busy := runtime.GOMAXPROCS(0)
	cpus := make(chan spent, busy)
	for range busy {
		go pprof.Do(context.Background(), pprof.Labels("prof", "busy"), func(context.Context) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpus <- spinSpent(t, 600*time.Millisecond, 1_000_000)
		})
	}
	var cpu, steady time.Duration
	for range busy {
		s := <-cpus
		cpu += s.cpu
		steady += s.steady
	}
	pcpu := clockNS(t, unix.CLOCK_PROCESS_CPUTIME_ID) - p0
	pprof.StopCPUProfile()
	samples, err := parseProfile(buf.Bytes())
	if err != nil {
		t.Fatalf("parsing the profile: %v", err)
	}
	total, busyN, hot, clock := 0, 0, 0, 0
	for _, s := range samples {
		total += s.count
		if s.label != "busy" {
			continue
		}
		busyN += s.count
		for _, f := range s.stack {
			if f == "main.profHot" {
				hot += s.count
				break
			}
			if f == "main.clockNS" {
				clock += s.count
				break
			}
		}
	}
	lo, hi := int(steady/(10*time.Millisecond))*8/10, int(cpu/(10*time.Millisecond))*12/10
	t.Logf("%d busy threads, %v of their CPU time (%v at the median spin's): %d samples (want %d to %d), %d of them in profHot, %d in the loop's clock reads; all threads: %d samples in %v of process CPU time",
		busy, cpu, steady, busyN, lo, hi, hot, clock, total, pcpu)
	if st1, _ := yolkStats(); yolk {
		t.Logf("the kernel's timers: %d expiries, %d overruns; %d signals delivered",
			st1.TimerExpiries-st0.TimerExpiries, st1.TimerOverruns-st0.TimerOverruns, st1.Signals-st0.Signals)
	}
	if busyN < lo || busyN > hi {
		t.Errorf("%d samples of the busy threads in %v of their CPU time (%v at the median spin's), want %d to %d", busyN, cpu, steady, lo, hi)
	}
	// The loop's own clock reads are system calls, and a signal due
	// while the thread was in the kernel is delivered on its way out:
	// those samples rightly name clockNS (on rpi3, once, 46 of 249).
	// The rest must name profHot; the reads may not take most.
	if busyN == 0 || hot*10 < (busyN-clock)*8 || clock*2 > busyN {
		t.Errorf("profHot has %d of the busy goroutines' %d samples, the loop's clock reads %d; want at least 80%% of the others in profHot, and at most half in the reads", hot, busyN, clock)
	}
	if t.failed {
		for _, s := range samples {
			t.Logf("%d %q %v", s.count, s.label, s.stack[:min(len(s.stack), 4)])
		}
	}
}

// yolkStats is the kernel's counters, if the kernel is yolk's.
func yolkStats() (abi.Stats, bool) {
	var s abi.Stats
	_, _, e := syscall.Syscall(abi.SysStats, uintptr(unsafe.Pointer(&s)), 0, 0)
	return s, e == 0
}

func init() {
	benches = append(benches,
		bench{"BenchmarkClockThreadCPU", benchClock(unix.CLOCK_THREAD_CPUTIME_ID), false},
		bench{"BenchmarkClockProcessCPU", benchClock(unix.CLOCK_PROCESS_CPUTIME_ID), false},
		bench{"BenchmarkProfiled/off", benchProfiled(false), false},
		bench{"BenchmarkProfiled/on", benchProfiled(true), false},
	)
}

// benchClock: one clock_gettime system call of a CPU clock.
func benchClock(id int32) func(*testing.B) {
	return func(b *testing.B) {
		var ts unix.Timespec
		for i := 0; i < b.N; i++ {
			syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0)
		}
	}
}

// benchProfiled: CPU-bound work (one op is 10 000 rounds of profHot on
// one goroutine), with the runtime's CPU profiler on or off: the cost of
// 100 SIGPROFs a second (and ITIMER_PROF's, which the runtime drops),
// their handler and the profile's writer.
func benchProfiled(on bool) func(*testing.B) {
	return func(b *testing.B) {
		if on {
			if err := pprof.StartCPUProfile(io.Discard); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
		}
		var x uint64
		for i := 0; i < b.N; i++ {
			x = profHot(x, 10000)
		}
		cpuSink += x
		if on {
			// Stopping waits for the profile's writer (it reads every
			// 100 ms): not the profiled work's cost.
			b.StopTimer()
			pprof.StopCPUProfile()
		}
	}
}

// ownHandler makes the assembly handler pcs names sig's action (with
// SA_SIGINFO, SA_ONSTACK and its restorer: no Go runtime in between) and
// returns the call that puts the old action back.
func ownHandler(t *T, sig syscall.Signal, pcs func() (handler, restorer uintptr)) (restore func()) {
	handler, restorer := pcs()
	const saSiginfo, saOnstack, saRestorer = 4, 0x08000000, 0x04000000
	act := [4]uint64{uint64(handler), saSiginfo | saOnstack | saRestorer, uint64(restorer), 0}
	var old [4]uint64
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		t.Fatalf("rt_sigaction(%v): %v", sig, e)
	}
	return func() {
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	}
}
