package kernel

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/sched"
)

// Signals: only the synchronous ones a fault in user code raises (SIGSEGV,
// SIGFPE, SIGILL), delivered to the handler the program installed, on its
// alternate stack, with a Linux rt_sigframe, so that the Go runtime turns a
// nil dereference into a panic. Without a handler the fault is reported and
// the machine stops. There are no asynchronous signals (no kill, no timers,
// no preemption signals: asynchronous preemption is off).

const (
	saSiginfo  = 0x4
	saOnstack  = 0x08000000
	saRestorer = 0x04000000
	ssDisable  = 2
	minSigStk  = 2048

	segvMaperr = 1
	segvAccerr = 2
	fpeIntdiv  = 1
	illIllopn  = 2
	siKernel   = 0x80

	sigInfoSize = 128
	ucSize      = 304 // flags, link, stack, mcontext (23 gregs, fpregs, reserved), 8-byte mask
	ucStack     = 16
	ucGregs     = 40
	ucFpregs    = ucGregs + 23*8
	fpStateSize = 512
)

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
)

func sysRtSigaction(sig int, act, oact, size uintptr) Errno {
	if sig < 1 || sig > 64 || size != 8 {
		return EINVAL
	}
	if act != 0 && (sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP)) {
		return EINVAL
	}
	if (act != 0 && !userOK(act, 32)) || (oact != 0 && !userOK(oact, 32)) {
		return EFAULT
	}
	sigLock.Lock()
	old := sigActs[sig]
	if act != 0 {
		sigActs[sig] = *at[sigaction](act)
	}
	sigLock.Unlock()
	if oact != 0 {
		*at[sigaction](oact) = old
	}
	return 0
}

func sysSigaltstack(t *sched.Task, ss, oss uintptr) Errno {
	as := &altStacks[t.Index()]
	if (ss != 0 && !userOK(ss, 24)) || (oss != 0 && !userOK(oss, 24)) {
		return EFAULT
	}
	old := *as
	if ss != 0 {
		sp, flags, size := *at[uintptr](ss), *at[int32](ss + 8), *at[uintptr](ss + 16)
		switch {
		case flags&ssDisable != 0:
			*as = altStack{}
		case size < minSigStk:
			return ENOMEM
		default:
			*as = altStack{sp, size}
		}
	}
	if oss != 0 {
		*at[uintptr](oss), *at[uintptr](oss + 16) = old.sp, old.size
		*at[int32](oss + 8) = 0
		if old.size == 0 {
			*at[int32](oss + 8) = ssDisable
		}
	}
	return 0
}

// inKernel reports whether the trap interrupted kernel code: the kernel runs
// with FS pointing at a per-CPU TLS block (or the boot block).
func inKernel(r *Regs) bool {
	c := sched.This()
	fs := uintptr(r.FSBase)
	return fs == c.KernelTLS() || fs == c.TrapTLSBase() || fs == uintptr(unsafe.Pointer(&bootTLS[1]))
}

// signalUser redirects the user context in r to the handler of sig with an
// rt_sigframe; fx is the interrupted FP/SSE state. false if the fault was in
// the kernel, there is no usable handler, or the frame does not fit.
func signalUser(r *Regs, fx uintptr, sig int, code int32, addr uintptr) bool {
	if inKernel(r) {
		return false
	}
	act := sigActs[sig]
	if act.handler <= 1 || act.flags&saSiginfo == 0 || act.flags&saRestorer == 0 {
		return false
	}
	as := altStacks[sched.Current().Index()]
	sp := uintptr(r.SP) - 128 // red zone
	if act.flags&saOnstack != 0 && as.size != 0 && !(sp > as.sp && sp <= as.sp+as.size) {
		sp = as.sp + as.size
	}
	fp := (sp - fpStateSize) &^ 63
	info := fp - sigInfoSize
	uc := (info - ucSize) &^ 15
	frame := uc - 8
	if !userOK(frame, sp-frame) {
		return false
	}
	clear(bytesAt(frame, int(fp-frame)))
	*at[int32](info) = int32(sig)
	*at[int32](info + 8) = code
	*at[uintptr](info + 16) = addr
	if as.size != 0 {
		*at[uintptr](uc + ucStack), *at[uintptr](uc + ucStack + 16) = as.sp, as.size
	} else {
		*at[int32](uc + ucStack + 8) = ssDisable
	}
	g := unsafe.Slice(at[uint64](uc+ucGregs), 23)
	g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7] = r.R8, r.R9, r.R10, r.R11, r.R12, r.R13, r.R14, r.R15
	g[8], g[9], g[10], g[11], g[12], g[13], g[14] = r.DI, r.SI, r.BP, r.BX, r.DX, r.AX, r.CX
	g[15], g[16], g[17] = r.SP, r.IP, r.Flags
	g[18] = selCode
	g[19], g[20], g[22] = r.Error, r.Vector, uint64(addr)
	*at[uintptr](uc + ucFpregs) = fp
	for i := uintptr(0); i < fpStateSize; i += 8 {
		// (A copy of two unsafe.Slice views here crashes go1.26's
		// compiler in its memmove disjointness check.)
		*at[uint64](fp + i) = *at[uint64](fx + i)
	}
	*at[uintptr](frame) = uintptr(act.restorer)

	r.SP, r.IP = uint64(frame), act.handler
	r.DI, r.SI, r.DX, r.AX = uint64(sig), uint64(info), uint64(uc), 0
	r.Flags &^= 0x400 // DF
	return true
}

// sysRtSigreturn restores the context saved in the rt_sigframe whose
// ucontext is at the caller's SP (the restorer's RET popped the return
// address), and marks r for a full return (entry_amd64.s).
func sysRtSigreturn(r *Regs) {
	uc := uintptr(r.SP)
	if !userOK(uc, ucSize) {
		fault(r, "rt_sigreturn: bad frame")
	}
	g := unsafe.Slice(at[uint64](uc+ucGregs), 23)
	r.R8, r.R9, r.R10, r.R11, r.R12, r.R13, r.R14, r.R15 = g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]
	r.DI, r.SI, r.BP, r.BX, r.DX, r.AX, r.CX = g[8], g[9], g[10], g[11], g[12], g[13], g[14]
	r.SP, r.IP = g[15], g[16]
	// Arithmetic flags only; interrupts on, as application code runs.
	r.Flags = g[17]&0x8D5 | 0x202
	r.Vector, r.Error = 0, 0
	if fp := *at[uintptr](uc + ucFpregs); fp != 0 && fp&15 == 0 && userOK(fp, fpStateSize) {
		r.Error = uint64(fp)
	}
}
