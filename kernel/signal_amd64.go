package kernel

import (
	"unsafe"

	"yolk/kernel/mm"
	"yolk/kernel/signal"
	"yolk/sched"
)

// The amd64 signal frame (Linux's rt_sigframe): the restorer's address,
// then the ucontext and siginfo, the FXSAVE area above them.
const (
	ucSize      = 304 // flags, link, stack, mcontext (23 gregs, fpregs, reserved), 8-byte mask
	ucGregs     = 40
	ucFpregs    = ucGregs + 23*8
	ucSigmask   = ucSize - 8
	fpStateSize = 512

	// sigNeedFlags: a handler is usable with SA_SIGINFO and a restorer
	// (the runtime's sigreturn trampoline).
	sigNeedFlags = signal.SaSiginfo | signal.SaRestorer
)

// signalFrame redirects the user context in r to act, sig's handler, with
// an rt_sigframe; fx is the interrupted FP/SSE state. false if the fault was in
// the kernel, there is no usable handler, or the frame does not fit.
func signalFrame(r *Regs, fx uintptr, sig int, act signal.Action, code int32, addr uintptr) bool {
	as, sp, ok := signalStart(r, sig, act, uintptr(r.SP)-128) // below the red zone
	if !ok {
		return false
	}
	fp := (sp - fpStateSize) &^ 63
	info := fp - sigInfoSize
	uc := (info - ucSize) &^ 15
	frame := uc - 8
	end := fp + fpStateSize
	if !mm.UserW(frame, end-frame) {
		return false
	}
	f := frameBuf{base: frame}
	f.putInfoStack(info, uc, sig, code, addr, as)
	g := [23]uint64{r.R8, r.R9, r.R10, r.R11, r.R12, r.R13, r.R14, r.R15,
		r.DI, r.SI, r.BP, r.BX, r.DX, r.AX, r.CX,
		r.SP, r.IP, r.Flags, selCode, r.Error, r.Vector, 0, uint64(addr)}
	for i, v := range g {
		f.put64(uc+ucGregs+uintptr(i)*8, v)
	}
	f.put64(uc+ucFpregs, uint64(fp))
	for i := uintptr(0); i < fpStateSize; i += 8 {
		f.put64(fp+i, *at[uint64](fx + i))
	}
	f.put64(frame, act.Restorer)
	i := sched.Current().Index()
	f.put64(uc+ucSigmask, sigs.FrameMask(i))
	if !f.out(end - frame) {
		return false
	}
	sigs.Handled(i, sig, act)

	r.SP, r.IP = uint64(frame), act.Handler
	r.DI, r.SI, r.DX, r.AX = uint64(sig), uint64(info), uint64(uc), 0
	r.Flags &^= 0x400 // DF
	return true
}

// sigInfoAt is the siginfo of the frame signalFrame made for r.
func sigInfoAt(r *Regs) uintptr { return uintptr(r.SI) }

// sysRtSigreturn ends a signal handler: it restores t's context from the
// frame, delivers the next pending signal if there is one, and leaves by
// the full return (entry_amd64.s) that restores every register.
func sysRtSigreturn(r *Regs, t *sched.Task) {
	ok := rtSigreturn(r)
	r.FSBase = uint64(t.UserFS)
	if !ok {
		forceSegv(r)
		userSync()
		return
	}
	// The next signal's frame may go where the one just returned
	// from was: its FP/SSE state (at r.Error) is copied aside first.
	if signalPending(t) && deliverAtExit(r, uintptr(r.Error), nil) {
		r.Error = 0 // the handler's frame holds the state
	}
	userSync()
}

// rtSigreturn restores the context saved in the rt_sigframe whose
// ucontext is at the caller's SP (the restorer's RET popped the return
// address), and marks r for a full return. It reports false — and the
// caller raises SIGSEGV — if the frame is not readable or its FP/SSE
// state misaligned or not writable (then nothing is restored), or if the
// restored RIP or RSP is outside the lower half (IRETQ would fault on a
// non-canonical RIP after the user's FS base is loaded). Reserved MXCSR
// bits are cleared in the frame, as Linux does, since FXRSTOR faults on
// them.
func rtSigreturn(r *Regs) bool {
	f := frameBuf{base: uintptr(r.SP)}
	uc := f.base
	if !f.in(ucSize) {
		return false
	}
	fp := uintptr(f.get64(uc + ucFpregs))
	fx := sigFPArea(sched.Current().Index())
	if fp != 0 && (fp&15 != 0 || mm.CopyIn(bytesAt(fx, fpStateSize), fp) != 0) {
		return false
	}
	if fp != 0 {
		*at[uint32](fx + fxMXCSR) &= mxcsrMask
	}
	var g [23]uint64
	for i := range g {
		g[i] = f.get64(uc + ucGregs + uintptr(i)*8)
	}
	r.R8, r.R9, r.R10, r.R11, r.R12, r.R13, r.R14, r.R15 = g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]
	r.DI, r.SI, r.BP, r.BX, r.DX, r.AX, r.CX = g[8], g[9], g[10], g[11], g[12], g[13], g[14]
	r.SP, r.IP = g[15], g[16]
	// Arithmetic flags, direction and alignment check (an interrupt can
	// stop a backward copy, REP MOVS with DF set, half way); interrupts on,
	// as application code runs.
	r.Flags = g[17]&0x40CD5 | 0x202
	r.Vector, r.Error = 0, 0
	if fp != 0 {
		r.Error = uint64(fx) // FXRSTOR on the way out reads the kernel's copy
	}
	sigs.Mask[sched.Current().Index()] = f.get64(uc+ucSigmask) &^ signal.Unblockable
	// As on Linux, whose IRET fails on it: the registers are restored,
	// and the SIGSEGV frame records the bad RIP or RSP.
	return mm.UserHalf(r.SP) && mm.UserHalf(r.IP)
}

// frameBufSize holds the written part of a frame: the restorer, the
// ucontext, siginfo and the FXSAVE area, with their alignment.
const frameBufSize = 8 + ucSize + 15 + sigInfoSize + 63 + fpStateSize

// sigFP holds, per task, the FP/SSE state rt_sigreturn copied in from the
// frame, which the full return restores with FXRSTOR: never the
// program's memory, which another thread could unmap or change (reserved
// MXCSR bits) between the check and the instruction.
var sigFP [sched.MaxTasks*fpStateSize + 16]byte

// sigFPArea is task slot i's 16-byte-aligned FXSAVE area in sigFP.
func sigFPArea(i int) uintptr {
	return (uintptr(unsafe.Pointer(&sigFP[0]))+15)&^15 + uintptr(i)*fpStateSize
}
