package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
)

// The timer system calls: timer_create, timer_settime, timer_gettime,
// timer_getoverrun, timer_delete, setitimer, getitimer and alarm, with
// Linux's argument checks. The table and expiry are ptimer.go's.

// sigevent is struct sigevent, all of its 64 bytes (SIGEV_MAX_SIZE), as
// timer_create copies them in: the value, signal, notification and
// (SIGEV_THREAD_ID) thread ID, then the rest of the union.
type sigevent struct {
	value  uint64
	signo  int32
	notify int32
	tid    int32
	_      [11]int32
}

func sysTimerCreate(clockID int32, sevp, idp uintptr) abi.Errno {
	var ev sigevent
	if sevp != 0 {
		var e abi.Errno
		if ev, e = mm.Get[sigevent](sevp); e != 0 {
			return e
		}
	}
	clock, ct, err := clockOf(clockID)
	if err != 0 {
		return err
	}
	p := ptimer{clock: clock, notify: sigevSignal, signo: uint8(unix.SIGALRM)}
	if sevp != 0 {
		switch ev.notify {
		case sigevThreadID:
			t := sched.FindTID(ev.tid)
			if t == nil {
				return abi.EINVAL
			}
			p.ttask, p.ttid = int32(t.Index()), t.TID
			fallthrough
		case sigevSignal, sigevThread:
			if ev.signo <= 0 || ev.signo > 64 {
				return abi.EINVAL
			}
		case sigevNone:
		default:
			return abi.EINVAL
		}
		p.notify, p.signo, p.sigval = uint8(ev.notify), uint8(ev.signo), ev.value
		if ev.notify == sigevThread {
			p.notify = sigevSignal
		}
	}
	if ct != nil {
		p.ctask, p.ctid = int32(ct.Index()), ct.TID
	}
	if !mm.UserW(idp, 4) {
		return abi.EFAULT
	}
	ptLock.Lock()
	id := int32(-1)
	for i := range int32(maxTimers) {
		if ptimers[i].clock == 0 {
			id = i
			break
		}
	}
	if id < 0 {
		ptLock.Unlock()
		return abi.EAGAIN
	}
	if sevp == 0 {
		p.sigval = uint64(id)
	}
	ptimers[id] = p
	ptHigh = max(ptHigh, id+1)
	ptLock.Unlock()
	if e := mm.Put(idp, id); e != 0 {
		// Unmapped since the check: the timer goes, as Linux's does
		// when its copy_to_user fails — unless another thread already
		// deleted it (a slot reused) or armed it (it is in use).
		ptLock.Lock()
		if ptimers[id] == p {
			ptimers[id] = ptimer{}
		}
		ptLock.Unlock()
		return e
	}
	return 0
}

func sysTimerSettime(id int32, flags int, newp, oldp uintptr) abi.Errno {
	if newp == 0 {
		return abi.EINVAL
	}
	spec, e := mm.Get[itimerspec](newp)
	if e != 0 {
		return e
	}
	if !validTimespec(spec.interval) || !validTimespec(spec.value) {
		return abi.EINVAL
	}
	ptLock.Lock()
	p := lookup(id)
	if p == nil {
		ptLock.Unlock()
		return abi.EINVAL
	}
	left, interval := p.get(nanotime())
	p.set(id, tsNanos(spec.value), tsNanos(spec.interval), flags&unix.TIMER_ABSTIME != 0)
	ptLock.Unlock()
	if oldp != 0 {
		return mm.Put(oldp, itimerspec{nanosTs(interval), nanosTs(left)})
	}
	return 0
}

func sysTimerGettime(id int32, curp uintptr) abi.Errno {
	ptLock.Lock()
	p := lookup(id)
	if p == nil {
		ptLock.Unlock()
		return abi.EINVAL
	}
	left, interval := p.get(nanotime())
	ptLock.Unlock()
	return mm.Put(curp, itimerspec{nanosTs(interval), nanosTs(left)})
}

func sysTimerGetoverrun(id int32) (uintptr, abi.Errno) {
	ptLock.Lock()
	p := lookup(id)
	if p == nil {
		ptLock.Unlock()
		return 0, abi.EINVAL
	}
	n := p.lastOverrun
	ptLock.Unlock()
	if n < 0 {
		n = 1 << 30 // never negative: a count that wrapped is capped (expire)
	}
	return uintptr(n), 0
}

// sysTimerDelete frees timer id; a signal of it still pending is
// discarded, as Linux does.
func sysTimerDelete(id int32) abi.Errno {
	ptLock.Lock()
	p := lookup(id)
	if p == nil {
		ptLock.Unlock()
		return abi.EINVAL
	}
	if p.pending && atomic.CompareAndSwapInt32(&sigTimer[p.ptask], id+1, 0) {
		atomic.AndUint64(&sigPending[p.ptask], ^sigBit(int(p.signo)))
	}
	slot := int32(-1)
	if p.clock == onThreadCPU {
		slot = p.ctask
	}
	*p = ptimer{}
	recompute(slot, nanotime())
	ptLock.Unlock()
	return 0
}

func sysSetitimer(which int, newp, oldp uintptr) abi.Errno {
	var v itimerval
	if newp != 0 {
		var e abi.Errno
		if v, e = mm.Get[itimerval](newp); e != 0 {
			return e
		}
		if !validTimeval(v.interval) || !validTimeval(v.value) {
			return abi.EINVAL
		}
	}
	if which < unix.ITIMER_REAL || which > unix.ITIMER_PROF {
		return abi.EINVAL
	}
	left, interval := setitimer(which, tvNanos(v.value), tvNanos(v.interval))
	if oldp != 0 {
		return mm.Put(oldp, itimerval{nanosTv(interval), nanosTv(left)})
	}
	return 0
}

func sysGetitimer(which int, curp uintptr) abi.Errno {
	if which < unix.ITIMER_REAL || which > unix.ITIMER_PROF {
		return abi.EINVAL
	}
	ptLock.Lock()
	left, interval := itimer(which).get(nanotime())
	ptLock.Unlock()
	return mm.Put(curp, itimerval{nanosTv(interval), nanosTv(left)})
}

// sysAlarm is alarm: ITIMER_REAL for secs seconds, once; it returns the
// seconds left of the one before, rounded to the nearest (at least 1 if
// one was armed), as Linux does.
func sysAlarm(secs uint32) uintptr {
	left, _ := setitimer(unix.ITIMER_REAL, int64(secs)*1e9, 0)
	if left == 0 {
		return 0
	}
	return uintptr(max((left+5e8)/1e9, 1))
}
