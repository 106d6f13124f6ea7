#include "textflag.h"

// func vdsoClockGettime(id int32, ts *unix.Timespec) int32
TEXT ·vdsoClockGettime(SB),NOSPLIT,$16-20
	MOVW	id+0(FP), R0
	MOVD	ts+8(FP), R1
	CALL	yolk∕kernel·vdsoClockGettime(SB)
	MOVW	R0, ret+16(FP)
	RET

// sigCounter is a signal handler of its own (no Go runtime): it counts
// the signal in sigCount and returns to its restorer (in X30).
TEXT ·sigCounter(SB),NOSPLIT|NOFRAME,$0
	MOVD	$·sigCount(SB), R0
again:
	LDAXR	(R0), R1
	ADD	$1, R1
	STLXR	R1, (R0), R2
	CBNZ	R2, again
	RET

// sigRestorer returns from sigCounter: rt_sigreturn.
TEXT ·sigRestorer(SB),NOSPLIT|NOFRAME,$0
	MOVD	$139, R8
	SVC	$0
	BRK

// func sigCounterPCs() (handler, restorer uintptr)
TEXT ·sigCounterPCs(SB),NOSPLIT,$0-16
	MOVD	$·sigCounter(SB), R0
	MOVD	R0, handler+0(FP)
	MOVD	$·sigRestorer(SB), R0
	MOVD	R0, restorer+8(FP)
	RET
