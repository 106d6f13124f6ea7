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

// func Write32(a uintptr, v uint32)
TEXT ·Write32(SB),NOSPLIT,$0-12
	MOVQ	a+0(FP), BX
	MOVL	v+8(FP), AX
	MOVL	AX, (BX)
	RET

// func Write64(a uintptr, v uint64)
TEXT ·Write64(SB),NOSPLIT,$0-16
	MOVQ	a+0(FP), BX
	MOVQ	v+8(FP), AX
	MOVQ	AX, (BX)
	RET
