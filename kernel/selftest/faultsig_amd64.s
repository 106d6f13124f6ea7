#include "textflag.h"

// faultSigRecord is the SIGBUS and SIGSEGV handler while faultSignal
// (fmap_sigbus.go) probes: it records the signal's number, si_code and
// si_addr from the siginfo (SI), then goes on to the runtime's handler
// with the registers it came with (DI, SI, DX), which turns the fault
// into a panic (debug.SetPanicOnFault).
TEXT ·faultSigRecord(SB),NOSPLIT|NOFRAME,$0
	MOVL	0(SI), AX
	MOVL	AX, ·faultSigNo(SB)
	MOVL	8(SI), AX
	MOVL	AX, ·faultSigCode(SB)
	MOVQ	16(SI), AX
	MOVQ	AX, ·faultSigAddr(SB)
	MOVQ	·faultSigOld(SB), AX
	JMP	AX

// func faultSigPC() uintptr
TEXT ·faultSigPC(SB),NOSPLIT,$0-8
	MOVQ	$·faultSigRecord(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
