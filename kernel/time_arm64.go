package kernel

import (
	"yolk/arch/arm64"
	"yolk/drivers/clock"
	"yolk/drivers/gic"
	"yolk/drivers/gtimer"
	"yolk/drivers/mmio"
)

// Time on arm64: the clock counts the virtual counter (CNTVCT_EL0) at
// CNTFRQ_EL0, which needs no calibration; the wall clock comes from the
// PL031 real-time clock at boot when the device tree has one; each CPU's
// one-shot timer is its EL1 virtual timer, a compare value in the same
// counter.

// rtcBase is the PL031's address (0: none; the wall clock then starts at
// the Unix epoch).
var rtcBase uintptr

func timeInit() {
	clock.SetHz(gtimer.Freq())
	if rtcBase != 0 {
		wallBase = int64(mmio.Read32(rtcBase)) * 1e9 // RTCDR: seconds
	}
	gtimer.Stop()
}

// timerProgram makes this CPU's timer interrupt at time at (ns since
// boot; at once if that has passed).
func timerProgram(at int64) {
	cval := clock.Base()
	if at > 0 {
		cval += gtimer.Ticks(uint64(at), clock.Hz())
	}
	gtimer.SetDeadline(cval)
}

// idleWait halts this CPU until an interrupt, its timer armed for deadline
// (0: none). It runs, and returns, with interrupts masked; WFI ends on a
// pending interrupt even then, and arm64.WaitForInterrupt takes it.
func idleWait(deadline int64) {
	timerSync() // deadline, and the program's monotonic timers
	arm64.WaitForInterrupt()
}

// timerHz is the timer's rate: the counter's.
func timerHz() uint64 { return clock.Hz() }

// clockSynced: the generic timer's counter is one system counter, the same
// on every CPU.
func clockSynced() bool { return true }

// monotonic is the clock as CLOCK_MONOTONIC reads it.
func monotonic() int64 { return nanotime() }

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

// clockCheck: the generic timer's counter is one for all CPUs.
func clockCheck(n int) {}
