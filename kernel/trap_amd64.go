package kernel

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/arch/amd64"
	"yolk/drivers/debugexit"
	"yolk/drivers/i8042"
	"yolk/drivers/lapic"
	"yolk/kernel/mm"
	"yolk/sched"
)

// Interrupt vectors.
const (
	vecNMI       = 2
	vecTimer     = 0x20 // this CPU's one-shot timer
	vecWake      = 0x21 // wake-up IPI: a task became ready while this CPU idled
	vecShootdown = 0x22 // TLB shootdown IPI
	vecSignal    = 0x23 // a signal for the task this CPU runs (signal.go)
	// vecConsoleRx (0x24, conin.go): the serial port received data
	// vecVirtio+GSI (0x40-0xEF, nic_amd64.go): the NIC and the shares
	// sched.LockKickVector (0xF0): ends a spin-lock waiter's halt
	vecPICBase  = 0x30 // the legacy PICs, masked (spurious only)
	vecSpurious = 0xFF
)

var trapNames = [...]string{
	"divide error (#DE)", "debug (#DB)", "non-maskable interrupt (NMI)", "breakpoint (#BP)",
	"overflow (#OF)", "bound range exceeded (#BR)", "invalid opcode (#UD)", "device not available (#NM)",
	"double fault (#DF)", "coprocessor segment overrun", "invalid TSS (#TS)", "segment not present (#NP)",
	"stack-segment fault (#SS)", "general protection (#GP)", "page fault (#PF)", "reserved (15)",
	"x87 floating-point error (#MF)", "alignment check (#AC)", "machine check (#MC)", "SIMD floating-point error (#XM)",
	"virtualization exception (#VE)", "control protection (#CP)",
}

// trap handles an exception or interrupt, from trapCommon on this CPU's
// trap stack (IST1; IST2 for NMI, #DF and #MC). Each nesting level has an
// 8 KiB slice of IST1: while a handler runs, IST1 points below its slice,
// so a nested trap gets the next one, and trapCommon has pointed the trap
// g's stack bounds at the current slice, so a handler that outgrows it
// faults in morestack (reported as a stack overflow) instead of writing
// over the frame of the trap it interrupted. A trap nested deeper than the
// slices pushes its frame into the unmapped guard below them: a double
// fault, reported on IST2.
//
// trap reports whether the trapped code was application code that must not
// simply be resumed: a timer interrupt (which may preempt it) or a signal
// is pending. trapCommon then moves the frame to the task's kernel stack
// and calls preemptUser there.
func trap(r *Regs) (toTask bool) {
	sched.AssertKernel()
	p := &percpu[sched.This().ID]
	ist := p.tss.getIST(1)
	if onIST1(r.Vector) {
		p.tss.setIST(1, ist-istLevel)
	}
	fx := fxArea(r)
	switch v := r.Vector; {
	case v == 14:
		p.faultAddr = amd64.CR2()
		faultAddr := p.faultAddr
		if f := vm.PageFault(faultAddr, r.Error); f != mm.FaultBacked && !userFixup(r, faultAddr) {
			sig, code := int(unix.SIGSEGV), int32(segvMaperr)
			switch {
			case f == mm.FaultBus:
				sig, code = int(unix.SIGBUS), busAdrerr
			case f == mm.FaultAccess:
				code = segvAccerr
			}
			if !signalUser(r, fx, sig, code, faultAddr) {
				fault(r, "")
			}
		}
	case v == 13:
		if !signalUser(r, fx, int(unix.SIGSEGV), siKernel, 0) {
			fault(r, "")
		}
	case v == 0:
		if !signalUser(r, fx, int(unix.SIGFPE), fpeIntdiv, uintptr(r.IP)) {
			fault(r, "")
		}
	case v == 6:
		if !signalUser(r, fx, int(unix.SIGILL), illIllopn, uintptr(r.IP)) {
			fault(r, "")
		}
	case v == 3 && atomic.LoadUint32(&crashMode) != 0:
		breakpointTrap(r)
	case v == 3, v == 12, v == 16, v == 17, v == 19:
		// INT3 (Go's runtime.Breakpoint and last-resort abort), a
		// stack-segment fault, x87 and SIMD floating-point errors and
		// alignment checks from application code raise the signal
		// Linux's do_trap sends; from kernel code they are faults.
		if !signalUser(r, fx, userTrapSignal(v), siKernel, 0) {
			fault(r, "")
		}
	case v == vecTimer:
		lapic.EOI()
		p.timerWoke = timerInterrupt(!inKernel(r))
	case v == vecConsoleRx:
		conInInterrupt()
	case v >= vecVirtio && v < vecVirtio+maxVirtioGSI:
		virtioTrap(uint32(v - vecVirtio))
	case v == vecSignal:
		// Nothing to do here: the check below finds the signal.
		lapic.EOI()
	case v == vecWake:
		// The interrupt ended the HLT of the idle loop, which now
		// looks at the ready queue; or it took application code, for
		// preemptUser to look (another CPU queued a woken task).
		p.timerWoke = false
		lapic.EOI()
	case v == sched.LockKickVector:
		// Nothing to do: the interrupt ended a spin-lock waiter's halt
		// (sched/lockhalt.go), which now rereads the lock.
		lapic.EOI()
	case v == vecShootdown:
		mm.ShootdownInterrupt()
		lapic.EOI()
	case v == vecNMI && atomic.LoadUint32(&stopping) != 0:
		stopHere()
	case v == vecSpurious, v >= vecPICBase && v < vecPICBase+16:
	default:
		fault(r, "")
	}
	// Before the trap stack is given back: the check may fault (BSS pages
	// are demand-paged), and that nested trap must take the next slice.
	if !inKernel(r) {
		p.userPreempt = r.Vector == vecTimer || r.Vector == vecWake
		toTask = p.userPreempt || signalPending(sched.Current())
	}
	p.tss.setIST(1, ist)
	return toTask
}

