#include "textflag.h"

// The fuzzer's rt_sigreturn harness (fuzz_sigret.go): sigretProbe calls
// rt_sigreturn with SP at a frame the fuzzer built; the frame's RIP is
// sigretLand (or not: then the kernel raises SIGSEGV, which
// sigretSegv catches on this thread and turns into a landing).

// func sigretProbe(frame uintptr)
TEXT ·sigretProbe(SB),NOSPLIT,$0-8
	MOVQ	frame+0(FP), AX
	MOVQ	SP, ·sigretSP(SB)
	MOVQ	BP, ·sigretBP(SB)
	MOVQ	AX, SP
	MOVQ	$15, AX	// rt_sigreturn
	SYSCALL
	INT	$3	// not reached: rt_sigreturn resumes at the frame's RIP

// sigretLand puts the probe's caller's SP and BP back, records MXCSR,
// gives Go its floating-point and flag state (MXCSR default, DF and AC
// clear) and returns from sigretProbe.
TEXT ·sigretLand(SB),NOSPLIT|NOFRAME,$0
	JMP	land	// (vet's frame-pointer check ends at a branch: BP is put back on purpose)
land:
	MOVQ	·sigretSP(SB), SP
	MOVQ	·sigretBP(SB), BP
	STMXCSR	·sigretMXCSR(SB)
	LDMXCSR	·sigretMXCSRGo(SB)
	CLD
	PUSHFQ
	ANDQ	$~0x40000, 0(SP)
	POPFQ
	RET

// sigretSegv is the SIGSEGV handler while the harness runs: on the
// probing thread it lands; on any other it goes on to the runtime's
// handler with the registers it came with (DI, SI, DX).
TEXT ·sigretSegv(SB),NOSPLIT|NOFRAME,$0
	CMPL	·sigretActive(SB), $0
	JEQ	chain
	MOVQ	$186, AX	// gettid
	SYSCALL
	CMPQ	AX, ·sigretTid(SB)
	JNE	chain
	MOVL	$1, ·sigretGot(SB)
	JMP	·sigretLand(SB)
chain:
	MOVQ	·sigretOld(SB), AX
	JMP	AX

// sigretRestorer is the restorer SA_RESTORER names (never used: the
// handler lands or goes on to the runtime's, whose own is used then).
TEXT ·sigretRestorer(SB),NOSPLIT|NOFRAME,$0
	MOVQ	$15, AX
	SYSCALL
	INT	$3

// func fxsave(p uintptr)
TEXT ·fxsave(SB),NOSPLIT,$0-8
	MOVQ	p+0(FP), AX
	FXSAVE64	(AX)
	RET

// func sigretPCs() (land, segv, restorer uintptr)
TEXT ·sigretPCs(SB),NOSPLIT,$0-24
	MOVQ	$·sigretLand(SB), AX
	MOVQ	AX, land+0(FP)
	MOVQ	$·sigretSegv(SB), AX
	MOVQ	AX, segv+8(FP)
	MOVQ	$·sigretRestorer(SB), AX
	MOVQ	AX, restorer+16(FP)
	RET
