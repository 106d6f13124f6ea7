// TLB maintenance and page-table barriers on arm64 (tlb_arm64.go).

#include "textflag.h"

// func tlbiPage(va uintptr): drop va's translation on every CPU.
TEXT ·tlbiPage(SB),NOSPLIT,$0-8
	MOVD	va+0(FP), R0
	LSR	$12, R0, R0
	DSB	$10	// ISHST: the page-table write first
	TLBI	VAE1IS, R0
	DSB	$11	// ISH
	ISB	$15
	RET

// func tlbiAll(): drop every translation on every CPU.
TEXT ·tlbiAll(SB),NOSPLIT,$0
	DSB	$10
	TLBI	VMALLE1IS
	DSB	$11
	ISB	$15
	RET

// func tableSync(): make page-table writes visible to the table walker.
TEXT ·tableSync(SB),NOSPLIT,$0
	DSB	$10
	ISB	$15
	RET
