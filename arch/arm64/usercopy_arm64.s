#include "textflag.h"

// func CopyUser(dst, src, n uintptr) (left uintptr)
//
// The kernel's one routine that touches the program's memory for a
// system call: 64-byte blocks through R3-R10 (LDP/STP), then 8-byte
// words, then bytes, R0, R1 and R2 (the bytes left) advanced only after
// each step's stores. A fault at a user address on a load or store of a
// block or a word resumes at the byte loop (UserFixup), which redoes the
// faulting step's bytes one at a time; a fault in the byte loop resumes
// at the store of R2, so the result is exactly the bytes not copied. The
// first RET follows that store; UserFixup finds both at run time.
TEXT ·CopyUser(SB),NOSPLIT|NOFRAME,$0-32
	MOVD	dst+0(FP), R0
	MOVD	src+8(FP), R1
	MOVD	n+16(FP), R2
	CMP	$64, R2
	BLT	words
blocks:
	LDP	0(R1), (R3, R4)
	LDP	16(R1), (R5, R6)
	LDP	32(R1), (R7, R8)
	LDP	48(R1), (R9, R10)
	STP	(R3, R4), 0(R0)
	STP	(R5, R6), 16(R0)
	STP	(R7, R8), 32(R0)
	STP	(R9, R10), 48(R0)
	ADD	$64, R1
	ADD	$64, R0
	SUB	$64, R2
	CMP	$64, R2
	BGE	blocks
words:
	CMP	$8, R2
	BLT	bytes
	MOVD	(R1), R3
	MOVD	R3, (R0)
	ADD	$8, R1
	ADD	$8, R0
	SUB	$8, R2
	B	words
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
