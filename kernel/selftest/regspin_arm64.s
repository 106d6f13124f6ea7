#include "textflag.h"

// GPRS applies M to each general register regSpin holds a pattern in and
// its index i (bit i of bad): R0-R17 and R19-R25 (R18 is the platform
// register, R26 the loop counter, R27-R30 the assembler's temporary, g,
// the frame pointer and the link register).
#define GPRS(M) \
	M(R0, 0); M(R1, 1); M(R2, 2); M(R3, 3); M(R4, 4); M(R5, 5); M(R6, 6); M(R7, 7); M(R8, 8); \
	M(R9, 9); M(R10, 10); M(R11, 11); M(R12, 12); M(R13, 13); M(R14, 14); M(R15, 15); M(R16, 16); \
	M(R17, 17); M(R19, 19); M(R20, 20); M(R21, 21); M(R22, 22); M(R23, 23); M(R24, 24); M(R25, 25)

// VREGS applies M to each V register and its index i (bit 32+i of bad).
#define VREGS(M) \
	M(V0, 0); M(V1, 1); M(V2, 2); M(V3, 3); M(V4, 4); M(V5, 5); M(V6, 6); M(V7, 7); \
	M(V8, 8); M(V9, 9); M(V10, 10); M(V11, 11); M(V12, 12); M(V13, 13); M(V14, 14); M(V15, 15); \
	M(V16, 16); M(V17, 17); M(V18, 18); M(V19, 19); M(V20, 20); M(V21, 21); M(V22, 22); M(V23, 23); \
	M(V24, 24); M(V25, 25); M(V26, 26); M(V27, 27); M(V28, 28); M(V29, 29); M(V30, 30); M(V31, 31)

// The patterns: Ri holds the byte i+1 in each of its 8 bytes, both halves
// of Vi hold 0x1000000000000001+i.
#define GPAT(i) $(0x0101010101010101*(i+1))
#define VPAT(i) $(0x1000000000000001+i)

#define LOAD(r, i) MOVD GPAT(i), r
#define VLOAD(v, i) MOVD VPAT(i), R26; VDUP R26, v.D2

// BAD sets bit in bad unless the flags say equal.
#define BAD(bit) \
	BEQ	4(PC); \
	MOVD	bad-8(SP), R26; \
	ORR	$(1<<(bit)), R26, R26; \
	MOVD	R26, bad-8(SP)

// EXPECT sets bit in bad unless r holds pat.
#define EXPECT(r, pat, bit) MOVD pat, R26; CMP R26, r; BAD(bit)

#define CHECK(r, i) EXPECT(r, GPAT(i), i)

// VCHECK checks both halves of v, through R0 (checked already).
#define VCHECK(v, i) \
	VMOV	v.D[0], R0; EXPECT(R0, VPAT(i), 32+i); \
	VMOV	v.D[1], R0; EXPECT(R0, VPAT(i), 32+i)

// func regSpin(rounds, spins uint64) (bad uint64)
//
// regSpin holds a known value in R0-R17 and R19-R25, in V0-V31 and in the
// condition flags (NZCV) while it spins, rounds times, through spins
// iterations of a loop that changes only R26; after each spin it checks
// them all, and SP. Asynchronous signals delivered meanwhile must restore
// every one. bad has a bit per register found changed (regSpinBits).
TEXT ·regSpin(SB),NOSPLIT,$32-24
	MOVD	ZR, bad-8(SP)
	MOVD	rounds+0(FP), R26
	MOVD	R26, left-16(SP)
	MOVD	RSP, R26
	MOVD	R26, sp-24(SP)
	VREGS(VLOAD)
round:
	GPRS(LOAD)
	MOVD	$0xA0000000, R26
	MSR	R26, NZCV
	MOVD	spins+8(FP), R26
spin:
	SUB	$1, R26, R26
	CBNZ	R26, spin
	MRS	NZCV, R26
	CMP	$0xA0000000, R26
	BAD(28)
	MOVD	sp-24(SP), R26
	CMP	R26, RSP
	BAD(29)
	GPRS(CHECK)
	VREGS(VCHECK)
	MOVD	left-16(SP), R26
	SUB	$1, R26, R26
	MOVD	R26, left-16(SP)
	CBNZ	R26, round
	MOVD	bad-8(SP), R0
	MOVD	R0, bad+16(FP)
	RET
