package kernel

import (
	"sync/atomic"

	"yolk/arch/amd64"
	"yolk/drivers/acpi"
	"yolk/drivers/lapic"
	"yolk/drivers/mptable"
	"yolk/kernel/mm"
	"yolk/sched"
)

// SMP start-up. The boot CPU finds the CPUs in the ACPI MADT (the MP table
// where there is none: cpuTable), gives each
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
	// trampoline is the page below 1 MiB the APs start in (findCPUs).
	trampoline uintptr
	// madtCPUs has room for more entries than the kernel runs CPUs: the
	// MADT may list hot-pluggable slots beside the CPUs present.
	madtCPUs    [512]acpi.CPU
	madtIOAPICs [8]acpi.IOAPIC
	nIOAPICs    int
)

// findCPUs fills apIRQ with the APIC IDs of the CPUs to run, the boot CPU
// first, finds the page they start in, and returns how many there are.
func findCPUs() int {
	me := lapic.ID()
	apIRQ[0] = me
	sched.CPUAt(0).IRQ = uint64(me)
	ncpus, tooMany, ok := cpuTable()
	if !ok {
		return 1
	}
	// CPUs present now are marked Enabled; "online capable" ones are
	// slots a CPU may be hot-added to later, not CPUs to start.
	present, self := 0, false
	for _, c := range madtCPUs[:min(ncpus, len(madtCPUs))] {
		if c.Flags&acpi.FlagEnabled != 0 {
			present++
			self = self || c.APICID == me
		}
	}
	if !self {
		present++ // the boot CPU runs whatever the table says
	}
	if present > sched.MaxCPUs || tooMany {
		tooManyCPUs(max(present, ncpus))
	}
	n := 1
	for _, c := range madtCPUs[:ncpus] {
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
		klog("smp: warning: the boot CPU is not in the CPU table\n")
	}
	if trampoline = trampolinePage(); n > 1 && trampoline == 0 {
		klog("smp: no free page below 1 MiB for the start-up code: running on the boot CPU only\n")
		n = 1
	}
	return n
}

// cpuTable reads the CPUs and IO APICs into madtCPUs and madtIOAPICs from
// the ACPI MADT or, when there is none (Firecracker, QEMU microvm with
// acpi=off), the MP table. It returns how many CPUs the table lists (more
// than madtCPUs holds if tooMany), and ok false if neither table is usable.
func cpuTable() (ncpus int, tooMany, ok bool) {
	if bootInfo.RSDP == 0 {
		// Firecracker's PVH start-info block names no RSDP (virtioInit,
		// after this, reads the DSDT through it too).
		if bootInfo.RSDP = acpi.ScanRSDP(mm.PhysOff()); bootInfo.RSDP != 0 {
			klog("acpi: the boot protocol passed no RSDP; found one at ")
			kprintHex(uint64(bootInfo.RSDP), 1)
			kprint("\n")
		}
	}
	if bootInfo.RSDP != 0 {
		m, e := acpi.ReadMADT(bootInfo.RSDP, mm.PhysOff(), madtCPUs[:], madtIOAPICs[:])
		nIOAPICs = min(m.IOAPICs, len(madtIOAPICs))
		switch e {
		case acpi.OK, acpi.ErrTooManyCPUs:
			return m.CPUs, e == acpi.ErrTooManyCPUs, true
		case acpi.ErrNotFound:
		default:
			klog("smp: ACPI MADT: ")
			kprint(e.String())
			kprint(": running on the boot CPU only\n")
			return 0, false, false
		}
	}
	t, e := mptable.Read(mm.PhysOff(), madtCPUs[:], madtIOAPICs[:])
	nIOAPICs = min(t.IOAPICs, len(madtIOAPICs))
	switch e {
	case mptable.OK, mptable.ErrTooManyCPUs:
		return t.CPUs, e == mptable.ErrTooManyCPUs, true
	case mptable.ErrNotFound:
		klog("smp: no ACPI MADT and no MP table: running on the boot CPU only\n")
	default:
		klog("smp: MP table: ")
		kprint(e.String())
		kprint(": running on the boot CPU only\n")
	}
	return 0, false, false
}

// smpPrepare installs the start-up code for n CPUs.
func smpPrepare(n int) {
	installTrampoline(trampoline)
	atomic.StoreUint32(&apCount, uint32(n))
}

// prepareIdle gives CPU i its idle task t, whose stack ends at top.
func prepareIdle(i int, t *sched.Task, top uintptr) {
	apStack[i], apCPU[i] = top, sched.PrepareCPU(i, uint64(apIRQ[i]), t).Self
}

// startCPU sends CPU i INIT and STARTUP.
func startCPU(i int) { startAP(apIRQ[i], trampoline) }

// apMain is an AP's first Go code, on its idle task's stack.
func apMain(id int) {
	setupCPU(id)
	cpuInterrupts(id, sched.CPUAt(id))
	syscallInit()
	atomic.StoreInt64(&percpu[id].up, nanotime())
	// The barrier halts between the boot CPU's requests (each comes with
	// a wake-up interrupt): a spinning AP would take host time from the
	// boot CPU under emulation.
	for atomic.LoadUint32(&smpGo) == 0 {
		if !tscServe(id) {
			amd64.StiHlt()
		}
	}
	amd64.FlushTLB()
	sched.Idle(idleWait)
}

// The boot report's names for CPUs and their start: APIC IDs, STARTUP.
const cpuIDName = "APIC ID"

func cpuStartName() string { return "STARTUP" }

func printCPUID(i int) { kprintDec(int64(apIRQ[i])) }
