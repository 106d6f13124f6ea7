package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
)

// timespec is struct timespec.
type timespec struct{ sec, nsec int64 }

func readTimespec(p uintptr) (int64, abi.Errno) {
	ts, e := mm.Get[timespec](p)
	if e != 0 {
		return 0, e
	}
	if ts.nsec < 0 || ts.nsec >= 1e9 || ts.sec < 0 {
		return 0, abi.EINVAL
	}
	if ts.sec > 1<<32 {
		return 1 << 62, 0
	}
	return ts.sec*1e9 + ts.nsec, 0
}

func writeTimespec(p uintptr, ns int64) abi.Errno {
	return mm.Put(p, timespec{ns / 1e9, ns % 1e9})
}

func sysNanosleep(req, rem uintptr) abi.Errno {
	d, err := readTimespec(req)
	if err != 0 {
		return err
	}
	if d == 0 {
		return 0
	}
	return sleepUntil(nanotime()+d, rem)
}

// sleepUntil sleeps until the monotonic time deadline. Interrupted by a
// signal, it writes the time left to rem (0: nowhere) and asks for
// restart_syscall (errRestartBlock), as Linux's do_nanosleep: EINTR if a
// handler runs, else the sleep goes on to the same deadline.
func sleepUntil(deadline int64, rem uintptr) abi.Errno {
	if blockIntr(nil, 0, 0, 0, deadline) != sched.WakeSignal {
		return 0
	}
	left := deadline - nanotime()
	if left <= 0 {
		return 0
	}
	if rem != 0 {
		if e := writeTimespec(rem, left); e != 0 {
			return e
		}
	}
	restartBlocks[sched.Current().Index()] = restartBlock{fn: restartSleep, deadline: deadline, addr: rem}
	return errRestartBlock
}

// sysClockNanosleep sleeps on clock, for a relative time or (flags
// TIMER_ABSTIME) until an absolute one. An absolute sleep interrupted by
// a signal writes nothing to rem and is made again from the start if no
// handler runs (Linux's ERESTARTNOHAND): its end does not move.
func sysClockNanosleep(clock, flags int, req, rem uintptr) abi.Errno {
	switch clock {
	case unix.CLOCK_REALTIME, unix.CLOCK_TAI, unix.CLOCK_MONOTONIC, unix.CLOCK_BOOTTIME:
	default:
		return abi.EINVAL
	}
	d, err := readTimespec(req)
	if err != 0 {
		return err
	}
	if flags&unix.TIMER_ABSTIME == 0 {
		if d == 0 {
			return 0
		}
		return sleepUntil(nanotime()+d, rem)
	}
	now := nanotime()
	deadline := d + now - monotonic()
	if clock == unix.CLOCK_REALTIME || clock == unix.CLOCK_TAI {
		deadline = d + now - walltime()
	}
	if deadline <= now {
		return 0
	}
	if blockIntr(nil, 0, 0, 0, deadline) == sched.WakeSignal && nanotime() < deadline {
		return errRestartNoHand
	}
	return 0
}

// sysClockGettime reads clock id: the wall clock, the monotonic one, or
// a CPU clock (kernel/timer's CPUClock: the thread's or the process's CPU
// time). The vDSO's clock_gettime answers the first two itself and calls
// here for the others, as Linux's does.
func sysClockGettime(id int32, p uintptr) abi.Errno {
	switch id {
	case unix.CLOCK_REALTIME, unix.CLOCK_REALTIME_COARSE, unix.CLOCK_TAI, unix.CLOCK_REALTIME_ALARM:
		return writeTimespec(p, walltime())
	case unix.CLOCK_MONOTONIC, unix.CLOCK_MONOTONIC_RAW, unix.CLOCK_MONOTONIC_COARSE,
		unix.CLOCK_BOOTTIME, unix.CLOCK_BOOTTIME_ALARM:
		return writeTimespec(p, monotonic())
	}
	t, err := cpuClock(id, true)
	if err != 0 {
		return err
	}
	return writeTimespec(p, cpuTime(t, nanotime()))
}

// sysClockGetres: every clock counts in nanoseconds (the CPU clocks too,
// as Linux's do with a cycle counter).
func sysClockGetres(id int32, p uintptr) abi.Errno {
	switch {
	case id >= unix.CLOCK_REALTIME && id <= unix.CLOCK_BOOTTIME_ALARM, id == unix.CLOCK_TAI:
	default:
		if _, err := cpuClock(id, true); err != 0 {
			return err
		}
	}
	if p == 0 {
		return 0
	}
	return writeTimespec(p, 1)
}

// CPU time is one figure: the kernel and the program run at one privilege
// level and a task's time is counted at its switches, so getrusage and
// times give it all as user time and no system time (utime+stime, what
// callers add up, is the whole).

// sysGetrusage: RUSAGE_SELF is the process's CPU time, RUSAGE_THREAD the
// caller's, RUSAGE_CHILDREN zero (there are none); every other field zero.
func sysGetrusage(who int32, p uintptr) abi.Errno {
	var ns int64
	switch who {
	case unix.RUSAGE_SELF:
		ns = sched.ProcessCPUTime(nanotime())
	case unix.RUSAGE_THREAD:
		ns = sched.Current().CPUTime(nanotime())
	case unix.RUSAGE_CHILDREN:
	default:
		return abi.EINVAL
	}
	var ru [18]int64 // struct rusage: ru_utime first, the rest 0
	ru[0], ru[1] = ns/1e9, ns%1e9/1e3
	return mm.Put(p, ru)
}

// clkTck is USER_HZ, the unit of times.
const clkTck = 100

// sysTimes fills struct tms (the process's CPU time as user time, in
// clock ticks) if buf is not NULL and returns the ticks since boot.
func sysTimes(buf uintptr) (uintptr, abi.Errno) {
	now := nanotime()
	if buf != 0 {
		tms := [4]int64{sched.ProcessCPUTime(now) / (1e9 / clkTck)} // tms_utime; the rest 0
		if e := mm.Put(buf, tms); e != 0 {
			return 0, e
		}
	}
	return uintptr(now / (1e9 / clkTck)), 0
}

func sysGettimeofday(p uintptr) abi.Errno {
	if p == 0 {
		return 0
	}
	ns := walltime()
	return mm.Put(p, timespec{ns / 1e9, ns % 1e9 / 1e3})
}
