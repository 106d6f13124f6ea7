#include "textflag.h"

// func exitCall(reason, subcode uint64)
// The block is two doublewords on this frame: block-16(SP) is the
// reason, block-8(SP) the subcode.
TEXT ·exitCall(SB),NOSPLIT,$16-16
	MOVD	reason+0(FP), R2
	MOVD	subcode+8(FP), R3
	MOVD	R2, block-16(SP)
	MOVD	R3, block-8(SP)
	MOVD	$block-16(SP), R1
	MOVW	$0x18, R0 // SYS_EXIT
	HLT	$0xF000
	RET
