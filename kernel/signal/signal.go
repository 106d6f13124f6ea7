// Package signal is the signal state of yolk's one process, as Linux
// keeps it: the actions (rt_sigaction), each thread's mask, pending set,
// alternate stack and the senders of its pending signals, and the rules
// that read and change them — which signal is taken next and what its
// siginfo says of its sender, the default actions that ignore, a signal
// dropped when sent or discarded when its action comes to ignore it, the
// masks of the calls that wait with one of their own (rt_sigsuspend,
// epoll_pwait) and the checks of rt_sigprocmask and sigaltstack.
//
// Delivery is the kernel's: the frame on the program's stack, the
// registers, interrupting the thread (a wait ended, another CPU's IPI)
// and a default action that ends the machine. The kernel holds one
// State, indexed by task slot; it reaches the kernel through its type
// parameter (Env: a POSIX timer's part of a siginfo).
//
// Kernel context: it may not allocate, store Go pointers in memory the
// kernel writes, touch the program's memory or call the runtime's
// scheduler.
package signal

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/timer"
	"yolk/sched"
)

// sigaction's flags, the handlers that are not functions, and
// sigaltstack's.
const (
	SaSiginfo  = 0x4
	SaOnstack  = 0x08000000
	SaRestorer = 0x04000000
	SaNodefer  = 0x40000000
	SaRestart  = 0x10000000
	SigDfl     = 0
	SigIgn     = 1
	SsDisable  = 2
	MinSigStk  = 2048
)

// si_code of the signals a sender makes.
const (
	SIKernel = 0x80
	SIUser   = 0  // kill
	SITkill  = -6 // tkill, tgkill
)

// Who sent a signal: its si_code.
const (
	FromTkill  = iota // tkill, tgkill: SI_TKILL
	FromKill          // kill: SI_USER
	FromTimer         // a POSIX timer: SI_TIMER
	FromKernel        // an interval timer: SI_KERNEL
)

// Action is struct sigaction as rt_sigaction reads and writes it.
type Action struct {
	Handler, Flags, Restorer, Mask uint64
}

// AltStack is a thread's alternate signal stack; Size 0: none.
type AltStack struct {
	SP, Size uintptr
}

// StackT is stack_t.
type StackT struct {
	SP    uintptr
	Flags int32
	_     int32
	Size  uintptr
}

// Unblockable are SIGKILL and SIGSTOP, which no mask holds.
const Unblockable = 1<<(unix.SIGKILL-1) | 1<<(unix.SIGSTOP-1)

// DefaultIgnored are the signals whose default action is to do nothing:
// Linux's ignored ones, and the stop signals (SIGSTOP, SIGTSTP, SIGTTIN,
// SIGTTOU), whose default is to stop the process until a SIGCONT that,
// with one process and no job control, nothing could send.
const DefaultIgnored = 1<<(unix.SIGCHLD-1) | 1<<(unix.SIGURG-1) | 1<<(unix.SIGWINCH-1) | 1<<(unix.SIGCONT-1) |
	1<<(unix.SIGSTOP-1) | 1<<(unix.SIGTSTP-1) | 1<<(unix.SIGTTIN-1) | 1<<(unix.SIGTTOU-1)

// Bit is sig's bit in a mask or pending set.
func Bit(sig int) uint64 { return 1 << uint(sig-1) }

// Ignores reports whether action a for sig ignores it: SIG_IGN, or
// SIG_DFL for a signal whose default is to do nothing.
func Ignores(a Action, sig int) bool {
	return a.Handler == SigIgn || a.Handler == SigDfl && DefaultIgnored&Bit(sig) != 0
}

// Env is what the state needs of the kernel.
type Env interface {
	// TimerDelivered is the POSIX timer whose signal task slot i just
	// took: its ID, its overruns and si_value.
	TimerDelivered(i int) (id, over int32, val uint64)
	// Lock and Unlock are the actions' lock (a sched.TWALock).
	Lock()
	Unlock()
}

// State is the process's signals.
type State[E Env] struct {
	Acts [65]Action // under the Env's Lock
	Alt  [sched.MaxTasks]AltStack

	// Per task slot: the blocked signals (changed only by the task
	// itself), the pending ones and, of those, the ones kill sent, the
	// ones a POSIX timer sent and the ones an interval timer sent
	// (atomic; bit sig-1). Init resets them for a new task.
	Mask     [sched.MaxTasks]uint64
	Pending  [sched.MaxTasks]uint64
	byKill   [sched.MaxTasks]uint64
	byTimer  [sched.MaxTasks]uint64
	byKernel [sched.MaxTasks]uint64

	// The mask a call that waits with a mask of its own (rt_sigsuspend,
	// epoll_pwait) replaced, to be put back on its way out — in the
	// frame of the handler it delivers, or at once (Linux's
	// set_restore_sigmask); only the task itself uses its slot.
	saved   [sched.MaxTasks]uint64
	restore [sched.MaxTasks]bool

	Delivered uint64 // atomic: asynchronous signals delivered
}

