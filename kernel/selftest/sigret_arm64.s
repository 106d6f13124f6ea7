#include "textflag.h"

// sigretX28 is X28's slot in the frame: siginfo (128), the ucontext's
// head (176), the fault address (8), X0..X27.
#define sigretX28 (128+176+8+28*8)

// The fuzzer's rt_sigreturn harness (fuzz_sigret.go): sigretProbe calls
// rt_sigreturn with SP at a frame the fuzzer built; the frame's PC is
// sigretLand (or not: then the kernel raises SIGSEGV, which sigretSegv
// catches on this thread and turns into a landing).

// func sigretProbe(frame uintptr)
TEXT ·sigretProbe(SB),NOSPLIT,$0-8
	MOVD	frame+0(FP), R0
	MOVD	RSP, R1
	MOVD	R1, ·sigretSP(SB)
	MOVD	R29, ·sigretBP(SB)
	MOVD	R30, ·sigretLR(SB)
	MOVD	g, ·sigretG(SB)
	// X28 in the frame is g: a signal between the return and the
	// landing runs the runtime's handler, which takes g from X28.
	MOVD	g, sigretX28(R0)
	MOVD	R0, RSP
	MOVD	$139, R8	// rt_sigreturn
	SVC	$0
	UNDEF	// not reached: rt_sigreturn resumes at the frame's PC

// sigretLand puts the probe's SP, frame pointer, link register and g
// back, records FPSR, gives Go its floating-point state (FPCR and FPSR
// zero) and returns from sigretProbe.
TEXT ·sigretLand(SB),NOSPLIT|NOFRAME,$0
	B	land	// (vet's frame-pointer check ends at a branch: R29 is put back on purpose)
land:
	MOVD	·sigretSP(SB), R1
	MOVD	R1, RSP
	MOVD	·sigretBP(SB), R29
	MOVD	·sigretLR(SB), R30
	MOVD	·sigretG(SB), g
	MRS	FPSR, R1
	MOVW	R1, ·sigretMXCSR(SB)
	MSR	ZR, FPCR
	MSR	ZR, FPSR
	RET

// sigretSegv is the SIGSEGV handler while the harness runs: on the
// probing thread it lands; on any other it goes on to the runtime's
// handler with the registers it came with (R0-R2, R30).
TEXT ·sigretSegv(SB),NOSPLIT|NOFRAME,$0
	MOVWU	·sigretActive(SB), R9
	CBZ	R9, chain
	MOVD	R0, R9
	MOVD	R8, R11
	MOVD	$178, R8	// gettid
	SVC	$0
	MOVD	·sigretTid(SB), R10
	CMP	R0, R10
	MOVD	R9, R0
	MOVD	R11, R8
	BNE	chain
	MOVW	$1, R9
	MOVW	R9, ·sigretGot(SB)
	B	·sigretLand(SB)
chain:
	MOVD	·sigretOld(SB), R9
	B	(R9)

// sigretRestorer: SA_RESTORER's trampoline (unused: see amd64's).
TEXT ·sigretRestorer(SB),NOSPLIT|NOFRAME,$0
	MOVD	$139, R8
	SVC	$0
	UNDEF

// func fxsave(p uintptr): nothing to save on arm64 (the frame's FP
// record is built from zero).
TEXT ·fxsave(SB),NOSPLIT,$0-8
	RET

// func sigretPCs() (land, segv, restorer uintptr)
TEXT ·sigretPCs(SB),NOSPLIT,$0-24
	MOVD	$·sigretLand(SB), R0
	MOVD	R0, land+0(FP)
	MOVD	$·sigretSegv(SB), R0
	MOVD	R0, segv+8(FP)
	MOVD	$·sigretRestorer(SB), R0
	MOVD	R0, restorer+16(FP)
	RET
