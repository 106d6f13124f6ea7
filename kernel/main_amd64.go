package kernel

import (
	"yolk/boot"
	"yolk/drivers/clock"
	"yolk/kernel/mm"
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
// the PVH start-info or Multiboot2 information address and the entry's EAX
// (boot.Multiboot2Magic from a Multiboot2 loader). It never returns: the
// boot context becomes CPU 0's idle task once the Go runtime's first thread
// is ready to run.
func kmain(info, magic uintptr) {
	c := sched.InitCPU(0, 0) // first: locks use the per-CPU block
	consoleInit()
	if uint32(magic) == boot.Multiboot2Magic {
		klog("boot: yolk kernel, Multiboot2 entry\n")
		if !boot.ParseMultiboot2(info, &bootInfo) {
			fatal("boot: the Multiboot2 information has no memory map")
		}
	} else {
		klog("boot: yolk kernel, PVH entry\n")
		if !boot.ParsePVH(info, &bootInfo) {
			fatal("boot: no PVH start-info block (boot with QEMU -kernel and a PVH note, or through GRUB's multiboot2)")
		}
	}
	screenInit(&bootInfo)
	probeCPU()
	mm.FramesInit(&bootInfo, imageEnd())
	vm.PhysInit()
	if !mm.HighMemInit() {
		klog("boot: no memory to map RAM above 4 GiB\n")
	}
	vm.BSSSplit(bssStart(), imageEnd()) // before anything writes tables that must count as touched
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
	mm.UnmapLow()
	bootDone(n)

	conInInit(ioapicFor(com1IRQ), uint32(c.IRQ))
	startInit()
	sched.Idle(idleWait)
}

// timerHz is the local APIC timer's rate.
func timerHz() uint64 { return lapicHz }

// clockSynced reports whether the TSCs were found synchronised.
func clockSynced() bool { return !tscProbe.skewed }

// printClock names the clock and timer in the boot report.
func printClock() {
	kprint("TSC ")
	kprintDec(int64(clock.Hz() / 1e6))
	kprint(" MHz (")
	kprint(tscSources[tscSource])
	kprint("), LAPIC timer ")
	kprintDec(int64(lapicHz / 1e6))
	kprint(" MHz")
	if hasTSCDL {
		kprint(" (TSC-deadline capable)")
	}
}
