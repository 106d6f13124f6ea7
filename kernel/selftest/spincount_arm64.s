#include "textflag.h"

// func spinCount(stop *uint32, n *uint64)
//
// spinCount adds one to *n until *stop is non-zero. Assembly is never an
// asynchronous safe point: the runtime's preemption signals run their
// handler and return here, so the thread never gives up its CPU by
// itself (testWokenFirst).
TEXT ·spinCount(SB),NOSPLIT,$0-16
	MOVD	stop+0(FP), R0
	MOVD	n+8(FP), R1
loop:
	MOVD	(R1), R2
	ADD	$1, R2
	MOVD	R2, (R1)
	YIELD
	MOVWU	(R0), R3
	CBZW	R3, loop
	RET