// Init gives task slot i (from clone) the mask of slot parent, nothing
// pending and no alternate stack.
func (s *State[E]) Init(i, parent int) {
	s.Mask[i] = s.Mask[parent]
	s.restore[i] = false
	atomic.StoreUint64(&s.Pending[i], 0)
	atomic.StoreUint64(&s.byKill[i], 0)
	atomic.StoreUint64(&s.byTimer[i], 0)
	atomic.StoreUint64(&s.byKernel[i], 0)
}

// Send makes sig pending for task slot i, sent by from, and reports
// whether it did: the caller then interrupts the task. A signal the
// program ignores and the task does not block is dropped, as Linux's
// sig_ignored: it neither stays pending nor interrupts anything. A
// timer's signal already pending keeps its code: it stands for the newer
// expiry too.
func (s *State[E]) Send(i, sig, from int) bool {
	b := Bit(sig)
	if s.Mask[i]&b == 0 && s.Ignored(sig) {
		return false
	}
	if from == FromTimer || atomic.LoadUint64(&s.byTimer[i])&b == 0 || atomic.LoadUint64(&s.Pending[i])&b == 0 {
		setBit(&s.byKill[i], b, from == FromKill)
		setBit(&s.byTimer[i], b, from == FromTimer)
		setBit(&s.byKernel[i], b, from == FromKernel)
	}
	atomic.OrUint64(&s.Pending[i], b)
	if s.Mask[i]&b == 0 && s.Ignored(sig) {
		// A sigaction made it ignored after the check above, and its
		// discard may have run before the bit was set: take it back, as
		// Linux, whose send and sigaction hold one lock, never leaves it.
		atomic.AndUint64(&s.Pending[i], ^b)
		return false
	}
	return true
}

func setBit(m *uint64, b uint64, on bool) {
	if on {
		atomic.OrUint64(m, b)
	} else {
		atomic.AndUint64(m, ^b)
	}
}

// Ignored reports whether the program's action for sig ignores it.
func (s *State[E]) Ignored(sig int) bool { return Ignores(s.Action(sig), sig) }

// Action is sig's action now.
func (s *State[E]) Action(sig int) Action {
	var e E
	e.Lock()
	act := s.Acts[sig]
	e.Unlock()
	return act
}

// Has reports whether sig is pending for task slot i.
func (s *State[E]) Has(i, sig int) bool { return atomic.LoadUint64(&s.Pending[i])&Bit(sig) != 0 }

// Discard takes sig off task slot i's pending set.
func (s *State[E]) Discard(i, sig int) { atomic.AndUint64(&s.Pending[i], ^Bit(sig)) }

// Unblocked reports whether task slot i has a pending signal it does not
// block.
func (s *State[E]) Unblocked(i int) bool {
	return atomic.LoadUint64(&s.Pending[i])&^atomic.LoadUint64(&s.Mask[i]) != 0 // after the sender's Or: SetMask
}

// Source is what a siginfo says of a signal's sender: si_code, the word
// at offset 16 (si_pid and si_uid, or a POSIX timer's ID and overruns)
// and, for a POSIX timer, si_value.
type Source struct {
	Code  int32
	Info  uintptr
	Val   uint64
	Timer bool
}

// Put writes the sender's part of sig's siginfo (si_signo, si_code, the
// word at 16, si_value) in si, which is zero and 128 bytes long.
func (src Source) Put(si []byte, sig int) {
	binary.LittleEndian.PutUint32(si[0:], uint32(sig))
	binary.LittleEndian.PutUint32(si[8:], uint32(src.Code))
	binary.LittleEndian.PutUint64(si[16:], uint64(src.Info))
	binary.LittleEndian.PutUint64(si[24:], src.Val)
}

// Take takes the lowest pending signal of want off task slot i's pending
// set: its number and sender, or 0.
func (s *State[E]) Take(i int, want uint64) (int, Source) {
	for {
		p := atomic.LoadUint64(&s.Pending[i]) & want
		if p == 0 {
			return 0, Source{}
		}
		sig := bits.TrailingZeros64(p) + 1
		if atomic.AndUint64(&s.Pending[i], ^Bit(sig))&Bit(sig) == 0 {
			continue
		}
		// si_pid 1, si_uid 0 (the sender is this process); a timer's
		// ID and overruns.
		code, info, val := int32(SITkill), uintptr(1), uint64(0)
		kill := atomic.AndUint64(&s.byKill[i], ^Bit(sig))&Bit(sig) != 0
		tm := atomic.AndUint64(&s.byTimer[i], ^Bit(sig))&Bit(sig) != 0
		kernel := atomic.AndUint64(&s.byKernel[i], ^Bit(sig))&Bit(sig) != 0
		switch {
		case tm:
			var e E
			id, over, v := e.TimerDelivered(i)
			code, info, val = timer.SITimer, uintptr(uint32(id))|uintptr(uint32(over))<<32, v
		case kernel:
			code, info = SIKernel, 0
		case kill:
			code = SIUser
		}
		return sig, Source{code, info, val, tm}
	}
}

