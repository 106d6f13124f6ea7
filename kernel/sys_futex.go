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
		if sched.Block(q, addr, addr, val, deadline) {
			return 0, abi.ETIMEDOUT
		}
		return 0, 0
	case futexWake:
		return uintptr(q.Wake(addr, int(val))), 0
	}
	logENOSYS(unix.SYS_FUTEX)
	return 0, abi.ENOSYS
}

// Futex operations (linux/futex.h; not in x/sys/unix).
const (
	futexWait          = 0
	futexWake          = 1
	futexPrivateFlag   = 128
	futexClockRealtime = 256
)
