package kernel

import (
	"sync/atomic"
	"unsafe"

	"yolk/boot"
	"yolk/drivers/clock"
	"yolk/sched"
	"yolk/sync/twa"
)

var (
	bootInfo boot.Info
	bootG    sched.G
	bootTLS  [2]uintptr
)

// entryPC keeps the PVH entry in the image (nothing else refers to it: the
// host tool finds it in the symbol table) and is printed at boot.
var entryPC uintptr

func init() { entryPC = boot.EntryPC() }

// kmain is the kernel's Go entry, called by start64 on the boot stack with
// the PVH start-info address. It never returns: the boot context becomes CPU
// 0's idle task once the Go runtime's first thread is ready to run.
func kmain(info uintptr) {
	c := sched.InitCPU(0, 0) // first: locks use the per-CPU block
	consoleInit()
	klog("boot: yolk kernel, PVH entry\n")
	if !boot.ParsePVH(info, &bootInfo) {
		fatal("boot: no PVH start-info block (boot with QEMU -kernel and a PVH note)")
	}
	probeCPU()
	framesInit(&bootInfo)
	physInit()
	highMemInit()
	bssSplit() // before anything writes tables that must count as touched
	twa.Prefault()
	prepareCPU(0)
	setupCPU(0)
	timeInit()
	parseCmdline(bootInfo.Cmdline)
	n := findCPUs()
	page := trampolinePage()
	if n > 1 && page == 0 {
		klog("smp: no free page below 1 MiB for the start-up code: running on the boot CPU only\n")
		n = 1
	}
	lo, hi := boot.StackBounds()
	if sched.Init(n, vecWake, lo, hi) == nil {
		fatal("sched: init failed")
	}
	// From here on the kernel TLS block of CPU 0 names the current task's g.
	setFS(c.KernelTLS())
	syscallInit()
	filesInit()
	rngState = clock.Base()
	smpStart(n, page)
	tscCheck(n)
	unmapLow()
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
	kprint(" MiB of it untouched BSS, now demand-paged), TSC ")
	kprintDec(int64(clock.Hz() / 1e6))
	kprint(" MHz (")
	kprint(tscSources[tscSource])
	kprint("), LAPIC timer ")
	kprintDec(int64(lapicHz / 1e6))
	kprint(" MHz")
	if hasTSCDL {
		kprint(" (TSC-deadline capable)")
	}
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

	conInInit(ioapicFor(com1IRQ), uint32(c.IRQ))
	startInit()
	sched.Idle(idleWait)
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
	*fr = Regs{IP: uint64(rt0PC()), SP: uint64(sp), CS: selCode, SS: selData, Flags: 2}
	t.Prepare(hi-regsSize, forkretPC())
	sched.Ready(t)
}

// kernelStats is what sysYolkStats copies out (mirrored in the self-tests).
type kernelStats struct {
	FramesAll, FramesFree, PagesMapped int64
	Tasks                              int64
	NodesInUse, NodeBound              int64
	TSCHz, LAPICHz                     int64
	Syscalls                           int64
	CPUs                               int64
	Shootdowns, ShootdownIPIs          int64 // TLB shootdowns; interrupts they sent
	ShootdownLazy                      int64 // idle CPUs marked stale instead
	NodesPeak, PeakBound               int64 // most queue nodes ever out, and its bound
	TSCSynced                          int64 // 1: TSCs verified synchronised (vDSO on)
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
		TSCHz: int64(clock.Hz()), LAPICHz: int64(lapicHz),
		Syscalls:   int64(atomic.LoadUint64(&nsyscalls)),
		CPUs:       int64(sched.NumCPU()),
		Shootdowns: int64(atomic.LoadUint64(&shoot.count)), ShootdownIPIs: int64(atomic.LoadUint64(&shoot.ipis)),
		ShootdownLazy: int64(atomic.LoadUint64(&shoot.lazy)),
		NodesPeak:     int64(s.NodesPeak), PeakBound: int64(s.PeakBound),
	}
	if !tscProbe.skewed {
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
