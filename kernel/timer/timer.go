// Package timer is the timers the program arms: POSIX timers
// (timer_create, timer_settime, timer_gettime, timer_getoverrun,
// timer_delete) and interval timers (setitimer, getitimer, alarm), on a
// thread's or the process's CPU clock or on the monotonic and real-time
// clocks, in one fixed table under one spin lock; the CPU clocks' IDs
// (cpuclock.go); and each thread's timer slack (slack.go, prctl's
// PR_SET_TIMERSLACK).
//
// Kernel-context Go: nothing here allocates on the Go heap, stores a Go
// pointer into memory, holds an interface value or a func variable, or
// calls the runtime's scheduler. It reaches the kernel only through its
// type parameter (Env: the clock, the signals' pending bits, the thread a
// process's signal goes to, sending a signal); tasks are sched's.
// kernel/kcontext_test.go checks this on a built image.
//
// The Go runtime profiles with these timers: each thread arms a timer
// on its own CPU clock that sends it SIGPROF (SIGEV_THREAD_ID, si_code
// SI_TIMER) 100 times per second of its CPU time, and the process arms
// ITIMER_PROF (si_code SI_KERNEL), whose signals it then drops.
//
// Expiry is found at the timer interrupt (Check): the interrupted
// task's thread-CPU timers, the process-CPU timers and the monotonic
// ones. A CPU returning to application code arms its one-shot timer for
// the earliest a timer of the task it runs could expire (Deadline);
// every CPU, idle ones too, arms it for the earliest monotonic timer
// (MonoNext). So a thread that never enters the kernel still gets its
// signal within the interrupt's lateness, as Linux's tick gives it.
// Process CPU time is the sum over the tasks; it can grow at most as fast
// as the CPUs together, so the next look is when the earliest process-CPU
// timer could first expire with every CPU busy (at least procStep later).
//
// Signals: SIGEV_THREAD_ID to the thread named, SIGEV_SIGNAL and
// SIGEV_THREAD to the process (Env.Target: the running thread, unless it
// blocks the signal), SIGEV_NONE to nobody. A timer's signal pending when
// it expires again counts an overrun. A timer whose clock's thread exited
// stops.
package timer

import (
	"math"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/sched"
)

// Env is what the kernel supplies. It must be a value type without
// pointers (in the kernel an empty struct).
type Env interface {
	// Now is the monotonic clock, ns since boot; WallBase the Unix
	// time, ns, at its 0.
	Now() int64
	WallBase() int64
	// Monotonic is CLOCK_MONOTONIC: Now, kept from going backwards
	// across CPUs whose counters disagree.
	Monotonic() int64
	// Pending reports whether sig is pending for task slot slot;
	// Discard takes it back (a deleted timer's signal).
	Pending(slot, sig int) bool
	Discard(slot, sig int)
	// Target is the thread a signal sig for the process goes to, nil
	// if none.
	Target(sig int) *sched.Task
	// Send makes sig pending for t, sent by a POSIX timer (SI_TIMER;
	// the kernel asks Delivered for its details when it delivers it)
	// or, if !posix, by an interval timer (SI_KERNEL).
	Send(t *sched.Task, sig int, posix bool)
}

const (
	maxTimers = sched.MaxTasks // timer_create's IDs are 0 to maxTimers-1
	itimerAt  = maxTimers      // setitimer's three follow them in the table

	sigevSignal   = 0
	sigevNone     = 1
	sigevThread   = 2
	sigevThreadID = 4

	// SITimer is SI_TIMER, the si_code of a POSIX timer's signal.
	SITimer = -2

	procStep = 1_000_000 // ns: the shortest wait before process CPU time is looked at again
)

// Clocks a timer counts on.
const (
	onThreadCPU = iota + 1
	onProcessCPU
	onMono
	onReal // set relative to the monotonic clock; absolute times converted
)

