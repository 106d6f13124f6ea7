package kernel

import (
	"sync/atomic"

	"yolk/drivers/acpi"
	"yolk/drivers/lapic"
	"yolk/drivers/x86"
	"yolk/kernel/mm"
	"yolk/sched"
)

// SMP start-up. The boot CPU finds the CPUs in the ACPI MADT, gives each
// application processor (AP) an idle task with a kernel stack, a per-CPU
// block and trap stacks, and starts them all at once (INIT, STARTUP; no
// fixed sleeps). Each AP sets up its descriptor tables, local APIC and
// SYSCALL, records when it got there, and waits in a barrier (halted, but
// for the boot CPU's TSC probes, which it answers) until the boot CPU has
// finished the
// steps that change the boot page tables for everyone (unmapping the low
// 2 MiB, giving untouched BSS back); then it flushes its TLB and enters its
// idle loop.

// What apEntry64 reads to find its stack and per-CPU block by APIC ID.
var (
	apCount uint32
	apIRQ   [sched.MaxCPUs]uint32
	apStack [sched.MaxCPUs]uintptr
	apCPU   [sched.MaxCPUs]uintptr
)

var (
	smpGo uint32 // atomic: APs may leave the boot barrier
	// madtCPUs has room for more entries than the kernel runs CPUs: the
	// MADT may list hot-pluggable slots beside the CPUs present.
	madtCPUs    [512]acpi.CPU
	madtIOAPICs [8]acpi.IOAPIC
	nIOAPICs    int
)

// ioapicFor is the address of the I/O APIC serving global system interrupt
// gsi according to the MADT, 0 if the MADT did not say.
func ioapicFor(gsi uint32) uintptr {
	for _, a := range madtIOAPICs[:nIOAPICs] {
		if a.GSIBase <= gsi && gsi < a.GSIBase+24 {
			return uintptr(a.Addr)
		}
	}
	return 0
}

// findCPUs fills apIRQ with the APIC IDs of the CPUs to run, the boot CPU
// first, and returns how many there are.
func findCPUs() int {
	me := lapic.ID()
	apIRQ[0] = me
	sched.CPUAt(0).IRQ = uint64(me)
	if bootInfo.RSDP == 0 {
		klog("smp: no ACPI tables: running on the boot CPU only\n")
		return 1
	}
	m, e := acpi.ReadMADT(bootInfo.RSDP, mm.PhysOff(), madtCPUs[:], madtIOAPICs[:])
	nIOAPICs = min(m.IOAPICs, len(madtIOAPICs))
	if e != acpi.OK && e != acpi.ErrTooManyCPUs {
		klog("smp: ACPI MADT: ")
		kprint(e.String())
		kprint(": running on the boot CPU only\n")
		return 1
	}
	// CPUs present now are marked Enabled; "online capable" ones are
	// slots a CPU may be hot-added to later, not CPUs to start.
	present, self := 0, false
	for _, c := range madtCPUs[:min(m.CPUs, len(madtCPUs))] {
		if c.Flags&acpi.FlagEnabled != 0 {
			present++
			self = self || c.APICID == me
		}
	}
	if !self {
		present++ // the boot CPU runs whatever the table says
	}
	if present > sched.MaxCPUs || e == acpi.ErrTooManyCPUs {
		klog("smp: the machine has ")
		kprintDec(int64(max(present, m.CPUs)))
		kprint(" CPUs; this kernel supports at most ")
		kprintDec(sched.MaxCPUs)
		kprint(" (sched.MaxCPUs)\n")
		fatal("smp: more CPUs than the kernel supports")
	}
	n := 1
	for _, c := range madtCPUs[:m.CPUs] {
		switch {
		case c.Flags&acpi.FlagEnabled == 0 || c.APICID == me:
		case c.APICID > 0xfe:
			klog("smp: CPU with x2APIC ID ")
			kprintDec(int64(c.APICID))
			kprint(" not started (xAPIC mode reaches IDs up to 254)\n")
		default:
			apIRQ[n] = c.APICID
			n++
		}
	}
	if !self {
		klog("smp: warning: the boot CPU is not in the MADT\n")
	}
	return n
}

// smpStart starts CPUs 1..n-1 with the start-up code in page and waits
// until each runs Go code.
func smpStart(n int, page uintptr) {
	if n < 2 {
		return
	}
	installTrampoline(page)
	for i := 1; i < n; i++ {
		t := sched.Alloc()
		if t == nil {
			fatal("smp: no task slot for an idle task")
		}
		lo, hi, ok := mm.AllocKStack(t.Index())
		if !ok {
			outOfMemory()
		}
		t.SetStack(lo, hi)
		apStack[i], apCPU[i] = hi, sched.PrepareCPU(i, uint64(apIRQ[i]), t).Self
		prepareCPU(i)
	}
	atomic.StoreUint32(&apCount, uint32(n))
	for i := 1; i < n; i++ {
		percpu[i].sent = nanotime()
		startAP(apIRQ[i], page)
	}
	for i := 1; i < n; i++ {
		for deadline := nanotime() + 2e9; atomic.LoadInt64(&percpu[i].up) == 0; {
			if nanotime() > deadline {
				klog("smp: CPU ")
				kprintDec(int64(i))
				kprint(" (APIC ID ")
				kprintDec(int64(apIRQ[i]))
				kprint(") did not start within 2 s\n")
				fatal("smp: an application processor did not start")
			}
			x86.Pause()
		}
	}
}

// apMain is an AP's first Go code, on its idle task's stack.
func apMain(id int) {
	setupCPU(id)
	localAPICInit()
	syscallInit()
	atomic.StoreInt64(&percpu[id].up, nanotime())
	// The barrier halts between the boot CPU's requests (each comes with
	// a wake-up interrupt): a spinning AP would take host time from the
	// boot CPU under emulation.
	for atomic.LoadUint32(&smpGo) == 0 {
		if !tscServe(id) {
			x86.StiHlt()
		}
	}
	x86.FlushTLB()
	sched.Idle(idleWait)
}

// smpRelease lets the APs leave the boot barrier.
func smpRelease(n int) {
	atomic.StoreUint32(&smpGo, 1)
	for i := 1; i < n; i++ {
		lapic.IPI(apIRQ[i], vecWake)
	}
}

// The boot report's names for CPUs and their start: APIC IDs, STARTUP.
const cpuIDName = "APIC IDs"

func cpuStartName() string { return "STARTUP" }

func printCPUID(i int) { kprintDec(int64(apIRQ[i])) }
