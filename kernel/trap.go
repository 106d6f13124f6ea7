package kernel

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/drivers/debugexit"
	"yolk/drivers/lapic"
	"yolk/drivers/x86"
	"yolk/sched"
)

// ExitFault is the exit status after a kernel fault or panic report.
const ExitFault = 125

var trapNames = [...]string{
	"divide error (#DE)", "debug (#DB)", "non-maskable interrupt (NMI)", "breakpoint (#BP)",
	"overflow (#OF)", "bound range exceeded (#BR)", "invalid opcode (#UD)", "device not available (#NM)",
	"double fault (#DF)", "coprocessor segment overrun", "invalid TSS (#TS)", "segment not present (#NP)",
	"stack-segment fault (#SS)", "general protection (#GP)", "page fault (#PF)", "reserved (15)",
	"x87 floating-point error (#MF)", "alignment check (#AC)", "machine check (#MC)", "SIMD floating-point error (#XM)",
	"virtualization exception (#VE)", "control protection (#CP)",
}

// trap handles an exception or interrupt (from trapCommon, on the IST stack).
func trap(r *Regs) {
	p := &percpu[sched.This().ID]
	// Lower IST1 while we run so that a nested trap gets its own frame.
	ist := p.tss.getIST(1)
	if ist-istNest < uint64(sched.This().TrapG.StackLo)+istNest {
		fault(r, "trap nesting too deep")
	}
	p.tss.setIST(1, ist-istNest)
	fx := (uintptr(unsafe.Pointer(r)) - 528 + 15) &^ 15 // trapCommon's FXSAVE area
	switch v := r.Vector; {
	case v == 14:
		p.faultAddr = x86.CR2()
		faultAddr := p.faultAddr
		if !pageFault(faultAddr, r.Error) {
			code := int32(segvMaperr)
			if r.Error&1 != 0 {
				code = segvAccerr
			}
			if !signalUser(r, fx, int(unix.SIGSEGV), code, faultAddr) {
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
	case v == vecTimer:
		p.timer.fired = true
		lapic.EOI()
	case v == vecSpurious, v >= vecPICBase && v < vecPICBase+16:
	default:
		fault(r, "")
	}
	p.tss.setIST(1, ist)
}

// fault prints the report for r and stops the machine.
func fault(r *Regs, why string) {
	conLock.Lock() // never released: the machine stops
	knewline()
	kprint("yolk: fault: ")
	if r.Vector < uint64(len(trapNames)) {
		kprint(trapNames[r.Vector])
	} else {
		kprint("unexpected interrupt")
	}
	kprint(" vector=")
	kprintDec(int64(r.Vector))
	kprint(" error=")
	kprintHex(r.Error, 1)
	if r.Vector == 14 {
		kprint(" address=")
		kprintHex(uint64(percpu[sched.This().ID].faultAddr), 1)
		if r.Error&1 == 0 {
			kprint(" (not mapped)")
		} else {
			kprint(" (protection)")
		}
		if r.Error&2 != 0 {
			kprint(" write")
		} else {
			kprint(" read")
		}
	}
	if why != "" {
		kprint(": ")
		kprint(why)
	}
	kprint("\n")
	printTask()
	kprint("yolk: rip=")
	kprintHex(r.IP, 16)
	kprint(" rsp=")
	kprintHex(r.SP, 16)
	kprint(" rflags=")
	kprintHex(r.Flags, 1)
	kprint(" fs=")
	kprintHex(r.FSBase, 1)
	kprint("\n")
	regs := [...]struct {
		n string
		v uint64
	}{
		{"rax", r.AX}, {"rbx", r.BX}, {"rcx", r.CX}, {"rdx", r.DX},
		{"rsi", r.SI}, {"rdi", r.DI}, {"rbp", r.BP}, {"r8 ", r.R8},
		{"r9 ", r.R9}, {"r10", r.R10}, {"r11", r.R11}, {"r12", r.R12},
		{"r13", r.R13}, {"r14", r.R14}, {"r15", r.R15}, {"cr3", uint64(x86.CR3())},
	}
	for i, g := range regs {
		if i%4 == 0 {
			kprint("yolk: ")
		} else {
			kprint(" ")
		}
		kprint(g.n)
		kprint("=")
		kprintHex(g.v, 16)
		if i%4 == 3 {
			kprint("\n")
		}
	}
	backtrace(uintptr(r.IP), uintptr(r.BP))
	halt(ExitFault)
}

func printTask() {
	c := sched.This()
	kprint("yolk: cpu=")
	kprintDec(int64(c.ID))
	if t := sched.Current(); t != nil {
		kprint(" task=")
		kprintDec(int64(t.TID))
	}
	kprint("\n")
}

// backtrace prints pc and then the return addresses found by following the
// frame-pointer chain from bp, as lines the host tool symbolizes.
func backtrace(pc, bp uintptr) {
	kprint("yolk: backtrace:\n")
	for i := 0; i < 64; i++ {
		kprint("yolk:   at ")
		kprintHex(uint64(pc), 16)
		kprint("\n")
		if !readable(bp) || !readable(bp+8) {
			return
		}
		pc = *at[uintptr](bp + 8)
		next := *at[uintptr](bp)
		if pc == 0 || next <= bp {
			return
		}
		bp = next
	}
}

// fatal reports a kernel panic with the caller's backtrace and stops.
func fatal(msg string) {
	conLock.Lock()
	knewline()
	kprint("yolk: fault: kernel panic: ")
	kprint(msg)
	kprint("\n")
	printTask()
	backtrace(getcallerpc(), getbp())
	halt(ExitFault)
}

func outOfMemory() { fatal("out of physical memory") }

// exitQEMU ends the machine with status code: the marker line the host tool
// reads, then the isa-debug-exit device.
func exitQEMU(code uint8) {
	conLock.Lock()
	halt(code)
}

// halt prints the exit marker and stops; conLock is held.
func halt(code uint8) {
	knewline()
	kprint("yolk: exit ")
	kprintDec(int64(code))
	kprint("\n")
	debugexit.Exit(code)
	for {
		x86.Cli()
		x86.Hlt()
	}
}

func getbp() uintptr
func getcallerpc() uintptr
