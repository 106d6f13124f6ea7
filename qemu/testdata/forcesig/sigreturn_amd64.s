#include "textflag.h"

// func badSigreturn()
TEXT ·badSigreturn(SB),NOSPLIT,$0
	MOVQ	$0x10, SP
	MOVQ	$15, AX	// rt_sigreturn
	SYSCALL
	RET
