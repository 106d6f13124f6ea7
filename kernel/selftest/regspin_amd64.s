#include "textflag.h"

// Register patterns for regSpin: GPR i holds pat<>+8*i, X i holds the 16
// bytes at xpat<>+16*i.
DATA pat<>+0(SB)/8, $0x0101010101010101
DATA pat<>+8(SB)/8, $0x0202020202020202
DATA pat<>+16(SB)/8, $0x0303030303030303
DATA pat<>+24(SB)/8, $0x0404040404040404
DATA pat<>+32(SB)/8, $0x0505050505050505
DATA pat<>+40(SB)/8, $0x0606060606060606
DATA pat<>+48(SB)/8, $0x0707070707070707
DATA pat<>+56(SB)/8, $0x0808080808080808
DATA pat<>+64(SB)/8, $0x0909090909090909
DATA pat<>+72(SB)/8, $0x0a0a0a0a0a0a0a0a
DATA pat<>+80(SB)/8, $0x0b0b0b0b0b0b0b0b
DATA pat<>+88(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA pat<>+96(SB)/8, $0x0d0d0d0d0d0d0d0d
GLOBL pat<>(SB), RODATA, $104

#define XP(i, lo, hi) DATA xpat<>+(16*i)(SB)/8, lo; DATA xpat<>+(16*i+8)(SB)/8, hi
XP(0, $0x1000000000000001, $0x2000000000000001)
XP(1, $0x1000000000000002, $0x2000000000000002)
XP(2, $0x1000000000000003, $0x2000000000000003)
XP(3, $0x1000000000000004, $0x2000000000000004)
XP(4, $0x1000000000000005, $0x2000000000000005)
XP(5, $0x1000000000000006, $0x2000000000000006)
XP(6, $0x1000000000000007, $0x2000000000000007)
XP(7, $0x1000000000000008, $0x2000000000000008)
XP(8, $0x1000000000000009, $0x2000000000000009)
XP(9, $0x100000000000000a, $0x200000000000000a)
XP(10, $0x100000000000000b, $0x200000000000000b)
XP(11, $0x100000000000000c, $0x200000000000000c)
XP(12, $0x100000000000000d, $0x200000000000000d)
XP(13, $0x100000000000000e, $0x200000000000000e)
XP(14, $0x100000000000000f, $0x200000000000000f)
XP(15, $0x1000000000000010, $0x2000000000000010)
GLOBL xpat<>(SB), RODATA, $256

// The flags regSpin holds while it spins: CF PF AF ZF SF DF OF, the
// reserved bit 1 and IF (application code runs in ring 0 on yolk, where
// POPFQ sets IF too). FLAGSCHK are the ones it checks.
#define FLAGS $0xED7
#define FLAGSCHK $0xCD5

#define LOADGPR \
	MOVQ	pat<>+0(SB), AX; MOVQ	pat<>+8(SB), BX; MOVQ	pat<>+16(SB), DX; \
	MOVQ	pat<>+24(SB), SI; MOVQ	pat<>+32(SB), DI; MOVQ	pat<>+40(SB), BP; \
	MOVQ	pat<>+48(SB), R8; MOVQ	pat<>+56(SB), R9; MOVQ	pat<>+64(SB), R10; \
	MOVQ	pat<>+72(SB), R11; MOVQ	pat<>+80(SB), R12; MOVQ	pat<>+88(SB), R13; \
	MOVQ	pat<>+96(SB), R14

#define CHECK(reg, off, bit) \
	CMPQ	reg, pat<>+off(SB); JEQ 2(PC); ORQ $bit, 264(SP)

#define XCHECK(x, i) \
	MOVOU	x, 0(SP); \
	MOVQ	0(SP), CX; CMPQ	CX, xpat<>+(16*i)(SB); JEQ 2(PC); ORQ $(1<<(16+i)), 264(SP); \
	MOVQ	8(SP), CX; CMPQ	CX, xpat<>+(16*i+8)(SB); JEQ 2(PC); ORQ $(1<<(16+i)), 264(SP)

// func regSpin(rounds, spins uint64) (bad uint64)
//
// regSpin holds a known value in every general register but SP and CX
// (the LOOP counter), in X0-X15 and in the flags (DF set) while it spins,
// rounds times, through spins LOOP iterations, which change no register
// but CX and no flag; after each spin it checks them all. Asynchronous
// signals delivered meanwhile must restore every one. bad has a bit per
// register found changed: GPRs in the low 16 (in pat<> order, bit 13 the
// flags, bit 14 SP), X registers in bits 16-31.
TEXT ·regSpin(SB),NOSPLIT,$272-24
	MOVQ	$0, 264(SP)	// bad
	MOVQ	rounds+0(FP), CX
	MOVQ	CX, 256(SP)	// rounds left
	MOVQ	SP, 248(SP)	// SP to compare
	MOVOU	xpat<>+0(SB), X0
	MOVOU	xpat<>+16(SB), X1
	MOVOU	xpat<>+32(SB), X2
	MOVOU	xpat<>+48(SB), X3
	MOVOU	xpat<>+64(SB), X4
	MOVOU	xpat<>+80(SB), X5
	MOVOU	xpat<>+96(SB), X6
	MOVOU	xpat<>+112(SB), X7
	MOVOU	xpat<>+128(SB), X8
	MOVOU	xpat<>+144(SB), X9
	MOVOU	xpat<>+160(SB), X10
	MOVOU	xpat<>+176(SB), X11
	MOVOU	xpat<>+192(SB), X12
	MOVOU	xpat<>+208(SB), X13
	MOVOU	xpat<>+224(SB), X14
	MOVOU	xpat<>+240(SB), X15
round:
	MOVQ	spins+8(FP), CX
	LOADGPR
	PUSHQ	FLAGS
	POPFQ
spin:
	LOOP	spin
	PUSHFQ
	POPQ	CX
	CLD
	ANDQ	FLAGSCHK, CX
	CMPQ	CX, FLAGSCHK
	JEQ	2(PC)
	ORQ	$(1<<13), 264(SP)
	CMPQ	SP, 248(SP)
	JEQ	2(PC)
	ORQ	$(1<<14), 264(SP)
	CHECK(AX, 0, 1<<0)
	CHECK(BX, 8, 1<<1)
	CHECK(DX, 16, 1<<2)
	CHECK(SI, 24, 1<<3)
	CHECK(DI, 32, 1<<4)
	CHECK(BP, 40, 1<<5)
	CHECK(R8, 48, 1<<6)
	CHECK(R9, 56, 1<<7)
	CHECK(R10, 64, 1<<8)
	CHECK(R11, 72, 1<<9)
	CHECK(R12, 80, 1<<10)
	CHECK(R13, 88, 1<<11)
	CHECK(R14, 96, 1<<12)
	XCHECK(X0, 0)
	XCHECK(X1, 1)
	XCHECK(X2, 2)
	XCHECK(X3, 3)
	XCHECK(X4, 4)
	XCHECK(X5, 5)
	XCHECK(X6, 6)
	XCHECK(X7, 7)
	XCHECK(X8, 8)
	XCHECK(X9, 9)
	XCHECK(X10, 10)
	XCHECK(X11, 11)
	XCHECK(X12, 12)
	XCHECK(X13, 13)
	XCHECK(X14, 14)
	XCHECK(X15, 15)
	DECQ	256(SP)
	JNZ	round
	XORPS	X15, X15
	MOVQ	264(SP), AX
	MOVQ	AX, bad+16(FP)
	RET
