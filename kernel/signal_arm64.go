package kernel

import (
	"yolk/kernel/mm"
	"yolk/kernel/signal"
	"yolk/sched"
)

// The arm64 signal frame (Linux arch/arm64/kernel/signal.c): siginfo, then
// the ucontext, whose sigcontext holds X0..X30, SP, PC and PSTATE and, in
// its reserved area, an fpsimd_context record (FPSR, FPCR, V0..V31) and
// the terminating null record; above the frame, a frame record (X29, X30)
// for unwinders. The handler returns to X30: the program's restorer with
// SA_RESTORER, else the kernel's rt_sigreturn trampoline (Go on arm64
// names none: Linux points X30 at its vDSO's).
const (
	ucSize       = 4560 // flags, link, stack, mask and padding (176), sigcontext (288 + 4096)
	ucSigmask    = 40
	ucMcontext   = 176
	mcFault      = 0
	mcRegs       = 8
	mcSP         = 256
	mcPC         = 264
	mcPSTATE     = 272
	mcReserved   = 288
	fpsimdMagic  = 0x46508001
	fpsimdSize   = 528 // head (8), fpsr, fpcr, 32 × 16-byte V registers
	sigFrameSize = sigInfoSize + ucSize

	// sigNeedFlags: a handler is usable with SA_SIGINFO (without a
	// restorer it returns through the kernel's sigreturn code).
	sigNeedFlags = signal.SaSiginfo
)

// signalFrame redirects the user context in r to act, sig's handler, with
// an rt_sigframe; fx is the interrupted FP/SIMD state (Regs.V layout). false
// if the fault was in the kernel, there is no usable handler, or the frame
// does not fit.
func signalFrame(r *Regs, fx uintptr, sig int, act signal.Action, code int32, addr uintptr) bool {
	as, sp, ok := signalStart(r, sig, act, uintptr(r.SP))
	if !ok {
		return false
	}
	rec := (sp - 16) &^ 15 // frame record
	frame := (rec - sigFrameSize) &^ 15
	if !mm.UserW(frame, rec+16-frame) {
		return false
	}
	info, uc := frame, frame+sigInfoSize
	mc := uc + ucMcontext
	fp := mc + mcReserved
	end := fp + fpsimdSize + 16 // the fpsimd record and the null record after it
	f := frameBuf{base: frame}
	f.putInfoStack(info, uc, sig, code, addr, as)
	f.put64(mc+mcFault, uint64(addr))
	for i, v := range r.X {
		f.put64(mc+mcRegs+uintptr(i)*8, v)
	}
	f.put64(mc+mcSP, r.SP)
	f.put64(mc+mcPC, r.PC)
	f.put64(mc+mcPSTATE, r.PSTATE)
	f.put32(fp, fpsimdMagic)
	f.put32(fp+4, fpsimdSize)
	f.put32(fp+8, uint32(*at[uint64](fx + 512)))
	f.put32(fp+12, uint32(*at[uint64](fx + 520)))
	for i := uintptr(0); i < 512; i += 8 {
		f.put64(fp+16+i, *at[uint64](fx + i))
	}
	i := sched.Current().Index()
	f.put64(uc+ucSigmask, sigs.FrameMask(i))
	// The rest of the reserved area is zero; the frame record above.
	if !f.out(end-frame) || mm.ZeroUser(end, rec-end) != 0 || mm.Put(rec, [2]uint64{r.X[29], r.X[30]}) != 0 {
		return false
	}
	sigs.Handled(i, sig, act)

	ret := sigreturnPC()
	if act.Flags&signal.SaRestorer != 0 && act.Restorer != 0 {
		ret = uintptr(act.Restorer)
	}
	r.X[0], r.X[1], r.X[2] = uint64(sig), uint64(info), uint64(uc)
	r.X[29], r.X[30] = uint64(rec), uint64(ret)
	r.SP, r.PC = uint64(frame), act.Handler
	return true
}

// sigInfoAt is the siginfo of the frame signalFrame made for r.
func sigInfoAt(r *Regs) uintptr { return uintptr(r.X[1]) }

// sysRtSigreturn ends a signal handler: the context saved in the frame at
// SP (the handler's own SP on return) goes back into r, registers and
// FP/SIMD state alike, and the next pending signal, if any, is delivered.
func sysRtSigreturn(r *Regs, t *sched.Task) {
	uc := uintptr(r.SP) + sigInfoSize
	mc := uc + ucMcontext
	fp := mc + mcReserved
	// The ucontext up to the end of the fpsimd record, copied in before
	// it is read. A frame that is not readable, or restores a PC or SP
	// outside the lower half, is the thread's fault: SIGSEGV, as on Linux.
	f := frameBuf{base: uc}
	if !f.in(fp+fpsimdSize-uc) || !mm.UserHalf(f.get64(mc+mcSP)) || !mm.UserHalf(f.get64(mc+mcPC)) {
		forceSegv(r)
		userSync()
		return
	}
	for i := range r.X {
		r.X[i] = f.get64(mc + mcRegs + uintptr(i)*8)
	}
	r.SP, r.PC = f.get64(mc+mcSP), f.get64(mc+mcPC)
	// NZCV only; EL1t with interrupts unmasked, as application code runs.
	r.PSTATE = f.get64(mc+mcPSTATE)&0xf0000000 | pstateEL1t
	if f.get32(fp) == fpsimdMagic {
		r.FPSR, r.FPCR = uint64(f.get32(fp+8)), uint64(f.get32(fp+12))
		for i := range r.V {
			r.V[i] = f.get64(fp + 16 + uintptr(i)*8)
		}
	}
	sigs.SetMask(t.Index(), f.get64(uc+ucSigmask))
	if signalPending(t) {
		deliverSignal(r, fpState(r), nil)
	}
	userSync()
}

// frameBufSize holds the written part of a frame: siginfo, the ucontext
// up to the end of the fpsimd record and the null record after it.
const frameBufSize = sigInfoSize + ucMcontext + mcReserved + fpsimdSize + 16
