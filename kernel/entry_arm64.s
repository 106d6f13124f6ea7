// Kernel entry points on arm64: the start from boot, the exception vectors,
// system calls, and the return to application code.
//
// Everything runs at EL1. Code runs on SP_EL0 (SPSel 0): application code
// on its own stacks, kernel code on the current task's kernel stack (or a
// CPU's boot/idle stack). An exception switches to SP_EL1, this CPU's trap
// stack, whose top SP_EL1 holds whenever the CPU is not handling one; a
// nested exception (taken while on SP_EL1) continues below the frame of
// the one it interrupted. Kernel code runs with IRQs masked; only the
// return to application code unmasks them (its PSTATE).
//
// A system call, and an exception from application code that must go on
// as the task (toTask: a timer interrupt that may preempt it, a pending
// signal), move their frame to the top of the task's kernel stack, which
// is empty while the task runs application code, leave the trap stack and
// call the Go handler there as the task (g = the task's kernel g), so
// the task may block or be switched. They return through userRestore.

#include "textflag.h"
#include "go_asm.h"

// ADDRESS(NAME, SYM) defines func NAME() uintptr, the address of SYM: the
// kernel's own entry points and the runtime's symbols Go code cannot name.
#define ADDRESS(NAME, SYM) \
	TEXT NAME(SB),NOSPLIT,$0-8; \
	MOVD	$SYM(SB), R0; \
	MOVD	R0, ret+0(FP); \
	RET

// NORETURN(name) opens assembly that is not a function: entered by a
// branch (from boot, or from this file's exception paths), it never
// returns to the code that branched there, which keeps nothing in R29 —
// it leaves by ERET, or calls Go on a fresh frame chain and stops.
// vet's frame-pointer check takes every frameless TEXT line for a
// function that returns to a Go caller, which expects its R29 back, and
// reports a write to R29 before any read of it; it reads the source
// lines as written, so it does not see a TEXT made by a macro. Only the
// two such paths that write R29 first are opened this way: start, which
// ends the frame chain for the kernel, and restore, which loads the
// interrupted code's R29 from the frame. Every other function here is
// checked, and toKStack, which returns by RET, leaves R29 to its caller.
#define NORETURN(name) TEXT name(SB),NOSPLIT|NOFRAME,$0

#define FRAME	832	// regsSize
#define F_SP	248
#define F_PC	256
#define F_PSTATE	264
#define F_ESR	272
#define F_FAR	280
#define F_VEC	288
#define F_V	304
#define F_FPSR	816

// SAVE_GPRS stores X2..X30 into the frame at R1 (X0, X1 are saved by the
// vector stub).
#define SAVE_GPRS \
	STP	(R2, R3), 16(R1); \
	STP	(R4, R5), 32(R1); \
	STP	(R6, R7), 48(R1); \
	STP	(R8, R9), 64(R1); \
	STP	(R10, R11), 80(R1); \
	STP	(R12, R13), 96(R1); \
	STP	(R14, R15), 112(R1); \
	STP	(R16, R17), 128(R1); \
	STP	(R18_PLATFORM, R19), 144(R1); \
	STP	(R20, R21), 160(R1); \
	STP	(R22, R23), 176(R1); \
	STP	(R24, R25), 192(R1); \
	STP	(R26, R27), 208(R1); \
	STP	(g, R29), 224(R1); \
	MOVD	R30, 240(R1)

// SAVE_FP stores V0..V31, FPSR and FPCR into the frame at R1 (clobbers R2, R3).
#define SAVE_FP \
	ADD	$F_V, R1, R2; \
	VST1.P	[V0.B16, V1.B16, V2.B16, V3.B16], 64(R2); \
	VST1.P	[V4.B16, V5.B16, V6.B16, V7.B16], 64(R2); \
	VST1.P	[V8.B16, V9.B16, V10.B16, V11.B16], 64(R2); \
	VST1.P	[V12.B16, V13.B16, V14.B16, V15.B16], 64(R2); \
	VST1.P	[V16.B16, V17.B16, V18.B16, V19.B16], 64(R2); \
	VST1.P	[V20.B16, V21.B16, V22.B16, V23.B16], 64(R2); \
	VST1.P	[V24.B16, V25.B16, V26.B16, V27.B16], 64(R2); \
	VST1.P	[V28.B16, V29.B16, V30.B16, V31.B16], 64(R2); \
	MRS	FPSR, R3; \
	MOVD	R3, 0(R2); \
	MRS	FPCR, R3; \
	MOVD	R3, 8(R2)

