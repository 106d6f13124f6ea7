package kernel

import (
	"sync/atomic"
	"unsafe"

	"yolk/arch/amd64"
	"yolk/kernel/mm"
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

// perCPU holds each CPU's descriptor tables, trap stacks and the kernel's
// per-CPU state. GDT and TSS live here, in BSS that the boot CPU touches
// for every CPU before that CPU starts (mm's BSSSplit/BSSReclaim never
// take it away); the trap stacks are mapped eagerly in the kernel-stack
// region, with unmapped guards (trapStacks).
type perCPU struct {
	gdt [5]uint64 // null, code, data, TSS (two slots)
	// faultAddr is CR2 as read at the entry of the last page fault here.
	faultAddr uintptr
	tss       tss
	_         [4]byte
	timer     timerState
	hasIDT    uint32 // atomic: the CPU has loaded the IDT (may take an NMI)

	// userPreempt: the trap being handled is a timer or wake-up interrupt
	// that came from application code; timerWoke: a timer interrupt that
	// woke a task for this CPU (preemptUser; sched.ExpireTimers).
	userPreempt, timerWoke bool

	// timerLVT: the local APIC timer's vector entry is set for timerProgram
	// (cpuInterrupts clears it with the entry).
	timerLVT bool

	// Start-up times (ns since boot, the boot CPU's clock): STARTUP sent,
	// the CPU running Go code.
	sent, up int64
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
		amd64.Lgdt(a)
	} else {
		amd64.Lidt(a)
	}
}

// Trap stacks, per CPU, in the kernel-stack region above the task stacks:
// in a 64 KiB stride, an unmapped guard, IST1 (istLevels slices of
// istLevel bytes, one per nesting level), a guard, IST2 (NMI, #DF, #MC),
// and the next stride's guard. Every slice is istLevel-aligned:
// trapCommon finds the handler's stack bounds by rounding its stack
// pointer down (an IST2 at 52 KiB once left a #DF report 3 KiB of stack,
// and the report overflowed it).
const (
	istLevel     = 8 << 10
	istLevels    = 4
	trapBase     = mm.KStackBase + sched.MaxTasks*mm.KStackStride
	trapStride   = 64 << 10
	ist1Off      = 16 << 10 // IST1 is [ist1Off, ist1Off+istLevels*istLevel)
	ist2Off      = 56 << 10 // IST2 is [ist2Off, ist2Off+istLevel)
	trapStackEnd = trapBase + sched.MaxCPUs*trapStride
)

// trapStacks maps CPU id's trap stacks and returns the tops of IST1 and
// IST2.
func trapStacks(id int) (ist1, ist2 uintptr) {
	base := trapBase + uintptr(id)*trapStride
	if !mm.MapKernel(base+ist1Off, base+ist1Off+istLevels*istLevel) ||
		!mm.MapKernel(base+ist2Off, base+ist2Off+istLevel) {
		outOfMemory()
	}
	return ist1Top(id), base + ist2Off + istLevel
}

// ist1Top is the top of CPU id's IST1, its outermost trap's slice.
func ist1Top(id int) uintptr {
	return trapBase + uintptr(id)*trapStride + ist1Off + istLevels*istLevel
}

// setupCPU installs CPU id's GDT, TSS and trap stacks (allocated by
// prepareCPU) and the shared IDT (built by the boot CPU, id 0).
func setupCPU(id int) {
	p := &percpu[id]
	p.gdt[1] = 0x00af9b000000ffff
	p.gdt[2] = 0x00cf93000000ffff
	base := uint64(uintptr(unsafe.Pointer(&p.tss)))
	limit := uint64(unsafe.Sizeof(p.tss) - 1)
	p.gdt[3] = limit&0xffff | (base&0xffffff)<<16 | 0x89<<40 | (limit>>16&0xf)<<48 | (base>>24&0xff)<<56
	p.gdt[4] = base >> 32
	p.tss[25] = uint32(unsafe.Sizeof(p.tss)) << 16 // I/O map base: none
	loadTable(true, uintptr(unsafe.Pointer(&p.gdt[0])), int(unsafe.Sizeof(p.gdt)))
	reloadSegments()
	amd64.Ltr(selTSS)

	if id == 0 {
		for v := range idt {
			ist := uint64(1)
			if !onIST1(uint64(v)) {
				ist = 2
			}
			h := uint64(vectorPC(v))
			idt[v][0] = h&0xffff | selCode<<16 | ist<<32 | 0x8e<<40 | (h>>16&0xffff)<<48
			idt[v][1] = h >> 32
		}
	}
	loadTable(false, uintptr(unsafe.Pointer(&idt[0])), int(unsafe.Sizeof(idt)))
	atomic.StoreUint32(&p.hasIDT, 1)
	if fsgsbase != 0 {
		amd64.SetCR4(amd64.CR4() | 1<<16) // CR4.FSGSBASE
	}
	if xsaveOn != 0 {
		xsaveEnable()
	}
}

