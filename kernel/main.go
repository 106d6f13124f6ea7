package kernel

import (
	"sync/atomic"
	"unsafe"

	"yolk/drivers/clock"
	"yolk/sched"
)

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
