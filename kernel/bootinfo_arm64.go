package kernel

import (
	"unsafe"

	"yolk/boot"
	"yolk/drivers/fdt"
	"yolk/drivers/psci"
	"yolk/kernel/mm"
	"yolk/sched"
)

var (
	memMap [32]boot.MemRegion
	dt     fdt.FDT
)

// earlyTrapStack is the trap stack until the boot CPU has its own (a fault
// at boot is reported, not a silent loop). Initialised data, not BSS: it
// must be mapped, with its access flag set, before any exception.
var earlyTrapStack = [8 << 10]byte{1}

// defaultDTB is where QEMU virt puts the device tree for an ELF kernel
// linked above it (it passes x0 = 0): the start of RAM.
const defaultDTB = 0x40000000

// bootInfoInit takes the early trap stack, brings the console up and
// reads the device tree at dtb (0: none given, QEMU virt's default place).
func bootInfoInit(c *sched.CPU, dtb, _ uintptr) {
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
