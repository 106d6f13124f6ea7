package kernel

import (
	"unsafe"

	"yolk/drivers/x86"
	"yolk/sched"
)

// Segment selectors of the kernel GDT.
const (
	selCode = 0x08
	selData = 0x10
	selTSS  = 0x18
)

// tss is the 64-bit task-state segment (only the IST pointers are used:
// everything runs in ring 0, so there is no privilege-change stack).
type tss [26]uint32 // packed: 64-bit fields sit at 4-byte offsets

// setIST sets IST pointer n (1..7).
func (t *tss) setIST(n int, v uint64) {
	t[9+2*(n-1)], t[10+2*(n-1)] = uint32(v), uint32(v>>32)
}

func (t *tss) getIST(n int) uint64 {
	return uint64(t[9+2*(n-1)]) | uint64(t[10+2*(n-1)])<<32
}

// perCPU holds each CPU's descriptor tables and trap stacks.
type perCPU struct {
	gdt [5]uint64 // null, code, data, TSS (two slots)
	// faultAddr is CR2 as read at the entry of the last page fault here.
	faultAddr uintptr
	tss       tss
	_         [4]byte
	// istTrap is IST1 (every vector but NMI, #DF, #MC); istFatal is IST2.
	istTrap  [32 << 10]byte
	istFatal [8 << 10]byte
	timer    timerState
}

var percpu [sched.MaxCPUs]perCPU

// idt is shared by all CPUs: 256 16-byte gates.
var idt [256][2]uint64

// pseudo is a descriptor-table register image.
type pseudo struct {
	_     [6]byte
	limit uint16
	base  uint64
}

func loadTable(lgdt bool, base uintptr, size int) {
	var p pseudo
	p.limit = uint16(size - 1)
	p.base = uint64(base)
	a := uintptr(unsafe.Pointer(&p.limit))
	if lgdt {
		x86.Lgdt(a)
	} else {
		x86.Lidt(a)
	}
}

// istDepth is how far IST1 has been lowered for nested traps.
const istNest = 8 << 10

// setupCPU installs this CPU's GDT, TSS and the shared IDT.
func setupCPU(id int) {
	p := &percpu[id]
	p.gdt[1] = 0x00af9b000000ffff
	p.gdt[2] = 0x00cf93000000ffff
	base := uint64(uintptr(unsafe.Pointer(&p.tss)))
	limit := uint64(unsafe.Sizeof(p.tss) - 1)
	p.gdt[3] = limit&0xffff | (base&0xffffff)<<16 | 0x89<<40 | (limit>>16&0xf)<<48 | (base>>24&0xff)<<56
	p.gdt[4] = base >> 32
	p.tss[25] = uint32(unsafe.Sizeof(p.tss)) << 16 // I/O map base: none
	p.tss.setIST(1, uint64(uintptr(unsafe.Pointer(&p.istTrap[0]))+uintptr(len(p.istTrap))))
	p.tss.setIST(2, uint64(uintptr(unsafe.Pointer(&p.istFatal[0]))+uintptr(len(p.istFatal))))
	loadTable(true, uintptr(unsafe.Pointer(&p.gdt[0])), int(unsafe.Sizeof(p.gdt)))
	reloadSegments()
	x86.Ltr(selTSS)

	if id == 0 {
		for v := range idt {
			ist := uint64(1)
			if v == 2 || v == 8 || v == 18 {
				ist = 2
			}
			h := uint64(vectorPC(v))
			idt[v][0] = h&0xffff | selCode<<16 | ist<<32 | 0x8e<<40 | (h>>16&0xffff)<<48
			idt[v][1] = h >> 32
		}
	}
	loadTable(false, uintptr(unsafe.Pointer(&idt[0])), int(unsafe.Sizeof(idt)))

	// The trap stacks must never fault (a fault while pushing a trap frame
	// is a double fault): touch them so demand-paged BSS keeps them.
	for i := 0; i < len(p.istTrap); i += pageSize {
		p.istTrap[i] = 0
	}
	for i := 0; i < len(p.istFatal); i += pageSize {
		p.istFatal[i] = 0
	}
	c := sched.This()
	lo := uintptr(unsafe.Pointer(&p.istTrap[0]))
	c.TrapG.SetStack(lo, lo+uintptr(len(p.istTrap)))
}

// cpuFeatures read once at boot.
var (
	fsgsbase   uint8 // read by the entry assembly
	hasRDRAND  bool
	hasTSCDL   bool
	hypervisor bool
	cpuidEDX1  uint32 // AT_HWCAP
)

func probeCPU() {
	_, _, c1, d1 := x86.Cpuid(1, 0)
	cpuidEDX1 = d1
	hasRDRAND = c1&(1<<30) != 0
	hasTSCDL = c1&(1<<24) != 0
	hypervisor = c1&(1<<31) != 0
	_, b7, _, _ := x86.Cpuid(7, 0)
	if b7&1 != 0 {
		x86.SetCR4(x86.CR4() | 1<<16) // CR4.FSGSBASE
		fsgsbase = 1
	}
}

// syscallInit points SYSCALL at the kernel entry.
func syscallInit() {
	x86.Wrmsr(x86.MSR_STAR, uint64(selCode)<<32)
	x86.Wrmsr(x86.MSR_LSTAR, uint64(syscallEntryPC()))
	// Clear TF, DF, IF, IOPL, NT, AC on entry.
	x86.Wrmsr(x86.MSR_FMASK, 0x47700)
}

//go:generate go run gen_vectors.go
//go:generate go run gen_sysnames.go

// vectorPC is the address of vector v's entry stub (vectors_amd64.s).
func vectorPC(v int) uintptr

func reloadSegments()
func syscallEntryPC() uintptr
func forkretPC() uintptr
func rt0PC() uintptr
func imageEnd() uintptr
func setFS(base uintptr)
