package kernel

import (
	"yolk/arch/arm64"
	"yolk/drivers/gic"
	"yolk/kernel/mm"
	"yolk/sched"
)

// perCPU is the kernel's per-CPU state (the scheduler's is sched.CPU).
type perCPU struct {
	faultAddr uintptr // FAR_EL1 of the last abort taken here
	timer     timerState
	gic       gic.CPU // this CPU's GIC interface (InitCPU)
	trapTop   uintptr // SP_EL1: the top of this CPU's trap stack

	// userPreempt: the trap being handled is a timer or wake-up interrupt
	// that came from application code; timerWoke: a timer interrupt that
	// woke a task for this CPU (preemptUser; sched.ExpireTimers);
	// fromUser: the trap being handled came from application code.
	userPreempt, timerWoke, fromUser bool

	// Start-up times (ns since boot, the boot CPU's clock): CPU_ON
	// called, the CPU running Go code.
	sent, up int64
}

var percpu [sched.MaxCPUs]perCPU

// Trap stacks, per CPU, in the kernel-stack region above the task stacks:
// in a 64 KiB stride, an unmapped guard, 32 KiB of stack, a guard. A
// nested exception continues below the one it interrupted on the same
// stack (SP_EL1).
const (
	trapBase     = mm.KStackBase + sched.MaxTasks*mm.KStackStride
	trapStride   = 64 << 10
	trapLo       = 16 << 10
	trapHi       = 48 << 10
	trapStackEnd = trapBase + sched.MaxCPUs*trapStride
)

// prepareCPU gives CPU id its trap stack. The boot CPU runs it for every
// CPU, before that CPU starts.
func prepareCPU(id int) {
	base := trapBase + uintptr(id)*trapStride
	if !mm.MapKernel(base+trapLo, base+trapHi) {
		outOfMemory()
	}
	percpu[id].trapTop = base + trapHi
	sched.CPUAt(id).TrapG.SetStack(base+trapLo, base+trapHi)
}

// setupCPU points this CPU's exception vectors and SP_EL1 at the kernel's.
func setupCPU(id int) { setTrapStack(percpu[id].trapTop) }

// probeCPU reads nothing on arm64: the features come from the ID registers
// when they are needed (hwcap).
func probeCPU() {}

// schedStarted: nothing to do on arm64 (the kernel g is in R28; SVC comes
// through the vectors setupCPU installed).
func schedStarted(c *sched.CPU) {}

// AT_HWCAP bits (Linux arch/arm64/include/uapi/asm/hwcap.h). HWCAP_CPUID
// stays clear: with it the Go runtime reads MIDR_EL1 expecting the kernel
// to emulate EL0 accesses.
const (
	hwcapFP      = 1 << 0
	hwcapASIMD   = 1 << 1
	hwcapAES     = 1 << 3
	hwcapPMULL   = 1 << 4
	hwcapSHA1    = 1 << 5
	hwcapSHA2    = 1 << 6
	hwcapCRC32   = 1 << 7
	hwcapATOMICS = 1 << 8
)

// hwcap is AT_HWCAP from ID_AA64ISAR0_EL1.
func hwcap() uintptr {
	isar := arm64.ISAR0()
	h := uintptr(hwcapFP | hwcapASIMD)
	for _, f := range [...]struct {
		shift uint   // the ID_AA64ISAR0_EL1 field
		min   uint64 // the value from which the feature is there
		bit   uintptr
	}{
		{4, 1, hwcapAES}, {4, 2, hwcapPMULL}, {8, 1, hwcapSHA1}, {12, 1, hwcapSHA2},
		{16, 1, hwcapCRC32}, {20, 2, hwcapATOMICS},
	} {
		if isar>>f.shift&15 >= f.min {
			h |= f.bit
		}
	}
	return h
}

// Per-arch assembly (entry_arm64.s).
func setTrapStack(top uintptr)
func vectorsPC() uintptr
func forkretPC() uintptr
func rt0PC() uintptr
func imageEnd() uintptr
func sigreturnPC() uintptr
