package tsc

import (
	"yolk/arch/amd64"
	"yolk/drivers/acpi"
	"yolk/drivers/hpet"
	"yolk/drivers/kvmclock"
	"yolk/drivers/pit"
	"yolk/drivers/rtc"
)

// Where the TSC's rate came from (Calibrate), an index into Sources.
const (
	Assumed = iota
	KVMClock
	HypervisorLeaf
	PIT
	CPUID16
	CPUID15
	HPET
	PMTimer
	RTC
)

// Sources name the sources for the boot line.
var Sources = [...]string{
	Assumed:        "assumed",
	KVMClock:       "kvmclock",
	HypervisorLeaf: "hypervisor CPUID",
	PIT:            "PIT",
	CPUID16:        "CPUID 0x16",
	CPUID15:        "CPUID 0x15",
	HPET:           "HPET",
	PMTimer:        "ACPI PM timer",
	RTC:            "CMOS clock",
}

// tscSpan is the PIT window: 1 ms (kernel/time_amd64.go has the
// measurements behind it).
const tscSpan = pit.Hz / 1000

// Calibrate returns the TSC's rate and its source: kvmclock under KVM,
// else the hypervisor's TSC-frequency leaf (hypervisor: CPUID says there
// is one), else CPUID leaf 0x15 when it names the crystal; else it is
// measured against the first reference the machine has: the PIT, the
// HPET and the ACPI PM timer (from the ACPI tables through rsdp, read at
// off), each the median of three short windows, or one second of the
// CMOS clock;
// else CPUID leaf 0x16's base frequency; else it assumes 1 GHz (Assumed:
// the caller says so). A machine without a PIT (QEMU microvm pit=off,
// Cloud Hypervisor) is known in microseconds (pit.Present), not after
// seconds of a count that never moves.
func Calibrate(hypervisor bool, rsdp, off uintptr) (uint64, uint8) {
	if hz := kvmclock.TSCHz(); hz != 0 {
		return hz, KVMClock
	}
	if hypervisor {
		if max, _, _, _ := amd64.Cpuid(0x40000000, 0); max >= 0x40000010 {
			if khz, _, _, _ := amd64.Cpuid(0x40000010, 0); khz != 0 {
				return uint64(khz) * 1000, HypervisorLeaf
			}
		}
	}
	if max, _, _, _ := amd64.Cpuid(0, 0); max >= 0x15 {
		if hz := Leaf15Hz(amd64.Cpuid(0x15, 0)); hz != 0 {
			return hz, CPUID15
		}
	}
	if pit.Present() {
		if hz := median(pitWindow); hz != 0 {
			return hz, PIT
		}
	}
	if base, e := acpi.HPETBase(rsdp, off); e == acpi.OK && base < 1<<32 {
		var ok bool
		if ref.hpet, ok = hpet.Open(uintptr(base) + off); ok {
			ref.hz, ref.mask = ref.hpet.Hz, ref.hpet.Mask
			if hz := median(hpetWindow); hz != 0 {
				return hz, HPET
			}
		}
	}
	if f, e := acpi.ReadFADT(rsdp, off); e == acpi.OK && f.PMTimer != 0 && f.PMTimer < 1<<16 {
		ref.port, ref.hz, ref.mask = uint16(f.PMTimer), acpi.PMTimerHz, 0xFFFFFF
		if f.Timer32 {
			ref.mask = 0xFFFFFFFF
		}
		if hz := median(pmWindow); hz != 0 {
			return hz, PMTimer
		}
	}
	if rtc.Present() {
		if hz := rtcSecond(); hz != 0 {
			return hz, RTC
		}
	}
	if max, _, _, _ := amd64.Cpuid(0, 0); max >= 0x16 {
		if mhz, _, _, _ := amd64.Cpuid(0x16, 0); mhz != 0 {
			return uint64(mhz) * 1e6, CPUID16
		}
	}
	return 1e9, Assumed
}

// Leaf15Hz is the TSC frequency that CPUID leaf 0x15 states: the core
// crystal's frequency (ECX, Hz) times the ratio EBX/EAX. It is 0 when any
// of them is 0: the leaf is absent, or (as on many Intel client parts) it
// gives the ratio but not the crystal, which only a model table would
// supply; a reference measures those. Leaf 0x16's base frequency is a
// rounded marketing figure and stays the last resort.
func Leaf15Hz(den, num, crystal, _ uint32) uint64 {
	if den == 0 || num == 0 || crystal == 0 {
		return 0
	}
	return uint64(crystal) * uint64(num) / uint64(den)
}

// ref is the reference counter of the HPET and PM timer windows (a
// package variable, not a closure: kernel context).
var ref struct {
	hpet     hpet.HPET
	port     uint16 // PM timer: its port
	hz, mask uint64
}

// refWindow is a window's length in reference time: 2 ms.
const refWindow = 2 // ms

// median is the median of three windows (under emulation one can be
// stretched); 0 if two failed.
func median(window func() uint64) uint64 {
	var m [3]uint64
	for i := range m {
		m[i] = window()
	}
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

func pitWindow() uint64 {
	hz, ok := pit.Measure(amd64.Rdtsc, tscSpan, 1<<33)
	if !ok {
		return 0
	}
	return hz
}

func hpetRead() uint64 { return ref.hpet.Count() }
func pmRead() uint64   { return uint64(amd64.Inl(ref.port)) & ref.mask }

func hpetWindow() uint64 { return counterWindow(hpetRead) }
func pmWindow() uint64   { return counterWindow(pmRead) }

// counterWindow counts the TSC over refWindow of the free-running counter
// read (ref.hz, ref.mask), each end timed by the narrowest of four
// TSC-bracketed reads; 0 if the counter does not get there within 2^32
// TSC ticks.
func counterWindow(read func() uint64) uint64 {
	r0, t0 := bracket(read)
	span := ref.hz * refWindow / 1000
	for {
		r1, t1 := bracket(read)
		if t1-t0 > 1<<32 {
			return 0
		}
		if d := (r1 - r0) & ref.mask; d >= span {
			return (t1 - t0) * ref.hz / d
		}
	}
}

func bracket(read func() uint64) (v, t uint64) {
	width := ^uint64(0)
	for i := 0; i < 4; i++ {
		before := amd64.Rdtsc()
		r := read()
		after := amd64.Rdtsc()
		if after-before < width {
			width, v, t = after-before, r, before+(after-before)/2
		}
	}
	return v, t
}

// rtcSecond counts the TSC over one second of the CMOS clock, from one
// change of its seconds register to the next (a boot that gets here
// waits one to two seconds); 0 if a change does not come within 2^33 TSC
// ticks. A new value is taken when two reads agree (a read during the
// update may see a passing value). The seconds register, not the
// update-in-progress flag's rising edge: the flag is up for 244 µs, and
// a poll the host delays longer (TCG under load: the calibration failed
// so in one boot of two on Cloud Hypervisor's shape) misses a whole
// second, where a changed second stays changed and the poll is only late.
func rtcSecond() uint64 {
	s := amd64.Rdtsc()
	edge := func() (uint64, bool) {
		v := rtc.Seconds()
		for {
			if x := rtc.Seconds(); x != v && x == rtc.Seconds() {
				return amd64.Rdtsc(), true
			}
			if amd64.Rdtsc()-s > 1<<33 {
				return 0, false
			}
		}
	}
	t0, ok0 := edge()
	t1, ok1 := edge()
	if !ok0 || !ok1 {
		return 0
	}
	return t1 - t0
}
