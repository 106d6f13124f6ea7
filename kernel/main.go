package kernel

import (
	"sync/atomic"
	"unsafe"

	"yolk/drivers/clock"
	"yolk/kernel/abi"
	"yolk/sched"
)

// bootDone ends the boot once the n CPUs are up: the per-CPU blocks are
// kept out of the demand-paged BSS (the fault path uses them), the BSS
// nobody touched goes back to the frame allocator, the other CPUs leave
// their barrier, and the boot report is printed.
func bootDone(n int) {
	for i := 0; i < n; i++ {
		bssKeep(uintptr(unsafe.Pointer(sched.CPUAt(i))), unsafe.Sizeof(sched.CPU{}))
		bssKeep(uintptr(unsafe.Pointer(&percpu[i])), unsafe.Sizeof(percpu[i]))
	}
	bssReclaim()
	smpRelease(n)

	klog("boot: ")
	kprintDec(framesAll * pageSize >> 20)
	kprint(" MiB RAM free (")
	kprintDec(bssReclaimed * pageSize >> 20)
	kprint(" MiB of it untouched BSS, now demand-paged), ")
	printClock()
	kprint(", ")
	kprintDec(int64(n))
	kprint(" CPU")
	if n > 1 {
		kprint("s")
	}
	kprint(", boot ")
	kprintDec(nanotime() / 1e3)
	kprint(" µs\n")
	smpReport(n)
}

// smpReport prints the CPUs and their start-up times (the arch names
// them: printCPUID, cpuIDName, cpuStartName).
func smpReport(n int) {
	if n < 2 {
		return
	}
	var slowest, last int64
	for i := 1; i < n; i++ {
		p := &percpu[i]
		slowest = max(slowest, p.up-p.sent)
		last = max(last, p.up)
	}
	klog("smp: ")
	kprintDec(int64(n))
	kprint(" CPUs (")
	kprint(cpuIDName)
	for i := 0; i < n; i++ {
		kprint(" ")
		printCPUID(i)
	}
	kprint("); the slowest ran Go code ")
	kprintDec(slowest / 1e3)
	kprint(" µs after its ")
	kprint(cpuStartName())
	kprint(", all ")
	kprintDec((last - percpu[1].sent) / 1e3)
	kprint(" µs after the first\n")
}

// startInit creates the first user task: the Go runtime's entry point on a
// Linux-style initial stack.
func startInit() {
	t := sched.Alloc()
	lo, hi, ok := allocKStack(t.Index())
	if !ok {
		outOfMemory()
	}
	t.SetStack(lo, hi)
	sp := buildInitStack()
	fr := at[Regs](hi - regsSize)
	*fr = userStart(rt0PC(), sp)
	t.Prepare(hi-regsSize, forkretPC())
	sched.Ready(t)
}

func sysStats(p uintptr) abi.Errno {
	if !userW(p, unsafe.Sizeof(abi.Stats{})) {
		return abi.EFAULT
	}
	s := sched.ReadStats()
	*at[abi.Stats](p) = abi.Stats{
		FramesAll: framesAll, FramesFree: framesFree, PagesMapped: pagesMapped,
		Tasks: int64(s.Live), NodesInUse: int64(s.NodesInUse), NodeBound: int64(s.NodeBound),
		TSCHz: int64(clock.Hz()), LAPICHz: int64(timerHz()),
		Syscalls:   int64(atomic.LoadUint64(&nsyscalls)),
		CPUs:       int64(sched.NumCPU()),
		Shootdowns: int64(atomic.LoadUint64(&shoot.count)), ShootdownIPIs: int64(atomic.LoadUint64(&shoot.ipis)),
		ShootdownLazy: int64(atomic.LoadUint64(&shoot.lazy)),
		NodesPeak:     int64(s.NodesPeak), PeakBound: int64(s.PeakBound),
	}
	if clockSynced() {
		at[abi.Stats](p).TSCSynced = 1
	}
	for i := 0; i < sched.NumCPU(); i++ {
		at[abi.Stats](p).Preempts += int64(sched.CPUAt(i).Preempts())
	}
	at[abi.Stats](p).Signals = int64(atomic.LoadUint64(&sigDelivered))
	at[abi.Stats](p).ConsoleIRQs = int64(atomic.LoadUint64(&conIn.irqs))
	at[abi.Stats](p).ConsoleWaits = int64(atomic.LoadUint64(&conIn.waits))
	return 0
}
