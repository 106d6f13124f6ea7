#include "textflag.h"

// restartSig is the signal handler of restartPastEOF (usercopy_eof.go):
// it makes the restart_syscall system call (128), records its raw result
// in restartSigRet and that it ran, and returns through the link
// register to the signal trampoline, which makes rt_sigreturn. It
// touches only R0, R8 and R9, none callee-saved, and no g.
TEXT ·restartSig(SB),NOSPLIT|NOFRAME,$0
	MOVD	$128, R8
	SVC
	MOVD	R0, ·restartSigRet(SB)
	MOVD	$1, R9
	MOVD	R9, ·restartSigRan(SB)
	RET

// func restartSigPC() uintptr
TEXT ·restartSigPC(SB),NOSPLIT,$0-8
	MOVD	$·restartSig(SB), R0
	MOVD	R0, ret+0(FP)
	RET
