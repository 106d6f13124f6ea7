#include "textflag.h"

// func WaitForInterrupt(): WFI with interrupts masked (a pending one ends
// it), then take what is pending.
TEXT ·WaitForInterrupt(SB),NOSPLIT,$0
	DSB	$15
	WFI
	MSR	$2, DAIFClr
	ISB	$15
	MSR	$2, DAIFSet
	RET

// func TLBIPage(va uintptr): drop va's translation on every CPU.
TEXT ·TLBIPage(SB),NOSPLIT,$0-8
	MOVD	va+0(FP), R0
	LSR	$12, R0, R0
	DSB	$10	// ISHST: the page-table write first
	TLBI	VAE1IS, R0
	DSB	$11	// ISH
	ISB	$15
	RET

// func TLBIAll(): drop every translation on every CPU.
TEXT ·TLBIAll(SB),NOSPLIT,$0
	DSB	$10
	TLBI	VMALLE1IS
	DSB	$11
	ISB	$15
	RET

// func TLBILocal(): drop every translation on this CPU.
TEXT ·TLBILocal(SB),NOSPLIT,$0
	DSB	$14	// ST: the page-table writes first
	TLBI	VMALLE1
	DSB	$7	// NSH
	ISB	$15
	RET

// func TableSync(): make page-table writes visible to the table walker.
TEXT ·TableSync(SB),NOSPLIT,$0
	DSB	$10
	ISB	$15
	RET

// func MPIDR() uint64
TEXT ·MPIDR(SB),NOSPLIT,$0-8
	MRS	MPIDR_EL1, R0
	MOVD	R0, ret+0(FP)
	RET

// func ISAR0() uint64
TEXT ·ISAR0(SB),NOSPLIT,$0-8
	MRS	ID_AA64ISAR0_EL1, R0
	MOVD	R0, ret+0(FP)
	RET

// func SpinRelease(slot, entry uintptr): store entry at the spin-table
// slot (through its physical-map address), clean it to memory for a CPU
// that reads it with its caches off, and wake the waiting CPUs (SEV).
TEXT ·SpinRelease(SB),NOSPLIT,$0-16
	MOVD	slot+0(FP), R0
	MOVD	entry+8(FP), R1
	MOVD	R1, (R0)
	DSB	$11	// ISH
	WORD	$0xd50b7e20	// DC CIVAC, X0
	DSB	$15	// SY
	SEV
	RET

// func LoadAfterLoads(p *uint32) uint32: *p, loaded after every load
// before the call (DMB ISHLD, then a plain load), as a sequence count's
// re-check needs (Linux's smp_rmb in read_seqcount_retry); unlike a
// compare-and-swap it does not write the count's cache line.
TEXT ·LoadAfterLoads(SB),NOSPLIT,$0-12
	MOVD	p+0(FP), R0
	DMB	$9	// ISHLD
	MOVWU	(R0), R1
	MOVW	R1, ret+8(FP)
	RET
