package tsc

import (
	"sync/atomic"

	"yolk/arch/amd64"
	"yolk/drivers/clock"
)

var probe struct {
	cpu  int32  // atomic: 1 + the AP asked, 0 if none
	ping uint32 // atomic: 1 asked, 2 answered, 3 adjust by adj
	val  uint64 // atomic: the AP's TSC
	adj  int64  // ticks the AP adds to its TSC (TSC_ADJUST)
}

// tight is the largest uncertainty (ns) that still tells synchronised
// TSCs from skewed ones; further probes are made, within retryBudget,
// while a probe is looser than that.
const (
	tight       = 10_000
	retryBudget = 50e6 // ns per AP
)

// Probe rounds per AP: at least minRounds; then until a round trip
// takes at most 1 µs, or maxRounds were made, or budget has passed.
// Under emulation a round trip needs both virtual CPUs on host cores at
// once, and on a loaded host it can take a host scheduling quantum: then
// the budget bounds the boot's cost and the uncertainty printed grows.
const (
	minRounds = 2
	maxRounds = 16
	budget    = 2e6 // ns per AP
)

// Serve answers the boot CPU's requests while they are for CPU id (an
// AP in the boot barrier) and reports whether there were any.
func Serve(id int) bool {
	served := false
	for atomic.LoadInt32(&probe.cpu) == int32(id+1) {
		served = true
		switch atomic.LoadUint32(&probe.ping) {
		case 1:
			atomic.StoreUint64(&probe.val, amd64.Rdtsc())
			atomic.StoreUint32(&probe.ping, 2)
		case 3:
			amd64.Wrmsr(amd64.MSR_TSC_ADJUST, amd64.Rdmsr(amd64.MSR_TSC_ADJUST)+uint64(probe.adj))
			atomic.StoreUint32(&probe.ping, 2)
		}
		amd64.Pause()
	}
	return served
}

// ask sends request req (1 or 3) to CPU i and waits for the answer.
func ask[E Env](i int, req uint32) {
	var env E
	atomic.StoreUint32(&probe.ping, req)
	for deadline := env.Now() + 1e9; atomic.LoadUint32(&probe.ping) != 2; {
		if env.Now() > deadline {
			env.Fatal("tsc: an application processor stopped answering")
		}
		amd64.Pause()
	}
}

// offset measures CPU i's TSC against this one's: the offset and its
// uncertainty, in ticks.
func offset[E Env](i int) (off, unc int64) {
	var env E
	good := clock.Hz() / 1e6 // 1 µs
	best := uint64(1<<63 - 1)
	end := env.Now() + budget
	for r := 0; r < maxRounds && (r < minRounds || best > good && env.Now() < end); r++ {
		t0 := amd64.Rdtsc()
		ask[E](i, 1)
		t2 := amd64.Rdtsc()
		if rtt := t2 - t0; rtt < best {
			best = rtt
			off = int64(atomic.LoadUint64(&probe.val) - t0 - rtt/2)
		}
	}
	return off, int64(best / 2)
}

// Result is what Check found: the largest offset of an AP's TSC and the
// largest uncertainty of the probes, in ns; Skewed: an offset remains;
// Loose: some probe could not get tighter than 10 µs.
type Result struct {
	Worst, Uncertainty int64
	Skewed, Loose      bool
}

// Check measures every AP of n CPUs, corrects what it can (adj: the CPU
// has IA32_TSC_ADJUST) and says what it found.
func Check[E Env](n int, adj bool) (r Result) {
	var env E
	var worst, worstUnc int64
	for i := 1; i < n; i++ {
		atomic.StoreInt32(&probe.cpu, int32(i+1))
		env.Wake(i)
		off, unc := offset[E](i)
		for end := env.Now() + retryBudget; ticksToNs(unc) > tight && env.Now() < end; {
			if o, u := offset[E](i); u < unc {
				off, unc = o, u
			}
		}
		if ticksToNs(unc) > tight {
			r.Loose = true
		}
		if abs(off) > unc && adj {
			probe.adj = -off
			ask[E](i, 3)
			off, unc = offset[E](i)
		}
		if abs(off) > unc {
			r.Skewed = true
		}
		if abs(off) > abs(worst) {
			worst = off
		}
		worstUnc = max(worstUnc, unc)
	}
	atomic.StoreInt32(&probe.cpu, 0)
	r.Worst, r.Uncertainty = ticksToNs(worst), ticksToNs(worstUnc)
	return r
}

// Env is what the kernel supplies: the monotonic clock (ns), waking AP i
// from its barrier, and stopping the machine.
type Env interface {
	Now() int64
	Wake(i int)
	Fatal(msg string)
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
