// Kernel entry points: the 64-bit start from boot, SYSCALL, traps, and the
// return to user code. Kernel code runs with interrupts off: SYSCALL clears
// IF (FMASK), traps enter through interrupt gates, and only the return to
// application code turns them back on.

#include "textflag.h"

// ADDRESS(NAME, SYM) defines func NAME() uintptr, the address of SYM: the
// kernel's own entry points and the runtime's symbols Go code cannot name.
#define ADDRESS(NAME, SYM) \
	TEXT NAME(SB),NOSPLIT,$0-8; \
	MOVQ	$SYM(SB), AX; \
	MOVQ	AX, ret+0(FP); \
	RET

// Regs frame, as pushed (see regs.go): FSBase, R15..AX, Vector, Error,
// IP, CS, Flags, SP, SS.
#define PUSHALL \
	PUSHQ AX; PUSHQ BX; PUSHQ CX; PUSHQ DX; PUSHQ SI; PUSHQ DI; PUSHQ BP; \
	PUSHQ R8; PUSHQ R9; PUSHQ R10; PUSHQ R11; PUSHQ R12; PUSHQ R13; PUSHQ R14; PUSHQ R15

#define POPALL \
	POPQ R15; POPQ R14; POPQ R13; POPQ R12; POPQ R11; POPQ R10; POPQ R9; POPQ R8; \
	POPQ BP; POPQ DI; POPQ SI; POPQ DX; POPQ CX; POPQ BX; POPQ AX

// SETFS_AX sets the FS base to AX (clobbers CX, DX).
#define SETFS_AX \
	CMPB	·fsgsbase(SB), $0; \
	JEQ	3(PC); \
	WRFSBASEQ	AX; \
	JMP	5(PC); \
	MOVQ	AX, DX; \
	SHRQ	$32, DX; \
	MOVL	$0xC0000100, CX; \
	WRMSR

// FPSAVE saves the FP state at (R12), 64-byte aligned, fpStateSize bytes:
// XSAVE of x87, SSE and AVX (xcr0) or, without XSAVE (xsaveOn), FXSAVE.
// XSAVE writes only XSTATE_BV's bits for the state it saves (the others
// stay as they were) and nothing else of its header, and XRSTOR faults on
// other bits set there or unless the header's next 16 bytes are zero: so
// all three words are zeroed first (the area is on a stack). Clobbers AX,
// DX.
#define FPSAVE \
	CMPB	·xsaveOn(SB), $0; \
	JEQ	8(PC); \
	MOVQ	$0, 512(R12); \
	MOVQ	$0, 520(R12); \
	MOVQ	$0, 528(R12); \
	MOVL	$7, AX; \
	XORL	DX, DX; \
	XSAVE64	(R12); \
	JMP	2(PC); \
	FXSAVE64	(R12)

// FPRESTORE loads the FP state FPSAVE saved at (R12). Clobbers AX, DX.
#define FPRESTORE \
	CMPB	·xsaveOn(SB), $0; \
	JEQ	5(PC); \
	MOVL	$7, AX; \
	XORL	DX, DX; \
	XRSTOR64	(R12); \
	JMP	2(PC); \
	FXRSTOR64	(R12)

// FPAREA points R12 at the FP state's area in the fpFrame (896) bytes
// at SP: 64-byte aligned.
#define FPAREA \
	LEAQ	63(SP), R12; \
	ANDQ	$~63, R12

// GETFS_AX reads the FS base into AX (clobbers CX, DX).
#define GETFS_AX \
	CMPB	·fsgsbase(SB), $0; \
	JEQ	3(PC); \
	RDFSBASEQ	AX; \
	JMP	5(PC); \
	MOVL	$0xC0000100, CX; \
	RDMSR; \
	SHLQ	$32, DX; \
	ORQ	DX, AX

// start64 is entered from boot in 64-bit mode on the boot stack with BX
// holding the PVH start-info (or Multiboot2 information) address and SI
// the entry's EAX (Multiboot2's magic, or whatever PVH left there).
TEXT ·start64(SB),NOSPLIT|NOFRAME,$0
	// SSE: CR4.OSFXSR | OSXMMEXCPT (boot cleared CR0.EM and set CR0.MP).
	MOVQ	CR4, AX
	ORQ	$0x600, AX
	MOVQ	AX, CR4
	BYTE $0xDB; BYTE $0xE3		// FNINIT

	// A g for the boot stack, and an FS base whose -8 slot names it, so
	// that Go function prologues work before the scheduler exists.
	LEAQ	·bootG(SB), AX
	MOVQ	AX, ·bootTLS(SB)
	LEAQ	yolk∕boot·Stack(SB), CX
	MOVQ	CX, 0(AX)
	LEAQ	65536(CX), DX
	MOVQ	DX, 8(AX)
	ADDQ	$1024, CX
	MOVQ	CX, 16(AX)
	MOVQ	CX, 24(AX)
	LEAQ	·bootTLS+8(SB), AX
	MOVQ	AX, DX
	SHRQ	$32, DX
	MOVL	$0xC0000100, CX
	WRMSR

	SUBQ	$16, SP
	MOVQ	BX, 0(SP)
	MOVQ	SI, 8(SP)
	CALL	·kmain(SB)
