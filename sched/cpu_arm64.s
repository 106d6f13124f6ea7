#include "textflag.h"

// func This() *CPU
TEXT ·This(SB),NOSPLIT,$0-8
	MRS	TPIDR_EL1, R0	// CPU.Self
	MOVD	R0, ret+0(FP)
	RET

// func kernelCPU() *CPU
TEXT ·kernelCPU(SB),NOSPLIT,$0-8
	MRS	DAIF, R0
	TBZ	$7, R0, on	// DAIF.I clear: IRQs unmasked
	MRS	TPIDR_EL1, R0	// CPU.Self
	MOVD	R0, ret+0(FP)
	RET
on:
	MOVD	ZR, ret+0(FP)
	RET

// func setCPUBase(c uintptr)
TEXT ·setCPUBase(SB),NOSPLIT,$0-8
	MOVD	c+0(FP), R0
	MSR	R0, TPIDR_EL1
	RET

// func intsOn() bool
TEXT ·intsOn(SB),NOSPLIT,$0-1
	MRS	DAIF, R0
	TBNZ	$7, R0, masked	// DAIF.I
	MOVD	$1, R0
	MOVB	R0, ret+0(FP)
	RET
masked:
	MOVB	ZR, ret+0(FP)
	RET

// func pause()
TEXT ·pause(SB),NOSPLIT,$0
	YIELD
	RET

// func trapNow(): UDF #0, an undefined-instruction exception (die).
TEXT ·trapNow(SB),NOSPLIT,$0
	WORD	$0x00000000
	RET

// func swtch(from, to *Context, g uintptr)
//
// The minimal switch: Go's arm64 ABI has no callee-saved registers besides
// SP, the frame pointer R29 and g (R28), and switches happen only at calls
// into this function, so SP, R29 and the return address in R30 are all
// there is to save; g is set to the resumed task's. NOFRAME: this leaf
// keeps the caller's R29 and R30 as they are.
TEXT ·swtch(SB),NOSPLIT|NOFRAME,$0-24
	MOVD	from+0(FP), R0
	MOVD	to+8(FP), R1
	MOVD	gp+16(FP), R2
	MOVD	RSP, R3
	MOVD	R3, 0(R0)	// Context.SP
	MOVD	R29, 8(R0)	// Context.FP
	MOVD	R30, 16(R0)	// Context.LR
	MOVD	0(R1), R3	// Context.SP
	MOVD	R3, RSP
	MOVD	8(R1), R29	// Context.FP
	MOVD	16(R1), R30	// Context.LR
	MOVD	R2, g
	RET

// func swtchAll(from, to *Context, gp uintptr)
//
// The save-everything variant, for the benchmark only: it also saves the
// general registers R0–R27, the condition flags and the FP/SIMD state
// (V0–V31, FPSR, FPCR), as a conventional kernel switch does. A task saved
// by it must be resumed by it. Frame: 28 general registers, NZCV, FPSR and
// FPCR, a pad word (32 words), then 32 × 16 bytes of vector registers.
TEXT ·swtchAll(SB),NOSPLIT|NOFRAME,$0-24
	MOVD	from+0(FP), R0
	MOVD	to+8(FP), R1
	MOVD	gp+16(FP), R2
	SUB	$(32*8+32*16), RSP
	MOVD	RSP, R3
	STP	(R4, R5), 32(R3)
	STP	(R6, R7), 48(R3)
	STP	(R8, R9), 64(R3)
	STP	(R10, R11), 80(R3)
	STP	(R12, R13), 96(R3)
	STP	(R14, R15), 112(R3)
	STP	(R16, R17), 128(R3)
	STP	(R19, R20), 152(R3)
	STP	(R21, R22), 168(R3)
	STP	(R23, R24), 184(R3)
	STP	(R25, R26), 200(R3)
	MOVD	R27, 216(R3)
	MRS	NZCV, R4
	MOVD	R4, 224(R3)
	MRS	FPSR, R4
	MOVD	R4, 232(R3)
	MRS	FPCR, R4
	MOVD	R4, 240(R3)
	ADD	$256, R3, R4
	VST1.P	[V0.B16, V1.B16, V2.B16, V3.B16], 64(R4)
	VST1.P	[V4.B16, V5.B16, V6.B16, V7.B16], 64(R4)
	VST1.P	[V8.B16, V9.B16, V10.B16, V11.B16], 64(R4)
	VST1.P	[V12.B16, V13.B16, V14.B16, V15.B16], 64(R4)
	VST1.P	[V16.B16, V17.B16, V18.B16, V19.B16], 64(R4)
	VST1.P	[V20.B16, V21.B16, V22.B16, V23.B16], 64(R4)
	VST1.P	[V24.B16, V25.B16, V26.B16, V27.B16], 64(R4)
	VST1.P	[V28.B16, V29.B16, V30.B16, V31.B16], 64(R4)
	MOVD	R3, 0(R0)	// Context.SP
	MOVD	R29, 8(R0)	// Context.FP
	MOVD	R30, 16(R0)	// Context.LR
	MOVD	0(R1), R3	// Context.SP
	MOVD	R3, RSP
	MOVD	8(R1), R29	// Context.FP
	MOVD	16(R1), R30	// Context.LR
	MOVD	R2, g
	ADD	$256, R3, R4
	VLD1.P	64(R4), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P	64(R4), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P	64(R4), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P	64(R4), [V12.B16, V13.B16, V14.B16, V15.B16]
	VLD1.P	64(R4), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P	64(R4), [V20.B16, V21.B16, V22.B16, V23.B16]
	VLD1.P	64(R4), [V24.B16, V25.B16, V26.B16, V27.B16]
	VLD1.P	64(R4), [V28.B16, V29.B16, V30.B16, V31.B16]
	MOVD	224(R3), R4
	MSR	R4, NZCV
	MOVD	232(R3), R4
	MSR	R4, FPSR
	MOVD	240(R3), R4
	MSR	R4, FPCR
	LDP	32(R3), (R4, R5)
	LDP	48(R3), (R6, R7)
	LDP	64(R3), (R8, R9)
	LDP	80(R3), (R10, R11)
	LDP	96(R3), (R12, R13)
	LDP	112(R3), (R14, R15)
	LDP	128(R3), (R16, R17)
	LDP	152(R3), (R19, R20)
	LDP	168(R3), (R21, R22)
	LDP	184(R3), (R23, R24)
	LDP	200(R3), (R25, R26)
	MOVD	216(R3), R27
	ADD	$(32*8+32*16), RSP
	RET

// benchEntry is the benchmark partner task's first PC.
TEXT ·benchEntry(SB),NOSPLIT|NOFRAME,$0
	CALL	·benchPartner(SB)
	RET

// func benchEntryPC() uintptr
TEXT ·benchEntryPC(SB),NOSPLIT,$0-8
	MOVD	$·benchEntry(SB), R0
	MOVD	R0, ret+0(FP)
	RET

// func wfi()
TEXT ·wfi(SB),NOSPLIT,$0
	WFI
	RET