// xsaveEnable turns on this CPU's XSAVE and its AVX state (XCR0).
func xsaveEnable() {
	amd64.SetCR4(amd64.CR4() | 1<<18) // CR4.OSXSAVE
	amd64.Xsetbv(0, xcr0)
}

// prepareCPU gives CPU id its trap stacks (and points its TSS at them).
// The boot CPU runs it for every CPU, before that CPU starts.
func prepareCPU(id int) {
	p := &percpu[id]
	ist1, ist2 := trapStacks(id)
	p.tss.setIST(1, uint64(ist1))
	p.tss.setIST(2, uint64(ist2))
	sched.CPUAt(id).TrapG.SetStack(ist1-istLevel, ist1)
}

// cpuFeatures read once at boot.
var (
	fsgsbase   uint8 // read by the entry assembly
	hasRDRAND  bool
	hasTSCDL   bool
	hasTSCAdj  bool
	hypervisor bool
	// tcg: the hypervisor is QEMU's TCG (CPUID 0x40000000 says
	// "TCGTCGTCGTCG"), whose CPUs all read the host's one time-stamp
	// counter.
	tcg       bool
	cpuidEDX1 uint32 // AT_HWCAP
	// xsaveOn: the FP state is XSAVE's, with AVX (XCR0 = xcr0), not
	// FXSAVE's alone (read by the entry assembly).
	xsaveOn uint8
)

// xcr0 is the state the kernel enables and saves where the CPU has XSAVE
// and AVX: x87, SSE and AVX, so that programs get AVX and AVX2 as on
// Linux (Go's runtime asks XGETBV). AVX-512's state (another 1,856 bytes
// a save) and AMX's are left off.
const xcr0 = 7

// mxcsrMask are the MXCSR bits FXRSTOR accepts (probeCPU).
var mxcsrMask uint32 = 0xFFBF

// Offsets in the FXSAVE area.
const (
	fxMXCSR     = 24
	fxMXCSRMask = 28
)

func probeCPU() {
	_, _, c1, d1 := amd64.Cpuid(1, 0)
	cpuidEDX1 = d1
	hasRDRAND = c1&(1<<30) != 0
	hasTSCDL = c1&(1<<24) != 0
	hypervisor = c1&(1<<31) != 0
	if hypervisor {
		_, b, c, d := amd64.Cpuid(0x40000000, 0)
		tcg = b == 0x54474354 && c == 0x43544743 && d == 0x47435447 // "TCGT" "CGTC" "GTCG"
	}
	_, b7, _, _ := amd64.Cpuid(7, 0)
	if b7&1 != 0 {
		fsgsbase = 1
	}
	hasTSCAdj = b7&2 != 0
	// XSAVE and AVX, with the AVX state where the standard format puts it
	// (fpStateSize's layout).
	if max, _, _, _ := amd64.Cpuid(0, 0); max >= 0xD && c1&(1<<26) != 0 && c1&(1<<28) != 0 {
		if a, b, _, _ := amd64.Cpuid(0xD, 2); a == 256 && b == 576 {
			xsaveOn = 1
			xsaveEnable()
		}
	}
	// The MXCSR bits this CPU has (FXSAVE's MXCSR_MASK; 0 means the
	// original SSE set, 0xFFBF): rt_sigreturn clears the others, as
	// Linux does, before FXRSTOR would fault on them.
	var buf [fpStateSize + 64]byte
	fx := (uintptr(unsafe.Pointer(&buf)) + 63) &^ 63
	fpSave(fx)
	if m := *at[uint32](fx + fxMXCSRMask); m != 0 {
		mxcsrMask = m
	}
}

// schedStarted: from here on the boot CPU's kernel TLS block names the
// current task's g, and SYSCALL enters the kernel.
func schedStarted(c *sched.CPU) {
	setFS(c.KernelTLS())
	syscallInit()
}

// syscallInit points this CPU's SYSCALL at the kernel entry.
func syscallInit() {
	amd64.Wrmsr(amd64.MSR_STAR, uint64(selCode)<<32)
	amd64.Wrmsr(amd64.MSR_LSTAR, uint64(syscallEntryPC()))
	// Clear TF, DF, IF, IOPL, NT, AC on entry.
	amd64.Wrmsr(amd64.MSR_FMASK, 0x47700)
}

//go:generate go run gen_vectors.go

// vectorPC is the address of vector v's entry stub (vectors_amd64.s).
func vectorPC(v int) uintptr

func reloadSegments()
func syscallEntryPC() uintptr
func forkretPC() uintptr
func rt0PC() uintptr
func imageEnd() uintptr
func setFS(base uintptr)

// hwcap is AT_HWCAP: CPUID leaf 1's EDX, as Linux gives on amd64.
func hwcap() uintptr { return uintptr(cpuidEDX1) }
