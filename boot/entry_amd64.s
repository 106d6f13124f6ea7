// PVH and Multiboot2 entry for amd64.
//
// QEMU (and Xen) enter here in 32-bit protected mode with paging off, flat
// CS/DS/ES/SS, interrupts off and EBX holding the physical address of the
// hvm_start_info block. ESP is undefined. The host image tool writes this
// symbol's address into the ELF's XEN_ELFNOTE_PHYS32_ENTRY note.
//
// A Multiboot2 loader (GRUB, BIOS or UEFI) enters the same code, named by
// the entry-address tag of the Multiboot2 header the image tool writes,
// in the same state except that EAX holds 0x36d76289, EBX points at the
// Multiboot2 information, and the GDTR may be invalid: nothing here loads
// a segment register before the code's own LGDT. EAX is kept on the boot
// stack and handed to the kernel, which tells the two protocols apart by
// it.
//
// Until the far return into 64-bit code, every instruction must encode the
// same in 32-bit and 64-bit mode: only AX..DI, no REX, and no RIP-relative
// operands. ADDR32 builds absolute addresses from a CALL/POP pair instead.

#include "textflag.h"

// ADDR32 puts the absolute address of sym in reg (reg must not be DX). The
// Go assembler encodes "MOVL $sym(SB), reg" as LEA reg, [RIP+disp32]; in
// 32-bit mode the same bytes mean LEA reg, [disp32], so reg receives
// sym-(P+7) where P is the address of the POPQ, and adding P+7 corrects it.
#define ADDR32(sym, reg) \
	BYTE $0xE8; LONG $0; \
	POPQ DX; \
	MOVL $sym, reg; \
	ADDL DX, reg; \
	ADDL $7, reg

TEXT ·pvhEntry(SB),NOSPLIT|NOFRAME,$0
	CLI
	CLD
	// Borrow the four bytes below the start-info block as a stack for the
	// first CALL, and put them back afterwards.
	MOVL	BX, SP
	MOVL	-4(BX), DI
	ADDR32(·Stack+65536(SB), CX)
	MOVL	DI, -4(BX)
	MOVL	CX, SP
	PUSHQ	AX			// the boot protocol's magic: entry64 reads it

	// Early page tables: PML4 | PDPT | PD0..PD3, 4 KiB aligned, zeroed.
	ADDR32(·PageTables(SB), DI)
	ADDL	$4095, DI
	ANDL	$~4095, DI
	PUSHQ	DI			// PML4, popped for CR3
	PUSHQ	DI
	XORL	AX, AX
	MOVL	$(6*1024), CX
	REP;	STOSL
	POPQ	DI

	LEAL	0x1003(DI), AX		// PML4[0] = PDPT | P | W
	MOVL	AX, 0(DI)
	LEAL	0x2003(DI), AX		// PDPT[0..3] = PD0..PD3 | P | W
	MOVL	AX, 0x1000(DI)
	LEAL	0x3003(DI), AX
	MOVL	AX, 0x1008(DI)
	LEAL	0x4003(DI), AX
	MOVL	AX, 0x1010(DI)
	LEAL	0x5003(DI), AX
	MOVL	AX, 0x1018(DI)

	// PD entries: 2048 × 2 MiB identity pages; the top GiB (MMIO: LAPIC,
	// IOAPIC, HPET, flash) uncached.
	LEAL	0x2000(DI), SI
	MOVL	$0x83, AX		// P | W | PS
	XORL	CX, CX
pd:
	CMPL	CX, $1536
	JB	cached
	ORL	$0x18, AX		// PWT | PCD
cached:
	MOVL	AX, 0(SI)(CX*8)
	ADDL	$0x200000, AX
	INCL	CX
	CMPL	CX, $2048
	JNE	pd

	// CR4.PAE, CR3, EFER.LME|NXE|SCE, then CR0.PG|WP|NE|MP|PE.
	MOVQ	CR4, AX
	ORL	$0x20, AX
	MOVQ	AX, CR4
	POPQ	AX
	MOVQ	AX, CR3
	MOVL	$0xC0000080, CX
	RDMSR
	ORL	$0x901, AX
	WRMSR
	MOVQ	CR0, AX
	ANDL	$~0x6000000C, AX		// clear CD, NW, TS, EM
	ORL	$0x80010023, AX
	MOVQ	AX, CR0

	// Now in compatibility mode. Load the early GDT and far-return into
	// its 64-bit code segment.
	ADDR32(·gdt(SB), AX)
	SUBL	$16, SP
	MOVW	$(3*8-1), 0(SP)
	MOVL	AX, 2(SP)
	MOVL	$0, 6(SP)
	LGDT	0(SP)
	ADDL	$16, SP
	ADDR32(·entry64(SB), AX)
	PUSHQ	$0x08
	PUSHQ	AX
	RETFL

// entry64 runs in 64-bit mode on the boot stack; BX still holds the
// start-info (or Multiboot2 information) address, and the top four bytes
// of the boot stack the entry's EAX (upper halves of registers, SP's
// included, are undefined here). It calls start64 with BX = that address
// and SI = EAX.
TEXT ·entry64(SB),NOSPLIT|NOFRAME,$0
	MOVL	·Stack+65532(SB), SI
	MOVL	$0x10, AX
	BYTE $0x8e; BYTE $0xd8		// MOV DS, AX
	BYTE $0x8e; BYTE $0xc0		// MOV ES, AX
	BYTE $0x8e; BYTE $0xd0		// MOV SS, AX
	BYTE $0x8e; BYTE $0xe0		// MOV FS, AX
	BYTE $0x8e; BYTE $0xe8		// MOV GS, AX
	LEAQ	·Stack+65536(SB), SP
	MOVL	BX, BX
	JMP	yolk∕kernel·start64(SB)

// EntryPC returns the address of the PVH entry. Referencing it here keeps the
// entry in the image.
TEXT ·EntryPC(SB),NOSPLIT,$0-8
	MOVQ	$·pvhEntry(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// Early GDT: null, 64-bit code (0x08), data (0x10); accessed bits preset so
// the CPU never writes to it.
DATA ·gdt+0(SB)/8, $0
DATA ·gdt+8(SB)/8, $0x00af9b000000ffff
DATA ·gdt+16(SB)/8, $0x00cf93000000ffff
GLOBL ·gdt(SB), NOPTR, $24
