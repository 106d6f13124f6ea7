//go:build amd64

// Package kvmclock reads the TSC frequency that KVM publishes through its
// paravirtual clock (pvclock), which is exact where timing the TSC against
// the PIT is an estimate, and the wall-clock time, which is all a machine
// without a CMOS clock (Firecracker) has. The kernel's clock stays the TSC;
// kvmclock only calibrates it and sets the wall clock once.
//
// Kernel-context: no allocation, no runtime calls. The time record is kernel
// data, whose virtual address is its physical address (identity map).
package kvmclock

import (
	"sync/atomic"
	"unsafe"

	"yolk/arch/amd64"
)

// CPUID and MSR interface (Linux Documentation/virt/kvm/x86/cpuid.rst and
// msr.rst).
const (
	featureClocksource  = 1 << 0 // MSR_KVM_SYSTEM_TIME (0x12)
	featureClocksource2 = 1 << 3 // MSR_KVM_SYSTEM_TIME_NEW (0x4b564d01)

	msrWallClock     = 0x11
	msrSystemTime    = 0x12
	msrWallClockNew  = 0x4b564d00
	msrSystemTimeNew = 0x4b564d01
)

// timeInfo is struct pvclock_vcpu_time_info: 32 bytes, which the host
// rewrites under a seqlock (version odd while it writes).
type timeInfo struct {
	version    uint32
	_          uint32
	tscStamp   uint64
	systemTime uint64
	mul        uint32
	shift      int8
	flags      uint8
	_          [2]uint8
}

// records holds two slots so that one of them does not straddle a page,
// which the host requires.
var records [2]timeInfo

// wallClock is struct pvclock_wall_clock: the host's wall-clock time at
// its system time 0, written when the guest writes its address to the
// wall-clock MSR.
type wallClock struct {
	version uint32
	sec     uint32
	nsec    uint32
}

var wall [2]wallClock // two, as records, so that one does not straddle a page

// wallNs is the Unix time in ns at TSC value wallTSC, read by TSCHz (0:
// none).
var (
	wallNs  int64
	wallTSC uint64
)

// Wall returns the wall-clock time that kvmclock gave when TSCHz ran: ns
// since 1970 at TSC value tsc. ns is 0 when TSCHz found no kvmclock (or has
// not run). Machines without a CMOS clock (Firecracker) have only this.
func Wall() (ns int64, tsc uint64) { return wallNs, wallTSC }

// signature finds KVM's CPUID leaf base ("KVMKVMKVM\0\0\0"), or returns 0.
func signature() uint32 {
	if _, _, c, _ := amd64.Cpuid(1, 0); c&(1<<31) == 0 {
		return 0 // no hypervisor
	}
	for base := uint32(0x40000000); base < 0x40010000; base += 0x100 {
		_, b, c, d := amd64.Cpuid(base, 0)
		if b == 0x4b4d564b && c == 0x564b4d56 && d == 0x4d {
			return base
		}
	}
	return 0
}

// TSCHz returns the TSC frequency in Hz from kvmclock, or 0 when KVM does
// not offer it.
func TSCHz() uint64 {
	base := signature()
	if base == 0 {
		return 0
	}
	features, _, _, _ := amd64.Cpuid(base+1, 0)
	var msr uint32
	switch {
	case features&featureClocksource2 != 0:
		msr = msrSystemTimeNew
	case features&featureClocksource != 0:
		msr = msrSystemTime
	default:
		return 0
	}
	r := &records[0]
	if a := uintptr(unsafe.Pointer(r)); a&4095 > 4096-unsafe.Sizeof(*r) {
		r = &records[1]
	}
	amd64.Wrmsr(msr, uint64(uintptr(unsafe.Pointer(r)))|1) // bit 0: enable
	var mul uint32
	var shift int8
	var stamp, system uint64
	for i := 0; ; i++ {
		if i == 1e6 {
			amd64.Wrmsr(msr, 0)
			return 0 // the host never wrote the record
		}
		v := atomic.LoadUint32(&r.version)
		if v == 0 || v&1 != 0 {
			continue
		}
		mul, shift = atomic.LoadUint32(&r.mul), r.shift
		stamp, system = atomic.LoadUint64(&r.tscStamp), atomic.LoadUint64(&r.systemTime)
		if atomic.LoadUint32(&r.version) == v {
			break
		}
	}
	amd64.Wrmsr(msr, 0) // stop the host's updates: the record is only read here
	// The wall clock at the host's system time 0 (its boot): the host
	// writes it when the MSR is written, so it matches the record just
	// read; its time at stamp is that plus the record's system time.
	wmsr := uint32(msrWallClock)
	if msr == msrSystemTimeNew {
		wmsr = msrWallClockNew
	}
	w := &wall[0]
	if a := uintptr(unsafe.Pointer(w)); a&4095 > 4096-unsafe.Sizeof(*w) {
		w = &wall[1]
	}
	amd64.Wrmsr(wmsr, uint64(uintptr(unsafe.Pointer(w))))
	for i := 0; i < 1e6; i++ {
		v := atomic.LoadUint32(&w.version)
		if v == 0 || v&1 != 0 {
			continue
		}
		sec, nsec := atomic.LoadUint32(&w.sec), atomic.LoadUint32(&w.nsec)
		if atomic.LoadUint32(&w.version) == v {
			wallNs, wallTSC = WallAt(sec, nsec, system), stamp
			break
		}
	}
	return Hz(mul, shift)
}

// WallAt is the Unix time in ns that a wall-clock record (sec, nsec: the
// host's boot) and a system time (ns since then) name.
func WallAt(sec, nsec uint32, system uint64) int64 {
	return int64(sec)*1e9 + int64(nsec) + int64(system)
}

// Hz converts pvclock's scale — ns = ((ticks << shift) * mul) >> 32, with a
// negative shift shifting right — to the counter frequency it encodes.
func Hz(mul uint32, shift int8) uint64 {
	if mul == 0 || shift > 31 || shift < -31 {
		return 0
	}
	hz := (uint64(1e9) << 32) / uint64(mul)
	if shift >= 0 {
		return hz >> uint(shift)
	}
	return hz << uint(-shift)
}
