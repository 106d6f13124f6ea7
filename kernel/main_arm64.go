package kernel

import (
	"unsafe"

	"yolk/boot"
	"yolk/drivers/clock"
	"yolk/drivers/fdt"
	"yolk/drivers/gic"
	"yolk/drivers/psci"
	"yolk/kernel/mm"
	"yolk/sched"
	"yolk/sync/twa"
)

var (
	bootInfo boot.Info
	bootG    sched.G
	memMap   [32]boot.MemRegion
	dt       fdt.FDT
	bootEL   uint8
)

// entryPC and piEntryPC keep the arm64 entries in the image (nothing else
// refers to them: the image tool finds them in the symbol table); entryPC
// is printed at boot.
var entryPC, piEntryPC uintptr

func init() { entryPC, piEntryPC = boot.EntryPC(), boot.RPi3EntryPC() }

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
	if onPi() {
		piConsole()
		mm.SetLowGuard(piImageStart)
	} else if dtb == 0 {
		dtb = defaultDTB
	}
	var e fdt.Error
	if dt, e = fdt.Open(dtb, 1<<20); e != fdt.OK {
		consoleInit() // virt's or the Pi's PL011, the best guess
		klog("boot: no device tree at ")
		kprintHex(uint64(dtb), 1)
		kprint(": ")
		kprint(e.String())
		kprint("\n")
		if onPi() {
			fatal("boot: no device tree (the firmware loads the one config.txt's device_tree= names; QEMU: -dtb)")
		}
		fatal("boot: no device tree (boot with QEMU -kernel on -machine virt)")
	}
	if u, e := dt.PL011(); e == fdt.OK && !onPi() {
		uart.Base = uintptr(u.Base)
		conIRQ = u.IRQ
	}
	consoleInit()
	if onPi() {
		klog("boot: yolk kernel, arm64 entry, Raspberry Pi 3\n")
	} else {
		klog("boot: yolk kernel, arm64 entry\n")
	}
	readDeviceTree(dtb)
	mm.FramesInit(&bootInfo, imageEnd())
	vm.PhysInit()
	if !mm.HighMemInit() {
		klog("boot: no memory to map RAM above 4 GiB\n")
	}
	vm.BSSSplit(bssStart(), imageEnd()) // before anything writes tables that must count as touched
	twa.Prefault()
	prepareCPU(0)
	setupCPU(0)
	intcInit()
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

// readDeviceTree fills bootInfo: RAM less the reservation block's ranges
// and the tree itself at dtb, the command line (/chosen bootargs), the boot
// archive (yolk.initrd=ADDR,SIZE on it — QEMU virt loads no -initrd for an
// ELF kernel, so the host places it with a loader device — else /chosen's
// linux,initrd-start/end), and finds the PSCI conduit and the RTC.
func readDeviceTree(dtb uintptr) {
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
	var rsv [16]fdt.Range
	k, _ := dt.Reserved(rsv[:])
	if k > len(rsv) {
		fatal("boot: more memory reservations in the device tree than the kernel keeps")
	}
	for _, r := range rsv[:k] {
		carveRAM(r.Base, r.Size)
	}
	carveRAM(uint64(dtb), uint64(dt.TotalSize))
	if n, _, e := dt.Find("/chosen"); e == fdt.OK {
		if p, e := dt.Prop(n, "bootargs"); e == fdt.OK && p.Len > 0 {
			bootInfo.Cmdline = dt.Base + uintptr(p.Off)
			bootInfo.Module, bootInfo.ModuleSize = initrdOption(bootInfo.Cmdline)
		}
		if bootInfo.ModuleSize == 0 {
			ps, e1 := dt.Prop(n, "linux,initrd-start")
			pe, e2 := dt.Prop(n, "linux,initrd-end")
			if e1 == fdt.OK && e2 == fdt.OK {
				s, e1 := dt.Cells(ps, 0, ps.Len/4)
				end, e2 := dt.Cells(pe, 0, pe.Len/4)
				if e1 == fdt.OK && e2 == fdt.OK && end > s {
					bootInfo.Module, bootInfo.ModuleSize = uintptr(s), uintptr(end-s)
				}
			}
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

// carveRAM takes [base, base+size) out of memMap's RAM regions.
func carveRAM(base, size uint64) {
	end := base + size
	if end < base {
		end = ^uint64(0)
	}
	for i := 0; i < bootInfo.MemEntries; i++ {
		r := &memMap[i]
		rend := r.Addr + r.Size
		if size == 0 || end <= r.Addr || base >= rend {
			continue
		}
		if base > r.Addr && end < rend {
			if bootInfo.MemEntries < len(memMap) {
				memMap[bootInfo.MemEntries] = boot.MemRegion{Addr: end, Size: rend - end, Type: boot.MemRAM}
				bootInfo.MemEntries++
			} else {
				klog("boot: memory map full: RAM above a reservation left unused\n")
			}
			r.Size = base - r.Addr
			continue
		}
		switch {
		case base <= r.Addr && end >= rend:
			r.Size = 0
		case base <= r.Addr:
			r.Size, r.Addr = rend-end, end
		default:
			r.Size = base - r.Addr
		}
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
	if onPi() {
		kprint(" MHz, BCM2836 local interrupts")
		return
	}
	kprint(" MHz, GICv")
	kprintDec(int64(gic.Version()))
}
