package kernel

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/mm"
	"yolk/kernel/signal"
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
	siKernel = signal.SIKernel

	segvMaperr = 1
	segvAccerr = 2
	busAdrerr  = 2
	fpeIntdiv  = 1
	illIllopn  = 2

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
func (f *frameBuf) putInfoStack(info, uc uintptr, sig int, code int32, addr uintptr, as signal.AltStack) {
	f.put32(info, uint32(sig))
	f.put32(info+8, uint32(code))
	f.put64(info+16, uint64(addr))
	if as.Size != 0 {
		f.put64(uc+ucStack, uint64(as.SP))
		f.put64(uc+ucStack+16, uint64(as.Size))
	} else {
		f.put32(uc+ucStack+8, signal.SsDisable)
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

// sigs is the process's signals: actions, masks, pending sets, alternate
// stacks (kernel/signal).
var sigs signal.State[sigenv]

// sigenv is kernel/signal's environment (signal.Env).
type sigenv struct{}

func (sigenv) TimerDelivered(i int) (int32, int32, uint64) { return timers.Delivered(i) }
func (sigenv) Lock()                                       { sigLock.Lock() }
func (sigenv) Unlock()                                     { sigLock.Unlock() }

// sigLock is the actions' lock.
var sigLock sched.TWALock

// sigInit gives task t (from clone) its creator's mask and nothing pending.
func sigInit(t, parent *sched.Task) {
	i := t.Index()
	sigs.Init(i, parent.Index())
	restartBlocks[i] = restartBlock{}
	timers.TaskInit(i)
	sigs.Alt[i] = signal.AltStack{}
}

// sendSignal makes sig pending for t as kill (byKill) or tgkill sends it.
// A program's own signals to a thread running on another CPU are paced:
// the sender waits until that CPU's last signal interrupt is sigIPIGap
// old. The Go runtime's garbage collector, to stop a goroutine that is
// in assembly without a safe point (a long memmove), sends it SIGURG
// again as soon as the last one was handled, 5 µs apart at the least;
// the thread then spends most of its time in its signal handler and the
// copy crawls (a 128 MiB copy, 85 ms alone, took 0.7-5.5 s beside a
// collection under TCG; docs/preemption.md, "Signal storms"). The wait
// is the sender's, spinning on its own CPU for at most sigIPIGap
// whatever other senders do (then it sends anyway), and only when an
// interrupt is to follow; a first signal, or one after a quiet spell,
// goes at once. A stamp from a CPU whose clock runs ahead (a TSC skew
// the boot check found) reads as elapsed. Signals the kernel raises
// itself (timers, faults, the power button) are not paced.
const sigIPIGap = 50_000 // ns

// sigIPIAt is, per CPU, when it was last sent a paced signal interrupt.
var sigIPIAt [sched.MaxCPUs]struct {
	at int64
	_  [56]byte
}

// sendSignal makes sig pending for t as kill (byKill) or tgkill sends it;
// an interrupt to the CPU running t is paced (sigIPIGap).
func sendSignal(t *sched.Task, sig int, byKill bool) {
	from := signal.FromTkill
	if byKill {
		from = signal.FromKill
	}
	if !sigs.Send(t.Index(), sig, from) {
		return
	}
	t.Interrupt()
	cpu := t.RunningOn()
	if cpu < 0 || cpu == sched.This().ID || !signalPending(t) {
		return
	}
	k := &sigIPIAt[cpu].at
	for start := nanotime(); ; {
		last, now := atomic.LoadInt64(k), nanotime()
		if d := now - last; d >= 0 && d < sigIPIGap && now-start < sigIPIGap {
			sched.Pause()
			continue
		}
		atomic.StoreInt64(k, now)
		break
	}
	// The wait may have let t enter the kernel (and take the signal) or
	// move to another CPU.
	if cpu := t.RunningOn(); cpu >= 0 && cpu != sched.This().ID && signalPending(t) {
		signalIPI(cpu)
	}
}

// sendSignalFrom makes sig pending for t, sent by from (signal.Send), ends
// t's wait if t is blocked interruptibly in a system call (blockIntr),
// and, if t runs application code on another CPU, interrupts that CPU so
// that it delivers the signal now.
func sendSignalFrom(t *sched.Task, sig int, from int) {
	if !sigs.Send(t.Index(), sig, from) {
		return
	}
	t.Interrupt()
	if cpu := t.RunningOn(); cpu >= 0 && cpu != sched.This().ID {
		signalIPI(cpu)
	}
}

// signalPending reports whether t has a pending signal it does not block.
func signalPending(t *sched.Task) bool { return sigs.Unblocked(t.Index()) }

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
		sig, src := sigs.Take(i, ^sigs.Mask[i])
		if sig == 0 {
			return false
		}
		act := sigs.Action(sig)
		if signal.Ignores(act, sig) {
			continue
		}
		if act.Handler == signal.SigDfl {
			killedBy(sig, "its default action")
		}
		if c != nil {
			c.apply(r, true, act.Flags)
		}
		// The frame is made for the action read here: another thread's
		// rt_sigaction (SIG_IGN, say) after this read does not undo a
		// delivery already decided on, as on Linux.
		if signalFrame(r, fx, sig, act, src.Code, src.Info) {
			if src.Timer {
				mm.Put(sigInfoAt(r)+24, src.Val) // si_value; the frame was just written
			}
			atomic.AddUint64(&sigs.Delivered, 1)
			return true
		}
		killedBy(sig, "no usable handler or no room for its frame")
	}
}

