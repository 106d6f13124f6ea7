package kernel

import (
	"sync/atomic"
	"unsafe"

	"yolk/drivers/clock"
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

// kernelStats is what sysYolkStats copies out (mirrored in the self-tests).
type kernelStats struct {
	FramesAll, FramesFree, PagesMapped int64
	Tasks                              int64
	NodesInUse, NodeBound              int64
	TSCHz, LAPICHz                     int64 // the clock's counter and the per-CPU timer (amd64: TSC, LAPIC; arm64: both CNTFRQ)
	Syscalls                           int64
	CPUs                               int64
	Shootdowns, ShootdownIPIs          int64 // TLB shootdowns; interrupts they sent
	ShootdownLazy                      int64 // idle CPUs marked stale instead
	NodesPeak, PeakBound               int64 // most queue nodes ever out, and its bound
	TSCSynced                          int64 // 1: the CPUs' counters are synchronised (amd64: verified, vDSO on; arm64: architectural)
	Preempts                           int64 // involuntary switches, all CPUs
	Signals                            int64 // asynchronous signals delivered
	ConsoleIRQs, ConsoleWaits          int64 // serial receive interrupts; console reads that blocked
}

func sysStats(p uintptr) Errno {
	if !userW(p, unsafe.Sizeof(kernelStats{})) {
		return EFAULT
	}
	s := sched.ReadStats()
	*at[kernelStats](p) = kernelStats{
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
		at[kernelStats](p).TSCSynced = 1
	}
	for i := 0; i < sched.NumCPU(); i++ {
		at[kernelStats](p).Preempts += int64(sched.CPUAt(i).Preempts())
	}
	at[kernelStats](p).Signals = int64(atomic.LoadUint64(&sigDelivered))
	at[kernelStats](p).ConsoleIRQs = int64(atomic.LoadUint64(&conIn.irqs))
	at[kernelStats](p).ConsoleWaits = int64(atomic.LoadUint64(&conIn.waits))
	return 0
}
