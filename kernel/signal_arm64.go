package kernel

import (
	"unsafe"

	"yolk/kernel/mm"
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
	sigNeedFlags = saSiginfo
)

// signalUser redirects the user context in r to the handler of sig with an
// rt_sigframe; fx is the interrupted FP/SIMD state (Regs.V layout). false
// if the fault was in the kernel, there is no usable handler, or the frame
// does not fit.
func signalUser(r *Regs, fx uintptr, sig int, code int32, addr uintptr) bool {
	act, as, sp, ok := signalStart(r, sig, uintptr(r.SP))
	if !ok {
		return false
	}
	rec := (sp - 16) &^ 15 // frame record
	frame := (rec - sigFrameSize) &^ 15
	if !mm.UserW(frame, sp-frame) {
		return false
	}
	info, uc := frame, frame+sigInfoSize
	clear(bytesAt(frame, int(rec+16-frame)))
	*at[int32](info) = int32(sig)
	*at[int32](info + 8) = code
	*at[uintptr](info + 16) = addr
	if as.size != 0 {
		*at[uintptr](uc + ucStack), *at[uintptr](uc + ucStack + 16) = as.sp, as.size
	} else {
		*at[int32](uc + ucStack + 8) = ssDisable
	}
	mc := uc + ucMcontext
	*at[uint64](mc + mcFault) = uint64(addr)
	regs := unsafe.Slice(at[uint64](mc+mcRegs), 31)
	for i := range regs {
		regs[i] = r.X[i]
	}
	*at[uint64](mc + mcSP), *at[uint64](mc + mcPC), *at[uint64](mc + mcPSTATE) = r.SP, r.PC, r.PSTATE
	fp := mc + mcReserved
	*at[uint32](fp), *at[uint32](fp + 4) = fpsimdMagic, fpsimdSize
	*at[uint32](fp + 8), *at[uint32](fp + 12) = uint32(*at[uint64](fx + 512)), uint32(*at[uint64](fx + 520))
	for i := uintptr(0); i < 512; i += 8 {
		*at[uint64](fp + 16 + i) = *at[uint64](fx + i)
	}
	// The null record after it ends the list (already zero).
	*at[uint64](rec), *at[uint64](rec + 8) = r.X[29], r.X[30]

	m := &sigMask[sched.Current().Index()]
	*at[uint64](uc + ucSigmask) = *m
	*m |= act.mask
	if act.flags&saNodefer == 0 {
		*m |= sigBit(sig)
	}
	*m &^= unblockable

	ret := sigreturnPC()
	if act.flags&saRestorer != 0 && act.restorer != 0 {
		ret = uintptr(act.restorer)
	}
	r.X[0], r.X[1], r.X[2] = uint64(sig), uint64(info), uint64(uc)
	r.X[29], r.X[30] = uint64(rec), uint64(ret)
	r.SP, r.PC = uint64(frame), act.handler
	return true
}

// sigInfoAt is the siginfo of the frame signalUser made for r.
func sigInfoAt(r *Regs) uintptr { return uintptr(r.X[1]) }

// sysRtSigreturn ends a signal handler: the context saved in the frame at
// SP (the handler's own SP on return) goes back into r, registers and
// FP/SIMD state alike, and the next pending signal, if any, is delivered.
func sysRtSigreturn(r *Regs, t *sched.Task) {
	frame := uintptr(r.SP)
	uc := frame + sigInfoSize
	mc := uc + ucMcontext
	// A frame that is not readable, or restores a PC or SP outside the
	// lower half, is the thread's fault: SIGSEGV, as on Linux.
	if !mm.UserOK(frame, sigFrameSize) || !mm.UserHalf(*at[uint64](mc + mcSP)) || !mm.UserHalf(*at[uint64](mc + mcPC)) {
		forceSegv(r)
		userSync()
		return
	}
	regs := unsafe.Slice(at[uint64](mc+mcRegs), 31)
	for i := range regs {
		r.X[i] = regs[i]
	}
	r.SP, r.PC = *at[uint64](mc + mcSP), *at[uint64](mc + mcPC)
	// NZCV only; EL1t with interrupts unmasked, as application code runs.
	r.PSTATE = *at[uint64](mc + mcPSTATE)&0xf0000000 | pstateEL1t
	if fp := mc + mcReserved; *at[uint32](fp) == fpsimdMagic {
		r.FPSR, r.FPCR = uint64(*at[uint32](fp + 8)), uint64(*at[uint32](fp + 12))
		for i := range r.V {
			r.V[i] = *at[uint64](fp + 16 + uintptr(i)*8)
		}
	}
	sigMask[t.Index()] = *at[uint64](uc + ucSigmask) &^ unblockable
	if signalPending(t) {
		deliverSignal(r, fpState(r))
	}
	userSync()
}
