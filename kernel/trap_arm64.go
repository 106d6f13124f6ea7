package kernel

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/arch/arm64"
	"yolk/drivers/gtimer"
	"yolk/drivers/psci"
	"yolk/drivers/semihosting"
	"yolk/kernel/mm"
	"yolk/sched"
)

// Vector-table entries (entry_arm64.s): the low two bits are the kind, bit 2
// says the exception was taken on SP_EL1 (nested inside a handler).
const (
	vecSync   = 0
	vecIRQ    = 1
	vecFIQ    = 2
	vecSError = 3
	vecNested = 4
	// vecOverflow: an exception inside a handler found the trap stack
	// nearly full (entry_arm64.s, trapOverflow).
	vecOverflow = 16
)

// Inter-processor interrupts the kernel sends (GIC SGIs; mailbox bits on
// the Raspberry Pi).
const (
	vecWake   = 0 // wake-up: a task became ready while the CPU idled (sched's kick)
	vecSignal = 1 // a signal for the task the CPU runs (signal.go)
	vecStop   = 2 // another CPU reports a fault: stop
	// sched.LockKickSGI (3): ends a spin-lock waiter's halt
)

// Exception classes (ESR_EL1.EC) the kernel tells apart.
const (
	ecUnknown    = 0x00
	ecSVC        = 0x15
	ecInstrLower = 0x20
	ecInstrSame  = 0x21
	ecPCAlign    = 0x22
	ecDataLower  = 0x24
	ecDataSame   = 0x25
	ecSPAlign    = 0x26
	ecBRK        = 0x3c
)

var ecNames = [...]struct {
	ec   uint64
	name string
}{
	{ecUnknown, "undefined instruction"}, {ecSVC, "SVC"},
	{ecInstrLower, "instruction abort"}, {ecInstrSame, "instruction abort"},
	{ecPCAlign, "PC alignment fault"}, {ecDataLower, "data abort"}, {ecDataSame, "data abort"},
	{ecSPAlign, "SP alignment fault"}, {ecBRK, "breakpoint (BRK)"},
	{0x07, "FP/SIMD access trap"}, {0x0e, "illegal execution state"}, {0x2c, "FP exception"},
	{0x2f, "SError"}, {0x30, "breakpoint"}, {0x32, "software step"}, {0x34, "watchpoint"},
}

// timerIRQ is the generic timer's interrupt ID (from the device tree).
var timerIRQ uint32 = gtimer.VirtPPI

// trap handles an exception or interrupt, from trapSave on this CPU's trap
// stack (SP_EL1) with g the CPU's trap g. A system call never comes here
// (entry_arm64.s sends it to syscall on the task's stack).
//
// trap reports whether the trapped code was application code that must not
// simply be resumed: a timer or wake-up interrupt (which may preempt it) or
// a signal is pending. trapSave then moves the frame to the task's kernel stack and
// calls preemptUser there.
func trap(r *Regs) (toTask bool) {
	sched.AssertKernel()
	p := &percpu[sched.This().ID]
	preempt := false
	fromUser := r.Vector&vecNested == 0 && !inKernel(r)
	p.fromUser = fromUser // for timerInterrupt; a nested trap may clear it
	switch r.Vector &^ vecNested {
	case vecSync:
		syncException(r, p)
	case vecIRQ:
		preempt = irq(p)
	default:
		fault(r, "")
	}
	if fromUser {
		p.userPreempt = preempt
		toTask = preempt || signalPending(sched.Current())
	}
	return toTask
}

// syncException handles aborts, undefined instructions and breakpoints.
func syncException(r *Regs, p *perCPU) {
	ec := r.ESR >> 26 & 0x3f
	switch ec {
	case ecDataLower, ecDataSame, ecInstrLower, ecInstrSame:
		p.faultAddr = uintptr(r.FAR)
		addr := uintptr(r.FAR)
		fsc := r.ESR & 0x3f
		write := ec == ecDataSame && r.ESR&(1<<6) != 0 && r.ESR&(1<<8) == 0 // WnR, not a cache maintenance op
		switch {
		case fsc >= 0x08 && fsc <= 0x0b:
			// An access-flag fault trapSave did not resolve: not
			// a page of the demand-paged BSS.
		case fsc >= 0x04 && fsc <= 0x07, fsc >= 0x0c && fsc <= 0x0f: // translation, permission
			code := uint64(0)
			if fsc >= 0x0c {
				code |= mm.FaultPresent // a permission fault
			}
			if write {
				code |= mm.FaultWrite
			}
			if ec == ecInstrLower || ec == ecInstrSame {
				code |= mm.FaultFetch
			}
			f := vm.PageFault(addr, code)
			if f == mm.FaultBacked || userFixup(r, addr) {
				return
			}
			sig, si := int(unix.SIGSEGV), int32(segvMaperr)
			switch {
			case f == mm.FaultBus:
				sig, si = int(unix.SIGBUS), busAdrerr
			case f == mm.FaultAccess:
				si = segvAccerr
			}
			if signalUser(r, fpState(r), sig, si, addr) {
				return
			}
		default:
			if signalUser(r, fpState(r), int(unix.SIGBUS), busAdrerr, addr) {
				return
			}
		}
	case ecPCAlign, ecSPAlign:
		if signalUser(r, fpState(r), int(unix.SIGBUS), busAdraln, uintptr(r.FAR)) {
			return
		}
	case ecUnknown:
		if inKernel(r) && *at[uint32](uintptr(r.PC)) == hltSemihosting {
			// No debugger or emulator took the semihosting call (real
			// hardware): it is an undefined instruction. It returns -1.
			r.X[0] = ^uint64(0)
			r.PC += 4
			return
		}
		if signalUser(r, fpState(r), int(unix.SIGILL), illIllopn, uintptr(r.PC)) {
			return
		}
	case ecBRK:
		if atomic.LoadUint32(&crashMode) != 0 && inKernel(r) {
			breakpointTrap(r)
		}
		if signalUser(r, fpState(r), int(unix.SIGTRAP), trapBrkpt, uintptr(r.PC)) {
			return
		}
	}
	fault(r, "")
}

