package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
)

// Futexes: waiters hash by address into wait queues.
var futexQ [64]sched.WaitQueue

func sysFutex(addr uintptr, op int, val uint32, timeout uintptr) (uintptr, abi.Errno) {
	if addr&3 != 0 || !mm.UserOK(addr, 4) {
		return 0, abi.EFAULT
	}
	q := &futexQ[(addr>>2)%uintptr(len(futexQ))]
	switch op &^ (futexPrivateFlag | futexClockRealtime) {
	case futexWait:
		// Through the user copy: another thread may unmap the word
		// between the check above and here.
		if v, e := mm.Get[uint32](addr); e != 0 {
			return 0, e
		} else if v != val {
			return 0, abi.EAGAIN
		}
		var deadline int64
		if timeout != 0 {
			d, err := readTimespec(timeout)
			if err != 0 {
				return 0, err
			}
			if d == 0 {
				return 0, abi.ETIMEDOUT
			}
			deadline = nanotime() + d
		}
		return futexSleep(addr, val, deadline)
	case futexWake:
		return uintptr(q.Wake(addr, int(val))), 0
	}
	logENOSYS(unix.SYS_FUTEX)
	return 0, abi.ENOSYS
}

// futexSleep waits on the futex word at addr (checked) while it holds val,
// until woken or the deadline (0: none). Interrupted by a signal, a wait
// without a deadline is made again under SA_RESTART (errRestartSys); one
// with a deadline gives EINTR if a handler runs, or goes on to the same
// deadline through restart_syscall (errRestartBlock), as Linux's
// futex_wait.
func futexSleep(addr uintptr, val uint32, deadline int64) (uintptr, abi.Errno) {
	q := &futexQ[(addr>>2)%uintptr(len(futexQ))]
	switch blockIntr(q, addr, addr, val, deadline) {
	case sched.WakeTimeout:
		return 0, abi.ETIMEDOUT
	case sched.WakeSignal:
		if deadline == 0 {
			return 0, errRestartSys
		}
		restartBlocks[sched.Current().Index()] = restartBlock{fn: restartFutex, val: val, deadline: deadline, addr: addr}
		return 0, errRestartBlock
	}
	return 0, 0
}

// Futex operations (linux/futex.h; not in x/sys/unix).
const (
	futexWait          = 0
	futexWake          = 1
	futexPrivateFlag   = 128
	futexClockRealtime = 256
)
