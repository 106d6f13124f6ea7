#include "textflag.h"

// vdsoClockGettime is __kernel_clock_gettime, called by the runtime with
// the C ABI: R0 = clock id, R1 = *timespec; returns 0 in R0. It clobbers
// only R0-R5 and the flags. Clocks as in the kernel's clock_gettime:
// REALTIME, REALTIME_COARSE and TAI are wall time, every other id is
// monotonic.
TEXT ·vdsoClockGettime(SB),NOSPLIT|NOFRAME,$0
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
