package kernel

import (
	"sync/atomic"

	"yolk/arch/amd64"
	"yolk/drivers/clock"
	"yolk/drivers/lapic"
)

// TSC synchronisation. The monotonic clock and the vDSO read the TSC of
// whatever CPU they run on, so time.Now is monotonic across CPUs only if
// the CPUs' TSCs agree. At boot the boot CPU measures each AP's offset by
// ping-pong through one cache line: it reads its TSC (t0), asks, the AP
// answers with its own TSC (t1), it reads again (t2); the AP's offset is
// t1 - (t0+t2)/2, known to within ±(t2-t0)/2, and the round with the
// shortest round trip is kept. An offset beyond that uncertainty is
// corrected with IA32_TSC_ADJUST where the CPU has it. The TSCs count as
// synchronised only when every offset is within an uncertainty of at most
// tscTight; if an offset remains, or a probe could not get that tight (under
// emulation on a busy host a round trip can take a host time slice), the
// vDSO is turned off and clock_gettime never returns less than it returned
// before, on any CPU, so time never goes backwards either way.

var tscProbe struct {
	cpu    int32  // atomic: 1 + the AP asked, 0 if none
	ping   uint32 // atomic: 1 asked, 2 answered, 3 adjust by adj
	val    uint64 // atomic: the AP's TSC
	adj    int64  // ticks the AP adds to its TSC (TSC_ADJUST)
	skewed bool   // not known to be synchronised: clock_gettime clamps (monotonic)
	loose  bool   // some probe's uncertainty stayed above tscTight
}

// tscTight is the largest uncertainty (ns) that still tells synchronised
// TSCs from skewed ones; further probes are made, within tscRetryBudget,
// while a probe is looser than that.
const (
	tscTight       = 10_000
	tscRetryBudget = 50e6 // ns per AP
)

// Probe rounds per AP: at least tscMinRounds; then until a round trip
// takes at most 1 µs, or tscMaxRounds were made, or tscBudget has passed.
// Under emulation a round trip needs both virtual CPUs on host cores at
// once, and on a loaded host it can take a host scheduling quantum: then
// the budget bounds the boot's cost and the uncertainty printed grows.
const (
	tscMinRounds = 2
	tscMaxRounds = 16
	tscBudget    = 2e6 // ns per AP
)

// tscServe answers the boot CPU's requests while they are for CPU id (an
// AP in the boot barrier) and reports whether there were any.
func tscServe(id int) bool {
	served := false
	for atomic.LoadInt32(&tscProbe.cpu) == int32(id+1) {
		served = true
		switch atomic.LoadUint32(&tscProbe.ping) {
		case 1:
			atomic.StoreUint64(&tscProbe.val, amd64.Rdtsc())
			atomic.StoreUint32(&tscProbe.ping, 2)
		case 3:
			amd64.Wrmsr(amd64.MSR_TSC_ADJUST, amd64.Rdmsr(amd64.MSR_TSC_ADJUST)+uint64(tscProbe.adj))
			atomic.StoreUint32(&tscProbe.ping, 2)
		}
		amd64.Pause()
	}
	return served
}

// tscAsk sends request req (1 or 3) to CPU i and waits for the answer.
func tscAsk(i int, req uint32) {
	atomic.StoreUint32(&tscProbe.ping, req)
	for deadline := nanotime() + 1e9; atomic.LoadUint32(&tscProbe.ping) != 2; {
		if nanotime() > deadline {
			fatal("tsc: an application processor stopped answering")
		}
		amd64.Pause()
	}
}

// tscOffset measures CPU i's TSC against this one's: the offset and its
// uncertainty, in ticks.
func tscOffset(i int) (off, unc int64) {
	good := clock.Hz() / 1e6 // 1 µs
	best := uint64(1<<63 - 1)
	end := nanotime() + tscBudget
	for r := 0; r < tscMaxRounds && (r < tscMinRounds || best > good && nanotime() < end); r++ {
		t0 := amd64.Rdtsc()
		tscAsk(i, 1)
		t2 := amd64.Rdtsc()
		if rtt := t2 - t0; rtt < best {
			best = rtt
			off = int64(atomic.LoadUint64(&tscProbe.val) - t0 - rtt/2)
		}
	}
	return off, int64(best / 2)
}

// tscCheck measures every AP, corrects what it can and prints the result.
func tscCheck(n int) {
	if n < 2 {
		return
	}
	var worst, worstUnc int64
	for i := 1; i < n; i++ {
		atomic.StoreInt32(&tscProbe.cpu, int32(i+1))
		lapic.IPI(apIRQ[i], vecWake)
		off, unc := tscOffset(i)
		for end := nanotime() + tscRetryBudget; ticksToNs(unc) > tscTight && nanotime() < end; {
			if o, u := tscOffset(i); u < unc {
				off, unc = o, u
			}
		}
		if ticksToNs(unc) > tscTight {
			tscProbe.loose = true
		}
		if abs(off) > unc && hasTSCAdj {
			tscProbe.adj = -off
			tscAsk(i, 3)
			off, unc = tscOffset(i)
		}
		if abs(off) > unc {
			tscProbe.skewed = true
		}
		if abs(off) > abs(worst) {
			worst = off
		}
		worstUnc = max(worstUnc, unc)
	}
	atomic.StoreInt32(&tscProbe.cpu, 0)
	klog("tsc: largest offset of an AP's TSC ")
	kprintDec(ticksToNs(worst))
	kprint(" ns (measured to ±")
	kprintDec(ticksToNs(worstUnc))
	kprint(" ns)")
	switch {
	case tscProbe.skewed:
		vdsoOff = true
		kprint(": NOT synchronised; vDSO off, clock_gettime kept monotonic across CPUs\n")
	case tscProbe.loose:
		tscProbe.skewed = true
		vdsoOff = true
		kprint(": could not tell (a probe stayed above ±10 µs); vDSO off, clock_gettime kept monotonic across CPUs\n")
	default:
		kprint(": synchronised\n")
	}
}

func ticksToNs(t int64) int64 {
	if t < 0 {
		return -ticksToNs(-t)
	}
	return int64(uint64(t) * 1e9 / clock.Hz())
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
