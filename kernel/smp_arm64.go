package kernel

import (
	"sync/atomic"

	"yolk/arch/arm64"
	"yolk/boot"
	"yolk/drivers/fdt"
	"yolk/drivers/psci"
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
	dtCPUs   [512]fdt.CPU
)

// mpidrAff masks MPIDR_EL1 to its affinity fields (apStart has a copy).
const mpidrAff = 0xff00ffffff

// maxCPUs bounds apStart's search of cpuMPIDR.
const maxCPUs = sched.MaxCPUs

// findCPUs fills cpuMPIDR with the CPUs to run, the boot CPU first, and
// returns how many there are.
func findCPUs() int {
	me := arm64.MPIDR() & mpidrAff
	cpuMPIDR[0] = me
	m, e := dt.CPUs(dtCPUs[:])
	if e != fdt.OK {
		klog("smp: device tree: ")
		kprint(e.String())
		kprint(": running on the boot CPU only\n")
		return 1
	}
	if m > sched.MaxCPUs {
		tooManyCPUs(m)
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

// smpPrepare: nothing to install; the secondaries enter at boot.SecondaryPC.
func smpPrepare(n int) {}

// prepareIdle gives CPU i its idle task t, whose stack ends at top.
func prepareIdle(i int, t *sched.Task, top uintptr) {
	apStack[i], apG[i] = top, t.G()
	sched.PrepareCPU(i, 0, t)
}

// startCPU starts CPU i: PSCI CPU_ON, or the Pi's spin table.
func startCPU(i int) {
	if onPi() {
		piRelease(cpuMPIDR[i])
		return
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

// apMain is a secondary CPU's first Go code, on its idle task's stack.
func apMain(id int) {
	c := sched.InitCPU(id, 0)
	cpuInterrupts(id, c)
	setupCPU(id)
	atomic.StoreInt64(&percpu[id].up, nanotime())
	for atomic.LoadUint32(&smpGo) == 0 {
		arm64.WaitForInterrupt()
	}
	sched.Idle(idleWait)
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
