#include "textflag.h"

// vdsoClockGettime is __kernel_clock_gettime, called by the runtime with
// the C ABI: R0 = clock id, R1 = *timespec; returns 0 in R0. It clobbers
// only R0-R5 and the flags (R8 too for the system call). Clocks as in the
// kernel's clock_gettime: REALTIME, REALTIME_COARSE and TAI are wall time,
// MONOTONIC, MONOTONIC_RAW, MONOTONIC_COARSE and BOOTTIME monotonic; any
// other id (the CPU clocks, unknown ones) is the system call's, as Linux's
// vDSO falls back to it.
TEXT ·vdsoClockGettime(SB),NOSPLIT|NOFRAME,$0
	CMPW	$11, R0
	BHI	sys
	MOVD	$0x8F3, R2	// 0, 1, 4, 5, 6, 7, 11
	LSR	R0, R2, R2
	TBZ	$0, R2, sys
	ISB	$15
	MRS	CNTVCT_EL0, R2
	MOVD	·vdsoTSCBase(SB), R3
	SUB	R3, R2, R2
	MOVD	·vdsoMult(SB), R3
	UMULH	R3, R2, R4
	MUL	R3, R2, R5
	LSR	$32, R5, R5
	ORR	R4<<32, R5, R2	// (count * mult) >> 32
	CBZ	R0, wall
	CMP	$5, R0
	BEQ	wall
	CMP	$11, R0
	BNE	split
wall:
	MOVD	·vdsoWall(SB), R3
	ADD	R3, R2, R2
split:
	MOVD	$1000000000, R3
	UDIV	R3, R2, R4
	MSUB	R3, R2, R4, R5	// R5 = R2 - R4*R3
	STP	(R4, R5), (R1)
	MOVD	ZR, R0
	RET
sys:
	MOVD	$113, R8	// SYS_clock_gettime
	SVC	$0
	RET
