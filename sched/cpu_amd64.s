#include "textflag.h"

// func This() *CPU
TEXT ·This(SB),NOSPLIT,$0-8
	MOVQ	0(GS), AX
	MOVQ	AX, ret+0(FP)
	RET

// func swtch(from, to *Context, g uintptr)
//
// The minimal switch: Go's ABI has no callee-saved registers besides SP, BP
// and the g register, and switches happen only at calls into this function,
// so SP (which holds the return PC) and BP are all there is to save. The
// kernel TLS g slot is pointed at the resumed task's g; the compiler reloads
// R14 from it after every call to an assembly function.
TEXT ·swtch(SB),NOSPLIT,$0-24
	MOVQ	from+0(FP), AX
	MOVQ	to+8(FP), BX
	MOVQ	gp+16(FP), CX
	MOVQ	SP, 0(AX)
	MOVQ	BP, 8(AX)
	MOVQ	CX, 24(GS)
	MOVQ	0(BX), SP
	MOVQ	8(BX), BP
	RET
