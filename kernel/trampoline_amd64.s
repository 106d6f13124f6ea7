// The application processors' start-up code. A STARTUP IPI starts a CPU in
// 16-bit real mode at CS:IP = page<<8:0; smpStart copies apTrampoline to
// that page (below 1 MiB, identity-mapped) and fills in its data area. The
// code goes from real mode to 32-bit protected mode and from there, as the
// architecture prescribes, to long mode with the boot CPU's page tables,
// and jumps to apEntry64 in the kernel's text. The Go assembler has no
// 16-bit mode, so the first two stages are written as bytes, each line
// with its instruction; TestTrampoline disassembles them.

#include "textflag.h"

// Offsets in the trampoline page (trampoline_amd64.go has the same).
#define T_PROT32 34	// first 32-bit instruction
#define T_GDTR 0xC0	// limit (2 bytes), base (4 bytes)
#define T_FAR32 0xC8	// 32-bit offset, selector: protected-mode entry
#define T_CR3 0xD0	// page-table root (below 4 GiB)
#define T_FAR64 0xD8	// 32-bit offset, selector: apEntry64

TEXT ·apTrampoline(SB),NOSPLIT|NOFRAME,$0
	// 16-bit real mode.
	BYTE $0xFA				// cli
	BYTE $0xFC				// cld
	BYTE $0x8C; BYTE $0xC8			// mov ax, cs
	BYTE $0x8E; BYTE $0xD8			// mov ds, ax
	BYTE $0x66; BYTE $0x31; BYTE $0xDB	// xor ebx, ebx
	BYTE $0x8C; BYTE $0xCB			// mov bx, cs
	BYTE $0x66; BYTE $0xC1; BYTE $0xE3; BYTE $0x04	// shl ebx, 4: EBX = the page's address
	BYTE $0x66; BYTE $0x0F; BYTE $0x01; BYTE $0x16; WORD $T_GDTR	// lgdt o32 [T_GDTR]
	BYTE $0x0F; BYTE $0x20; BYTE $0xC0	// mov eax, cr0
	BYTE $0x0C; BYTE $0x01			// or al, 1: PE
	BYTE $0x0F; BYTE $0x22; BYTE $0xC0	// mov cr0, eax
	BYTE $0x66; BYTE $0xFF; BYTE $0x2E; WORD $T_FAR32	// jmp far o32 [T_FAR32]: 0x18:page+T_PROT32

	// 32-bit protected mode, flat segments. Offset T_PROT32.
	BYTE $0x66; BYTE $0xB8; WORD $0x10	// mov ax, 0x10
	BYTE $0x8E; BYTE $0xD8			// mov ds, ax
	BYTE $0x8E; BYTE $0xC0			// mov es, ax
	BYTE $0x8E; BYTE $0xD0			// mov ss, ax
	BYTE $0x0F; BYTE $0x20; BYTE $0xE0	// mov eax, cr4
	BYTE $0x0D; LONG $0x00000620		// or eax, PAE|OSFXSR|OSXMMEXCPT
	BYTE $0x0F; BYTE $0x22; BYTE $0xE0	// mov cr4, eax
	BYTE $0x8B; BYTE $0x83; LONG $T_CR3	// mov eax, [ebx+T_CR3]
	BYTE $0x0F; BYTE $0x22; BYTE $0xD8	// mov cr3, eax
	BYTE $0xB9; LONG $0xC0000080		// mov ecx, IA32_EFER
	BYTE $0x0F; BYTE $0x32			// rdmsr
	BYTE $0x0D; LONG $0x00000901		// or eax, SCE|LME|NXE
	BYTE $0x0F; BYTE $0x30			// wrmsr
	BYTE $0x0F; BYTE $0x20; BYTE $0xC0	// mov eax, cr0
	BYTE $0x25; LONG $0x9FFFFFF3		// and eax, ~(CD|NW|TS|EM)
	BYTE $0x0D; LONG $0x80010023		// or eax, PG|WP|NE|MP|PE
	BYTE $0x0F; BYTE $0x22; BYTE $0xC0	// mov cr0, eax: long mode, compatibility
	BYTE $0xFF; BYTE $0xAB; LONG $T_FAR64	// jmp far [ebx+T_FAR64]: 0x08:apEntry64
	// 100 bytes (trampolineLen)

// apEntry64 runs in 64-bit mode with the trampoline's GDT, on no stack. It
// finds its CPU index by its APIC ID, takes the stack and the per-CPU block
// the boot CPU prepared for it (GS; FS at the block's kernel TLS, whose g
// slot names the CPU's idle task) and calls apMain(index).
TEXT ·apEntry64(SB),NOSPLIT|NOFRAME,$0
	MOVL	$0x10, AX
	BYTE $0x8e; BYTE $0xd8		// MOV DS, AX
	BYTE $0x8e; BYTE $0xc0		// MOV ES, AX
	BYTE $0x8e; BYTE $0xd0		// MOV SS, AX
	BYTE $0x8e; BYTE $0xe0		// MOV FS, AX
	BYTE $0x8e; BYTE $0xe8		// MOV GS, AX
	BYTE $0xDB; BYTE $0xE3		// FNINIT
	MOVL	$1, AX
	XORL	CX, CX
	CPUID
	SHRL	$24, BX			// initial APIC ID
	XORL	R9, R9
	LEAQ	·apIRQ(SB), SI
find:
	CMPL	R9, ·apCount(SB)
	JAE	lost
	CMPL	BX, (SI)(R9*4)
	JEQ	found
	INCL	R9
	JMP	find
found:
	LEAQ	·apStack(SB), SI
	MOVQ	(SI)(R9*8), SP
	LEAQ	·apCPU(SB), SI
	MOVQ	(SI)(R9*8), R8
	MOVQ	R8, AX
	MOVQ	R8, DX
	SHRQ	$32, DX
	MOVL	$0xC0000101, CX		// IA32_GS_BASE
	WRMSR
	LEAQ	32(R8), AX	// CPU.TLS
	MOVQ	AX, DX
	SHRQ	$32, DX
	MOVL	$0xC0000100, CX		// IA32_FS_BASE
	WRMSR
	SUBQ	$16, SP
	MOVQ	R9, 0(SP)
	CALL	·apMain(SB)
lost:
	// Not a CPU the boot CPU started (or apMain returned): stop. The boot
	// CPU reports CPUs that never check in.
	CLI
	HLT
	JMP	lost

// func trampolineCode() uintptr
TEXT ·trampolineCode(SB),NOSPLIT,$0-8
	MOVQ	$·apTrampoline(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// func apEntry64PC() uintptr
TEXT ·apEntry64PC(SB),NOSPLIT,$0-8
	MOVQ	$·apEntry64(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
