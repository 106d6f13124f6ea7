#include "textflag.h"

// restartSig is the signal handler of restartPastEOF (usercopy_eof.go):
// it makes the restart_syscall system call (219), records its raw result
// in restartSigRet and that it ran, and returns to the restorer, which
// makes rt_sigreturn. It touches no callee-saved register and no g.
TEXT ·restartSig(SB),NOSPLIT|NOFRAME,$0
	MOVQ	$219, AX
	SYSCALL
	MOVQ	AX, ·restartSigRet(SB)
	MOVQ	$1, ·restartSigRan(SB)
	RET

// func restartSigPC() uintptr
TEXT ·restartSigPC(SB),NOSPLIT,$0-8
	MOVQ	$·restartSig(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
