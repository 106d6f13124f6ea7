package kernel

import (
	"yolk/drivers/lapic"
	"yolk/kernel/tsc"
)

// The CPUs' TSCs are checked at boot by kernel/tsc; skewed says whether
// they are not known to agree (then clock_gettime clamps: monotonic, and
// the vDSO is off).
var tscSkewed bool

type tscenv struct{}

func (tscenv) Now() int64       { return nanotime() }
func (tscenv) Wake(i int)       { lapic.IPI(apIRQ[i], vecWake) }
func (tscenv) Fatal(msg string) { fatal(msg) }

func tscServe(id int) bool { return tsc.Serve(id) }

// tscCheck measures every AP, corrects what it can and prints the result.
func tscCheck(n int) {
	if n < 2 {
		return
	}
	r := tsc.Check[tscenv](n, hasTSCAdj)
	klog("tsc: largest offset of an AP's TSC ")
	kprintDec(r.Worst)
	kprint(" ns (measured to ±")
	kprintDec(r.Uncertainty)
	kprint(" ns)")
	switch {
	case r.Skewed:
		tscSkewed, vdsoOff = true, true
		kprint(": NOT synchronised; vDSO off, clock_gettime kept monotonic across CPUs\n")
	case r.Loose && tcg:
		// A busy host stalls the probe's vCPUs, but under TCG every
		// CPU's RDTSC reads the host's one counter: nothing to skew.
		kprint(": could not tell (a probe stayed above ±10 µs), but QEMU's TCG gives every CPU the host's counter; vDSO kept\n")
	case r.Loose:
		tscSkewed, vdsoOff = true, true
		kprint(": could not tell (a probe stayed above ±10 µs); vDSO off, clock_gettime kept monotonic across CPUs\n")
	default:
		kprint(": synchronised\n")
	}
}