// onIST1 reports whether vector v arrives on IST1, taking a nesting
// level's slice; NMI, #DF and #MC come on IST2 and leave IST1 as it was
// (lowering it there too once turned a double fault's report, which itself
// faulted, into a cascade of double faults into the next CPU's stacks).
func onIST1(v uint64) bool { return v != 2 && v != 8 && v != 18 }

// userFixup resumes a kernel-mode fault at a user address inside the
// user copy (kernel/mm/usercopy.go) at the copy's fixup, which returns
// the bytes not copied; false for any other fault.
func userFixup(r *Regs, addr uintptr) bool {
	if !mm.Fixable(addr) || !inKernel(r) {
		return false
	}
	pc, ok := mm.UserFixup(uintptr(r.IP))
	if ok {
		r.IP = uint64(pc)
	}
	return ok
}

// fxArea is the FP state's save area trapCommon keeps below the frame r
// (fpFrame bytes reserved, the area 64-byte aligned in them).
func fxArea(r *Regs) uintptr { return (uintptr(unsafe.Pointer(r)) - fpFrame + 63) &^ 63 }

// fpFrame is the stack trapCommon reserves for the FP state's area
// (entry_amd64.s).
const fpFrame = fpStateSize + 64

// ShootdownIPI interrupts CPU cpu for a TLB shootdown (mm.Env).
func (mmenv) ShootdownIPI(cpu int) { sendIPI(cpu, vecShootdown) }

// stopping is set by the first CPU that reports a fault or kills the
// program for want of memory (oomKill); the others stop when its NMI
// reaches them.
var stopping uint32

// stopOthers makes this CPU the one that reports and halts every other
// CPU with an NMI, which reaches them whatever they do (spinning with
// interrupts off included). A CPU that loses the race to report stops.
func stopOthers() {
	if !atomic.CompareAndSwapUint32(&stopping, 0, uint32(sched.This().ID+1)) {
		if atomic.LoadUint32(&stopping) != uint32(sched.This().ID+1) {
			stopHere() // another CPU reports; its NMI may already be on the way
		}
		return // a fault while reporting one: go on with the report
	}
	// One by one, and only to CPUs that have their IDT: an AP still in
	// its start-up code (or one that never started) would triple-fault on
	// an NMI and reset the machine before the report is out.
	me := sched.This().ID
	for i := 0; i < sched.NumCPU(); i++ {
		if i != me && atomic.LoadUint32(&percpu[i].hasIDT) != 0 {
			lapic.NMI(uint32(sched.CPUAt(i).IRQ))
		}
	}
}

