package kernel

import "unsafe"

// Regs is the frame the exception entry (entry_arm64.s) saves: every
// general register, the interrupted SP (SP_EL0), PC (ELR_EL1) and PSTATE
// (SPSR_EL1), the syndrome and fault address, and the FP/SIMD state —
// kept in the frame itself, so that a copied frame (clone, the move to the
// task's stack) carries all of the thread's registers.
type Regs struct {
	X      [31]uint64 // 0: X0..X30
	SP     uint64     // 248
	PC     uint64     // 256
	PSTATE uint64     // 264
	ESR    uint64     // 272
	FAR    uint64     // 280
	Vector uint64     // 288: the vector-table entry (vec*)
	_      uint64
	V      [64]uint64 // 304: V0..V31
	FPSR   uint64     // 816
	FPCR   uint64     // 824
}

// fpStateSize is the FP/SIMD state as the signal frame's fpsimd_context
// holds it: V0..V31, FPSR, FPCR.
const fpStateSize = 528

// sysArgs is the system call in r: number in X8, arguments in X0..X5.
func (r *Regs) sysArgs() (nr, a0, a1, a2, a3, a4, a5 uintptr) {
	return uintptr(r.X[8]), uintptr(r.X[0]), uintptr(r.X[1]), uintptr(r.X[2]), uintptr(r.X[3]), uintptr(r.X[4]), uintptr(r.X[5])
}

// sysReturn leaves a system call's result in X0 (TPIDR_EL0 is not
// touched by the kernel: it needs no restoring).
func (r *Regs) sysReturn(ret, userTLS uintptr) { r.X[0] = uint64(ret) }

// sysRestart makes r, the context of a system call on its way out, make
// call nr again: the number in X8, the first argument back in X0 (the
// result overwrote it), the PC back onto the 4-byte SVC.
func (r *Regs) sysRestart(nr, a0 uintptr) {
	r.X[8], r.X[0] = uint64(nr), uint64(a0)
	r.PC -= 4
}

// pstateEL1t is PSTATE for application code: EL1 on SP_EL0, interrupts
// unmasked.
const pstateEL1t = 0x4

// userStart is the frame a task's first return to application code uses.
func userStart(pc, sp uintptr) Regs {
	return Regs{PC: uint64(pc), SP: uint64(sp), PSTATE: pstateEL1t}
}

// cloneRegs makes fr, the new thread's frame, from its creator's r: the
// same registers (the Go runtime's clone keeps its arguments in X10..X13
// for the child) but 0 returned and the new stack.
func cloneRegs(fr, r *Regs, stack, tls uintptr) {
	*fr = *r
	fr.X[0] = 0
	fr.SP = uint64(stack)
}

// fp is the trapped code's frame pointer.
func (r *Regs) fp() uintptr { return uintptr(r.X[29]) }

func (r *Regs) pc() uintptr { return uintptr(r.PC) }

// fpState is where r holds the FP/SIMD state (the signal frame's copy).
func fpState(r *Regs) uintptr { return uintptr(unsafe.Pointer(&r.V)) }

// exitFPState is where the FP/SIMD state of a thread leaving a system call
// is: in its frame (the kernel's Go code uses the V registers).
func exitFPState(r *Regs) uintptr { return fpState(r) }

// fpSave stores the live FP/SIMD state at addr (Regs.V layout,
// fpStateSize bytes).
func fpSave(addr uintptr)
