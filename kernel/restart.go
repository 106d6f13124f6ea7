package kernel

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/kernel/signal"
	"yolk/sched"
)

// Interrupted system calls, by Linux's rules (arch/x86/kernel/signal.c:
// handle_signal and arch_do_signal_or_restart; arm64's do_signal is the
// same). A call that blocks does so interruptibly (blockIntr): a signal
// that will be delivered ends the wait, and the call returns one of the
// restart codes below instead of its result (or, having done part of its
// work, the count it did). On the way out (syscall), the code becomes what
// the program sees once the signal is delivered: EINTR, or the call made
// again — the PC moved back onto the system-call instruction with the
// number and first argument restored, so that it runs again when the
// handler returns (rt_sigreturn restores that PC), exactly as Linux
// rewinds the PC. A code never reaches the program.
const (
	// errRestartSys (ERESTARTSYS): made again if the handler has
	// SA_RESTART, else EINTR (pipe, console and socket reads and writes
	// without a timeout, futex wait without a timeout, accept, connect).
	errRestartSys = abi.Errno(512)
	// errRestartNoIntr (ERESTARTNOINTR): always made again.
	errRestartNoIntr = abi.Errno(513)
	// errRestartNoHand (ERESTARTNOHAND): EINTR if a handler runs, made
	// again otherwise (an absolute clock_nanosleep, rt_sigsuspend).
	errRestartNoHand = abi.Errno(514)
	// errRestartBlock (ERESTART_RESTARTBLOCK): EINTR if a handler runs;
	// otherwise restart_syscall continues the wait from the task's restart
	// block to its first deadline (nanosleep, futex wait with a timeout).
	errRestartBlock = abi.Errno(516)
)

// sysCall is a system call on its way out, for the restart rules: its
// result code, number and first argument (overwritten by the result on
// arm64).
type sysCall struct {
	err    abi.Errno
	nr, a0 uintptr
}

// isRestart reports whether e is one of the restart codes.
func isRestart(e abi.Errno) bool {
	return e == errRestartSys || e == errRestartNoIntr || e == errRestartNoHand || e == errRestartBlock
}

// restartRule is Linux's rule for a call that ended with err: again
// whether it is made again, else the error the program sees (0: err is
// no restart code). handled says a handler with sa_flags flags runs.
func restartRule(err abi.Errno, handled bool, flags uint64) (again bool, e abi.Errno) {
	switch {
	case !isRestart(err):
		return false, 0
	case !handled, err == errRestartNoIntr, err == errRestartSys && flags&signal.SaRestart != 0:
		return true, 0
	}
	return false, abi.EINTR
}

// apply fixes r, the user context of the call c, for the signal about to
// be delivered (handled: a handler with sa_flags flags runs) or for none.
func (c *sysCall) apply(r *Regs, handled bool, flags uint64) {
	again, e := restartRule(c.err, handled, flags)
	switch {
	case again && c.err == errRestartBlock:
		r.sysRestart(unix.SYS_RESTART_SYSCALL, c.a0)
	case again:
		r.sysRestart(c.nr, c.a0)
	case e != 0:
		r.sysReturn(-uintptr(e), sched.Current().UserFS)
	}
	c.err = 0 // applied once
}

// blockIntr is sched.Block for a system call: the wait also ends, with
// sched.WakeSignal, when the task has a pending signal it does not block
// (one already pending ends it before it starts). sendSignal drops the
// signals the program ignores, so every such signal will be delivered.
// A deadline has the thread's timer slack (kernel/timer's slack.go).
func blockIntr(wq *sched.WaitQueue, key, condAddr uintptr, condVal uint32, deadline int64) sched.Woken {
	return blockIntrSlack(wq, key, condAddr, condVal, deadline, threadSlack())
}

// blockIntrSlack is blockIntr with a timer slack of slack ns.
func blockIntrSlack(wq *sched.WaitQueue, key, condAddr uintptr, condVal uint32, deadline, slack int64) sched.Woken {
	t := sched.Current()
	if signalPending(t) {
		return sched.WakeSignal
	}
	i := t.Index()
	return sched.BlockIntr(wq, key, condAddr, condVal, deadline, slack, uintptr(unsafe.Pointer(&sigs.Pending[i])), sigs.Mask[i])
}

// restartBlock is what restart_syscall needs to continue a wait that a
// signal without a handler interrupted (errRestartBlock), as Linux's
// restart_block: the deadline and, for a futex, its word and value; for a
// sleep, where its remaining time goes.
type restartBlock struct {
	fn       uint8
	val      uint32
	deadline int64
	addr     uintptr
}

const (
	restartNone  = iota // restart_syscall says EINTR
	restartSleep        // nanosleep, relative clock_nanosleep: addr is rem
	restartFutex        // futex wait with a timeout: addr is the word
)

var restartBlocks [sched.MaxTasks]restartBlock

// sysRestartSyscall is restart_syscall: the wait the task's restart block
// describes, once (rt_sigreturn and clone clear the block).
func sysRestartSyscall(t *sched.Task) (uintptr, abi.Errno) {
	b := &restartBlocks[t.Index()]
	rb := *b
	b.fn = restartNone
	switch rb.fn {
	case restartSleep:
		return 0, sleepUntil(rb.deadline, rb.addr)
	case restartFutex:
		// Through the user copy, as futex's own check: the word may
		// have been unmapped, or be in a page past a mapped file's end,
		// since the wait began.
		if v, e := mm.Get[uint32](rb.addr); e != 0 {
			return 0, e
		} else if v != rb.val {
			return 0, abi.EAGAIN
		}
		return futexSleep(rb.addr, rb.val, rb.deadline)
	}
	return 0, abi.EINTR
}
