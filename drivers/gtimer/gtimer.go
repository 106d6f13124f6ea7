// Package gtimer drives the Arm generic timer of the calling CPU: the
// counter frequency (CNTFRQ_EL0), the count (CNTVCT_EL0, read after an ISB)
// and a one-shot deadline per CPU on the EL1 virtual timer (CNTV_CVAL_EL0,
// CNTV_CTL_EL0), whose interrupt is PPI 27 on QEMU virt (VirtPPI; the
// device tree's "arm,armv8-timer" gives it). It is our own: TamaGo's arm64
// packages do not build with the stock Go toolchain.
//
// Why the virtual timer and not the EL1 physical one (PPI 30): it counts
// the same CNTVCT_EL0 the kernel's clock (drivers/clock) and Go's vDSO
// read, and EL1 may use it whatever EL2 did, while EL1's access to the
// physical timer depends on CNTHCTL_EL2.EL1PCEN when EL2 exists. When the
// kernel itself starts at EL2 (QEMU virt with virtualization=on) it calls
// SetupAtEL2 on each CPU before dropping to EL1, so that the virtual count
// equals the physical one on every CPU (CNTVOFF_EL2 = 0; its reset value
// is architecturally unknown) and EL1 may also read the physical counter.
//
// Kernel-context: no allocation, no runtime calls; every function acts on
// the calling CPU's timer, and the kernel handles the interrupt on the CPU
// that armed it.
package gtimer

import "math/bits"

// Interrupt IDs of QEMU virt's timer PPIs (its device tree's
// "arm,armv8-timer" interrupts: PPIs 13, 14, 11, 10).
const (
	VirtPPI       = 27 // EL1 virtual timer: the one this package drives
	PhysPPI       = 30 // EL1 physical (non-secure) timer
	SecurePhysPPI = 29
	HypPPI        = 26
)

// CNTV_CTL_EL0 bits.
const (
	ctlEnable  = 1 << 0
	ctlIMask   = 1 << 1
	ctlIStatus = 1 << 2 // the condition is met (read-only)
)

// Freq is the counter frequency in Hz (CNTFRQ_EL0, set by firmware or
// QEMU: 62.5 MHz on QEMU 7.2's virt under TCG).
func Freq() uint64 { return readFreq() }

// Count is the virtual count, read after an ISB so that it is not read
// ahead of the code before it.
func Count() uint64 { return readCount() }

// SetDeadline arms the timer to raise its interrupt once Count() >= cval
// (at once if cval has passed), unmasked. The interrupt stays asserted
// until the timer is re-armed for the future, stopped or masked: the
// handler must do one of those before its end of interrupt.
func SetDeadline(cval uint64) {
	writeCVAL(cval)
	writeCTL(ctlEnable)
}

// SetTimeout arms the timer for ticks counts from now.
func SetTimeout(ticks uint64) {
	now := Count()
	d := now + ticks
	if d < now {
		d = ^uint64(0) // saturate: never
	}
	SetDeadline(d)
}

// Stop disables the timer; its interrupt drops.
func Stop() { writeCTL(0) }

// Mask keeps the timer running but masks its interrupt.
func Mask() { writeCTL(readCTL()&ctlEnable | ctlIMask) }

// Unmask unmasks the interrupt of a running timer.
func Unmask() { writeCTL(readCTL() & ctlEnable) }

// Fired reports whether the timer is enabled and its deadline has passed
// (CNTV_CTL_EL0.ISTATUS, whether or not the interrupt is masked).
func Fired() bool {
	c := readCTL()
	return c&ctlEnable != 0 && c&ctlIStatus != 0
}

// Deadline is the compare value last set.
func Deadline() uint64 { return readCVAL() }

// Ticks converts ns nanoseconds to counter ticks at freq Hz, rounding up
// (a timeout never fires early) and saturating.
func Ticks(ns, freq uint64) uint64 {
	hi, lo := bits.Mul64(ns, freq)
	if hi >= 1e9 {
		return ^uint64(0)
	}
	q, r := bits.Div64(hi, lo, 1e9)
	if r != 0 {
		q++
	}
	return q
}

// Nanoseconds converts ticks at freq Hz to nanoseconds, rounding down and
// saturating.
func Nanoseconds(ticks, freq uint64) uint64 {
	hi, lo := bits.Mul64(ticks, 1e9)
	if hi >= freq {
		return ^uint64(0)
	}
	q, _ := bits.Div64(hi, lo, freq)
	return q
}