type ptimer struct {
	clock       uint8 // 0: slot free
	notify      uint8
	signo       uint8
	itimer      bool  // a setitimer timer: SI_KERNEL
	pending     bool  // its signal is pending for task slot ptask
	ctask, ctid int32 // the thread whose CPU clock it counts (onThreadCPU)
	ttask, ttid int32 // the thread it signals (SIGEV_THREAD_ID)
	ptask       int32
	value       int64 // next expiry on its clock, ns; 0: disarmed
	interval    int64
	overrun     int32 // expiries while its signal was pending
	lastOverrun int32 // overrun at the last delivery (timer_getoverrun)
	sigval      uint64
}

// Timers is the table of timers and the threads' timer slack; the kernel
// has one.
type Timers[E Env] struct {
	lock sched.TWALock
	t    [maxTimers + 3]ptimer
	high int32 // one past the highest slot used

	// Derived from the table under lock, read without it (atomic):
	armed      int32                 // timers armed
	threadNext [sched.MaxTasks]int64 // per task slot: its earliest thread-CPU expiry, 0 if none
	procNext   int64                 // earliest process-CPU expiry, 0 if none
	procCheck  int64                 // monotonic time of the next look at process CPU time, 0 if none
	monoNext   int64                 // earliest monotonic expiry, 0 if none

	// sigTimer is, per task slot, 1 + the timer whose SI_TIMER signal
	// is pending there (one per thread: a second timer's signal for
	// the same thread takes the place).
	sigTimer [sched.MaxTasks]int32

	// Counters for the self-tests (abi.Stats): expiries, and of them
	// the ones counted as overruns (the timer's signal still pending, or
	// periods that passed unseen).
	fired, overruns uint64 // atomic

	slack // slack.go
}

// Fired and Overruns are the counters of expiries and overruns.
func (x *Timers[E]) Fired() uint64    { return atomic.LoadUint64(&x.fired) }
func (x *Timers[E]) Overruns() uint64 { return atomic.LoadUint64(&x.overruns) }

// MonoNext is the earliest monotonic expiry, 0 if none: every CPU arms
// its timer for it.
func (x *Timers[E]) MonoNext() int64 { return atomic.LoadInt64(&x.monoNext) }

// TaskInit forgets, for a new task in slot, the SI_TIMER signal an
// earlier task there had pending (clone).
func (x *Timers[E]) TaskInit(slot int) { atomic.StoreInt32(&x.sigTimer[slot], 0) }

// clockOf is what a timer on clock id counts: the clock, and the thread
// of a thread CPU clock. A clock without timers is EOPNOTSUPP, an unknown
// one EINVAL, as timer_create says.
func clockOf(id int32) (clock uint8, t *sched.Task, err abi.Errno) {
	switch id {
	case unix.CLOCK_REALTIME, unix.CLOCK_TAI:
		return onReal, nil, 0
	case unix.CLOCK_MONOTONIC, unix.CLOCK_BOOTTIME:
		return onMono, nil, 0
	case unix.CLOCK_MONOTONIC_RAW, unix.CLOCK_REALTIME_COARSE, unix.CLOCK_MONOTONIC_COARSE,
		unix.CLOCK_REALTIME_ALARM, unix.CLOCK_BOOTTIME_ALARM:
		return 0, nil, abi.EOPNOTSUPP
	}
	if id < 0 && id&3 == 3 {
		return 0, nil, abi.EOPNOTSUPP // a clock on a descriptor: no timers
	}
	t, err = CPUClock(id, false)
	if err != 0 {
		return 0, nil, err
	}
	if t == nil {
		return onProcessCPU, nil, 0
	}
	return onThreadCPU, t, 0
}

// now is p's clock at monotonic time mono; pt is the process's CPU time
// then, if known (-1 if not). ok is false if p counts a thread that has
// exited.
func (p *ptimer) now(mono int64, pt *int64) (int64, bool) {
	switch p.clock {
	case onThreadCPU:
		t := sched.TaskAt(int(p.ctask))
		if t.TID != p.ctid || !t.Alive() {
			return 0, false
		}
		return t.CPUTime(mono), true
	case onProcessCPU:
		if *pt < 0 {
			*pt = sched.ProcessCPUTime(mono)
		}
		return *pt, true
	}
	return mono, true
}

