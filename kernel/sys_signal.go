package kernel

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/kernel/signal"
	"yolk/sched"
)

func sysRtSigprocmask(t *sched.Task, how int, set, oset, size uintptr) abi.Errno {
	if size != 8 {
		return abi.EINVAL
	}
	if (set != 0 && !mm.UserOK(set, 8)) || (oset != 0 && !mm.UserW(oset, 8)) {
		return abi.EFAULT
	}
	var v uint64
	if set != 0 {
		var e abi.Errno
		if v, e = mm.Get[uint64](set); e != 0 {
			return e
		}
	}
	old, e := sigs.Procmask(t.Index(), how, v, set != 0)
	if e != 0 {
		return e
	}
	if oset != 0 {
		return mm.Put(oset, old)
	}
	return 0
}

// sysKill sends sig to the process (pid 1, 0 or -1: there is one): to the
// calling thread unless it blocks sig, else to the first thread that does
// not, as Linux prefers.
func sysKill(pid, sig int) abi.Errno {
	if sig < 0 || sig > 64 {
		return abi.EINVAL
	}
	if pid != 1 && pid != 0 && pid != -1 {
		return abi.ESRCH
	}
	if sig == 0 {
		return 0
	}
	t := sched.Current()
	if sigs.Mask[t.Index()]&signal.Bit(sig) != 0 {
		for i := 0; i < sched.MaxTasks; i++ {
			if u := sched.TaskAt(i); u.Alive() && !u.Kernel && sigs.Mask[i]&signal.Bit(sig) == 0 {
				t = u
				break
			}
		}
	}
	sendSignal(t, sig, true)
	return 0
}

// sysTgkill sends sig to thread tid (tgid 1, or -1 for tkill).
func sysTgkill(tgid, tid, sig int) abi.Errno {
	if sig < 0 || sig > 64 || tid <= 0 || tgid == 0 || tgid < -1 {
		return abi.EINVAL
	}
	if tgid != -1 && tgid != 1 {
		return abi.ESRCH
	}
	t := sched.FindTID(int32(tid))
	if t == nil {
		return abi.ESRCH
	}
	if sig != 0 {
		sendSignal(t, sig, false)
	}
	return 0
}

func sysRtSigaction(sig int, act, oact, size uintptr) abi.Errno {
	if sig < 1 || sig > 64 || size != 8 {
		return abi.EINVAL
	}
	if act != 0 && (sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP)) {
		return abi.EINVAL
	}
	if (act != 0 && !mm.UserOK(act, 32)) || (oact != 0 && !mm.UserW(oact, 32)) {
		return abi.EFAULT
	}
	var a signal.Action
	if act != 0 {
		var e abi.Errno
		if a, e = mm.Get[signal.Action](act); e != 0 {
			return e
		}
	}
	old := sigs.SetAction(sig, a, act != 0)
	if oact != 0 {
		return mm.Put(oact, old)
	}
	return 0
}

func sysSigaltstack(t *sched.Task, ss, oss uintptr) abi.Errno {
	if (ss != 0 && !mm.UserOK(ss, 24)) || (oss != 0 && !mm.UserW(oss, 24)) {
		return abi.EFAULT
	}
	var st signal.StackT
	if ss != 0 {
		var e abi.Errno
		if st, e = mm.Get[signal.StackT](ss); e != 0 {
			return e
		}
	}
	old, e := sigs.SetAltStack(t.Index(), st, ss != 0)
	if e != 0 {
		return e
	}
	if oss != 0 {
		return mm.Put(oss, old)
	}
	return 0
}

// sysRtSigsuspend waits, with the signal mask at set, until a signal is
// delivered; the handler's frame holds the mask from before, which its
// return restores. Always EINTR once a handler runs (ERESTARTNOHAND).
func sysRtSigsuspend(set, size uintptr) abi.Errno {
	if size != 8 {
		return abi.EINVAL
	}
	m, e := mm.Get[uint64](set)
	if e != 0 {
		return e
	}
	setTempMask(m)
	for blockIntr(nil, 0, 0, 0, 0) != sched.WakeSignal {
	}
	return errRestartNoHand
}

// sysRtSigtimedwait takes the lowest pending signal of set (blocked, as a
// rule) off t's pending set and returns its number, with its siginfo at
// info; none pending, it waits for one until the relative timeout (none
// if 0), then EAGAIN. A signal outside set that will be delivered ends
// the wait with EINTR. As Linux, SIGKILL and SIGSTOP cannot be waited for.
func sysRtSigtimedwait(t *sched.Task, set, info, timeout, size uintptr) (uintptr, abi.Errno) {
	if size != 8 {
		return 0, abi.EINVAL
	}
	want, e := mm.Get[uint64](set)
	if e != 0 {
		return 0, e
	}
	if info != 0 && !mm.UserW(info, sigInfoSize) {
		return 0, abi.EFAULT
	}
	want &^= signal.Unblockable
	var deadline int64
	if timeout != 0 {
		d, e := readTimespec(timeout)
		if e != 0 {
			return 0, e
		}
		deadline = nanotime() + d
	}
	i := t.Index()
	woken := sched.WakeUp
	for {
		if sig, src := sigs.Take(i, want); sig != 0 {
			if info != 0 {
				var si [sigInfoSize]byte
				src.Put(si[:], sig)
				if mm.CopyOut(info, si[:]) != 0 {
					return 0, abi.EFAULT
				}
			}
			return uintptr(sig), 0
		}
		switch {
		case woken == sched.WakeSignal:
			return 0, abi.EINTR
		case woken == sched.WakeTimeout, timeout != 0 && nanotime() >= deadline:
			return 0, abi.EAGAIN
		}
		// The signals of set end the wait as unblocked ones do.
		woken = sched.BlockIntr(nil, 0, 0, 0, deadline, threadSlack(), uintptr(unsafe.Pointer(&sigs.Pending[i])), sigs.Mask[i]&^want)
	}
}