// userFixup resumes a kernel-mode fault at a user address inside the
// user copy (kernel/mm/usercopy.go) at the copy's fixup, which returns
// the bytes not copied; false for any other fault.
func userFixup(r *Regs, addr uintptr) bool {
	if !mm.Fixable(addr) || !inKernel(r) {
		return false
	}
	pc, ok := mm.UserFixup(uintptr(r.PC))
	if ok {
		r.PC = uint64(pc)
	}
	return ok
}

// SIGBUS and SIGTRAP codes (busAdrerr: signal.go).
const (
	busAdraln = 1
	trapBrkpt = 1
)

// stopping is set by the first CPU that reports a fault or kills the
// program for want of memory (oomKill); the others stop when its SGI
// reaches them.
var stopping uint32

// stopOthers makes this CPU the one that reports and stops the others
// with an SGI (which reaches a CPU only when it has interrupts unmasked:
// arm64 has no NMI here; a CPU spinning in the kernel goes on spinning).
func stopOthers() {
	if !atomic.CompareAndSwapUint32(&stopping, 0, uint32(sched.This().ID+1)) {
		if atomic.LoadUint32(&stopping) != uint32(sched.This().ID+1) {
			stopHere()
		}
		return
	}
	if intcReady {
		me := sched.This().ID
		for i := 0; i < sched.NumCPU(); i++ {
			if i != me {
				sendIPI(i, vecStop)
			}
		}
	}
}

func stopHere() {
	for {
		arm64.WaitForInterrupt()
	}
}

// hltSemihosting is HLT #0xF000, the A64 semihosting call.
const hltSemihosting = 0xD45E0000

// machineExit ends QEMU with status code through semihosting SYS_EXIT;
// without semihosting (the call returns: real hardware) PSCI SYSTEM_OFF
// powers off, and without PSCI (the Raspberry Pi) the CPU halts, the
// status on the console.
func machineExit(code uint8) {
	semihosting.Exit(int(code))
	psci.SystemOff()
	stopOthers()
	kprint("yolk: halted with status ")
	kprintDec(int64(code))
	kprint(": no semihosting and no PSCI to power off; reset the board\n")
	stopHere()
}

// inKernel reports whether the exception interrupted kernel code. Kernel
// code runs with IRQs masked (PSTATE.I), application code with them
// unmasked; the one place the kernel unmasks them is arm64.WaitForInterrupt
// (the idle loop), which an interrupt finds with a kernel g in R28.
func inKernel(r *Regs) bool {
	if r.PSTATE&pstateI != 0 {
		return true
	}
	c := sched.This()
	g := uintptr(r.X[28])
	if t := sched.Current(); t != nil && g == t.G() {
		return true
	}
	return g == c.TrapGSlot || g == uintptr(unsafe.Pointer(&bootG))
}

// pstateI is PSTATE.I: IRQs masked.
const pstateI = 1 << 7

// faultName prints what trapped and its codes, for the fault report.
func faultName(r *Regs) {
	ec := r.ESR >> 26 & 0x3f
	switch r.Vector &^ vecNested {
	case vecSync:
		name := "synchronous exception"
		for _, e := range ecNames {
			if e.ec == ec {
				name = e.name
			}
		}
		kprint(name)
	case vecIRQ:
		kprint("unexpected interrupt")
	case vecFIQ:
		kprint("FIQ")
	case vecSError:
		kprint("SError")
	case vecOverflow:
		kprint("trap stack overflow (an exception inside a handler found its trap stack full: nesting too deep or a handler's frames too big)")
	}
	kprint(" esr=")
	kprintHex(r.ESR, 1)
	kprint(" ec=")
	kprintHex(ec, 2)
}

// faultMemory describes an instruction or data abort for the fault report.
func faultMemory(r *Regs) (m memFault) {
	ec := r.ESR >> 26 & 0x3f
	m.data = ec == ecDataSame || ec == ecDataLower
	if !m.data && ec != ecInstrSame && ec != ecInstrLower {
		return m
	}
	m.addr, m.ok = uintptr(r.FAR), true
	if fsc := r.ESR & 0x3f; fsc >= 4 && fsc <= 7 {
		m.cause = " (not mapped)"
	} else if fsc >= 0x0c && fsc <= 0x0f {
		m.cause = " (protection)"
	}
	if m.data {
		m.access = " read"
		if r.ESR&(1<<6) != 0 {
			m.access = " write"
		}
	}
	return m
}

// faultNote: the vector alone tells nothing more on arm64.
func faultNote(r *Regs) string { return "" }

// printNested: a nested exception on arm64 continues on the same stack,
// below the one it interrupted; the backtrace already crosses it.
func printNested(r *Regs) {}

// faultRegs lists the registers for the fault report: the first line's
// four, then x00 to x30.
func faultRegs(r *Regs) (head [4]namedReg, regs [31]namedReg) {
	head = [4]namedReg{{"pc", r.PC, 16}, {"sp", r.SP, 16}, {"pstate", r.PSTATE, 1}, {"far", r.FAR, 1}}
	for i := range regs {
		regs[i] = namedReg{xNames[i], r.X[i], 16}
	}
	return head, regs
}

var xNames = [31]string{"x00", "x01", "x02", "x03", "x04", "x05", "x06", "x07", "x08", "x09",
	"x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19",
	"x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30"}
