#include "textflag.h"

// func syncICache(p uintptr)
TEXT ·syncICache(SB),NOSPLIT,$0-8
	MOVD	p+0(FP), R0
	WORD	$0xd50b7b20	// DC CVAU, X0
	DSB	$11	// ISH
	WORD	$0xd50b7520	// IC IVAU, X0
	DSB	$11
	ISB	$15
	RET
