#include "textflag.h"

// func badSigreturn()
TEXT ·badSigreturn(SB),NOSPLIT,$0
	MOVD	$0x10, R0
	MOVD	R0, RSP
	MOVD	$139, R8	// rt_sigreturn
	SVC
	RET
