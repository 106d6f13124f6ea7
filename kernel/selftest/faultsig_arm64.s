#include "textflag.h"

// faultSigRecord is the SIGBUS and SIGSEGV handler while faultSignal
// (fmap_sigbus.go) probes: it records the signal's number, si_code and
// si_addr from the siginfo (R1), then goes on to the runtime's handler
// with the registers it came with (R0-R2, R30), which turns the fault
// into a panic (debug.SetPanicOnFault).
TEXT ·faultSigRecord(SB),NOSPLIT|NOFRAME,$0
	MOVWU	0(R1), R9
	MOVW	R9, ·faultSigNo(SB)
	MOVWU	8(R1), R9
	MOVW	R9, ·faultSigCode(SB)
	MOVD	16(R1), R9
	MOVD	R9, ·faultSigAddr(SB)
	MOVD	·faultSigOld(SB), R9
	B	(R9)

// func faultSigPC() uintptr
TEXT ·faultSigPC(SB),NOSPLIT,$0-8
	MOVD	$·faultSigRecord(SB), R0
	MOVD	R0, ret+0(FP)
	RET
