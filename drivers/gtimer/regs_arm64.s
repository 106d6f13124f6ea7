#include "textflag.h"

// func readFreq() uint64
TEXT ·readFreq(SB),NOSPLIT,$0-8
	MRS	CNTFRQ_EL0, R0
	MOVD	R0, ret+0(FP)
	RET

// func readCount() uint64
TEXT ·readCount(SB),NOSPLIT,$0-8
	ISB	$15
	MRS	CNTVCT_EL0, R0
	MOVD	R0, ret+0(FP)
	RET

// func readCTL() uint64
TEXT ·readCTL(SB),NOSPLIT,$0-8
	MRS	CNTV_CTL_EL0, R0
	MOVD	R0, ret+0(FP)
	RET

// func writeCTL(v uint64)
// The ISB makes the new control take effect before we return (so a Stop
// in a handler drops the interrupt before the GIC's end of interrupt).
TEXT ·writeCTL(SB),NOSPLIT,$0-8
	MOVD	v+0(FP), R0
	MSR	R0, CNTV_CTL_EL0
	ISB	$15
	RET

// func readCVAL() uint64
TEXT ·readCVAL(SB),NOSPLIT,$0-8
	MRS	CNTV_CVAL_EL0, R0
	MOVD	R0, ret+0(FP)
	RET

// func writeCVAL(v uint64)
TEXT ·writeCVAL(SB),NOSPLIT,$0-8
	MOVD	v+0(FP), R0
	MSR	R0, CNTV_CVAL_EL0
	ISB	$15
	RET

// func SetupAtEL2()
// The Go assembler has no names for the EL2 timer registers: WORDs.
TEXT ·SetupAtEL2(SB),NOSPLIT,$0-0
	MOVD	$0, R0
	WORD	$0xd51ce060 // MSR CNTVOFF_EL2, X0
	WORD	$0xd53ce100 // MRS X0, CNTHCTL_EL2
	ORR	$3, R0, R0  // EL1PCTEN | EL1PCEN
	WORD	$0xd51ce100 // MSR CNTHCTL_EL2, X0
	ISB	$15
	RET
