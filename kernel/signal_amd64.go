package kernel

import (
	"encoding/binary"
	"unsafe"

	"yolk/kernel/mm"
	"yolk/kernel/signal"
	"yolk/sched"
)

// The amd64 signal frame (Linux's rt_sigframe): the restorer's address,
// then the ucontext and siginfo, the FP state above them — with XSAVE,
// as Linux's: the XSAVE area, 64-byte aligned, whose FXSAVE image's
// software bytes (fpx_sw_bytes) say how large it is, followed by a
// second magic number; the ucontext's flags say UC_FP_XSTATE.
const (
	ucSize    = 304 // flags, link, stack, mcontext (23 gregs, fpregs, reserved), 8-byte mask
	ucGregs   = 40
	ucFpregs  = ucGregs + 23*8
	ucSigmask = ucSize - 8

	ucFPXstate  = 1 // uc_flags: the frame's FP state is XSAVE's
	fpxSW       = 464
	fpxMagic1   = 0x46505853
	fpxMagic2   = 0x46505845
	sigFPXState = fpStateSize + 4 // the XSAVE area and the second magic number

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
	n := uintptr(fxStateSize)
	if xsaveOn != 0 {
		n = sigFPXState
	}
	fp := (sp - n) &^ 63
	info := fp - sigInfoSize
	uc := (info - ucSize) &^ 15
	frame := uc - 8
	end := fp + n
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
	// The FP state goes out from where it is, not through f: a trap's
	// stack slice has no room for a second copy. Linux's software bytes
	// and the header's reserved bytes are written into it first: XRSTOR
	// ignores both (XSAVE writes neither).
	b := bytesAt(fx, fpStateSize)
	var magic2 [4]byte
	if xsaveOn != 0 {
		f.put64(uc, ucFPXstate)
		le := binary.LittleEndian
		clear(b[fpxSW:fxStateSize])
		le.PutUint32(b[fpxSW:], fpxMagic1)
		le.PutUint32(b[fpxSW+4:], sigFPXState) // extended_size
		le.PutUint64(b[fpxSW+8:], xcr0)        // xfeatures
		le.PutUint32(b[fpxSW+16:], fpStateSize)
		clear(b[xsHeader+8 : xsHeaderEnd])
		le.PutUint32(magic2[:], fpxMagic2)
	}
	f.put64(frame, act.Restorer)
	i := sched.Current().Index()
	f.put64(uc+ucSigmask, sigs.FrameMask(i))
	if !f.out(fp-frame) || mm.CopyOut(fp, b[:min(n, fpStateSize)]) != 0 ||
		xsaveOn != 0 && mm.CopyOut(fp+fpStateSize, magic2[:]) != 0 {
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
// non-canonical RIP after the user's FS base is loaded). The FP state is
// copied into the kernel (fpIn); reserved MXCSR bits are cleared, as
// Linux does, since FXRSTOR and XRSTOR fault on them.
func rtSigreturn(r *Regs) bool {
	f := frameBuf{base: uintptr(r.SP)}
	uc := f.base
	if !f.in(ucSize) {
		return false
	}
	fp := uintptr(f.get64(uc + ucFpregs))
	fx := sigFPArea(sched.Current().Index())
	if fp != 0 && (fp&15 != 0 || !fpIn(fx, fp)) {
		return false
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
		r.Error = uint64(fx) // the full return's XRSTOR reads the kernel's copy
	}
	sigs.SetMask(sched.Current().Index(), f.get64(uc+ucSigmask))
	// As on Linux, whose IRET fails on it: the registers are restored,
	// and the SIGSEGV frame records the bad RIP or RSP.
	return mm.UserHalf(r.SP) && mm.UserHalf(r.IP)
}

// fpIn copies the FP state of the frame at fp to the kernel's area fx
// and makes it one XRSTOR (or FXRSTOR) takes: MXCSR's reserved bits
// cleared; with XSAVE, the XSAVE area if the frame's software bytes and
// second magic number say it holds one, else the FXSAVE image alone with
// AVX's registers to be reset (Linux's "fx_only"). false if the frame
// cannot be read or its XSAVE header is one XRSTOR would fault on.
func fpIn(fx, fp uintptr) bool {
	b := bytesAt(fx, fpStateSize)
	le := binary.LittleEndian
	if mm.CopyIn(b[:fxStateSize], fp) != 0 {
		return false
	}
	le.PutUint32(b[fxMXCSR:], le.Uint32(b[fxMXCSR:])&mxcsrMask)
	if xsaveOn == 0 {
		return true
	}
	bv := uint64(xstateFX)
	if le.Uint32(b[fpxSW:]) == fpxMagic1 && le.Uint32(b[fpxSW+4:]) == sigFPXState && le.Uint32(b[fpxSW+16:]) == fpStateSize {
		var m2 [4]byte
		if mm.CopyIn(m2[:], fp+fpStateSize) == 0 && le.Uint32(m2[:]) == fpxMagic2 {
			if mm.CopyIn(b[fxStateSize:], fp+fxStateSize) != 0 {
				return false
			}
			// As Linux's validate_user_xstate_header: state the kernel
			// did not enable, the compacted format or reserved bytes
			// make the frame bad.
			bv = le.Uint64(b[xsHeader:])
			if bv&^xcr0 != 0 || !zero(b[xsHeader+8:xsHeaderEnd]) {
				return false
			}
		}
	}
	clear(b[xsHeader:xsHeaderEnd])
	le.PutUint64(b[xsHeader:], bv)
	return true
}

// frameBufSize holds the frame below its FP state: the restorer, the
// ucontext and siginfo, with their alignment.
const frameBufSize = 8 + ucSize + 15 + sigInfoSize + 63

// sigFP holds, per task, the FP state rt_sigreturn copied in from the
// frame, which the full return restores with XRSTOR or FXRSTOR: never the
// program's memory, which another thread could unmap or change (reserved
// MXCSR bits) between the check and the instruction.
var sigFP [sched.MaxTasks*fpStateSize + 64]byte

// sigFPArea is task slot i's 64-byte-aligned FP state area in sigFP.
func sigFPArea(i int) uintptr {
	return (uintptr(unsafe.Pointer(&sigFP[0]))+63)&^63 + uintptr(i)*fpStateSize
}

// zero reports whether b holds only zero bytes.
func zero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
