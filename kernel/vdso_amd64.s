#include "textflag.h"

// vdsoClockGettime is __vdso_clock_gettime, called by the runtime with the
// C ABI: DI = clock id, SI = *timespec; returns 0 in AX. It clobbers only
// AX, CX, DX and the flags (R11 too for the system call). Clocks as in the
// kernel's clock_gettime: REALTIME, REALTIME_COARSE and TAI are wall
// time, MONOTONIC, MONOTONIC_RAW, MONOTONIC_COARSE and BOOTTIME monotonic;
// any other id (the CPU clocks, unknown ones) is the system call's, as
// Linux's vDSO falls back to it.
TEXT ·vdsoClockGettime(SB),NOSPLIT|NOFRAME,$0
	CMPL	DI, $11
	JHI	sys
	MOVL	$0x8F3, AX	// 0, 1, 4, 5, 6, 7, 11
	BTL	DI, AX
	JCC	sys
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	SUBQ	·vdsoTSCBase(SB), AX
	MULQ	·vdsoMult(SB)
	SHRQ	$32, DX, AX
	CMPL	DI, $0
	JEQ	wall
	CMPL	DI, $5
	JEQ	wall
	CMPL	DI, $11
	JNE	split
wall:
	ADDQ	·vdsoWall(SB), AX
split:
	MOVQ	$1000000000, CX
	XORL	DX, DX
	DIVQ	CX
	MOVQ	AX, 0(SI)
	MOVQ	DX, 8(SI)
	XORL	AX, AX
	RET
sys:
	MOVL	$228, AX	// SYS_clock_gettime
	SYSCALL
	RET
