package kernel

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/mm"
	"yolk/sched"
)

// Signals, as Linux delivers them to the threads of one process: the
// synchronous ones a fault in user code raises (SIGSEGV, SIGFPE, SIGILL),
// so that the Go runtime turns a nil dereference into a panic, and the
// asynchronous ones kill, tkill, tgkill and timers send — above all
// SIGURG, which the runtime's sysmon sends to a thread whose goroutine has
// run too long (asynchronous preemption), and SIGPROF, the profiler's
// (kernel/timer). A signal goes to the handler the program
// installed, on its alternate stack, in a Linux rt_sigframe; each thread
// has its own mask and pending set. A pending signal is delivered when its
// thread next returns to application code: at the end of a system call, or
// when an interrupt took it from application code (trapCommon then moves
// the interrupted frame to the task's kernel stack: preemptUser). A signal
// sent to a thread running on another CPU interrupts that CPU, and one
// sent to a thread blocked in a system call ends its wait: the call gives
// EINTR or is made again, by Linux's restart rules (restart.go). A fault
// without a handler is reported and stops the machine, and one whose
// signal the thread blocks (a fault in its own handler) ends it with
// 128+signal, as Linux's force_sig; an asynchronous signal without a
// handler takes its default action: ignored (dropped when sent), or the
// machine stops with status 128+signal. Kernel context: no allocation.
const (
	saSiginfo  = 0x4
	saOnstack  = 0x08000000
	saRestorer = 0x04000000
	saNodefer  = 0x40000000
	sigDfl     = 0
	sigIgn     = 1
	ssDisable  = 2
	minSigStk  = 2048

	segvMaperr = 1
	segvAccerr = 2
	busAdrerr  = 2
	fpeIntdiv  = 1
	illIllopn  = 2
	siKernel   = 0x80
	siUser     = 0  // kill
	siTkill    = -6 // tkill, tgkill

	sigInfoSize = 128
	ucStack     = 16 // uc_stack in a ucontext
)

// frameBuf is the part of a signal frame the kernel writes, built in
// kernel memory at the user addresses [base, base+len(b)) and then copied
// to the program's stack in one mm.CopyOut: another thread may unmap that
// stack meanwhile, and then the frame fails (SIGSEGV), not the kernel.
// The same for rt_sigreturn, which copies the frame in before it reads.
type frameBuf struct {
	base uintptr
	b    [frameBufSize]byte
}

// putInfoStack writes a frame's siginfo (the signal, its code and
// address) and its ucontext's uc_stack (the alternate stack the handler
// runs on, or SS_DISABLE): the same layout on both architectures.
func (f *frameBuf) putInfoStack(info, uc uintptr, sig int, code int32, addr uintptr, as altStack) {
	f.put32(info, uint32(sig))
	f.put32(info+8, uint32(code))
	f.put64(info+16, uint64(addr))
	if as.size != 0 {
		f.put64(uc+ucStack, uint64(as.sp))
		f.put64(uc+ucStack+16, uint64(as.size))
	} else {
		f.put32(uc+ucStack+8, ssDisable)
	}
}

func (f *frameBuf) put64(a uintptr, v uint64) { binary.LittleEndian.PutUint64(f.b[a-f.base:], v) }
func (f *frameBuf) put32(a uintptr, v uint32) { binary.LittleEndian.PutUint32(f.b[a-f.base:], v) }
func (f *frameBuf) get64(a uintptr) uint64    { return binary.LittleEndian.Uint64(f.b[a-f.base:]) }
func (f *frameBuf) get32(a uintptr) uint32    { return binary.LittleEndian.Uint32(f.b[a-f.base:]) }

// bytes is the buffer's n bytes at user address a.
func (f *frameBuf) bytes(a, n uintptr) []byte { return f.b[a-f.base : a-f.base+n] }

// out copies the buffer's first n bytes to the program's stack at base.
func (f *frameBuf) out(n uintptr) bool { return mm.CopyOut(f.base, f.b[:n]) == 0 }

// in copies the program's n bytes at base into the buffer.
func (f *frameBuf) in(n uintptr) bool { return mm.CopyIn(f.b[:n], f.base) == 0 }

type sigaction struct {
	handler, flags, restorer, mask uint64
}

type altStack struct {
	sp, size uintptr
}

