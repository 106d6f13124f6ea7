package kernel

import (
	"sync/atomic"

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
		if atomic.LoadUint32(at[uint32](addr)) != val {
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
		// A signal sent meanwhile ends the wait (EINTR): sendSignalFrom
		// wakes a task whose futexWaiting is set.
		t := sched.Current()
		w := &futexWaiting[t.Index()]
		atomic.StoreUint32(w, 1)
		if signalPending(t) {
			atomic.StoreUint32(w, 0)
			return 0, abi.EINTR
		}
		timedOut := sched.Block(q, addr, addr, val, deadline)
		atomic.StoreUint32(w, 0)
		if timedOut {
			return 0, abi.ETIMEDOUT
		}
		if signalPending(t) {
			return 0, abi.EINTR
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
