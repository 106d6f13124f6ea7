package timer

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
)

// The timer system calls: timer_create, timer_settime, timer_gettime,
// timer_getoverrun, timer_delete, setitimer, getitimer and alarm, with
// Linux's argument checks. The table and expiry are timer.go's.

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

func (x *Timers[E]) Create(clockID int32, sevp, idp uintptr) abi.Errno {
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
	x.lock.Lock()
	id := int32(-1)
	for i := range int32(maxTimers) {
		if x.t[i].clock == 0 {
			id = i
			break
		}
	}
	if id < 0 {
		x.lock.Unlock()
		return abi.EAGAIN
	}
	if sevp == 0 {
		p.sigval = uint64(id)
	}
	x.t[id] = p
	x.high = max(x.high, id+1)
	x.lock.Unlock()
	if e := mm.Put(idp, id); e != 0 {
		// Unmapped since the check: the timer goes, as Linux's does
		// when its copy_to_user fails — unless another thread already
		// deleted it (a slot reused) or armed it (it is in use).
		x.lock.Lock()
		if x.t[id] == p {
			x.t[id] = ptimer{}
		}
		x.lock.Unlock()
		return e
	}
	return 0
}

func (x *Timers[E]) Settime(id int32, flags int, newp, oldp uintptr) abi.Errno {
	var env E
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
	x.lock.Lock()
	p := x.lookup(id)
	if p == nil {
		x.lock.Unlock()
		return abi.EINVAL
	}
	left, interval := p.get(env.Now())
	x.set(id, tsNanos(spec.value), tsNanos(spec.interval), flags&unix.TIMER_ABSTIME != 0)
	x.lock.Unlock()
	if oldp != 0 {
		return mm.Put(oldp, itimerspec{nanosTs(interval), nanosTs(left)})
	}
	return 0
}

func (x *Timers[E]) Gettime(id int32, curp uintptr) abi.Errno {
	var e E
	x.lock.Lock()
	p := x.lookup(id)
	if p == nil {
		x.lock.Unlock()
		return abi.EINVAL
	}
	left, interval := p.get(e.Now())
	x.lock.Unlock()
	return mm.Put(curp, itimerspec{nanosTs(interval), nanosTs(left)})
}

func (x *Timers[E]) Getoverrun(id int32) (uintptr, abi.Errno) {
	x.lock.Lock()
	p := x.lookup(id)
	if p == nil {
		x.lock.Unlock()
		return 0, abi.EINVAL
	}
	n := p.lastOverrun
	x.lock.Unlock()
	if n < 0 {
		n = 1 << 30 // never negative: a count that wrapped is capped (expire)
	}
	return uintptr(n), 0
}

// Delete frees timer id; a signal of it still pending is
// discarded, as Linux does.
func (x *Timers[E]) Delete(id int32) abi.Errno {
	x.lock.Lock()
	p := x.lookup(id)
	if p == nil {
		x.lock.Unlock()
		return abi.EINVAL
	}
	var e E
	if p.pending && atomic.CompareAndSwapInt32(&x.sigTimer[p.ptask], id+1, 0) {
		e.Discard(int(p.ptask), int(p.signo))
	}
	slot := int32(-1)
	if p.clock == onThreadCPU {
		slot = p.ctask
	}
	*p = ptimer{}
	x.recompute(slot, e.Now())
	x.lock.Unlock()
	return 0
}

func (x *Timers[E]) Setitimer(which int, newp, oldp uintptr) abi.Errno {
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
	left, interval := x.setitimer(which, tvNanos(v.value), tvNanos(v.interval))
	if oldp != 0 {
		return mm.Put(oldp, itimerval{nanosTv(interval), nanosTv(left)})
	}
	return 0
}

func (x *Timers[E]) Getitimer(which int, curp uintptr) abi.Errno {
	var e E
	if which < unix.ITIMER_REAL || which > unix.ITIMER_PROF {
		return abi.EINVAL
	}
	x.lock.Lock()
	left, interval := x.itimer(which).get(e.Now())
	x.lock.Unlock()
	return mm.Put(curp, itimerval{nanosTv(interval), nanosTv(left)})
}

// Alarm is alarm: ITIMER_REAL for secs seconds, once; it returns the
// seconds left of the one before, rounded to the nearest (at least 1 if
// one was armed), as Linux does.
func (x *Timers[E]) Alarm(secs uint32) uintptr {
	left, _ := x.setitimer(unix.ITIMER_REAL, int64(secs)*1e9, 0)
	if left == 0 {
		return 0
	}
	return uintptr(max((left+5e8)/1e9, 1))
}