hang:
	CLI
	HLT
	JMP	hang

// syscallEntry is the SYSCALL target (LSTAR). RCX holds the return RIP, R11
// the flags; SP is still the caller's. It builds a Regs frame on the current
// task's kernel stack, switches FS to the CPU's kernel TLS block and calls
// syscall(r). Everything but RAX (the result), RCX and R11 is preserved, as
// the Linux ABI promises.
TEXT ·syscallEntry(SB),NOSPLIT|NOFRAME,$0
	MOVQ	SP, 8(GS)	// CPU.UserSP
	MOVQ	16(GS), SP	// CPU.KStackTop
	PUSHQ	$0x10
	PUSHQ	8(GS)	// CPU.UserSP
	PUSHQ	R11
	PUSHQ	$0x08
	PUSHQ	CX
	PUSHQ	$0
	PUSHQ	$-1
	PUSHALL
	PUSHQ	$0
	MOVQ	0(GS), AX	// CPU.Self
	ADDQ	$32, AX	// CPU.TLS
	SETFS_AX
	MOVQ	SP, AX
	SUBQ	$16, SP
	MOVQ	AX, 0(SP)
	CALL	·syscall(SB)
	ADDQ	$16, SP
	// rt_sigreturn marks its frame (Vector != -1): every register must be
	// restored, the FP state from the address in Error, so leave by IRETQ.
	CMPQ	128(SP), $-1
	JEQ	fast
	MOVQ	136(SP), R12
	TESTQ	R12, R12
	JZ	full
	FPRESTORE
full:
	JMP	·trapReturn(SB)
fast:
	JMP	·userReturn(SB)

// userReturn returns to user code from the Regs frame at SP: FS base from
// the frame, registers, then interrupts on and a plain jump (no SYSRET: we
// stay in ring 0). RCX and R11 are clobbered, as by Linux's SYSRET.
TEXT ·userReturn(SB),NOSPLIT|NOFRAME,$0
	POPQ	AX
	SETFS_AX
	POPALL
	ADDQ	$16, SP
	MOVQ	0(SP), CX
	MOVQ	16(SP), R11
	MOVQ	24(SP), SP
	// Application code runs with interrupts on. STI takes effect after the
	// next instruction, so none arrives before the jump: the first one
	// interrupts application code.
	STI
	JMP	CX

// forkret is where a new task first runs: its kernel stack holds a Regs
// frame for its user context. Run the pending switch finalizer, then enter
// user code.
TEXT ·forkret(SB),NOSPLIT|NOFRAME,$0
	CALL	·taskEntry(SB)
	JMP	·userReturn(SB)

// kthread is where a kernel task (kthread.go) first runs, at the top of
// its kernel stack: its body runs the pending switch finalizer first and
// never returns.
TEXT ·kthread(SB),NOSPLIT|NOFRAME,$0
	CALL	·kthreadMain(SB)
	CALL	·kthreadReturned(SB)

// trapCommon is reached from the vector stubs on the IST stack with the
// vector and error code pushed. It saves everything, switches FS to the
// CPU's trap TLS block, calls trap(r) and returns with IRETQ.
TEXT ·trapCommon(SB),NOSPLIT|NOFRAME,$0
	PUSHALL
	// Go code expects the direction flag clear; the trap may have stopped a
	// backward copy (IRETQ restores the flag).
	CLD
	GETFS_AX
	PUSHQ	AX
	MOVQ	0(GS), AX	// CPU.Self
	ADDQ	$48, AX	// CPU.TrapTLS
	SETFS_AX
	// The interrupted code's FP state: the handler's Go code may use its
	// registers. trap finds the area at (r-fpFrame+63)&^63 (fxArea).
	MOVQ	SP, BX
	SUBQ	$896, SP
	FPAREA
	FPSAVE
	// Point the trap g's stack bounds at this nesting level's 8 KiB slice
	// of the trap stack (the slices are 8 KiB aligned), keeping the outer
	// level's lower bound to restore.
	PUSHQ	56(GS)	// CPU.TrapG.StackLo
	MOVQ	BX, AX
	ANDQ	$~8191, AX
	CALL	trapBounds<>(SB)
	SUBQ	$16, SP
	MOVQ	BX, 0(SP)
	CALL	·trap(SB)
	MOVBLZX	8(SP), BX	// trap's result: go on through the task (preemptUser)
	ADDQ	$16, SP
	POPQ	AX
	CALL	trapBounds<>(SB)
	FPAREA
	FPRESTORE
	TESTQ	BX, BX
	JNZ	totask
	ADDQ	$896, SP
	JMP	·trapReturn(SB)
