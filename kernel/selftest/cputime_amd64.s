#include "textflag.h"

// func vdsoClockGettime(id int32, ts *unix.Timespec) int32
TEXT ·vdsoClockGettime(SB),NOSPLIT,$0-20
	MOVL	id+0(FP), DI
	MOVQ	ts+8(FP), SI
	CALL	yolk∕kernel·vdsoClockGettime(SB)
	MOVL	AX, ret+16(FP)
	RET

// sigCounter is a signal handler of its own (no Go runtime): it counts
// the signal in sigCount and returns to its restorer.
TEXT ·sigCounter(SB),NOSPLIT|NOFRAME,$0
	LOCK
	INCQ	·sigCount(SB)
	RET

// sigRestorer returns from sigCounter: rt_sigreturn.
TEXT ·sigRestorer(SB),NOSPLIT|NOFRAME,$0
	MOVQ	$15, AX
	SYSCALL
	INT	$3

// func sigCounterPCs() (handler, restorer uintptr)
TEXT ·sigCounterPCs(SB),NOSPLIT,$0-16
	LEAQ	·sigCounter(SB), AX
	MOVQ	AX, handler+0(FP)
	LEAQ	·sigRestorer(SB), AX
	MOVQ	AX, restorer+8(FP)
	RET