// machineExit ends the machine with status code: isa-debug-exit ends QEMU
// under yolk run. Without that device, ACPI's soft off (S5) where the
// tables say how (acpipm: q35, pc, microvm, Cloud Hypervisor); else
// (Firecracker) a kernel that a VMM loaded through its PVH
// entry resets the machine through the i8042 once the serial line has
// gone out, which those engines take as the VM's end (QEMU with -no-reboot
// exits 0; the host reads the status from the "yolk: exit N" line). A
// Multiboot2 boot, which may be a real PC, halts instead, the report left
// on its screen.
func machineExit(code uint8) {
	debugexit.Exit(code)
	acpiPM.Off()
	if pvhBoot {
		for i := 0; i < 1e6 && !com1.TxIdle(); i++ {
		}
		i8042.Reset()
	}
}

func stopHere() {
	for {
		amd64.Cli()
		amd64.Hlt()
	}
}

// faultName prints what trapped and its codes, for the fault report.
func faultName(r *Regs) {
	if r.Vector < uint64(len(trapNames)) {
		kprint(trapNames[r.Vector])
	} else {
		kprint("unexpected interrupt")
	}
	kprint(" vector=")
	kprintDec(int64(r.Vector))
	kprint(" error=")
	kprintHex(r.Error, 1)
}

// faultMemory describes a page fault for the fault report.
func faultMemory(r *Regs) (m memFault) {
	if r.Vector != 14 {
		return m
	}
	m.addr, m.ok, m.data = percpu[sched.This().ID].faultAddr, true, true
	m.cause = " (protection)"
	if r.Error&1 == 0 {
		m.cause = " (not mapped)"
	}
	m.access = " read"
	if r.Error&2 != 0 {
		m.access = " write"
	}
	return m
}

// faultNote is the report's guess at a cause the vector alone tells.
func faultNote(r *Regs) string {
	if r.Vector == 8 {
		return " (a trap while delivering a trap: trap stack overflow or nesting too deep?)"
	}
	return ""
}

// printNested follows a double fault's report with the traps it nested
// in, outermost first: each IST1 level in use holds the frame of the trap
// that took it (the #DF's own frame names no instruction), so the report
// shows what started the nesting and, in its backtrace, from where.
func printNested(r *Regs) {
	if r.Vector != 8 {
		return
	}
	id := sched.This().ID
	top := ist1Top(id)
	levels := (top - uintptr(percpu[id].tss.getIST(1))) / istLevel
	for j := uintptr(0); j < levels && j < istLevels; j++ {
		f := at[Regs](top - j*istLevel - regsSize)
		kprint("yolk: nested in trap level ")
		kprintDec(int64(j))
		kprint(": ")
		faultName(f)
		kprint(" rip=")
		kprintHex(f.IP, 16)
		kprint(" rsp=")
		kprintHex(f.SP, 16)
		kprint("\n")
		if j == 0 {
			backtrace(uintptr(f.IP), uintptr(f.BP))
		}
	}
}

// faultRegs lists the registers for the fault report: the first line's
// four, then the general registers.
func faultRegs(r *Regs) (head [4]namedReg, regs [16]namedReg) {
	head = [4]namedReg{{"rip", r.IP, 16}, {"rsp", r.SP, 16}, {"rflags", r.Flags, 1}, {"fs", r.FSBase, 1}}
	regs = [16]namedReg{
		{"rax", r.AX, 16}, {"rbx", r.BX, 16}, {"rcx", r.CX, 16}, {"rdx", r.DX, 16},
		{"rsi", r.SI, 16}, {"rdi", r.DI, 16}, {"rbp", r.BP, 16}, {"r8 ", r.R8, 16},
		{"r9 ", r.R9, 16}, {"r10", r.R10, 16}, {"r11", r.R11, 16}, {"r12", r.R12, 16},
		{"r13", r.R13, 16}, {"r14", r.R14, 16}, {"r15", r.R15, 16}, {"cr3", uint64(amd64.CR3()), 16},
	}
	return head, regs
}

// inKernel reports whether the trap interrupted kernel code: the kernel runs
// with FS pointing at a per-CPU TLS block (or the boot block).
func inKernel(r *Regs) bool {
	c := sched.This()
	fs := uintptr(r.FSBase)
	return fs == c.KernelTLS() || fs == c.TrapTLSBase() || fs == uintptr(unsafe.Pointer(&bootTLS[1]))
}

// userTrapSignal is the signal Linux sends for exception v in user code:
// SIGTRAP for #BP, SIGBUS for #SS and #AC, SIGFPE for #MF and #XM.
func userTrapSignal(v uint64) int {
	switch v {
	case 3:
		return int(unix.SIGTRAP)
	case 12, 17:
		return int(unix.SIGBUS)
	}
	return int(unix.SIGFPE)
}