var (
	sigLock   sched.TWALock
	sigActs   [65]sigaction
	altStacks [sched.MaxTasks]altStack

	// Per task slot: the blocked signals (changed only by the task
	// itself), the pending ones and, of those, the ones kill sent, the
	// ones a POSIX timer sent and the ones an interval timer sent
	// (atomic; bit sig-1). clone resets them for the new task.
	sigMask     [sched.MaxTasks]uint64
	sigPending  [sched.MaxTasks]uint64
	sigByKill   [sched.MaxTasks]uint64
	sigByTimer  [sched.MaxTasks]uint64
	sigByKernel [sched.MaxTasks]uint64

	// The mask a call that waits with a mask of its own (rt_sigsuspend,
	// epoll_pwait) replaced, to be put back on its way out — in the
	// frame of the handler it delivers, or at once (Linux's
	// set_restore_sigmask); only the task itself uses its slot.
	sigSaved   [sched.MaxTasks]uint64
	sigRestore [sched.MaxTasks]bool

	sigDelivered uint64 // atomic: asynchronous signals delivered
)

// unblockable are SIGKILL and SIGSTOP, which no mask holds.
const unblockable = 1<<(unix.SIGKILL-1) | 1<<(unix.SIGSTOP-1)

func sigBit(sig int) uint64 { return 1 << uint(sig-1) }

// sigInit gives task t (from clone) its creator's mask and nothing pending.
func sigInit(t, parent *sched.Task) {
	i := t.Index()
	sigMask[i] = sigMask[parent.Index()]
	sigRestore[i] = false
	restartBlocks[i] = restartBlock{}
	atomic.StoreUint64(&sigPending[i], 0)
	atomic.StoreUint64(&sigByKill[i], 0)
	atomic.StoreUint64(&sigByTimer[i], 0)
	atomic.StoreUint64(&sigByKernel[i], 0)
	timers.TaskInit(i)
	altStacks[i] = altStack{}
}

// Who sent a signal: its si_code.
const (
	sigFromTkill  = iota // tkill, tgkill: SI_TKILL
	sigFromKill          // kill: SI_USER
	sigFromTimer         // a POSIX timer: SI_TIMER
	sigFromKernel        // an interval timer: SI_KERNEL
)

// sendSignal makes sig pending for t as kill (byKill) or tgkill sends it.
func sendSignal(t *sched.Task, sig int, byKill bool) {
	from := sigFromTkill
	if byKill {
		from = sigFromKill
	}
	sendSignalFrom(t, sig, from)
}

// sendSignalFrom makes sig pending for t, sent by from, ends t's wait if
// t is blocked interruptibly in a system call (blockIntr), and, if t runs
// application code on another CPU, interrupts that CPU so that it
// delivers the signal now. A signal the program ignores and t does not
// block is dropped, as Linux's sig_ignored: it neither stays pending nor
// interrupts anything. A timer's signal already pending keeps its code:
// it stands for the newer expiry too.
func sendSignalFrom(t *sched.Task, sig int, from int) {
	i := t.Index()
	b := sigBit(sig)
	if sigMask[i]&b == 0 && sigIgnored(sig) {
		return
	}
	if from == sigFromTimer || atomic.LoadUint64(&sigByTimer[i])&b == 0 || atomic.LoadUint64(&sigPending[i])&b == 0 {
		setBit(&sigByKill[i], b, from == sigFromKill)
		setBit(&sigByTimer[i], b, from == sigFromTimer)
		setBit(&sigByKernel[i], b, from == sigFromKernel)
	}
	atomic.OrUint64(&sigPending[i], b)
	if sigMask[i]&b == 0 && sigIgnored(sig) {
		// A sigaction made it ignored after the check above, and its
		// discard may have run before the bit was set: take it back, as
		// Linux, whose send and sigaction hold one lock, never leaves it.
		atomic.AndUint64(&sigPending[i], ^b)
		return
	}
	t.Interrupt()
	if cpu := t.RunningOn(); cpu >= 0 && cpu != sched.This().ID {
		signalIPI(cpu)
	}
}

// sigIgnored reports whether the program's action for sig ignores it:
// SIG_IGN, or SIG_DFL for a signal whose default is to do nothing.
func sigIgnored(sig int) bool {
	return ignores(actionOf(sig), sig)
}

// ignores reports whether action a for sig ignores it.
func ignores(a sigaction, sig int) bool {
	return a.handler == sigIgn || a.handler == sigDfl && defaultIgnored&sigBit(sig) != 0
}

func setBit(m *uint64, b uint64, on bool) {
	if on {
		atomic.OrUint64(m, b)
	} else {
		atomic.AndUint64(m, ^b)
	}
}

// signalPending reports whether t has a pending signal it does not block.
func signalPending(t *sched.Task) bool {
	i := t.Index()
	return atomic.LoadUint64(&sigPending[i])&^sigMask[i] != 0
}

