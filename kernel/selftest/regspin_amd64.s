#include "textflag.h"

// GPRS applies M to each general register regSpin holds a pattern in and
// its index i: bit i of bad, pat<>+8*i.
#define GPRS(M) \
	M(AX, 0); M(BX, 1); M(DX, 2); M(SI, 3); M(DI, 4); M(BP, 5); M(R8, 6); \
	M(R9, 7); M(R10, 8); M(R11, 9); M(R12, 10); M(R13, 11); M(R14, 12)

// XREGS applies M to each X register and its index i: bit 16+i of bad,
// xpat<>+16*i.
#define XREGS(M) \
	M(X0, 0); M(X1, 1); M(X2, 2); M(X3, 3); M(X4, 4); M(X5, 5); M(X6, 6); M(X7, 7); \
	M(X8, 8); M(X9, 9); M(X10, 10); M(X11, 11); M(X12, 12); M(X13, 13); M(X14, 14); M(X15, 15)

// Register patterns for regSpin: GPR i holds the byte i+1 in each of its
// 8 bytes, X i holds 0x1000000000000001+i in its low half and
// 0x2000000000000001+i in its high half.
#define PAT(reg, i) DATA pat<>+(8*i)(SB)/8, $(0x0101010101010101*(i+1))
GPRS(PAT)
GLOBL pat<>(SB), RODATA, $104

#define XPAT(x, i) DATA xpat<>+(16*i)(SB)/8, $(0x1000000000000001+i); DATA xpat<>+(16*i+8)(SB)/8, $(0x2000000000000001+i)
XREGS(XPAT)
GLOBL xpat<>(SB), RODATA, $256

// The flags regSpin holds while it spins: CF PF AF ZF SF DF OF, the
// reserved bit 1 and IF (application code runs in ring 0 on yolk, where
// POPFQ sets IF too). FLAGSCHK are the ones it checks.
#define FLAGS $0xED7
#define FLAGSCHK $0xCD5

#define LOAD(reg, i) MOVQ pat<>+(8*i)(SB), reg
#define XLOAD(x, i) MOVOU xpat<>+(16*i)(SB), x

// BAD sets bit in bad (264(SP)) unless the flags say equal.
#define BAD(bit) JEQ 2(PC); ORQ $(bit), 264(SP)

#define CHECK(reg, i) CMPQ reg, pat<>+(8*i)(SB); BAD(1<<i)

#define XCHECK(x, i) \
	MOVOU	x, 0(SP); \
	MOVQ	0(SP), CX; CMPQ	CX, xpat<>+(16*i)(SB); BAD(1<<(16+i)); \
	MOVQ	8(SP), CX; CMPQ	CX, xpat<>+(16*i+8)(SB); BAD(1<<(16+i))

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
	XREGS(XLOAD)
round:
	MOVQ	spins+8(FP), CX
	GPRS(LOAD)
	PUSHQ	FLAGS
	POPFQ
spin:
	LOOP	spin
	PUSHFQ
	POPQ	CX
	CLD
	ANDQ	FLAGSCHK, CX
	CMPQ	CX, FLAGSCHK
	BAD(1<<13)
	CMPQ	SP, 248(SP)
	BAD(1<<14)
	GPRS(CHECK)
	XREGS(XCHECK)
	DECQ	256(SP)
	JNZ	round
	XORPS	X15, X15
	MOVQ	264(SP), AX
	MOVQ	AX, bad+16(FP)
	RET
