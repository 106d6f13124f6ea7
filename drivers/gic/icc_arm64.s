#include "textflag.h"

// GICv3 CPU interface system registers. The Go assembler knows the ICC_*
// EL1 names; ICC_SRE_EL2 (S3_4_C12_C9_5) it does not, so it is a WORD.

// func readSRE() uint64
TEXT ·readSRE(SB),NOSPLIT,$0-8
	MRS	ICC_SRE_EL1, R0
	MOVD	R0, ret+0(FP)
	RET

// func writeSRE(v uint64)
TEXT ·writeSRE(SB),NOSPLIT,$0-8
	MOVD	v+0(FP), R0
	MSR	R0, ICC_SRE_EL1
	ISB	$15
	RET

// func writePMR(v uint64)
TEXT ·writePMR(SB),NOSPLIT,$0-8
	MOVD	v+0(FP), R0
	MSR	R0, ICC_PMR_EL1
	RET

// func writeBPR1(v uint64)
TEXT ·writeBPR1(SB),NOSPLIT,$0-8
	MOVD	v+0(FP), R0
	MSR	R0, ICC_BPR1_EL1
	RET

// func writeCTLR(v uint64)
TEXT ·writeCTLR(SB),NOSPLIT,$0-8
	MOVD	v+0(FP), R0
	MSR	R0, ICC_CTLR_EL1
	RET

// func writeIGRPEN1(v uint64)
TEXT ·writeIGRPEN1(SB),NOSPLIT,$0-8
	MOVD	v+0(FP), R0
	MSR	R0, ICC_IGRPEN1_EL1
	ISB	$15
	RET

// func readIAR1() uint64
// The DSB orders the acknowledge before the handler's accesses to the
// device (IHI 0069H 12.1.6 and Linux's gic_read_iar).
TEXT ·readIAR1(SB),NOSPLIT,$0-8
	MRS	ICC_IAR1_EL1, R0
	DSB	$0xF // SY
	MOVD	R0, ret+0(FP)
	RET

// func writeEOIR1(v uint64)
TEXT ·writeEOIR1(SB),NOSPLIT,$0-8
	MOVD	v+0(FP), R0
	MSR	R0, ICC_EOIR1_EL1
	ISB	$15
	RET

// func writeSGI1R(v uint64)
// DSB ISHST first: the system-register write is not a memory access, so
// without it the target could take the SGI before it sees our stores.
TEXT ·writeSGI1R(SB),NOSPLIT,$0-8
	MOVD	v+0(FP), R0
	DSB	$0xA // ISHST
	MSR	R0, ICC_SGI1R_EL1
	ISB	$15
	RET

// func EnableSREAtEL2()
TEXT ·EnableSREAtEL2(SB),NOSPLIT,$0-0
	WORD	$0xd53cc9a0 // MRS ICC_SRE_EL2, X0
	ORR	$0xF, R0, R0
	WORD	$0xd51cc9a0 // MSR ICC_SRE_EL2, X0
	ISB	$15
	RET