// start is entered from boot on the boot stack, MMU on, with R0 the DTB
// address (0: none given).
NORETURN(·start)
	// A g for the boot stack, so that Go prologues work before the
	// scheduler exists.
	MOVD	$·bootG(SB), g
	MOVD	$yolk∕boot·Stack(SB), R1
	MOVD	R1, 0(g)
	ADD	$65536, R1, R2
	MOVD	R2, 8(g)
	ADD	$1024, R1, R3
	MOVD	R3, 16(g)
	MOVD	R3, 24(g)
	MOVD	$0, R29	// the frame chain starts here
	SUB	$32, RSP
	MOVD	R0, 8(RSP)	// kmain(dtb, 0)
	MOVD	ZR, 16(RSP)
	CALL	·kmain(SB)
hang:
	WFI
	B	hang

// apStart is a secondary CPU's first kernel code (from boot, MMU on), R0
// its CPU number, or -1 (spin-table start) to look it up by MPIDR in
// cpuMPIDR: it runs apMain on its idle task's stack with that task's g.
TEXT ·apStart(SB),NOSPLIT|NOFRAME,$0
	CMP	$0, R0
	BGE	known
	MRS	MPIDR_EL1, R3
	MOVD	$0xff00ffffff, R4	// mpidrAff
	AND	R4, R3, R3
	MOVD	$·cpuMPIDR(SB), R1
	MOVD	$1, R0
find:
	MOVD	(R1)(R0<<3), R4
	CMP	R3, R4
	BEQ	known
	ADD	$1, R0, R0
	CMP	$const_maxCPUs, R0
	BLT	find
	B	aphang	// not a CPU the kernel started
known:
	MOVD	$·apStack(SB), R1
	MOVD	(R1)(R0<<3), R2
	MOVD	R2, RSP
	MOVD	$·apG(SB), R1
	MOVD	(R1)(R0<<3), g
	MOVD	$0, R29
	SUB	$16, RSP
	MOVD	R0, 8(RSP)
	CALL	·apMain(SB)
aphang:
	WFI
	B	aphang

// The vector table: 16 entries of 128 bytes. Each stub saves X0 and X1 just
// below SP (SP_EL1) and jumps to trapSave with its number in R0.
//
// SP moves only through a general register (MOVD Rn, RSP) in this file's
// exception paths: they run on the trap stack or a task's kernel stack,
// which the linker's nosplit analysis (made for goroutine stacks) would
// otherwise count as one stack frame growing by every adjustment.
#define VENTRY(n) \
	STP	(R0, R1), -16(RSP); \
	MOVD	$n, R0; \
	B	trapSave<>(SB); \
	PCALIGN	$128

// VNESTED is VENTRY for an exception taken on SP_EL1 (inside a handler):
// if SP is on a trap stack (upper half) and within 4 KiB of its guard —
// handlers nested too deep, or one whose Go frames outgrew the stack —
// the frame would go into the guard and fault again, forever; it goes to
// trapOverflow instead. R0 waits in TPIDRRO_EL0 meanwhile (nothing else
// uses that register).
#define VNESTED(n) \
	MSR	R0, TPIDRRO_EL0; \
	MOVD	RSP, R0; \
	TBZ	$63, R0, 5(PC); \
	AND	$0xffff, R0, R0; \
	CMP	$(20<<10), R0; \
	BHS	2(PC); \
	B	trapOverflow<>(SB); \
	MRS	TPIDRRO_EL0, R0; \
	STP	(R0, R1), -16(RSP); \
	MOVD	$n, R0; \
	B	trapSave<>(SB); \
	PCALIGN	$128

TEXT ·vectors(SB),NOSPLIT|NOFRAME,$0
	PCALIGN	$2048
	VENTRY(0)	// current EL, SP_EL0: synchronous
	VENTRY(1)	// IRQ
	VENTRY(2)	// FIQ
	VENTRY(3)	// SError
	VNESTED(4)	// current EL, SP_EL1 (nested): synchronous
	VNESTED(5)
	VNESTED(6)
	VNESTED(7)
	VENTRY(8)	// lower EL (never: nothing runs at EL0)
	VENTRY(9)
	VENTRY(10)
	VENTRY(11)
	VENTRY(12)
	VENTRY(13)
	VENTRY(14)
	VENTRY(15)

