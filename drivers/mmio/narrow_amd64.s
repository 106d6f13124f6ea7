#include "textflag.h"

// func Read8(a uintptr) uint8
TEXT ·Read8(SB),NOSPLIT,$0-9
	MOVQ	a+0(FP), BX
	MOVB	(BX), AX
	MOVB	AX, ret+8(FP)
	RET

// func Write8(a uintptr, v uint8)
TEXT ·Write8(SB),NOSPLIT,$0-9
	MOVQ	a+0(FP), BX
	MOVB	v+8(FP), AX
	MOVB	AX, (BX)
	RET

// func Read16(a uintptr) uint16
TEXT ·Read16(SB),NOSPLIT,$0-10
	MOVQ	a+0(FP), BX
	MOVW	(BX), AX
	MOVW	AX, ret+8(FP)
	RET

// func Write16(a uintptr, v uint16)
TEXT ·Write16(SB),NOSPLIT,$0-10
	MOVQ	a+0(FP), BX
	MOVW	v+8(FP), AX
	MOVW	AX, (BX)
	RET
