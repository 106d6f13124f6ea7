package kernel

import (
	"sync/atomic"

	"yolk/kernel/abi"
	"yolk/sched"
)

var (
	strace bool
	// syscallStats (yolk.syscallstats=1) counts system calls by number
	// and prints the counts at exit, like strace -c.
	syscallStats bool
	syscallCount [512]uint64
	enosysSeen   [512 / 64]uint64 // numbers already logged
	enosysN      uint64
	nsyscalls    uint64
)

// printSyscallStats prints the system-call counts (yolk.syscallstats=1)
// and the task switches per CPU.
func printSyscallStats() {
	if !syscallStats {
		return
	}
	conAcquire()
	for nr, n := range syscallCount {
		if n := atomic.LoadUint64(&n); n != 0 {
			klog("syscalls: ")
			kprint(abi.SysName(uintptr(nr)))
			kprint(" ")
			kprintDec(int64(n))
			kprint("\n")
		}
	}
	for i := 0; i < sched.NumCPU(); i++ {
		klog("syscalls: cpu ")
		kprintDec(int64(i))
		kprint(" switches ")
		kprintDec(int64(sched.CPUAt(i).Switches()))
		kprint(" wake IPIs ")
		kprintDec(int64(sched.CPUAt(i).WakeIPIs()))
		kprint(" timer interrupts ")
		kprintDec(int64(atomic.LoadUint64(&percpu[i].timer.fired)))
		kprint(" preemptions ")
		kprintDec(int64(sched.CPUAt(i).Preempts()))
		kprint(" preemption IPIs ")
		kprintDec(int64(sched.CPUAt(i).PreemptIPIs()))
		kprint("\n")
	}
	conRelease()
}

// logENOSYS reports an unimplemented system call the first time it is used.
func logENOSYS(nr uintptr) {
	atomic.AddUint64(&enosysN, 1)
	// The old value decides: of two CPUs racing on the same number,
	// exactly one sees the bit clear. Numbers beyond the table share
	// the last bit: the first is logged.
	bit := min(nr, uintptr(len(enosysSeen))*64-1)
	if atomic.OrUint64(&enosysSeen[bit/64], uint64(1)<<(bit%64))&(uint64(1)<<(bit%64)) != 0 {
		return
	}
	conAcquire()
	klog("syscall ")
	kprint(abi.SysName(nr))
	kprint(" (")
	kprintDec(int64(nr))
	kprint(") not implemented: ENOSYS\n")
	conRelease()
}

func traceSyscall(t *sched.Task, nr, a0, a1, a2, ret uintptr) {
	conAcquire()
	klog("strace [")
	kprintDec(int64(t.TID))
	kprint("] ")
	kprint(abi.SysName(nr))
	kprint("(")
	kprintHex(uint64(a0), 1)
	kprint(", ")
	kprintHex(uint64(a1), 1)
	kprint(", ")
	kprintHex(uint64(a2), 1)
	kprint(") = ")
	kprintDec(int64(ret))
	kprint("\n")
	conRelease()
}