// trapOverflow restarts the trap stack from its top (the frames of the
// exceptions below are given up: the machine is about to stop) and makes
// the exception kind 16, which trap reports as a trap stack overflow.
TEXT trapOverflow<>(SB),NOSPLIT|NOFRAME,$0
	MRS	TPIDR_EL1, R0
	MOVD	64(R0), R0	// CPU.TrapG.StackHi
	MOVD	R0, RSP
	MRS	TPIDRRO_EL0, R0
	STP	(R0, R1), -16(RSP)
	MOVD	$16, R0
	B	trapSave<>(SB)

// trapSave completes the frame at RSP (on SP_EL1) and dispatches: a system
// call goes to the task's kernel stack, anything else to trap(r) here.
TEXT trapSave<>(SB),NOSPLIT|NOFRAME,$0
	MOVD	RSP, R1
	SUB	$FRAME, R1, R1
	MOVD	R1, RSP
	SAVE_GPRS
	LDP	(FRAME-16)(R1), (R2, R3)	// X0, X1 from the stub
	STP	(R2, R3), 0(R1)
	MOVD	R0, F_VEC(R1)
	MRS	SP_EL0, R2
	TBZ	$2, R0, sp0
	ADD	$FRAME, R1, R2	// nested: the interrupted SP is SP_EL1's
sp0:
	MOVD	R2, F_SP(R1)
	MRS	ELR_EL1, R2
	MOVD	R2, F_PC(R1)
	MRS	SPSR_EL1, R2
	MOVD	R2, F_PSTATE(R1)
	MRS	ESR_EL1, R2
	MOVD	R2, F_ESR(R1)
	MRS	FAR_EL1, R2
	MOVD	R2, F_FAR(R1)
	SAVE_FP
	// An access-flag fault (the demand-paged BSS, mm/bss.go): set AF in the
	// page's entry here, without Go code, which may itself touch pages
	// whose flag is clear. Only the frame and the page tables (through
	// the physical map, which exists before any entry lacks AF) are used.
	AND	$3, R0, R2
	CBNZ	R2, notaf
	MRS	ESR_EL1, R2
	LSR	$26, R2, R3
	CMP	$0x25, R3	// data abort, same EL
	BEQ	abort
	CMP	$0x21, R3	// instruction abort, same EL
	BNE	notaf
abort:
	AND	$0x3c, R2, R3
	CMP	$0x08, R3	// DFSC/IFSC 0b0010xx: access flag
	BNE	notaf
	MRS	FAR_EL1, R2
	MRS	TTBR0_EL1, R3
	AND	$0x0000fffffffff000, R3, R3
	MOVD	$0xffffc00000000000, R5	// mm's physBase
	MOVD	$0x0000fffffffff000, R6
	MOVD	$39, R7
walk:
	LSR	R7, R2, R4
	AND	$511, R4, R4
	ADD	R5, R3, R3
	MOVD	(R3)(R4<<3), R4
	AND	$3, R4, R8
	CMP	$3, R8
	BNE	notaf	// invalid, or a block (blocks always have AF)
	AND	R6, R4, R3
	SUB	$9, R7, R7
	CMP	$12, R7
	BNE	walk
	LSR	$12, R2, R4
	AND	$511, R4, R4
	ADD	R5, R3, R3
	ADD	R4<<3, R3, R3
	MOVD	(R3), R4
	TBZ	$0, R4, notaf
	ORR	$(1<<10), R4, R4
	MOVD	R4, (R3)
	DSB	$10
	ISB	$15
	MOVD	RSP, R0
	ADD	$FRAME, R0, R2
	MOVD	R2, RSP
	B	restore<>(SB)
notaf:
	// An SVC (exception class 0x15) from SP_EL0: a system call.
	CBNZ	R0, trap
	MRS	ESR_EL1, R2
	LSR	$26, R2, R2
	CMP	$0x15, R2
	BEQ	syscall
