#include "textflag.h"

// func This() *CPU
TEXT ·This(SB),NOSPLIT,$0-8
	MOVQ	0(GS), AX	// CPU.Self
	MOVQ	AX, ret+0(FP)
	RET

// func kernelCPU() *CPU
TEXT ·kernelCPU(SB),NOSPLIT,$0-8
	PUSHFQ
	POPQ	AX
	BTQ	$9, AX	// RFLAGS.IF
	JCS	on
	MOVQ	0(GS), AX	// CPU.Self
	MOVQ	AX, ret+0(FP)
	RET
on:
	MOVQ	$0, ret+0(FP)
	RET

// func swtch(from, to *Context, g uintptr)
//
// The minimal switch: Go's ABI has no callee-saved registers besides SP, BP
// and the g register, and switches happen only at calls into this function,
// so SP (which holds the return PC) and BP are all there is to save. The
// kernel TLS g slot is pointed at the resumed task's g; the compiler reloads
// R14 from it after every call to an assembly function.
TEXT ·swtch(SB),NOSPLIT,$0-24
	MOVQ	from+0(FP), AX
	MOVQ	to+8(FP), BX
	MOVQ	gp+16(FP), CX
	MOVQ	SP, 0(AX)	// Context.SP
	MOVQ	BP, 8(AX)	// Context.BP
	MOVQ	CX, 24(GS)	// CPU.GSlot
	MOVQ	0(BX), SP	// Context.SP
	MOVQ	8(BX), BP	// Context.BP
	RET

// func swtchAll(from, to *Context, gp uintptr)
//
// The save-everything variant, for the benchmark only: it also saves every
// general register, the flags and the FP/SSE state (FXSAVE), as a
// conventional kernel switch does. A task saved by it must be resumed by it.
TEXT ·swtchAll(SB),NOSPLIT,$0-24
	MOVQ	from+0(FP), AX
	MOVQ	to+8(FP), BX
	MOVQ	gp+16(FP), CX
	PUSHQ	BP
	PUSHQ	BX
	PUSHQ	DX
	PUSHQ	SI
	PUSHQ	DI
	PUSHQ	R8
	PUSHQ	R9
	PUSHQ	R10
	PUSHQ	R11
	PUSHQ	R12
	PUSHQ	R13
	PUSHQ	R15
	PUSHFQ
	SUBQ	$528, SP
	MOVQ	SP, DX
	ADDQ	$15, DX
	ANDQ	$~15, DX
	FXSAVE64	(DX)
	MOVQ	SP, 0(AX)	// Context.SP
	MOVQ	BP, 8(AX)	// Context.BP
	MOVQ	CX, 24(GS)	// CPU.GSlot
	MOVQ	0(BX), SP	// Context.SP
	MOVQ	8(BX), BP	// Context.BP
	MOVQ	SP, DX
	ADDQ	$15, DX
	ANDQ	$~15, DX
	FXRSTOR64	(DX)
	ADDQ	$528, SP
	POPFQ
	POPQ	R15
	POPQ	R13
	POPQ	R12
	POPQ	R11
	POPQ	R10
	POPQ	R9
	POPQ	R8
	POPQ	DI
	POPQ	SI
	POPQ	DX
	POPQ	BX
	POPQ	BP
	RET

// func fxsave(addr uintptr)
TEXT ·fxsave(SB),NOSPLIT,$0-8
	MOVQ	addr+0(FP), AX
	FXSAVE64	(AX)
	RET

// benchEntry is the benchmark partner task's first PC.
TEXT ·benchEntry(SB),NOSPLIT|NOFRAME,$0
	CALL	·benchPartner(SB)
	RET

// func benchEntryPC() uintptr
TEXT ·benchEntryPC(SB),NOSPLIT,$0-8
	MOVQ	$·benchEntry(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// func trapNow(): UD2, an invalid-opcode trap (die).
TEXT ·trapNow(SB),NOSPLIT,$0
	BYTE	$0x0F; BYTE $0x0B
	RET

// func haltForKick()
TEXT ·haltForKick(SB),NOSPLIT,$0
	MOVQ	$14, AX
	MOVQ	AX, CR8
	STI
	HLT
	CLI
	XORL	AX, AX
	MOVQ	AX, CR8
	RET
