package kernel

import (
	"sync/atomic"

	"yolk/boot"
	"yolk/drivers/fdt"
	"yolk/drivers/psci"
	"yolk/kernel/mm"
	"yolk/sched"
)

// SMP start-up on arm64. The boot CPU finds the CPUs in the device tree,
// gives each secondary an idle task with a kernel stack and a trap stack,
// and starts them with PSCI CPU_ON at boot.SecondaryPC with their CPU
// number as the context (on the Raspberry Pi 3, which has no PSCI, by
// writing boot.RPi3SecondaryPC to their spin-table slots: they find their
// number by MPIDR). Each sets up its per-CPU base, interrupt
// controller interface, vectors and timer interrupt, records when it got there, and waits
// (WFI) until the boot CPU has finished the boot steps that change the
// page tables for everyone; then it enters its idle loop.

// What apStart reads to find its stack and g by CPU number.
var (
	apStack [sched.MaxCPUs]uintptr
	apG     [sched.MaxCPUs]uintptr
	// cpuMPIDR is each CPU's affinity (PSCI names CPUs by it).
	cpuMPIDR [sched.MaxCPUs]uint64
	smpGo    uint32 // atomic: secondaries may leave the boot barrier
	dtCPUs   [512]fdt.CPU
)

// mpidrAff masks MPIDR_EL1 to its affinity fields (apStart has a copy).
const mpidrAff = 0xff00ffffff

// maxCPUs bounds apStart's search of cpuMPIDR.
const maxCPUs = sched.MaxCPUs

// findCPUs fills cpuMPIDR with the CPUs to run, the boot CPU first, and
// returns how many there are.
func findCPUs(f *fdt.FDT) int {
	me := readMPIDR() & mpidrAff
	cpuMPIDR[0] = me
	m, e := f.CPUs(dtCPUs[:])
	if e != fdt.OK {
		klog("smp: device tree: ")
		kprint(e.String())
		kprint(": running on the boot CPU only\n")
		return 1
	}
	if m > sched.MaxCPUs {
		klog("smp: the machine has ")
		kprintDec(int64(m))
		kprint(" CPUs; this kernel supports at most ")
		kprintDec(sched.MaxCPUs)
		kprint(" (sched.MaxCPUs)\n")
		fatal("smp: more CPUs than the kernel supports")
	}
	n := 1
	for _, c := range dtCPUs[:min(m, len(dtCPUs))] {
		if c.MPIDR&mpidrAff != me {
			cpuMPIDR[n] = c.MPIDR & mpidrAff
			n++
		}
	}
	return n
}

// smpStart starts CPUs 1..n-1 and waits until each runs Go code.
func smpStart(n int) {
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
		apStack[i], apG[i] = hi, t.G()
		sched.PrepareCPU(i, 0, t)
		prepareCPU(i)
	}
	for i := 1; i < n; i++ {
		percpu[i].sent = nanotime()
		if onPi() {
			piRelease(cpuMPIDR[i])
			continue
		}
		if st := psci.CPUOn(cpuMPIDR[i], boot.SecondaryPC(), uint64(i)); st != psci.Success {
			klog("smp: PSCI CPU_ON for MPIDR ")
			kprintHex(cpuMPIDR[i], 1)
			kprint(": ")
			kprint(st.String())
			kprint("\n")
			fatal("smp: a secondary CPU did not start")
		}
	}
	for i := 1; i < n; i++ {
		for deadline := nanotime() + 2e9; atomic.LoadInt64(&percpu[i].up) == 0; {
			if nanotime() > deadline {
				klog("smp: CPU ")
				kprintDec(int64(i))
				kprint(" (MPIDR ")
				kprintHex(cpuMPIDR[i], 1)
				kprint(") did not start within 2 s\n")
				fatal("smp: a secondary CPU did not start")
			}
			sched.Pause()
		}
	}
}

// apMain is a secondary CPU's first Go code, on its idle task's stack.
func apMain(id int) {
	c := sched.InitCPU(id, 0)
	cpuInterrupts(id, c)
	setupCPU(id)
	atomic.StoreInt64(&percpu[id].up, nanotime())
	for atomic.LoadUint32(&smpGo) == 0 {
		waitForInterrupt()
	}
	sched.Idle(idleWait)
}

// smpRelease lets the secondaries leave the boot barrier.
func smpRelease(n int) {
	atomic.StoreUint32(&smpGo, 1)
	for i := 1; i < n; i++ {
		sendIPI(i, vecWake)
	}
}

// The boot report's names for CPUs and their start: MPIDR, CPU_ON (or the
// Pi's spin table).
const cpuIDName = "MPIDR"

func cpuStartName() string {
	if onPi() {
		return "spin-table release"
	}
	return "CPU_ON"
}

func printCPUID(i int) { kprintHex(cpuMPIDR[i], 1) }