// recompute derives the expiry summaries from the table, for thread-CPU
// timers of task slot slot (-1: none); the lock is held.
func (x *Timers[E]) recompute(slot int32, mono int64) {
	var armed int32
	var tn, pn, mn int64
	for i := range x.high {
		p := &x.t[i]
		if p.clock == 0 || p.value == 0 {
			continue
		}
		armed++
		if p.catchUp() && x.signalPending(i) {
			continue // until its signal is delivered (Delivered)
		}
		switch p.clock {
		case onThreadCPU:
			if p.ctask == slot && (tn == 0 || p.value < tn) {
				tn = p.value
			}
		case onProcessCPU:
			if pn == 0 || p.value < pn {
				pn = p.value
			}
		default:
			if mn == 0 || p.value < mn {
				mn = p.value
			}
		}
	}
	if slot >= 0 {
		atomic.StoreInt64(&x.threadNext[slot], tn)
	}
	var pc int64
	if pn != 0 {
		left := pn - sched.ProcessCPUTime(mono)
		pc = mono + max(min(left, max(left/int64(sched.NumCPU()), procStep)), 0)
	}
	atomic.StoreInt64(&x.procNext, pn)
	atomic.StoreInt64(&x.procCheck, pc)
	atomic.StoreInt64(&x.monoNext, mn)
	atomic.StoreInt32(&x.armed, armed)
}

// Deadline is the monotonic time by which the CPU running the current
// task, on its way back to application code, must look at the timers: the
// earliest its thread-CPU timers or the process-CPU ones could expire; 0
// if none.
func (x *Timers[E]) Deadline() int64 {
	if atomic.LoadInt32(&x.armed) == 0 {
		return 0
	}
	d := atomic.LoadInt64(&x.procCheck)
	t := sched.Current()
	if tn := atomic.LoadInt64(&x.threadNext[t.Index()]); tn != 0 {
		var e E
		now := e.Now()
		if e := now + tn - t.CPUTime(now); d == 0 || e < d {
			d = e
		}
	}
	return d
}

// Check runs in the timer interrupt: it expires the timers due by
// monotonic time until (the interrupt's time plus its usual lateness).
func (x *Timers[E]) Check(until int64) {
	if atomic.LoadInt32(&x.armed) == 0 {
		return
	}
	cur := sched.Current()
	slot := int32(cur.Index())
	tn := atomic.LoadInt64(&x.threadNext[slot])
	doThread := tn != 0 && cur.CPUTime(until) >= tn
	pc := atomic.LoadInt64(&x.procCheck)
	doProc := pc != 0 && pc <= until
	mn := atomic.LoadInt64(&x.monoNext)
	doMono := mn != 0 && mn <= until
	if !doThread && !doProc && !doMono {
		return
	}
	x.lock.Lock()
	pt := int64(-1)
	for i := range x.high {
		p := &x.t[i]
		if p.clock == 0 || p.value == 0 {
			continue
		}
		switch p.clock {
		case onThreadCPU:
			if !doThread || p.ctask != slot {
				continue
			}
		case onProcessCPU:
			if !doProc {
				continue
			}
		default:
			if !doMono {
				continue
			}
		}
		now, ok := p.now(until, &pt)
		if !ok {
			p.value = 0
			continue
		}
		if p.value <= now {
			x.expire(i, now)
		}
	}
	if !doThread {
		slot = -1
	}
	x.recompute(slot, until)
	x.lock.Unlock()
}

