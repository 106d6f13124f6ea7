// arm64 entry.
//
// QEMU virt enters an ELF kernel at its entry point at EL1 (EL2 with
// virtualization=on) with the MMU off, x0 = the DTB address or 0 (it then
// sits at the start of RAM). Secondary CPUs come from PSCI CPU_ON in the
// same state with their context id in x0. Both drop to EL1 if needed,
// enable FP/SIMD, turn the MMU on — the boot CPU first builds the early page
// tables: the first 4 GiB identity-mapped with 2 MiB blocks, the first GiB
// (MMIO on virt) as device memory but for its first 2 MiB (left unmapped
// so that nil dereferences fault), the rest normal write-back memory; the
// same root in TTBR0 and TTBR1, so that the kernel's upper-half addresses
// index the same four-level table as on amd64 — and then run on SP_EL0
// (SPSel 0: SP_EL1 is kept for exception entry), the boot CPU on Stack.
//
// Raspberry Pi 3 (kernel8.img, yolk build -board rpi3): the firmware (or
// QEMU raspi3b) loads the raw image at 0x80000, whose first word the image
// tool made a branch to entryRPi3, and enters it at EL2 with x0 = the DTB.
// Secondaries wait in the firmware's spin loop until the boot CPU writes
// secondaryRPi3's address to their spin-table slot; they start with x0 = 0
// and find their CPU number by MPIDR (apStart). The Pi's RAM starts at 0:
// the early tables map [0, 2 MiB) with 4 KiB pages, [0, 0x80000) left
// unmapped as the nil guard, then normal memory up to the peripherals at
// 0x3F000000 and device memory from there to 4 GiB (the local interrupt
// controller is at 0x40000000). RAM is not zeroed on real hardware, so the
// boot CPU clears the BSS first (with the MMU off: the tables live there).
//
// Registers across the EL2 → EL1 drop: R19 the DTB or context (-1: find
// it by MPIDR), R21 1 for a secondary CPU, R22 the board (Board).

#include "textflag.h"
#include "board_arm64.h"

#define SCTLR_EL1_RES1	0x30d00800
#define SCTLR_MMU	(SCTLR_EL1_RES1|1|4|0x1000)	// + M, C, I
// Block descriptors: valid, AF; device: AttrIndx 1, PXN|UXN; normal:
// AttrIndx 0, inner shareable.
#define BLOCK_DEVICE	0x60000000000405
#define BLOCK_NORMAL	0x701
// TCR_EL1: T0SZ = T1SZ = 16 (48-bit), 4 KiB granules, write-back
// walks, inner shareable; IPS from ID_AA64MMFR0_EL1.
#define TCR_BASE	0xB5103510
// MAIR_EL1: attribute 0 normal write-back, 1 device nGnRnE.
#define MAIR_VALUE	0xFF

// Page descriptor: valid, page, AF, inner shareable, AttrIndx 0.
#define PAGE_NORMAL	0x703

TEXT ·entry(SB),NOSPLIT|NOFRAME,$0
	MSR	$0xf, DAIFSet
	MOVD	R0, R19
	MOVD	$0, R21
	MOVD	$BoardVirt, R22
	B	·dropEL(SB)

TEXT ·secondary(SB),NOSPLIT|NOFRAME,$0
	MSR	$0xf, DAIFSet
	MOVD	R0, R19
	MOVD	$1, R21
	MOVD	$BoardVirt, R22
	B	·dropEL(SB)

TEXT ·entryRPi3(SB),NOSPLIT|NOFRAME,$0
	MSR	$0xf, DAIFSet
	MOVD	R0, R19
	MOVD	$0, R21
	MOVD	$BoardRPi3, R22
	B	·dropEL(SB)

TEXT ·secondaryRPi3(SB),NOSPLIT|NOFRAME,$0
	MSR	$0xf, DAIFSet
	MOVD	$-1, R19
	MOVD	$1, R21
	MOVD	$BoardRPi3, R22
	B	·dropEL(SB)

// dropEL continues at entryEL1, at EL1.
TEXT ·dropEL(SB),NOSPLIT|NOFRAME,$0
	MRS	CurrentEL, R1
	UBFX	$2, R1, $2, R1
	CMP	$2, R1
	BEQ	el2
	B	·entryEL1(SB)
el2:
	// EL2: EL1 is AArch64 and owns the counters and timers (the
	// virtual count equals the physical one).
	MOVD	$(1<<31), R2
	WORD	$0xd51c1102	// MSR HCR_EL2, X2
	WORD	$0xd53ce102	// MRS X2, CNTHCTL_EL2
	ORR	$3, R2, R2
	WORD	$0xd51ce102	// MSR CNTHCTL_EL2, X2
	WORD	$0xd51ce07f	// MSR CNTVOFF_EL2, XZR
	// No FP/SIMD or system-register traps to EL2 (CPTR_EL2.TFP clear,
	// RES1 bits set; HSTR_EL2 = 0), and EL1's MIDR/MPIDR reads see the
	// real ones (VPIDR_EL2, VMPIDR_EL2): set, not left to the firmware.
	MOVD	$0x33ff, R2
	WORD	$0xd51c1142	// MSR CPTR_EL2, X2
	WORD	$0xd51c117f	// MSR HSTR_EL2, XZR
	MRS	MIDR_EL1, R2
	WORD	$0xd51c0002	// MSR VPIDR_EL2, X2
	MRS	MPIDR_EL1, R2
	WORD	$0xd51c00a2	// MSR VMPIDR_EL2, X2
	// A GICv3's system registers are usable at EL1 only if EL2 allows
	// it: ICC_SRE_EL2.Enable|SRE.
	MRS	ID_AA64PFR0_EL1, R2
	UBFX	$24, R2, $4, R2
	CBZ	R2, nogic3
	WORD	$0xd53cc9a2	// MRS X2, ICC_SRE_EL2
	ORR	$9, R2, R2
	WORD	$0xd51cc9a2	// MSR ICC_SRE_EL2, X2
	ISB	$15
