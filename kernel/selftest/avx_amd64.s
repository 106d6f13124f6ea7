#include "textflag.h"

// YREGS applies M to each Y register and its index.
#define YREGS(M) \
	M(Y0, 0); M(Y1, 1); M(Y2, 2); M(Y3, 3); M(Y4, 4); M(Y5, 5); M(Y6, 6); M(Y7, 7); \
	M(Y8, 8); M(Y9, 9); M(Y10, 10); M(Y11, 11); M(Y12, 12); M(Y13, 13); M(Y14, 14); M(Y15, 15)

// The pattern ymmSpin loads: Y i's four quadwords are
// 0x3000000000000001+i, 0x4000000000000001+i, 0x5000000000000001+i and
// 0x6000000000000001+i (ymmWant).
#define YPAT(y, i) \
	DATA ypat<>+(32*i)(SB)/8, $(0x3000000000000001+i); \
	DATA ypat<>+(32*i+8)(SB)/8, $(0x4000000000000001+i); \
	DATA ypat<>+(32*i+16)(SB)/8, $(0x5000000000000001+i); \
	DATA ypat<>+(32*i+24)(SB)/8, $(0x6000000000000001+i)
YREGS(YPAT)
GLOBL ypat<>(SB), RODATA, $512

#define YLOAD(y, i) VMOVDQU ypat<>+(32*i)(SB), y
#define YSTORE(y, i) VMOVDQU y, (32*i)(DI)
#define YONES(y, i) VPCMPEQB y, y, y

// func ymmSpin(out *[16][4]uint64, want, limit uint64) (seen uint64)
//
// ymmSpin loads the pattern into Y0-Y15, spins (at most limit rounds)
// until ymmSigs reaches want, and stores the Y registers to out: signal
// handlers ran meanwhile, each clobbering every Y register.
TEXT ·ymmSpin(SB),NOSPLIT,$0-32
	MOVQ	want+8(FP), BX
	MOVQ	limit+16(FP), CX
	YREGS(YLOAD)
spin:
	MOVQ	·ymmSigs(SB), AX
	CMPQ	AX, BX
	JAE	done
	PAUSE
	DECQ	CX
	JNZ	spin
done:
	MOVQ	out+0(FP), DI
	YREGS(YSTORE)
	VZEROUPPER
	XORPS	X15, X15
	MOVQ	·ymmSigs(SB), AX
	MOVQ	AX, seen+24(FP)
	RET

// ymmClobber is a signal handler of its own (no Go runtime): it sets
// every bit of Y0-Y15; with ymmFxOnly set it also removes the XSAVE
// magic number from its frame's FP state (at the ucontext's fpregs, RDX
// the ucontext), so that rt_sigreturn takes the FXSAVE image alone. It
// counts itself in ymmSigs and returns to its restorer.
TEXT ·ymmClobber(SB),NOSPLIT|NOFRAME,$0
	YREGS(YONES)
	CMPL	·ymmFxOnly(SB), $0
	JEQ	3(PC)
	MOVQ	224(DX), AX
	MOVL	$0, 464(AX)
	LOCK
	INCQ	·ymmSigs(SB)
	RET

// func ymmClobberPCs() (handler, restorer uintptr)
TEXT ·ymmClobberPCs(SB),NOSPLIT,$0-16
	LEAQ	·ymmClobber(SB), AX
	MOVQ	AX, handler+0(FP)
	LEAQ	·sigRestorer(SB), AX
	MOVQ	AX, restorer+8(FP)
	RET
