package timer

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/sched"
)

// CPUClock decodes a clock ID of the CPU clocks: CLOCK_PROCESS_CPUTIME_ID,
// CLOCK_THREAD_CPUTIME_ID and Linux's encoding of another thread's or
// process's clock (clock_getcpuclockid, pthread_getcpuclockid): ~pid<<3,
// bit 2 for a thread, low two bits PROF, VIRT or SCHED (all the same here;
// 3 is a clock on a descriptor, which yolk has none of). t is nil for the
// process clock. A process clock names pid 0 or 1, or, for reading, the
// calling thread's ID (as Linux allows); a thread clock names 0 (the
// caller) or a live thread.
func CPUClock(id int32, gettime bool) (t *sched.Task, err abi.Errno) {
	switch {
	case id == unix.CLOCK_PROCESS_CPUTIME_ID:
		return nil, 0
	case id == unix.CLOCK_THREAD_CPUTIME_ID:
		return sched.Current(), 0
	case id >= 0 || id&3 == 3:
		return nil, abi.EINVAL
	}
	pid := ^(id >> 3)
	if id&4 != 0 {
		if pid == 0 {
			return sched.Current(), 0
		}
		if t = sched.FindTID(pid); t == nil {
			return nil, abi.EINVAL
		}
		return t, 0
	}
	if pid == 0 || pid == 1 || gettime && pid == sched.Current().TID {
		return nil, 0
	}
	return nil, abi.EINVAL
}

// CPUTime is thread t's CPU time, or the process's if t is nil, at now.
func CPUTime(t *sched.Task, now int64) int64 {
	if t == nil {
		return sched.ProcessCPUTime(now)
	}
	return t.CPUTime(now)
}
