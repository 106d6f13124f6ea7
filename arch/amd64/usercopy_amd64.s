#include "textflag.h"

// func CopyUser(dst, src, n uintptr) (left uintptr)
//
// The kernel's one instruction that touches the program's memory for a
// system call: REP MOVSB, which the CPU restarts exactly where it faulted
// (DI, SI and CX say how far it got). UserFixup finds it at run time; a
// page fault on it at a user address resumes after it, CX the bytes left.
TEXT ·CopyUser(SB),NOSPLIT|NOFRAME,$0-32
	MOVQ	dst+0(FP), DI
	MOVQ	src+8(FP), SI
	MOVQ	n+16(FP), CX
	REP;	MOVSB
	MOVQ	CX, left+24(FP)
	RET

// func copyUserPC() uintptr
TEXT ·copyUserPC(SB),NOSPLIT,$0-8
	MOVQ	$·CopyUser(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
