// Package calllog is the kernel's record of the system calls the program
// makes: their count, their counts and CPU time by number
// (yolk.syscallstats=1, like strace -c, printed at exit), each call
// traced on the console (yolk.strace=1), and each unimplemented one
// logged once, by name.
//
// Kernel-context Go: nothing here allocates on the Go heap, stores a Go
// pointer into memory, holds an interface value or a func variable, or
// calls the runtime's scheduler; it prints through its type parameter
// (Env: the console, the kernel's). kernel/kcontext_test.go checks this
// on a built image.
package calllog

import (
	"sync/atomic"

	"yolk/kernel/abi"
	"yolk/sched"
)

// Env is what the kernel supplies. It must be a value type without
// pointers (in the kernel an empty struct).
type Env interface {
	// Acquire and Release hold the console for one report; Log starts
	// a line of it, Print, Dec and Hex write on.
	Acquire()
	Release()
	Log(s string)
	Print(s string)
	Dec(v int64)
	Hex(v uint64, digits int)
	// TimerIRQs is the count of timer interrupts CPU cpu took,
	// TimerArms the times its timer was programmed.
	TimerIRQs(cpu int) uint64
	TimerArms(cpu int) uint64
}

var (
	// Trace (yolk.strace=1) prints each call with its first three
	// arguments and its result.
	Trace bool
	// Stats (yolk.syscallstats=1) counts system calls by number, and
	// the CPU time the calling thread spent in each (Took), and prints
	// them at exit, like strace -c.
	Stats      bool
	count      [512 + privateN]uint64 // Linux's numbers, then yolk's own from abi's 0x1000
	cpuNS      [512 + privateN]uint64 // the CPU time, ns, by number (Took)
	enosysSeen [512 / 64]uint64       // numbers already logged
	enosysN    uint64
	calls      uint64
)

// Entered counts a system call.
func Entered() { atomic.AddUint64(&calls, 1) }

// Count counts system call nr by its number (Stats).
func Count(nr uintptr) {
	if i, ok := index(nr); ok {
		atomic.AddUint64(&count[i], 1)
	}
}

// Took adds ns, the CPU time the calling thread spent in one call of
// system call nr (its time blocked not counted: only its runs), to nr's
// (Stats).
func Took(nr uintptr, ns int64) {
	if i, ok := index(nr); ok && ns > 0 {
		atomic.AddUint64(&cpuNS[i], uint64(ns))
	}
}

// index is nr's slot in count and cpuNS; false without Stats, or for a
// number beyond the table.
func index(nr uintptr) (uintptr, bool) {
	if !Stats {
		return 0, false
	}
	if nr >= privateBase && nr < privateBase+privateN {
		nr = 512 + nr - privateBase
	}
	return nr, nr < uintptr(len(count))
}

// yolk's own calls (kernel/abi: 0x1000 on) are counted after Linux's.
const privateBase, privateN = 0x1000, 64

// Calls is the number of system calls made, Unimplemented the number of
// those that were ENOSYS for want of an implementation.
func Calls() uint64         { return atomic.LoadUint64(&calls) }
func Unimplemented() uint64 { return atomic.LoadUint64(&enosysN) }

// PrintStats prints the system-call counts and CPU time
// (yolk.syscallstats=1) and the task switches per CPU.
func PrintStats[E Env]() {
	if !Stats {
		return
	}
	var e E
	e.Acquire()
	for nr, n := range count {
		if n := atomic.LoadUint64(&n); n != 0 {
			e.Log("syscalls: ")
			if nr >= 512 {
				e.Print("yolk ")
				e.Hex(uint64(privateBase+nr-512), 4)
			} else {
				e.Print(abi.SysName(uintptr(nr)))
			}
			e.Print(" ")
			e.Dec(int64(n))
			ns := atomic.LoadUint64(&cpuNS[nr])
			e.Print(" cpu-us ")
			e.Dec(int64(ns / 1000))
			e.Print(" ns/call ")
			e.Dec(int64(ns / n))
			e.Print("\n")
		}
	}
	for i := 0; i < sched.NumCPU(); i++ {
		e.Log("syscalls: cpu ")
		e.Dec(int64(i))
		e.Print(" switches ")
		e.Dec(int64(sched.CPUAt(i).Switches()))
		e.Print(" wake IPIs ")
		e.Dec(int64(sched.CPUAt(i).WakeIPIs()))
		e.Print(" timer interrupts ")
		e.Dec(int64(e.TimerIRQs(i)))
		e.Print(" timer arms ")
		e.Dec(int64(e.TimerArms(i)))
		e.Print(" preemptions ")
		e.Dec(int64(sched.CPUAt(i).Preempts()))
		e.Print(" preemption IPIs ")
		e.Dec(int64(sched.CPUAt(i).PreemptIPIs()))
		e.Print("\n")
	}
	e.Release()
}

// ENOSYS reports an unimplemented system call the first time it is used.
func ENOSYS[E Env](nr uintptr) {
	atomic.AddUint64(&enosysN, 1)
	// The old value decides: of two CPUs racing on the same number,
	// exactly one sees the bit clear. Numbers beyond the table share
	// the last bit: the first is logged.
	bit := min(nr, uintptr(len(enosysSeen))*64-1)
	if atomic.OrUint64(&enosysSeen[bit/64], uint64(1)<<(bit%64))&(uint64(1)<<(bit%64)) != 0 {
		return
	}
	var e E
	e.Acquire()
	e.Log("syscall ")
	e.Print(abi.SysName(nr))
	e.Print(" (")
	e.Dec(int64(nr))
	e.Print(") not implemented: ENOSYS\n")
	e.Release()
}

// TraceCall prints system call nr of thread tid (Trace), which began at
// start and ended at end (ns since boot): the start in µs, the time it
// took in µs at the end, as strace -ttt -T.
func TraceCall[E Env](tid int32, nr, a0, a1, a2, ret uintptr, start, end int64) {
	var e E
	e.Acquire()
	e.Log("strace ")
	e.Dec(start / 1e3)
	e.Print(" [")
	e.Dec(int64(tid))
	e.Print("] ")
	e.Print(abi.SysName(nr))
	e.Print("(")
	e.Hex(uint64(a0), 1)
	e.Print(", ")
	e.Hex(uint64(a1), 1)
	e.Print(", ")
	e.Hex(uint64(a2), 1)
	e.Print(") = ")
	e.Dec(int64(ret))
	e.Print(" <")
	e.Dec((end - start) / 1e3)
	e.Print(">\n")
	e.Release()
}
