#include "textflag.h"

// func MIDR() uint64
TEXT ·MIDR(SB),NOSPLIT,$0-8
	MRS	MIDR_EL1, R0
	MOVD	R0, ret+0(FP)
	RET
