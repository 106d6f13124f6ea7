#include "textflag.h"

// func spinCount(stop *uint32, n *uint64)
//
// spinCount adds one to *n until *stop is non-zero. Assembly is never an
// asynchronous safe point: the runtime's preemption signals run their
// handler and return here, so the thread never gives up its CPU by
// itself (testWokenFirst).
TEXT ·spinCount(SB),NOSPLIT,$0-16
	MOVQ	stop+0(FP), AX
	MOVQ	n+8(FP), BX
loop:
	INCQ	(BX)
	PAUSE
	MOVL	(AX), CX
	TESTL	CX, CX
	JEQ	loop
	RET
