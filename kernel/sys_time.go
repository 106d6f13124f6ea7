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
