#include "textflag.h"

// func call(smc, fn, a1, a2, a3 uint64) uint64
TEXT ·call(SB),NOSPLIT,$0-48
	MOVD	fn+8(FP), R0
	MOVD	a1+16(FP), R1
	MOVD	a2+24(FP), R2
	MOVD	a3+32(FP), R3
	MOVD	smc+0(FP), R4
	CBNZ	R4, usesmc
	HVC	$0
	MOVD	R0, ret+40(FP)
	RET
usesmc:
	SMC	$0
	MOVD	R0, ret+40(FP)
	RET