// Top is task slot i's alternate stack and the address a frame for a
// handler of act goes below: the top of that stack if the handler asks
// for it and the thread is not on it already (sp), else sp.
func (s *State[E]) Top(i int, act Action, sp uintptr) (AltStack, uintptr) {
	as := s.Alt[i]
	if act.Flags&SaOnstack != 0 && as.Size != 0 && !(sp > as.SP && sp <= as.SP+as.Size) {
		sp = as.SP + as.Size
	}
	return as, sp
}

// SetTempMask gives task slot i the mask m until its system call ends
// (RestoreMask), as the calls that wait with a mask of their own.
func (s *State[E]) SetTempMask(i int, m uint64) {
	s.saved[i], s.restore[i] = s.Mask[i], true
	s.SetMask(i, m)
}

// SetMask sets task slot i's mask to m (less the unblockable signals).
// It is written with an atomic swap: the task reads its pending set next
// (on its way back to the program), while a sender adds to that set and
// then reads the mask, and a signal this unblocks must be seen by one of
// them. A plain store can still wait in a store buffer while that load
// reads: on Arm's cores, and under QEMU's TCG emulating arm64 on an x86
// host even for Go's atomic store (sync/twa's UnlockSlot). The signal was
// then delivered only at the task's next kernel entry.
func (s *State[E]) SetMask(i int, m uint64) {
	atomic.SwapUint64(&s.Mask[i], m&^Unblockable)
}

// FrameMask is the mask a signal frame of task slot i saves for
// rt_sigreturn to restore: the task's, or the one its call replaced
// (which then needs no other restoring).
func (s *State[E]) FrameMask(i int) uint64 {
	if s.restore[i] {
		s.restore[i] = false
		return s.saved[i]
	}
	return s.Mask[i]
}

// RestoreMask puts back the mask task slot i's call replaced, if it did,
// and reports whether it did.
func (s *State[E]) RestoreMask(i int) bool {
	if !s.restore[i] {
		return false
	}
	s.restore[i] = false
	s.SetMask(i, s.saved[i])
	return true
}

// Handled masks, in task slot i, what a handler of act for sig blocks
// while it runs (once its frame is made).
func (s *State[E]) Handled(i, sig int, act Action) {
	m := &s.Mask[i]
	*m |= act.Mask
	if act.Flags&SaNodefer == 0 {
		*m |= Bit(sig)
	}
	*m &^= Unblockable
}

// Procmask is rt_sigprocmask's change of task slot i's mask by set (if
// change) as how says; it returns the mask before.
func (s *State[E]) Procmask(i, how int, set uint64, change bool) (uint64, abi.Errno) {
	old := s.Mask[i]
	if change {
		m := old
		switch how {
		case unix.SIG_BLOCK:
			m |= set
		case unix.SIG_UNBLOCK:
			m &^= set
		case unix.SIG_SETMASK:
			m = set
		default:
			return old, abi.EINVAL
		}
		s.SetMask(i, m)
	}
	return old, 0
}

// SetAction is rt_sigaction's change of sig's action to a (if change);
// it returns the action before.
func (s *State[E]) SetAction(sig int, a Action, change bool) Action {
	var e E
	e.Lock()
	old := s.Acts[sig]
	if change {
		s.Acts[sig] = a
		if Ignores(a, sig) {
			// POSIX, and Linux: a pending signal whose action becomes
			// to ignore it is discarded (even where blocked), so that
			// it cannot end a later wait (blockIntr). Under the lock, so
			// that a later rt_sigaction giving it a handler again
			// comes after the discard, and a signal sent after that
			// stays pending.
			for i := range s.Pending {
				atomic.AndUint64(&s.Pending[i], ^Bit(sig))
			}
		}
	}
	e.Unlock()
	return old
}

// SetAltStack is sigaltstack's change of task slot i's alternate stack
// to st (if change); it returns the stack before as a stack_t.
func (s *State[E]) SetAltStack(i int, st StackT, change bool) (StackT, abi.Errno) {
	as := &s.Alt[i]
	old := StackT{SP: as.SP, Size: as.Size}
	if old.Size == 0 {
		old.Flags = SsDisable
	}
	if change {
		switch {
		case st.Flags&SsDisable != 0:
			*as = AltStack{}
		case st.Size < MinSigStk:
			return old, abi.ENOMEM
		default:
			*as = AltStack{st.SP, st.Size}
		}
	}
	return old, 0
}