// catchUp reports whether p signals each period it finds passed, one
// after another, instead of counting them as overruns: a periodic POSIX
// timer on a CPU clock. A CPU clock here counts time on a CPU, and under
// emulation that includes the time the host took the virtual CPU away
// (Linux under KVM subtracts such stolen time; nothing tells yolk under
// TCG): the timer interrupt then comes periods late, and a profiler that
// takes one signal for one period (Go's ignores si_overrun) would lose
// them. Up to backlogMax periods (1 s at the profiler's 100 Hz) are made
// up; more are overruns.
func (p *ptimer) catchUp() bool {
	return !p.itimer && p.interval > 0 && (p.clock == onThreadCPU || p.clock == onProcessCPU)
}

const backlogMax = 100

// signalPending reports whether timer i's SI_TIMER signal is still
// pending.
func (x *Timers[E]) signalPending(i int32) bool {
	p := &x.t[i]
	var e E
	return p.pending && atomic.LoadInt32(&x.sigTimer[p.ptask]) == i+1 && e.Pending(int(p.ptask), int(p.signo))
}

// expire moves timer i to its next expiry and signals it. A periodic
// timer moves past now, counting the periods passed as overruns — unless
// it catches up, moving one period a signal; a timer catching up whose
// signal is still pending waits for its delivery (recompute leaves it
// out meanwhile).
func (x *Timers[E]) expire(i int32, now int64) {
	p := &x.t[i]
	catchUp := p.catchUp() && now-p.value < backlogMax*p.interval
	pending := p.notify != sigevNone && x.signalPending(i)
	if catchUp && pending {
		return
	}
	atomic.AddUint64(&x.fired, 1)
	var missed int64
	if p.interval > 0 {
		// Saturating: the program's interval may be near the int64
		// limit, and a wrapped expiry would count negative overruns.
		p.value = satAdd(p.value, p.interval)
		if p.value <= now && !catchUp {
			missed = (now-p.value)/p.interval + 1
			if missed > (math.MaxInt64-p.value)/p.interval {
				p.value = math.MaxInt64
			} else {
				p.value += missed * p.interval
			}
		}
	} else {
		p.value = 0
	}
	if p.notify == sigevNone {
		return
	}
	sig := int(p.signo)
	if missed < 0 || missed > 1<<30 {
		missed = 1 << 30 // a sum that wrapped was a huge count: capped, as Linux's DELAYTIMER_MAX
	}
	over := int32(missed)
	atomic.AddUint64(&x.overruns, uint64(over))
	if pending {
		atomic.AddUint64(&x.overruns, 1)
		p.overrun = int32(min(int64(p.overrun)+1+int64(over), 1<<30)) // summed wide: int32 would wrap
		return
	}
	var e E
	var t *sched.Task
	if p.notify == sigevThreadID {
		if t = sched.TaskAt(int(p.ttask)); t.TID != p.ttid || !t.Alive() {
			return
		}
	} else if t = e.Target(sig); t == nil {
		return
	}
	if p.itimer {
		e.Send(t, sig, false)
		return
	}
	slot := int32(t.Index())
	if j := atomic.SwapInt32(&x.sigTimer[slot], i+1) - 1; j >= 0 && j != i {
		x.t[j].pending = false // its signal is this one's now
	}
	p.pending, p.ptask, p.overrun = true, slot, over
	e.Send(t, sig, true)
}

// Delivered is called as task slot i takes an SI_TIMER signal: it
// returns the timer's ID, the overruns the signal stands for and its
// sigev_value, and makes those timer_getoverrun's.
func (x *Timers[E]) Delivered(i int) (id int32, over int32, val uint64) {
	x.lock.Lock()
	s := atomic.SwapInt32(&x.sigTimer[i], 0) - 1
	if s >= 0 && s < maxTimers {
		if p := &x.t[s]; p.clock != 0 && p.pending && p.ptask == int32(i) {
			p.pending = false
			p.lastOverrun, p.overrun = p.overrun, 0
			id, over, val = s, p.lastOverrun, p.sigval
			if p.catchUp() {
				slot := int32(-1)
				if p.clock == onThreadCPU {
					slot = p.ctask
				}
				var e E
				x.recompute(slot, e.Now())
			}
		}
	}
	x.lock.Unlock()
	return id, over, val
}

