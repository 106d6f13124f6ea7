package kernel

import (
	"unsafe"

	"yolk/boot"
	"yolk/drivers/clock"
	"yolk/kernel/mm"
	"yolk/sched"
	"yolk/sync/twa"
)

var (
	bootInfo boot.Info // what the boot loader passed (bootinfo_$GOARCH.go)
	bootG    sched.G   // the boot CPU's g until sched runs
)

// entryPC keeps the entry in the image (nothing else refers to it: the
// image tool finds it in the symbol table) and is printed at boot.
var entryPC uintptr

func init() { entryPC = boot.EntryPC() }

// kmain is the kernel's Go entry, called by the entry assembly
// (entry_$GOARCH.s) on the boot stack with what the boot loader passed:
// on amd64 the PVH start-info or Multiboot2 information and the entry's
// EAX, on arm64 the device tree's address and 0. It never returns: the
// boot context becomes CPU 0's idle task once the Go runtime's first
// thread is ready to run. The arch's steps are hooks of the same name in
// each arch's files.
func kmain(a0, a1 uintptr) {
	c := sched.InitCPU(0, 0) // first: locks use the per-CPU block
	bootInfoInit(c, a0, a1)  // the console, then the boot information
	probeCPU()
	mm.FramesInit(&bootInfo, imageEnd())
	vm.PhysInit()
	if !mm.HighMemInit() {
		klog("boot: no memory to map RAM above 4 GiB\n")
	}
	vm.BSSSplit(bssStart(), imageEnd()) // before anything writes tables that must count as touched
	vm.ProtectImage(textStart()&^(mm.PageSize-1), imageRO(), imageEnd())
	twa.Prefault()
	sched.Prefault()
	prepareCPU(0)
	setupCPU(0)
	intcInit(c)
	timeInit()
	parseCmdline(bootInfo.Cmdline)
	n := findCPUs()
	lo, hi := boot.StackBounds()
	if sched.Init(n, vecWake, lo, hi) == nil {
		fatal("sched: init failed")
	}
	schedStarted(c)
	filesInit()
	rngState = clock.Base()
	smpStart(n)
	clockCheck(n)
	mm.UnmapLow()
	bootDone(n)

	conInInit(c)
	virtioInit(c)
	powerInit(c)
	shareStarted()
	startInit()
	startCommitter()
	sched.Idle(idleWait)
}

// bootDone ends the boot once the n CPUs are up: the per-CPU blocks are
// kept out of the demand-paged BSS (the fault path uses them), the BSS
// nobody touched goes back to the frame allocator, the other CPUs leave
// their barrier, and the boot report is printed.
func bootDone(n int) {
	for i := 0; i < n; i++ {
		mm.BSSKeep(uintptr(unsafe.Pointer(sched.CPUAt(i))), unsafe.Sizeof(sched.CPU{}))
		mm.BSSKeep(uintptr(unsafe.Pointer(&percpu[i])), unsafe.Sizeof(percpu[i]))
	}
	if va := mm.BSSReclaim(); va != 0 {
		klog("bss: no page-table entry for ")
		kprintHex(uint64(va), 1)
		kprint("\n")
	}
	smpRelease(n)

	ms := mm.ReadStats()
	klog("boot: ")
	kprintDec(ms.FramesAll * mm.PageSize >> 20)
	kprint(" MiB RAM free (")
	kprintDec(ms.BSSReclaimed * mm.PageSize >> 20)
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

// kernelStack gives task t a kernel stack and returns its top, or 0 if
// there is no memory for it (trap.go: out of memory at boot, or the
// program's).
func kernelStack(t *sched.Task) uintptr {
	lo, hi, ok := mm.AllocKStack(t.Index())
	if !ok {
		return 0
	}
	t.SetStack(lo, hi)
	return hi
}

// startInit creates the first user task: the Go runtime's entry point on a
// Linux-style initial stack.
func startInit() {
	t := sched.Alloc()
	hi := kernelStack(t)
	if hi == 0 {
		outOfMemory()
	}
	timerSlackInit(t, nil)
	sp := buildInitStack()
	fr := at[Regs](hi - regsSize)
	*fr = userStart(rt0PC(), sp)
	t.Prepare(hi-regsSize, forkretPC())
	sched.Ready(t)
}