// defaultIgnored are the signals whose default action is to do nothing:
// Linux's ignored ones, and the stop signals (SIGSTOP, SIGTSTP, SIGTTIN,
// SIGTTOU), whose default is to stop the process until a SIGCONT that,
// with one process and no job control, nothing could send.
const defaultIgnored = 1<<(unix.SIGCHLD-1) | 1<<(unix.SIGURG-1) | 1<<(unix.SIGWINCH-1) | 1<<(unix.SIGCONT-1) |
	1<<(unix.SIGSTOP-1) | 1<<(unix.SIGTSTP-1) | 1<<(unix.SIGTTIN-1) | 1<<(unix.SIGTTOU-1)

// deliverSignal redirects the user context in r to the handler of the
// lowest pending signal the current task does not block, if there is one;
// fx is the interrupted FP/SSE state (FXSAVE layout, 16-byte aligned).
// Signals that are ignored are dropped; one whose default action ends the
// process stops the machine with status 128+sig. It reports whether it
// made a frame.
//
// c, if not nil, is the system call the task leaves with a restart code
// (restart.go): its result is fixed for the handler about to run before the
// frame saves the context.
func deliverSignal(r *Regs, fx uintptr, c *sysCall) bool {
	i := sched.Current().Index()
	for {
		sig, src := takeSignal(i, ^sigMask[i])
		if sig == 0 {
			return false
		}
		act := actionOf(sig)
		switch h := act.handler; {
		case h == sigIgn, h == sigDfl && defaultIgnored&sigBit(sig) != 0:
			continue
		case h == sigDfl:
			killedBy(sig, "its default action")
		}
		if c != nil {
			c.apply(r, true, act.flags)
		}
		// The frame is made for the action read here: another thread's
		// rt_sigaction (SIG_IGN, say) after this read does not undo a
		// delivery already decided on, as on Linux.
		if signalFrame(r, fx, sig, act, src.code, src.info) {
			if src.timer {
				mm.Put(sigInfoAt(r)+24, src.val) // si_value; the frame was just written
			}
			atomic.AddUint64(&sigDelivered, 1)
			return true
		}
		killedBy(sig, "no usable handler or no room for its frame")
	}
}

// setTempMask gives the current task the mask m until its system call
// ends (restoreMask), as the calls that wait with a mask of their own.
func setTempMask(m uint64) {
	i := sched.Current().Index()
	sigSaved[i], sigRestore[i] = sigMask[i], true
	sigMask[i] = m &^ unblockable
}

// frameMask is the mask a signal frame saves for rt_sigreturn to restore:
// the task's, or the one its call replaced (which then needs no other
// restoring).
func frameMask() uint64 {
	i := sched.Current().Index()
	if sigRestore[i] {
		sigRestore[i] = false
		return sigSaved[i]
	}
	return sigMask[i]
}

// restoreMask puts back the mask the current task's call replaced, if it
// did, and reports whether it did.
func restoreMask() bool {
	i := sched.Current().Index()
	if !sigRestore[i] {
		return false
	}
	sigRestore[i] = false
	sigMask[i] = sigSaved[i]
	return true
}

// sigSource is what a siginfo says of a signal's sender: si_code, the
// word at offset 16 (si_pid and si_uid, or a POSIX timer's ID and
// overruns) and, for a POSIX timer, si_value.
type sigSource struct {
	code  int32
	info  uintptr
	val   uint64
	timer bool
}

// takeSignal takes the lowest pending signal of want off task slot i's
// pending set: its number and sender, or 0.
func takeSignal(i int, want uint64) (int, sigSource) {
	for {
		p := atomic.LoadUint64(&sigPending[i]) & want
		if p == 0 {
			return 0, sigSource{}
		}
		sig := bits.TrailingZeros64(p) + 1
		if atomic.AndUint64(&sigPending[i], ^sigBit(sig))&sigBit(sig) == 0 {
			continue
		}
		// si_pid 1, si_uid 0 (the sender is this process); a timer's
		// ID and overruns.
		code, info, val := int32(siTkill), uintptr(1), uint64(0)
		kill := atomic.AndUint64(&sigByKill[i], ^sigBit(sig))&sigBit(sig) != 0
		timer := atomic.AndUint64(&sigByTimer[i], ^sigBit(sig))&sigBit(sig) != 0
		kernel := atomic.AndUint64(&sigByKernel[i], ^sigBit(sig))&sigBit(sig) != 0
		switch {
		case timer:
			id, over, v := timers.Delivered(i)
			code, info, val = siTimer, uintptr(uint32(id))|uintptr(uint32(over))<<32, v
		case kernel:
			code, info = siKernel, 0
		case kill:
			code = siUser
		}
		return sig, sigSource{code, info, val, timer}
	}
}