trap:
	MRS	TPIDR_EL1, R2
	ADD	$56, R2, g	// CPU.TrapG
	MOVD	$0, R29
	SUB	$32, RSP	// the callee's LR slot, r, the result
	MOVD	R1, 8(RSP)
	CALL	·trap(SB)
	MOVBU	16(RSP), R2	// trap's result: go on as the task (preemptUser)
	ADD	$32, RSP
	CBNZ	R2, totask
	// Return to the interrupted code from this frame; the stack is
	// given back first (interrupts are masked: nothing can land there).
	MOVD	RSP, R0
	ADD	$FRAME, R0, R2
	MOVD	R2, RSP
	B	restore<>(SB)
totask:
	BL	toKStack<>(SB)
	MOVD	$0, R29	// the interrupted R29 is in the frame: a fresh chain on the kernel stack
	SUB	$16, RSP
	MOVD	R1, 8(RSP)
	CALL	·preemptUser(SB)
	ADD	$16, RSP
	B	·userRestore(SB)
syscall:
	BL	toKStack<>(SB)
	MOVD	$0, R29	// the application's R29 is in the frame: a fresh chain on the kernel stack
	SUB	$16, RSP
	MOVD	R1, 8(RSP)
	CALL	·syscall(SB)
	ADD	$16, RSP
	B	·userRestore(SB)

// toKStack moves the frame at RSP (on SP_EL1) to the top of the current
// task's kernel stack, empties the trap stack, switches to SP_EL0 on the
// kernel stack just below the frame and loads the task's kernel g. R1 is
// the frame's new address. Returns by R30.
TEXT toKStack<>(SB),NOSPLIT|NOFRAME,$0
	MRS	TPIDR_EL1, R2
	MOVD	16(R2), R1	// CPU.KStackTop
	MOVD	24(R2), g	// CPU.GSlot
	SUB	$FRAME, R1, R1
	MOVD	RSP, R3
	MOVD	R1, R4
	MOVD	$(FRAME/16), R5
copy:
	LDP.P	16(R3), (R6, R7)
	STP.P	(R6, R7), 16(R4)
	SUB	$1, R5, R5
	CBNZ	R5, copy
	ADD	$FRAME, RSP, R3
	MOVD	R3, RSP
	MSR	$0, SPSel
	MOVD	R1, RSP
	RET

// userRestore returns to application code from the frame at RSP (on the
// task's kernel stack, SP_EL0).
TEXT ·userRestore(SB),NOSPLIT|NOFRAME,$0
	MOVD	RSP, R0
	MSR	$1, SPSel	// SP_EL0 is about to become the application's
	B	restore<>(SB)

// restore loads every register from the frame at R0 and returns from the
// exception (ERET: PC and PSTATE from the frame, SP_EL0 too). Runs on SP_EL1.
NORETURN(restore<>)
	ADD	$F_V, R0, R1
	VLD1.P	64(R1), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P	64(R1), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P	64(R1), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P	64(R1), [V12.B16, V13.B16, V14.B16, V15.B16]
	VLD1.P	64(R1), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P	64(R1), [V20.B16, V21.B16, V22.B16, V23.B16]
	VLD1.P	64(R1), [V24.B16, V25.B16, V26.B16, V27.B16]
	VLD1.P	64(R1), [V28.B16, V29.B16, V30.B16, V31.B16]
	MOVD	0(R1), R2
	MSR	R2, FPSR
	MOVD	8(R1), R2
	MSR	R2, FPCR
	MOVD	F_VEC(R0), R2
	TBNZ	$2, R2, nested	// a nested exception's SP is SP_EL1: restored by the caller's ADD
	MOVD	F_SP(R0), R2
	MSR	R2, SP_EL0
nested:
	MOVD	F_PC(R0), R2
	MSR	R2, ELR_EL1
	MOVD	F_PSTATE(R0), R2
	MSR	R2, SPSR_EL1
	LDP	16(R0), (R2, R3)
	LDP	32(R0), (R4, R5)
	LDP	48(R0), (R6, R7)
	LDP	64(R0), (R8, R9)
	LDP	80(R0), (R10, R11)
	LDP	96(R0), (R12, R13)
	LDP	112(R0), (R14, R15)
	LDP	128(R0), (R16, R17)
	LDP	144(R0), (R18_PLATFORM, R19)
	LDP	160(R0), (R20, R21)
	LDP	176(R0), (R22, R23)
	LDP	192(R0), (R24, R25)
	LDP	208(R0), (R26, R27)
	LDP	224(R0), (g, R29)	// the interrupted code's frame pointer
	MOVD	240(R0), R30
	LDP	0(R0), (R0, R1)
	ERET

