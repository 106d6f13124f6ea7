package kernel

import (
	"math/bits"

	"yolk/drivers/kvmclock"
	"yolk/drivers/lapic"
	"yolk/drivers/pit"
	"yolk/drivers/rtc"
	"yolk/drivers/tsc"
	"yolk/drivers/x86"
	"yolk/sched"
)

// Time: a monotonic clock from the TSC, calibrated at boot from kvmclock
// under KVM, else the hypervisor's TSC-frequency leaf, else against the PIT
// (CPUID leaf 0x16 when there is no PIT); the wall clock from the RTC at
// boot; on each CPU a one-shot local-APIC timer for the earliest deadline
// of the tasks that blocked there (sched's per-CPU timer heap).

var (
	wallBase int64 // Unix ns at clock 0
	lapicHz  uint64
)

// nanotime is monotonic nanoseconds since boot.
func nanotime() int64 { return tsc.Nanotime() }

// walltime is Unix nanoseconds.
func walltime() int64 { return wallBase + nanotime() }

func timeInit() {
	tsc.SetHz(calibrateTSC())
	wallBase = rtc.Unix() * 1e9

	pit.MaskPIC(vecPICBase)
	localAPICInit()
	// LAPIC timer ticks per second, against the now-calibrated TSC.
	var m [3]uint64
	for i := range m {
		start := nanotime()
		lapic.Count(0xFFFFFFFF)
		for nanotime()-start < 10e6 {
		}
		m[i] = uint64(0xFFFFFFFF-lapic.Current()) * 1e9 / uint64(nanotime()-start)
		lapic.Stop()
	}
	lapicHz = median3(m)
}

// tscSource is where the TSC frequency came from (an index into
// tscSources, for the boot line; an integer, so that setting it needs no
// write barrier).
var tscSource uint8

const (
	tscAssumed = iota
	tscKVMClock
	tscHypervisorLeaf
	tscPIT
	tscCPUID16
)

var tscSources = [...]string{
	tscAssumed:        "assumed",
	tscKVMClock:       "kvmclock",
	tscHypervisorLeaf: "hypervisor CPUID",
	tscPIT:            "PIT",
	tscCPUID16:        "CPUID 0x16",
}

func calibrateTSC() uint64 {
	if hz := kvmclock.TSCHz(); hz != 0 {
		tscSource = tscKVMClock
		return hz
	}
	if hypervisor {
		if max, _, _, _ := x86.Cpuid(0x40000000, 0); max >= 0x40000010 {
			if khz, _, _, _ := x86.Cpuid(0x40000010, 0); khz != 0 {
				tscSource = tscHypervisorLeaf
				return uint64(khz) * 1000
			}
		}
	}
	// Median of three: under emulation one run can be stretched.
	var m [3]uint64
	for i := range m {
		hz, ok := pit.Measure(x86.Rdtsc, 1<<33)
		if !ok || hz == 0 {
			break
		}
		m[i] = hz
		if i == 2 {
			tscSource = tscPIT
			return median3(m)
		}
	}
	if max, _, _, _ := x86.Cpuid(0, 0); max >= 0x16 {
		if mhz, _, _, _ := x86.Cpuid(0x16, 0); mhz != 0 {
			tscSource = tscCPUID16
			return uint64(mhz) * 1e6
		}
	}
	klog("no PIT and no CPUID frequency: assuming a 1 GHz TSC\n")
	tscSource = tscAssumed
	return 1e9
}

// timerState is one CPU's wake-up timer. The one-shot interrupt arrives
// some latency after the time it was armed for (tens of microseconds under
// emulation, a few on hardware), so it is armed lead nanoseconds before
// the deadline, and it expires the tasks due within lead of its arrival: a
// task woken early waits out the rest of its sleep itself (sched.Block),
// so sleepers wake at their deadline, not one interrupt latency after it.
type timerState struct {
	armed   int64 // deadline the timer is armed for, 0 if none
	armedAt int64 // when the interrupt was programmed to arrive
	lead    int64 // running median of the observed lateness, ns
	fired   uint64
}

const (
	leadStep = 2_000   // ns the median estimate moves per wake-up
	leadMax  = 200_000 // ns: the most CPU time one wake-up may spend polling
)

// arm programs this CPU's timer for deadline.
func (ts *timerState) arm(deadline int64) {
	at := deadline - ts.lead
	ticks := uint64(1)
	if d := at - nanotime(); d > 0 {
		hi, lo := bits.Mul64(uint64(d), lapicHz)
		ticks = 0xFFFFFFFF
		if hi < 1e9 {
			if q, _ := bits.Div64(hi, lo, 1e9); q < ticks {
				ticks = max(q, 1)
			}
		}
	}
	ts.armed, ts.armedAt = deadline, at
	lapic.OneShot(vecTimer, uint32(ticks))
}

// timerSync arms this CPU's timer for its earliest deadline unless it is
// armed for that or an earlier one (an earlier one, since cancelled, only
// costs an interrupt that finds nothing due and re-arms). The kernel calls
// it on its way back to application code and before halting.
func timerSync() {
	c := sched.This()
	ts := &percpu[c.ID].timer
	if n := c.TimerNext(); n != 0 && (ts.armed == 0 || n < ts.armed) {
		ts.arm(n)
	}
}

// timerInterrupt is the vecTimer handler: wake the tasks that are due and
// re-arm for the next.
func timerInterrupt() {
	ts := &percpu[sched.This().ID].timer
	now := nanotime()
	if ts.armed != 0 {
		ts.learn(now - ts.armedAt)
	}
	ts.armed = 0
	ts.fired++
	if next := sched.ExpireTimers(now + ts.lead); next != 0 {
		ts.arm(next)
	}
}

// idleWait halts this CPU until an interrupt, its timer armed for deadline
// (0: none). It runs, and returns, with interrupts off.
func idleWait(deadline int64) {
	p := &percpu[sched.This().ID]
	if deadline != 0 {
		timerSync()
	}
	tlbEnterIdle(p)
	x86.StiHlt()
	tlbWake(p)
}

// learn moves the lead toward the median of the observed lateness, within
// [0, leadMax].
func (ts *timerState) learn(late int64) {
	switch {
	case late > ts.lead && ts.lead < leadMax:
		ts.lead += leadStep
	case late < ts.lead && ts.lead >= leadStep:
		ts.lead -= leadStep
	}
}

func median3(m [3]uint64) uint64 {
	if m[0] > m[1] {
		m[0], m[1] = m[1], m[0]
	}
	if m[1] > m[2] {
		m[1], m[2] = m[2], m[1]
	}
	if m[0] > m[1] {
		m[0], m[1] = m[1], m[0]
	}
	return m[1]
}