// powerButton is the machine's power button (ACPI's, arm64 virt's GPIO
// key: powerInit): SIGTERM to the program, as Linux's init passes a
// shutdown on to its services; the program's exit then powers off
// (machineExit).
func powerButton() {
	klog("power button: SIGTERM to the program\n")
	if t := processTarget(int(unix.SIGTERM)); t != nil {
		sendSignalFrom(t, int(unix.SIGTERM), sigFromKernel)
	}
}

// killedBy ends the machine as the default action of sig does a process.
// why says which rule applied (Linux says nothing; a report here is
// cheap and tells a stray signal from a broken frame).
func killedBy(sig int, why string) {
	exitWriteBack(uint8(128 + sig))
	printSyscallStats()
	conGrab()
	knewline()
	kprint("yolk: killed by signal ")
	kprintDec(int64(sig))
	kprint(" (")
	kprint(why)
	kprint(", thread ")
	kprintDec(int64(sched.Current().TID))
	kprint(")\n")
	halt(uint8(128 + sig))
}

// signalIPI interrupts CPU cpu, which runs a task that has a new signal.
func signalIPI(cpu int) { sendIPI(cpu, vecSignal) }

// actionOf is sig's action now.
func actionOf(sig int) sigaction {
	sigLock.Lock()
	act := sigActs[sig]
	sigLock.Unlock()
	return act
}

// signalUser redirects the user context in r to the handler of sig (a
// fault's signal) as its action is now; see signalFrame.
func signalUser(r *Regs, fx uintptr, sig int, code int32, addr uintptr) bool {
	return signalFrame(r, fx, sig, actionOf(sig), code, addr)
}

// signalStart is where both architectures' signalFrame begin: whether
// act, sig's action, is a usable handler (sigNeedFlags) and the trap came
// from application code; the thread's alternate stack; and the address
// the frame goes below: the top of the alternate stack if the handler
// asks for it and the thread is not on it already, else sp.
func signalStart(r *Regs, sig int, act sigaction, sp uintptr) (as altStack, top uintptr, ok bool) {
	if inKernel(r) {
		return as, 0, false
	}
	if sigMask[sched.Current().Index()]&sigBit(sig) != 0 {
		// Only a fault's signal (delivered whatever the mask) can be
		// blocked here: one raised inside its own handler, or with the
		// program blocking it. As Linux's force_sig, which resets the
		// action to the default: the process ends (128+sig) instead of
		// entering the handler again.
		killedBy(sig, "raised while blocked")
	}
	if act.handler <= 1 || act.flags&sigNeedFlags != sigNeedFlags {
		return as, 0, false
	}
	as = altStacks[sched.Current().Index()]
	if act.flags&saOnstack != 0 && as.size != 0 && !(sp > as.sp && sp <= as.sp+as.size) {
		sp = as.sp + as.size
	}
	return as, sp, true
}

// forceSegv raises SIGSEGV for a fault of the thread's own making that a
// system call found (a bad rt_sigreturn frame), as Linux's force_sig:
// delivered at once whatever the mask, with SI_KERNEL; without a usable
// handler or room for the frame it ends the machine as SIGSEGV's default
// action does.
func forceSegv(r *Regs) {
	var buf [fpStateSize + 16]byte
	if !signalUser(r, exitFP(&buf, exitFPState(r)), int(unix.SIGSEGV), siKernel, 0) {
		killedBy(int(unix.SIGSEGV), "a bad signal frame, no usable handler")
	}
}

// deliverAtExit delivers a pending signal on the way out of a system call
// (c: the call, if it was interrupted); the FP/SSE state for its frame is
// the one saved at fp or, if fp is 0, the live one.
func deliverAtExit(r *Regs, fp uintptr, c *sysCall) bool {
	var buf [fpStateSize + 16]byte
	return deliverSignal(r, exitFP(&buf, fp), c)
}

// exitFP puts the FP/SSE state for a signal frame made on the way out of a
// system call in buf — the one saved at fp or, if fp is 0, the live one —
// and returns its 16-byte-aligned address there.
func exitFP(buf *[fpStateSize + 16]byte, fp uintptr) uintptr {
	fx := (uintptr(unsafe.Pointer(buf)) + 15) &^ 15
	if fp != 0 {
		for i := uintptr(0); i < fpStateSize; i += 8 {
			*at[uint64](fx + i) = *at[uint64](fp + i)
		}
	} else {
		fpSave(fx)
	}
	return fx
}