// forkret is where a new task first runs: SP is at its frame, at the top of
// its kernel stack. Run the pending switch finalizer, then enter
// application code.
TEXT ·forkret(SB),NOSPLIT|NOFRAME,$0
	SUB	$16, RSP
	CALL	·taskEntry(SB)
	ADD	$16, RSP
	B	·userRestore(SB)

// kthread is where a kernel task (kthread.go) first runs, at the top of
// its kernel stack: its body runs the pending switch finalizer first and
// never returns.
TEXT ·kthread(SB),NOSPLIT|NOFRAME,$0
	SUB	$16, RSP
	CALL	·kthreadMain(SB)
	CALL	·kthreadReturned(SB)

// sigreturnCode is the restorer the kernel gives a signal handler in X30
// when the program named none (Go on arm64 names none): rt_sigreturn.
TEXT ·sigreturnCode(SB),NOSPLIT|NOFRAME,$0
	MOVD	$139, R8
	SVC	$0
	WORD	$0	// UDF

ADDRESS(·sigreturnPC, ·sigreturnCode)
ADDRESS(·forkretPC, ·forkret)
ADDRESS(·kthreadPC, ·kthread)
ADDRESS(·rt0PC, _rt0_arm64_linux)
ADDRESS(·imageEnd, runtime·end)
ADDRESS(·bssStart, runtime·bss)
ADDRESS(·textStart, runtime·text)
ADDRESS(·morestackPC, runtime·morestack)
ADDRESS(·vdsoClockGettimePC, ·vdsoClockGettime)
ADDRESS(·vectorsPC, ·vectors)

// func setTrapStack(top uintptr): SP_EL1 = top, VBAR_EL1 = vectors.
// SP_EL1 is not an MSR target at EL1: it is written as SP with SPSel 1.
TEXT ·setTrapStack(SB),NOSPLIT,$0-8
	MOVD	$·vectors(SB), R1
	MSR	R1, VBAR_EL1
	ISB	$15
	MOVD	top+0(FP), R0
	MSR	$1, SPSel
	MOVD	R0, RSP
	MSR	$0, SPSel
	RET

// func fpSave(addr uintptr): V0..V31, FPSR, FPCR to addr (fpStateSize bytes).
TEXT ·fpSave(SB),NOSPLIT,$0-8
	MOVD	addr+0(FP), R2
	VST1.P	[V0.B16, V1.B16, V2.B16, V3.B16], 64(R2)
	VST1.P	[V4.B16, V5.B16, V6.B16, V7.B16], 64(R2)
	VST1.P	[V8.B16, V9.B16, V10.B16, V11.B16], 64(R2)
	VST1.P	[V12.B16, V13.B16, V14.B16, V15.B16], 64(R2)
	VST1.P	[V16.B16, V17.B16, V18.B16, V19.B16], 64(R2)
	VST1.P	[V20.B16, V21.B16, V22.B16, V23.B16], 64(R2)
	VST1.P	[V24.B16, V25.B16, V26.B16, V27.B16], 64(R2)
	VST1.P	[V28.B16, V29.B16, V30.B16, V31.B16], 64(R2)
	MRS	FPSR, R3
	MOVD	R3, 0(R2)
	MRS	FPCR, R3
	MOVD	R3, 8(R2)
	RET

// func getbp() uintptr: the caller's frame pointer.
TEXT ·getbp(SB),NOSPLIT,$0-8
	MOVD	R29, R0
	MOVD	R0, ret+0(FP)
	RET

// func getcallerpc() uintptr: the return address of the caller's frame.
TEXT ·getcallerpc(SB),NOSPLIT,$0-8
	MOVD	8(R29), R0
	MOVD	R0, ret+0(FP)
	RET

// func breakpoint(): BRK, a breakpoint exception from kernel context.
TEXT ·breakpoint(SB),NOSPLIT,$0
	BRK	$0
	RET