totask:
	// The trap came from application code, so the current task's kernel
	// stack is empty: move the frame to its top, the FP/SSE state (just
	// restored) below it, leave the trap stack and continue as the task,
	// in kernel TLS, like a system call. The task may switch (preemption)
	// and resume on another CPU; it returns to application code with
	// every register from the frame.
	LEAQ	896(SP), SI	// the frame
	MOVQ	16(GS), DI	// CPU.KStackTop
	SUBQ	$184, DI	// regsSize
	MOVQ	DI, BX
	MOVQ	$23, CX
	REP;	MOVSQ
	MOVQ	BX, SP
	SUBQ	$896, SP
	FPAREA
	FPSAVE
	MOVQ	0(GS), AX	// CPU.Self
	ADDQ	$32, AX	// CPU.TLS
	SETFS_AX
	SUBQ	$16, SP
	MOVQ	BX, 0(SP)
	CALL	·preemptUser(SB)
	ADDQ	$16, SP
	FPAREA
	FPRESTORE
	ADDQ	$896, SP
	JMP	·trapReturn(SB)

// trapBounds sets the trap g's stack to [AX, AX+8 KiB) (clobbers DX).
TEXT trapBounds<>(SB),NOSPLIT|NOFRAME,$0
	MOVQ	AX, 56(GS)	// CPU.TrapG.StackLo
	LEAQ	8192(AX), DX
	MOVQ	DX, 64(GS)	// CPU.TrapG.StackHi
	LEAQ	928(AX), DX
	MOVQ	DX, 72(GS)	// CPU.TrapG.Guard0
	MOVQ	DX, 80(GS)	// CPU.TrapG.Guard1
	RET

// trapReturn restores the Regs frame at SP and returns with IRETQ.
TEXT ·trapReturn(SB),NOSPLIT|NOFRAME,$0
	POPQ	AX
	SETFS_AX
	POPALL
	ADDQ	$16, SP
	IRETQ

// func reloadSegments()
TEXT ·reloadSegments(SB),NOSPLIT,$0
	MOVL	$0x10, AX
	BYTE $0x8e; BYTE $0xd8		// MOV DS, AX
	BYTE $0x8e; BYTE $0xc0		// MOV ES, AX
	BYTE $0x8e; BYTE $0xd0		// MOV SS, AX
	// Reload CS with a far return.
	POPQ	AX
	PUSHQ	$0x08
	PUSHQ	AX
	BYTE $0x48; BYTE $0xcb		// RETFQ
	
// func setFS(base uintptr)
TEXT ·setFS(SB),NOSPLIT,$0-8
	MOVQ	base+0(FP), AX
	SETFS_AX
	RET

ADDRESS(·syscallEntryPC, ·syscallEntry)
ADDRESS(·forkretPC, ·forkret)
ADDRESS(·kthreadPC, ·kthread)
ADDRESS(·rt0PC, _rt0_amd64_linux)
ADDRESS(·imageEnd, runtime·end)

TEXT ·vectorPC(SB),NOSPLIT,$0-16
	MOVQ	v+0(FP), AX
	LEAQ	·vectorTable(SB), BX
	MOVQ	(BX)(AX*8), AX
	MOVQ	AX, ret+8(FP)
	RET

// func fpSave(addr uintptr): the FP state to addr (fpStateSize bytes,
// 64-aligned).
TEXT ·fpSave(SB),NOSPLIT,$0-8
	MOVQ	addr+0(FP), R12
	FPSAVE
	RET

// func getbp() uintptr: the caller's frame pointer.
TEXT ·getbp(SB),NOSPLIT,$0-8
	MOVQ	BP, AX
	MOVQ	AX, ret+0(FP)
	RET

// func getcallerpc() uintptr: the return address of the caller's frame.
TEXT ·getcallerpc(SB),NOSPLIT,$0-8
	MOVQ	8(BP), AX
	MOVQ	AX, ret+0(FP)
	RET

ADDRESS(·bssStart, runtime·bss)
ADDRESS(·textStart, runtime·text)
ADDRESS(·morestackPC, runtime·morestack)
ADDRESS(·vdsoClockGettimePC, ·vdsoClockGettime)

// func breakpoint(): INT3, a #BP trap from kernel context.
TEXT ·breakpoint(SB),NOSPLIT,$0
	BYTE	$0xCC
	RET
