#include "textflag.h"

// func Read8(a uintptr) uint8
TEXT ·Read8(SB),NOSPLIT,$0-9
	MOVD	a+0(FP), R0
	LDARB	(R0), R1
	MOVB	R1, ret+8(FP)
	RET

// func Write8(a uintptr, v uint8)
TEXT ·Write8(SB),NOSPLIT,$0-9
	MOVD	a+0(FP), R0
	MOVBU	v+8(FP), R1
	STLRB	R1, (R0)
	RET

// func Read16(a uintptr) uint16
TEXT ·Read16(SB),NOSPLIT,$0-10
	MOVD	a+0(FP), R0
	LDARH	(R0), R1
	MOVH	R1, ret+8(FP)
	RET

// func Write16(a uintptr, v uint16)
TEXT ·Write16(SB),NOSPLIT,$0-10
	MOVD	a+0(FP), R0
	MOVHU	v+8(FP), R1
	STLRH	R1, (R0)
	RET
