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

func sysNanosleep(req uintptr) abi.Errno {
	d, err := readTimespec(req)
	if err != 0 {
		return err
	}
	if d > 0 {
		sched.Block(nil, 0, 0, 0, nanotime()+d)
	}
	return 0
}

func sysClockGettime(clock int, p uintptr) abi.Errno {
	switch clock {
	case unix.CLOCK_REALTIME, unix.CLOCK_REALTIME_COARSE, unix.CLOCK_TAI:
		return writeTimespec(p, walltime())
	}
	return writeTimespec(p, monotonic())
}

func sysClockGetres(p uintptr) abi.Errno {
	if p == 0 {
		return 0
	}
	return writeTimespec(p, 1)
}

func sysGettimeofday(p uintptr) abi.Errno {
	if p == 0 {
		return 0
	}
	ns := walltime()
	return mm.Put(p, timespec{ns / 1e9, ns % 1e9 / 1e3})
}
