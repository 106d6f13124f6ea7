package kernel

import (
	"unsafe"

	"yolk/boot"
	"yolk/drivers/clock"
	"yolk/drivers/fdt"
	"yolk/drivers/gic"
	"yolk/drivers/psci"
	"yolk/sched"
	"yolk/sync/twa"
)

var (
	bootInfo boot.Info
	bootG    sched.G
	memMap   [32]boot.MemRegion
	dt       fdt.FDT
	gicReady bool // the distributor is set up (stopOthers may send SGIs)
	bootEL   uint8
)

// entryPC keeps the arm64 entry in the image (nothing else refers to it:
// the image tool finds it in the symbol table) and is printed at boot.
var entryPC uintptr

func init() { entryPC = boot.EntryPC() }

// earlyTrapStack is the trap stack until the boot CPU has its own (a fault
// at boot is reported, not a silent loop). Initialised data, not BSS: it
// must be mapped, with its access flag set, before any exception.
var earlyTrapStack = [8 << 10]byte{1}

// defaultDTB is where QEMU virt puts the device tree for an ELF kernel
// linked above it (it passes x0 = 0): the start of RAM.
const defaultDTB = 0x40000000

// kmain is the kernel's Go entry, called by start on the boot stack with
// the device tree's address (0: none given). It never returns: the boot
// context becomes CPU 0's idle task once the Go runtime's first thread is
// ready to run.
func kmain(dtb uintptr) {
	c := sched.InitCPU(0, 0) // first: locks use the per-CPU block
	c.TrapG.SetStack(uintptr(unsafe.Pointer(&earlyTrapStack[0])), uintptr(unsafe.Pointer(&earlyTrapStack[0]))+uintptr(len(earlyTrapStack)))
	setTrapStack(c.TrapG.StackHi)
	if dtb == 0 {
		dtb = defaultDTB
	}
	var e fdt.Error
	if dt, e = fdt.Open(dtb, 1<<20); e != fdt.OK {
		consoleInit() // virt's PL011, the best guess
		klog("boot: no device tree at ")
		kprintHex(uint64(dtb), 1)
		kprint(": ")
		kprint(e.String())
		kprint("\n")
		fatal("boot: no device tree (boot with QEMU -kernel on -machine virt)")
	}
	if u, e := dt.PL011(); e == fdt.OK {
		uart.Base = uintptr(u.Base)
		conIRQ = u.IRQ
	}
	consoleInit()
	klog("boot: yolk kernel, arm64 entry\n")
	readDeviceTree()
	framesInit(&bootInfo)
	physInit()
	highMemInit()
	bssSplit() // before anything writes tables that must count as touched
	twa.Prefault()
	prepareCPU(0)
	setupCPU(0)
	initGIC()
	cpuInterrupts(0, c)
	timeInit()
	parseCmdline(bootInfo.Cmdline)
	n := findCPUs(&dt)
	lo, hi := boot.StackBounds()
	if sched.Init(n, vecWake, lo, hi) == nil {
		fatal("sched: init failed")
	}
	filesInit()
	rngState = clock.Base()
	smpStart(n)
	bootDone(n)

	conInInit()
	startInit()
	sched.Idle(idleWait)
}

// readDeviceTree fills bootInfo: RAM, the command line (/chosen bootargs),
// the boot archive (yolk.initrd=ADDR,SIZE on it: QEMU loads no -initrd for
// an ELF kernel, so the host places it with a loader device), and finds
// the PSCI conduit and the RTC.
func readDeviceTree() {
	var ram [len(memMap)]fdt.Range
	m, e := dt.Memory(ram[:])
	if e != fdt.OK || m == 0 {
		fatal("boot: no memory in the device tree")
	}
	for i := range min(m, len(ram)) {
		memMap[i] = boot.MemRegion{Addr: ram[i].Base, Size: ram[i].Size, Type: boot.MemRAM}
	}
	bootInfo.MemMap = uintptr(unsafe.Pointer(&memMap[0]))
	bootInfo.MemEntries = min(m, len(ram))
	if n, _, e := dt.Find("/chosen"); e == fdt.OK {
		if p, e := dt.Prop(n, "bootargs"); e == fdt.OK && p.Len > 0 {
			bootInfo.Cmdline = dt.Base + uintptr(p.Off)
			bootInfo.Module, bootInfo.ModuleSize = initrdOption(bootInfo.Cmdline)
		}
	}
	if c, e := dt.PSCI(); e == fdt.OK {
		psci.Init(psci.Conduit(c))
	}
	it := dt.Walk()
	if _, e := dt.FindCompatible(&it, "arm,pl031"); e == fdt.OK {
		if a, _, e := dt.RegAt(&it, 0); e == fdt.OK {
			rtcBase = uintptr(a)
		}
	}
}

// initGIC sets up the distributor from the device tree and finds the
// timer's interrupt.
func initGIC() {
	g, e := dt.GIC()
	if e != fdt.OK {
		fatal("boot: no GIC in the device tree")
	}
	if ge := gic.Init(gic.Config{Version: g.Version, Dist: uintptr(g.Dist), CPU: uintptr(g.CPU),
		Redist: uintptr(g.Redist), RedistSize: uintptr(g.RedistSize)}); ge != gic.OK {
		klog("gic: ")
		kprint(ge.String())
		kprint("\n")
		fatal("boot: GIC set-up failed")
	}
	gicReady = true
	if t, e := dt.Timer(); e == fdt.OK && t.Virt.ID != 0 {
		timerIRQ = t.Virt.ID
	}
}

// initrdOption finds "yolk.initrd=0xADDR,SIZE" on the command line at p.
func initrdOption(p uintptr) (addr, size uintptr) {
	s := at[[4096]byte](p)
	const key = "yolk.initrd="
	for i := 0; i+len(key) < len(s) && s[i] != 0; i++ {
		if (i > 0 && s[i-1] != ' ') || string(s[i:i+len(key)]) != key {
			continue
		}
		j := i + len(key)
		if j+2 < len(s) && s[j] == '0' && s[j+1] == 'x' {
			j += 2
		}
		for ; j < len(s); j++ {
			d := hexDigit(s[j])
			if d < 0 {
				break
			}
			addr = addr<<4 | uintptr(d)
		}
		if j >= len(s) || s[j] != ',' {
			return 0, 0
		}
		for j++; j < len(s) && s[j] >= '0' && s[j] <= '9'; j++ {
			size = size*10 + uintptr(s[j]-'0')
		}
		return addr, size
	}
	return 0, 0
}

func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// printClock names the clock and the interrupt controller in the boot report.
func printClock() {
	kprint("counter ")
	kprintDec(int64(clock.Hz() / 1e6))
	kprint(" MHz, GICv")
	kprintDec(int64(gic.Version()))
}
