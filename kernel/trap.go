package kernel

import (
	"yolk/kernel/mm"
	"yolk/sched"
)

// ExitFault is the exit status after a kernel fault or panic report.
const ExitFault = 125

// preemptUser runs on the kernel stack of a task that an interrupt or
// exception took from application code, with the frame the trap entry
// moved there (entry_$GOARCH.s): the only place where a task is switched
// involuntarily. After a timer interrupt the task gives up its CPU if the
// interrupt woke a task for this CPU, its slice is over, or it has used its budget
// while a woken task waits; after a wake-up interrupt (another CPU's
// preemption request, sched's preemptSpent) only in the last two cases
// (sched.Preempt). Then a pending signal is delivered. The task resumes with every register as the
// frame holds it.
func preemptUser(r *Regs) {
	sched.AssertKernel()
	p := &percpu[sched.This().ID]
	if p.userPreempt {
		p.userPreempt = false
		sched.Preempt(p.timerWoke)
	}
	deliverSignal(r, fpState(r), nil)
	userSync()
}

func printTask() {
	c := sched.This()
	kprint("yolk: cpu=")
	kprintDec(int64(c.ID))
	if n := sched.NumCPU(); n > 1 {
		kprint(" (of ")
		kprintDec(int64(n))
		kprint("; the others are stopped)")
	}
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
		if !mm.Readable(bp) || !mm.Readable(bp+8) {
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
	stopOthers()
	conGrab()
	knewline()
	kprint("yolk: fault: kernel panic: ")
	kprint(msg)
	kprint("\n")
	printTask()
	backtrace(getcallerpc(), getbp())
	halt(ExitFault)
}

// Running out of memory. The kernel's own frames at boot — the page
// tables of the physical map and of the identity map split for the BSS and
// the read-only image (mm's Env.OutOfMemory), the CPUs' trap stacks, the
// first task's and the idle tasks' kernel stacks, the initial stack's area
// — come before the program runs: without them the machine cannot start,
// and there is nothing to kill, so that is a kernel panic (outOfMemory),
// as Linux panics when memory runs out at boot. Every frame after that is
// taken on the program's behalf: its pages and their page tables (page
// faults: its own, a system call's copy into fresh pages, a share file's
// mmap reading into the mapping), its BSS, a new thread's kernel stack. As
// Linux's OOM killer does to the only process there is, running out there
// ends the program with SIGKILL (oomKill). The file system and the socket
// layer take frames too, for the program's files, pipes and sockets: they
// fail that call without them (a file ENOSPC, as a full tmpfs; a pipe or a
// socket's rings ENOMEM or ENOBUFS) and give back what they took (packages
// fs, net).

func outOfMemory() { fatal("out of physical memory") }

// oomKill ends the program for want of a frame for its memory: SIGKILL's
// default action (status 137), after one line saying so, with the free and
// total frames and the program's pages, Linux's "Out of memory: Killed
// process". The other CPUs stop first: every thread dies with the program,
// and if several run out at once, one reports (stopOthers).
func oomKill() {
	stopOthers()
	s := mm.ReadStats()
	conGrab()
	knewline()
	kprint("yolk: out of memory: killed the program (free frames ")
	kprintDec(s.FramesFree)
	kprint(" of ")
	kprintDec(s.FramesAll)
	kprint(", its pages ")
	kprintDec(s.PagesMapped)
	kprint(")\n")
	kprint("yolk: killed by signal 9\n")
	halt(128 + 9)
}

// exitQEMU ends the machine with status code: the marker line the host tool
// reads, then the machine's exit device (machineExit).
func exitQEMU(code uint8) {
	conGrab()
	halt(code)
}

// halt prints the exit marker and stops; the console is this CPU's.
func halt(code uint8) {
	knewline()
	kprint("yolk: exit ")
	kprintDec(int64(code))
	kprint("\n")
	machineExit(code)
	stopHere()
}

// Per-arch assembly (entry_$GOARCH.s).
func getbp() uintptr       // the caller's frame pointer
func getcallerpc() uintptr // the return address of the caller's frame
func morestackPC() uintptr // runtime.morestack, for the stack-overflow diagnosis

// memFault is what the fault report says of a memory-access fault.
type memFault struct {
	addr   uintptr
	ok     bool   // a memory-access fault: addr is the address
	data   bool   // a data access (not an instruction fetch)
	cause  string // " (not mapped)", " (protection)" or ""
	access string // " read", " write" or ""
}

// fault prints the report for r and stops the machine: what trapped
// (faultName), the address a memory-access fault touched (faultMemory),
// the likely cause, the task, the registers and the backtrace (printRegs).
func fault(r *Regs, why string) {
	stopOthers()
	conGrab()
	knewline()
	kprint("yolk: fault: ")
	faultName(r)
	m := faultMemory(r)
	if m.ok {
		kprint(" address=")
		kprintHex(uint64(m.addr), 1)
		kprint(m.cause)
		kprint(m.access)
	}
	switch {
	case why != "":
		kprint(": ")
		kprint(why)
	case sched.DieReason() != "":
		kprint(": sched: ")
		kprint(sched.DieReason())
	case m.data && r.pc() >= morestackPC() && r.pc() < morestackPC()+64:
		kprint(": kernel stack overflow (morestack on a kernel stack)")
	default:
		kprint(faultNote(r))
	}
	kprint("\n")
	printTask()
	printRegs(r)
	printNested(r)
	halt(ExitFault)
}

// namedReg is a register in the fault report, printed with digits hex
// digits (1: as many as it takes).
type namedReg struct {
	name   string
	v      uint64
	digits int
}

// printRegs prints the registers of the fault report (faultRegs: a line
// of four, then four a line) and the backtrace.
func printRegs(r *Regs) {
	head, regs := faultRegs(r)
	for i, g := range head {
		printReg(g, i == 0, i == len(head)-1)
	}
	for i, g := range regs {
		printReg(g, i%4 == 0, i%4 == 3 || i == len(regs)-1)
	}
	backtrace(r.pc(), r.fp())
}

func printReg(g namedReg, first, last bool) {
	if first {
		kprint("yolk: ")
	} else {
		kprint(" ")
	}
	kprint(g.name)
	kprint("=")
	kprintHex(g.v, g.digits)
	if last {
		kprint("\n")
	}
}
