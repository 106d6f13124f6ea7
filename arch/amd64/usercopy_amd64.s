#include "textflag.h"

// func CopyUser(dst, src, n uintptr) (left uintptr)
//
// The kernel's copy that touches the program's memory for a system call:
// REP MOVSQ for the 8-byte words, REP MOVSB for the rest, which the CPU
// stops restartably where they fault (DI, SI and CX say how far they
// got). UserFixup finds the two instructions at run time; a page fault on
// either at a user address resumes after it. After REP MOVSQ, CX words
// are left: all of them and the odd bytes go to REP MOVSB, which copies
// the faulting word's bytes before the fault and stops at the first it
// cannot touch, so left is exact to the byte.
// (One REP MOVSB for all would do on hardware; under QEMU's TCG every
// iteration of a REP instruction costs about as much, so words are 8
// times faster.)
TEXT ·CopyUser(SB),NOSPLIT|NOFRAME,$0-32
	MOVQ	dst+0(FP), DI
	MOVQ	src+8(FP), SI
	MOVQ	n+16(FP), DX
	MOVQ	DX, CX
	SHRQ	$3, CX
	ANDQ	$7, DX
	REP;	MOVSQ
	SHLQ	$3, CX
	ADDQ	DX, CX
	REP;	MOVSB
	MOVQ	CX, left+24(FP)
	RET

// func copyUserPC() uintptr
TEXT ·copyUserPC(SB),NOSPLIT,$0-8
	MOVQ	$·CopyUser(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