nogic3:
	MOVD	$SCTLR_EL1_RES1, R2
	MSR	R2, SCTLR_EL1
	MOVD	$0x3c5, R2	// EL1h, DAIF masked
	WORD	$0xd51c4002	// MSR SPSR_EL2, X2
	MOVD	$·entryEL1(SB), R2
	WORD	$0xd51c4022	// MSR ELR_EL2, X2
	ERET

TEXT ·entryEL1(SB),NOSPLIT|NOFRAME,$0
	MSR	$0, SPSel
	// FP/SIMD on at EL1 (CPACR_EL1.FPEN).
	MOVD	$(3<<20), R2
	MSR	R2, CPACR_EL1
	ISB	$15

	MOVD	$·PageTables(SB), R20
	ADD	$4095, R20, R20
	AND	$~4095, R20, R20
	CBNZ	R21, mmu

	CMP	$BoardRPi3, R22
	BNE	tables
	// The Pi's BSS (16-byte aligned by the linker).
	MOVD	$runtime·bss(SB), R2
	MOVD	$runtime·end(SB), R3
bss:
	CMP	R3, R2
	BHS	tables
	STP.P	(ZR, ZR), 16(R2)
	B	bss

tables:
	// Boot CPU: the early page tables. L0 | L1 | L2 × 4 | L3, zeroed.
	MOVD	R20, R2
	MOVD	$(7*4096/16), R3
zero:
	STP.P	(ZR, ZR), 16(R2)
	SUB	$1, R3, R3
	CBNZ	R3, zero
	ADD	$0x1000, R20, R2	// L1
	ORR	$3, R2, R3
	MOVD	R3, (R20)
	ADD	$0x2000, R20, R4	// L2 tables, contiguous
	ORR	$3, R4, R3
	MOVD	R3, 0(R2)
	ADD	$0x1000, R3, R3
	MOVD	R3, 8(R2)
	ADD	$0x1000, R3, R3
	MOVD	R3, 16(R2)
	ADD	$0x1000, R3, R3
	MOVD	R3, 24(R2)
	MOVD	$1, R5	// entry 0 stays invalid: the nil guard
	MOVD	$BLOCK_DEVICE, R8
	MOVD	$BLOCK_NORMAL, R9
	MOVD	$512, R11	// first normal block (virt: RAM from 1 GiB)
	CMP	$BoardRPi3, R22
	BNE	l2
	// Pi: [0, 2 MiB) through the L3 table, [0x80000, 2 MiB) mapped;
	// normal memory below the peripherals (block 504), device above.
	ADD	$0x6000, R20, R6	// L3
	ORR	$3, R6, R3
	MOVD	R3, (R4)
	MOVD	$(0x80000>>12), R7
l3:
	LSL	$12, R7, R3
	ORR	$PAGE_NORMAL, R3, R3
	MOVD	R3, (R6)(R7<<3)
	ADD	$1, R7, R7
	CMP	$512, R7
	BNE	l3
	MOVD	R9, R10	// swap: normal below block 504, device from there
	MOVD	R8, R9
	MOVD	R10, R8
	MOVD	$(0x3F000000>>21), R11
l2:
	LSL	$21, R5, R7
	CMP	R11, R5
	CSEL	LO, R8, R9, R10
	ORR	R10, R7, R7
	MOVD	R7, (R4)(R5<<3)
	ADD	$1, R5, R5
	CMP	$2048, R5
	BNE	l2
	DSB	$15

mmu:
	MOVD	$MAIR_VALUE, R2
	MSR	R2, MAIR_EL1
	MRS	ID_AA64MMFR0_EL1, R2
	AND	$7, R2, R2
	CMP	$5, R2
	MOVD	$5, R3
	CSEL	HI, R3, R2, R2
	LSL	$32, R2, R2
	MOVD	$TCR_BASE, R3
	ORR	R2, R3, R3
	MSR	R3, TCR_EL1
	MSR	R20, TTBR0_EL1
	MSR	R20, TTBR1_EL1
	ISB	$15
	TLBI	VMALLE1
	DSB	$15
	ISB	$15
	MOVD	$SCTLR_MMU, R2
	MSR	R2, SCTLR_EL1
	ISB	$15

	MOVD	R19, R0
	CBNZ	R21, second
	MOVW	R22, ·Board(SB)
	MOVD	$·Stack+65536(SB), R2
	MOVD	R2, RSP
	B	yolk∕kernel·start(SB)
second:
	B	yolk∕kernel·apStart(SB)

// func EntryPC() uintptr
TEXT ·EntryPC(SB),NOSPLIT,$0-8
	MOVD	$·entry(SB), R0
	MOVD	R0, ret+0(FP)
	RET

// func SecondaryPC() uintptr
TEXT ·SecondaryPC(SB),NOSPLIT,$0-8
	MOVD	$·secondary(SB), R0
	MOVD	R0, ret+0(FP)
	RET

// func RPi3EntryPC() uintptr
TEXT ·RPi3EntryPC(SB),NOSPLIT,$0-8
	MOVD	$·entryRPi3(SB), R0
	MOVD	R0, ret+0(FP)
	RET

// func RPi3SecondaryPC() uintptr
TEXT ·RPi3SecondaryPC(SB),NOSPLIT,$0-8
	MOVD	$·secondaryRPi3(SB), R0
	MOVD	R0, ret+0(FP)
	RET