// setTempMask gives the current task the mask m until its system call
// ends (sigs.RestoreMask at the system call's exit), as the calls that wait with a mask of their own.
func setTempMask(m uint64) { sigs.SetTempMask(sched.Current().Index(), m) }

// powerButton is the machine's power button (ACPI's, arm64 virt's GPIO
// key: powerInit): SIGTERM to the program, as Linux's init passes a
// shutdown on to its services; the program's exit then powers off
// (machineExit).
func powerButton() {
	klog("power button: SIGTERM to the program\n")
	if t := processTarget(int(unix.SIGTERM)); t != nil {
		sendSignalFrom(t, int(unix.SIGTERM), signal.FromKernel)
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

// signalUser redirects the user context in r to the handler of sig (a
// fault's signal) as its action is now; see signalFrame.
func signalUser(r *Regs, fx uintptr, sig int, code int32, addr uintptr) bool {
	return signalFrame(r, fx, sig, sigs.Action(sig), code, addr)
}

// signalStart is where both architectures' signalFrame begin: whether
// act, sig's action, is a usable handler (sigNeedFlags) and the trap came
// from application code; the thread's alternate stack; and the address
// the frame goes below: the top of the alternate stack if the handler
// asks for it and the thread is not on it already, else sp.
func signalStart(r *Regs, sig int, act signal.Action, sp uintptr) (as signal.AltStack, top uintptr, ok bool) {
	if inKernel(r) {
		return as, 0, false
	}
	if sigs.Mask[sched.Current().Index()]&signal.Bit(sig) != 0 {
		// Only a fault's signal (delivered whatever the mask) can be
		// blocked here: one raised inside its own handler, or with the
		// program blocking it. As Linux's force_sig, which resets the
		// action to the default: the process ends (128+sig) instead of
		// entering the handler again.
		killedBy(sig, "raised while blocked")
	}
	if act.Handler <= 1 || act.Flags&sigNeedFlags != sigNeedFlags {
		return as, 0, false
	}
	as, sp = sigs.Top(sched.Current().Index(), act, sp)
	return as, sp, true
}

// forceSegv raises SIGSEGV for a fault of the thread's own making that a
// system call found (a bad rt_sigreturn frame), as Linux's force_sig:
// delivered at once whatever the mask, with SI_KERNEL; without a usable
// handler or room for the frame it ends the machine as SIGSEGV's default
// action does.
func forceSegv(r *Regs) {
	var buf [fpStateSize + 64]byte
	if !signalUser(r, exitFP(&buf, exitFPState(r)), int(unix.SIGSEGV), siKernel, 0) {
		killedBy(int(unix.SIGSEGV), "a bad signal frame, no usable handler")
	}
}

// deliverAtExit delivers a pending signal on the way out of a system call
// (c: the call, if it was interrupted); the FP/SSE state for its frame is
// the one saved at fp or, if fp is 0, the live one.
func deliverAtExit(r *Regs, fp uintptr, c *sysCall) bool {
	var buf [fpStateSize + 64]byte
	return deliverSignal(r, exitFP(&buf, fp), c)
}

// exitFP puts the FP/SSE state for a signal frame made on the way out of a
// system call in buf — the one saved at fp or, if fp is 0, the live one —
// and returns its 64-byte-aligned address there (XSAVE's alignment).
func exitFP(buf *[fpStateSize + 64]byte, fp uintptr) uintptr {
	fx := (uintptr(unsafe.Pointer(buf)) + 63) &^ 63
	if fp != 0 {
		for i := uintptr(0); i < fpStateSize; i += 8 {
			*at[uint64](fx + i) = *at[uint64](fp + i)
		}
	} else {
		fpSave(fx)
	}
	return fx
}
