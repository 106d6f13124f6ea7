#include "textflag.h"

// func CopyUser(dst, src, n uintptr) (left uintptr)
//
// The kernel's one routine that touches the program's memory for a
// system call: 8 bytes at a time, then single bytes, R2 the bytes left.
// Every load and store lies before the instruction that stores R2 (the
// fixup), which the first RET follows; UserFixup finds them at run time,
// and a fault on one at a user address resumes at the fixup.
TEXT ·CopyUser(SB),NOSPLIT|NOFRAME,$0-32
	MOVD	dst+0(FP), R0
	MOVD	src+8(FP), R1
	MOVD	n+16(FP), R2
	CMP	$8, R2
	BLT	bytes
words:
	MOVD	(R1), R3
	MOVD	R3, (R0)
	ADD	$8, R1
	ADD	$8, R0
	SUB	$8, R2
	CMP	$8, R2
	BGE	words
bytes:
	CBZ	R2, done
	MOVBU	(R1), R3
	MOVB	R3, (R0)
	ADD	$1, R1
	ADD	$1, R0
	SUB	$1, R2
	B	bytes
done:
	MOVD	R2, left+24(FP)
	RET

// func copyUserPC() uintptr
TEXT ·copyUserPC(SB),NOSPLIT,$0-8
	MOVD	$·CopyUser(SB), R0
	MOVD	R0, ret+0(FP)
	RET