// timespec is struct timespec.
type timespec struct{ sec, nsec int64 }

// itimerspec is struct itimerspec: the interval, then the value.
type itimerspec struct{ interval, value timespec }

func validTimespec(ts timespec) bool { return ts.sec >= 0 && ts.nsec >= 0 && ts.nsec < 1e9 }

func tsNanos(ts timespec) int64 {
	if ts.sec > 1<<32 {
		return 1 << 62
	}
	return ts.sec*1e9 + ts.nsec
}

func nanosTs(ns int64) timespec { return timespec{ns / 1e9, ns % 1e9} }

// lookup is timer id's slot, nil if it is not a timer; the lock is held.
func (x *Timers[E]) lookup(id int32) *ptimer {
	if id < 0 || id >= maxTimers || x.t[id].clock == 0 {
		return nil
	}
	return &x.t[id]
}

// get is p's setting: the time left and the interval; the lock is held.
func (p *ptimer) get(mono int64) (left, interval int64) {
	if p.value == 0 {
		return 0, p.interval
	}
	pt := int64(-1)
	now, ok := p.now(mono, &pt)
	if !ok {
		return 0, p.interval
	}
	return max(p.value-now, 1), p.interval
}

// set arms timer i (value 0: disarms) for value, on its clock if abs
// (and then, for a real-time timer, on the wall clock), else from now;
// the lock is held.
func (x *Timers[E]) set(i int32, value, interval int64, abs bool) {
	var e E
	p := &x.t[i]
	mono := e.Now()
	pt := int64(-1)
	p.interval = interval
	p.value = 0
	if value != 0 {
		if abs && p.clock == onReal {
			value -= e.WallBase()
		}
		now, ok := p.now(mono, &pt)
		if ok {
			if !abs {
				value += now
			}
			p.value = max(value, 1)
			if p.value <= now {
				x.expire(i, now)
			}
		}
	}
	slot := int32(-1)
	if p.clock == onThreadCPU {
		slot = p.ctask
	}
	x.recompute(slot, mono)
}

// itimerval is struct itimerval: interval, then value, in seconds and
// microseconds.
type itimerval struct{ interval, value timespec }

func validTimeval(tv timespec) bool { return tv.sec >= 0 && tv.nsec >= 0 && tv.nsec < 1e6 }

func tvNanos(tv timespec) int64 { return tsNanos(timespec{tv.sec, tv.nsec * 1e3}) }

func nanosTv(ns int64) timespec { return timespec{ns / 1e9, (ns % 1e9) / 1e3} }

// itimer is setitimer's timer which (ITIMER_REAL, _VIRTUAL, _PROF), made
// on first use; the lock is held.
func (x *Timers[E]) itimer(which int) *ptimer {
	p := &x.t[itimerAt+which]
	if p.clock == 0 {
		*p = ptimer{clock: onProcessCPU, notify: sigevSignal, itimer: true}
		switch which {
		case unix.ITIMER_REAL:
			p.clock, p.signo = onMono, uint8(unix.SIGALRM)
		case unix.ITIMER_VIRTUAL:
			p.signo = uint8(unix.SIGVTALRM)
		default:
			p.signo = uint8(unix.SIGPROF)
		}
		x.high = max(x.high, int32(itimerAt+which+1))
	}
	return p
}

// setitimer sets interval timer which and returns its old setting.
func (x *Timers[E]) setitimer(which int, value, interval int64) (left, oldInterval int64) {
	var e E
	x.lock.Lock()
	p := x.itimer(which)
	left, oldInterval = p.get(e.Now())
	x.set(int32(itimerAt+which), value, interval, false)
	x.lock.Unlock()
	return left, oldInterval
}

// satAdd is a+b for b >= 0, at most math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
