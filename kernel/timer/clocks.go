package timer

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
)

// The clocks' calls: reading the wall clock, the monotonic clock and the
// CPU clocks, and the CPU time the process and its threads have used.

// ClockGettime is clock_gettime: clock id, the wall clock, the monotonic one, or
// a CPU clock (CPUClock: the thread's or the process's CPU time). The vDSO's clock_gettime answers the first two itself and calls
// here for the others, as Linux's does.
func (x *Timers[E]) ClockGettime(id int32, p uintptr) abi.Errno {
	var env E
	switch id {
	case unix.CLOCK_REALTIME, unix.CLOCK_REALTIME_COARSE, unix.CLOCK_TAI, unix.CLOCK_REALTIME_ALARM:
		return mm.Put(p, nanosTs(env.WallBase()+env.Now()))
	case unix.CLOCK_MONOTONIC, unix.CLOCK_MONOTONIC_RAW, unix.CLOCK_MONOTONIC_COARSE,
		unix.CLOCK_BOOTTIME, unix.CLOCK_BOOTTIME_ALARM:
		return mm.Put(p, nanosTs(env.Monotonic()))
	}
	t, err := CPUClock(id, true)
	if err != 0 {
		return err
	}
	return mm.Put(p, nanosTs(CPUTime(t, env.Now())))
}

// ClockGetres is clock_getres: every clock counts in nanoseconds (the CPU clocks too,
// as Linux's do with a cycle counter).
func ClockGetres(id int32, p uintptr) abi.Errno {
	switch {
	case id >= unix.CLOCK_REALTIME && id <= unix.CLOCK_BOOTTIME_ALARM, id == unix.CLOCK_TAI:
	default:
		if _, err := CPUClock(id, true); err != 0 {
			return err
		}
	}
	if p == 0 {
		return 0
	}
	return mm.Put(p, nanosTs(1))
}

// CPU time is one figure: the kernel and the program run at one privilege
// level and a task's time is counted at its switches, so getrusage and
// times give it all as user time and no system time (utime+stime, what
// callers add up, is the whole).

// Getrusage is getrusage: RUSAGE_SELF is the process's CPU time and
// context switches, RUSAGE_THREAD the caller's, RUSAGE_CHILDREN zero
// (there are none); every other field zero.
func (x *Timers[E]) Getrusage(who int32, p uintptr) abi.Errno {
	var env E
	var ns int64
	var nv, niv uint64
	switch who {
	case unix.RUSAGE_SELF:
		ns, nv, niv = sched.ProcessUsage(env.Now())
	case unix.RUSAGE_THREAD:
		ns = sched.Current().CPUTime(env.Now())
		nv, niv = sched.Current().Switches()
	case unix.RUSAGE_CHILDREN:
	default:
		return abi.EINVAL
	}
	// struct rusage: ru_utime first, ru_nvcsw and ru_nivcsw last, the
	// rest 0.
	var ru [18]int64
	ru[0], ru[1] = ns/1e9, ns%1e9/1e3
	ru[16], ru[17] = int64(nv), int64(niv)
	return mm.Put(p, ru)
}

// clkTck is USER_HZ, the unit of times.
const clkTck = 100

// Times is times: it fills struct tms (the process's CPU time as user time, in
// clock ticks) if buf is not NULL and returns the ticks since boot.
func (x *Timers[E]) Times(buf uintptr) (uintptr, abi.Errno) {
	var env E
	now := env.Now()
	if buf != 0 {
		tms := [4]int64{sched.ProcessCPUTime(now) / (1e9 / clkTck)} // tms_utime; the rest 0
		if e := mm.Put(buf, tms); e != 0 {
			return 0, e
		}
	}
	return uintptr(now / (1e9 / clkTck)), 0
}

// Gettimeofday is gettimeofday.
func (x *Timers[E]) Gettimeofday(p uintptr) abi.Errno {
	var env E
	if p == 0 {
		return 0
	}
	return mm.Put(p, nanosTv(env.WallBase()+env.Now()))
}
