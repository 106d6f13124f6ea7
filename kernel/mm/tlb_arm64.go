package mm

import (
	"sync/atomic"

	"yolk/arch/arm64"
)

// TLB maintenance on arm64: the inner-shareable TLBI forms reach every CPU
// in hardware, and the DSB after them waits until they all have dropped
// the translation, so a shootdown needs no interrupt and no
// acknowledgement (tlb_amd64.go's protocol is x86's), and idle CPUs need
// no lazy-TLB state.

// archEnv is Env's arm64 part: nothing.
type archEnv interface{}

// tlbKeep has nothing to keep: there is no per-CPU TLB state.
func tlbKeep() {}

// CPUShootdowns is 0: TLBI broadcasts need no interrupt. It is kept for
// the statistics' shape.
func CPUShootdowns(cpu int) uint64 { return 0 }

var shoot struct {
	count uint64 // shootdowns (statistics)
	ipis  uint64 // always 0: kept for the statistics' shape
	lazy  uint64 // always 0
}

// flushAll and flushPage drop every CPU's translations: all of them, or
// those of the page at va.
func flushAll()            { arm64.TLBIAll() }
func flushPage(va uintptr) { arm64.TLBIPage(va) }

// RefreshTLB drops every translation on this CPU (kernel/time.go's
// periodic refresh).
func RefreshTLB() { arm64.TLBILocal() }

// shootdown makes every CPU drop its translations of [start, end); they
// have when it returns.
func (s Space[E]) shootdown(start, end uintptr) {
	invalidate(start, end)
	atomic.AddUint64(&shoot.count, 1)
}

// ShootdownPoll: nothing to answer on arm64, whose TLBI broadcasts need no
// other CPU's help.
func ShootdownPoll() {}
