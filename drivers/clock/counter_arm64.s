#include "textflag.h"

// func Counter() uint64
TEXT ·Counter(SB),NOSPLIT,$0-8
	ISB	$15
	MRS	CNTVCT_EL0, R0
	MOVD	R0, ret+0(FP)
	RET
