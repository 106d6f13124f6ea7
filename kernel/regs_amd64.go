package kernel

// Regs is the frame the entry assembly pushes on a syscall or trap.
type Regs struct {
	FSBase                                                           uint64
	R15, R14, R13, R12, R11, R10, R9, R8, BP, DI, SI, DX, CX, BX, AX uint64
	Vector, Error                                                    uint64
	IP, CS, Flags, SP, SS                                            uint64
}

// sysArgs is the system call in r: number in AX, arguments in DI, SI, DX,
// R10, R8, R9.
func (r *Regs) sysArgs() (nr, a0, a1, a2, a3, a4, a5 uintptr) {
	return uintptr(r.AX), uintptr(r.DI), uintptr(r.SI), uintptr(r.DX), uintptr(r.R10), uintptr(r.R8), uintptr(r.R9)
}

// sysReturn leaves a system call's result in r, with the task's user FS
// base for the return.
func (r *Regs) sysReturn(ret, userTLS uintptr) {
	r.AX = uint64(ret)
	r.FSBase = uint64(userTLS)
}

// sysRestart makes r, the context of a system call on its way out, make
// call nr again: the number back in AX, the PC back onto the 2-byte
// SYSCALL (the arguments are still in their registers).
func (r *Regs) sysRestart(nr, a0 uintptr) {
	r.AX = uint64(nr)
	r.IP -= 2
}

// userStart is the frame a task's first return to application code uses:
// pc with the stack at sp.
func userStart(pc, sp uintptr) Regs {
	return Regs{IP: uint64(pc), SP: uint64(sp), CS: selCode, SS: selData, Flags: 2}
}

// cloneRegs makes fr, the new thread's frame, from its creator's r: the
// same registers but 0 returned, stack and TLS base from clone.
func cloneRegs(fr, r *Regs, stack, tls uintptr) {
	*fr = *r
	fr.AX = 0
	fr.SP = uint64(stack)
	fr.FSBase = uint64(tls)
}

// fp is the trapped code's frame pointer.
func (r *Regs) fp() uintptr { return uintptr(r.BP) }

func (r *Regs) pc() uintptr { return uintptr(r.IP) }

// fpSave stores the FP/SSE/AVX state at addr (fpStateSize bytes,
// 64-aligned): XSAVE's standard format, or FXSAVE's 512 bytes where the
// kernel does not use XSAVE (xsaveOn).
func fpSave(addr uintptr)

// The FP state's save area. With XSAVE (xsaveOn), its standard format
// for XCR0 = x87|SSE|AVX: the FXSAVE image, the XSAVE header, then the
// upper halves of YMM0–15. Otherwise only the FXSAVE image is used.
const (
	fpStateSize = 832
	fxStateSize = 512 // the FXSAVE image
	xsHeader    = 512 // the XSAVE header: XSTATE_BV, XCOMP_BV, reserved
	xsHeaderEnd = 576
	// xstateFX are XSTATE_BV's x87 and SSE bits: a frame that holds no
	// more restores AVX's registers to their initial state.
	xstateFX = 3
)

// exitFPState is where the FP/SSE state of a thread leaving a system call
// is: live in the registers (0). The system-call entry does not save them,
// so they hold what the kernel's Go code left; the Go runtime treats them
// as clobbered by the call anyway.
func exitFPState(r *Regs) uintptr { return 0 }

// fpState is where the FP/SSE state of the interrupted code is kept beside
// a trap frame r (below it: fxArea).
func fpState(r *Regs) uintptr { return fxArea(r) }
