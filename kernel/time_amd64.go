package kernel

import (
	"math/bits"
	"sync/atomic"

	"yolk/arch/amd64"
	"yolk/drivers/clock"
	"yolk/drivers/kvmclock"
	"yolk/drivers/lapic"
	"yolk/drivers/rtc"
	"yolk/kernel/mm"
	"yolk/kernel/tsc"
	"yolk/sched"
)

// Time: a monotonic clock from the TSC, calibrated at boot from kvmclock
// under KVM, else the hypervisor's TSC-frequency leaf, else CPUID leaf 0x15
// when it names the crystal, else against the PIT, the HPET, the ACPI PM
// timer or the CMOS clock, else CPUID leaf 0x16 (kernel/tsc: Calibrate);
// the wall clock from the RTC at boot (kvmclock's where
// there is no RTC: wallInit); on each CPU a
// one-shot local-APIC timer (its rate measured against the TSC) for the
// earliest deadline, plus its timer slack, of the tasks that blocked there
// (sched's per-CPU timer heap).

var lapicHz uint64

func timeInit() {
	clock.SetHz(calibrateTSC())
	wallInit()

	lapicHz = calibrateLAPIC(lapicWindow)
}

// wallInit sets the wall clock from the CMOS clock, else (Firecracker's
// machine has none) from kvmclock's wall-clock record, else it starts at
// 1970; the last two say so.
func wallInit() {
	if secs, ok := rtc.Unix(); ok {
		wallBase = secs * 1e9
		return
	}
	if ns, tsc := kvmclock.Wall(); ns != 0 {
		wallBase = ns - tscToNs(tsc)
		klog("time: no CMOS clock: the wall clock from kvmclock\n")
		return
	}
	klog("time: no CMOS clock and no kvmclock: the wall clock starts at 1970\n")
}

// tscToNs is the monotonic clock's time at TSC value tsc, which may be
// before the clock's start (negative).
func tscToNs(tsc uint64) int64 {
	ns := func(ticks uint64) int64 {
		hi, lo := bits.Mul64(ticks, clock.Mult())
		return int64(hi<<32 | lo>>32)
	}
	if b := clock.Base(); tsc < b {
		return -ns(b - tsc)
	}
	return ns(tsc - clock.Base())
}

// Calibration windows. Each calibration is the median of three windows.
// A window's error does not shrink with its length the way a plain
// count-over-time would need: the PIT window is a least-squares fit over
// all its readings (pit.Measure) and the LAPIC window is timed at its two
// ends by the narrowest of several TSC-bracketed reads, so stretches in
// the middle (host preemption under emulation) cost nothing. Measured
// under QEMU TCG against the host's TSC rate over 72 boots and 360 more
// calibrations (docs/kernel-amd64.md, "Boot"): TSC within 65 ppm (the
// boot's own within 36), LAPIC within 69 ppm of the TSC, where the old
// 3 × 40 ms and 3 × 10 ms windows were off by -13 to -507 ppm and -75 to
// -527 ppm. Together they take about 6 ms instead of 152 ms.
const lapicWindow = 500e3 // ns; the PIT's window: kernel/tsc

// calibrateLAPIC returns the local APIC timer's rate in Hz, measured
// against the calibrated TSC: the median of three windows of about window
// ns each. Under QEMU TCG one read of the count takes about 160 ns, so a
// 500 µs window is good to about 3e-4 at worst.
func calibrateLAPIC(window uint64) uint64 {
	var m [3]uint64
	span := clock.Hz() * window / 1e9
	for i := range m {
		lapic.Count(0xFFFFFFFF)
		c0, t0 := lapicRead()
		for amd64.Rdtsc()-t0 < span {
		}
		c1, t1 := lapicRead()
		lapic.Stop()
		hi, lo := bits.Mul64(uint64(c0-c1), clock.Hz())
		if t1 <= t0 || hi >= t1-t0 {
			continue // leaves 0, which the median discards unless two windows failed
		}
		m[i], _ = bits.Div64(hi, lo, t1-t0)
	}
	return median3(m)
}

// lapicRead reads the LAPIC timer's count a few times in a row and returns
// the reading whose pair of surrounding TSC reads was the narrowest, with
// the TSC at its middle.
func lapicRead() (count uint32, t uint64) {
	width := ^uint64(0)
	for i := 0; i < 4; i++ {
		before := amd64.Rdtsc()
		c := lapic.Current()
		after := amd64.Rdtsc()
		if after-before < width {
			width, count, t = after-before, c, before+(after-before)/2
		}
	}
	return count, t
}

// tscSource is where the TSC frequency came from (an index into
// tsc.Sources, for the boot line; an integer, so that setting it needs no
// write barrier).
var tscSource uint8

// calibrateTSC is the TSC's rate from the best source the machine has
// (tsc.Calibrate); a boot that found none says so.
func calibrateTSC() uint64 {
	hz, src := tsc.Calibrate(hypervisor, bootInfo.RSDP, mm.PhysOff())
	tscSource = src
	if src == tsc.Assumed {
		klog("no PIT, HPET, ACPI PM timer, CMOS clock or CPUID frequency: assuming a 1 GHz TSC\n")
	}
	return hz
}

// timerProgram makes this CPU's local-APIC timer interrupt at time at
// (ns since boot; at once if that has passed).
func timerProgram(at int64) {
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
	if p := &percpu[sched.This().ID]; p.timerLVT {
		lapic.Reload(uint32(ticks))
	} else {
		lapic.OneShot(vecTimer, uint32(ticks))
		p.timerLVT = true
	}
}

// idleWait halts this CPU until an interrupt, its timer armed for deadline
// (0: none). It runs, and returns, with interrupts off.
func idleWait(deadline int64) {
	id := sched.This().ID
	timerSync() // deadline, and the program's monotonic timers
	mm.TLBEnterIdle(id)
	amd64.StiHlt()
	mm.TLBWake(id)
}

// timerHz is the local APIC timer's rate.
func timerHz() uint64 { return lapicHz }

// clockSynced reports whether the TSCs were found synchronised.
func clockSynced() bool { return !tscSkewed }

// printClock names the clock and timer in the boot report.
func printClock() {
	kprint("TSC ")
	kprintDec(int64(clock.Hz() / 1e6))
	kprint(" MHz (")
	kprint(tsc.Sources[tscSource])
	kprint("), LAPIC timer ")
	kprintDec(int64(lapicHz / 1e6))
	kprint(" MHz")
	if hasTSCDL {
		kprint(" (TSC-deadline capable)")
	}
}

// clockCheck checks that the n CPUs' counters agree (tscsync_amd64.go).
func clockCheck(n int) { tscCheck(n) }

// monoFloor is the largest monotonic time clock_gettime has returned, when
// the TSCs are not synchronised.
var monoFloor int64

// monotonic is nanotime, made monotonic across CPUs when their TSCs differ.
func monotonic() int64 {
	t := nanotime()
	if !tscSkewed {
		return t
	}
	for {
		f := atomic.LoadInt64(&monoFloor)
		if t <= f {
			return f
		}
		if atomic.CompareAndSwapInt64(&monoFloor, f, t) {
			return t
		}
	}
}
