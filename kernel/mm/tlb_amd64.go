package mm

import (
	"math/bits"
	"sync/atomic"

	"unsafe"

	"yolk/arch/amd64"
	"yolk/drivers/clock"
	"yolk/sched"
)

// TLB shootdown. Every CPU may cache a translation of any user page (one
// address space), so before a frame whose mapping was removed goes back to
// the allocator, every CPU must have dropped that translation: the
// initiator invalidates its own TLB, interrupts the other CPUs that are
// running (Env.ShootdownIPI; the kernel's handler calls
// ShootdownInterrupt) and waits until each has invalidated and
// acknowledged. Shootdowns are serialized by vmMutex, whose holder takes no
// spin lock while it waits, so the CPUs it waits for always get to handle
// the interrupt (they run application code, or kernel code that ends
// without waiting for it).
//
// Lazy TLB for idle CPUs: a CPU halted in its idle loop uses no user
// translation until it leaves the loop, so instead of being woken it is
// marked stale and flushes its whole TLB when it wakes (TLBEnterIdle,
// TLBWake).
// Under emulation waking a halted CPU costs far more than the flush.

const (
	tlbRunning = iota // may use user translations: must be interrupted
	tlbIdle           // halted in the idle loop
	tlbStale          // halted, and must flush before running anything
)

// archEnv is Env's amd64 part.
type archEnv interface {
	// ShootdownIPI interrupts CPU cpu (sched's index) with the shootdown
	// vector, whose handler calls ShootdownInterrupt.
	ShootdownIPI(cpu int)
}

// tlbCPU is each CPU's lazy-TLB state and its count of shootdown
// interrupts, a cache line each: the idle loop writes its own.
var tlbCPU [sched.MaxCPUs]struct {
	state      uint32 // atomic: tlbRunning, tlbIdle or tlbStale
	_          uint32
	shootdowns uint64 // shootdown interrupts handled here (statistics)
	_          [48]byte
}

// tlbKeep keeps tlbCPU out of the demand-paged BSS (bss.go): the idle loop
// and the shootdown interrupt use it with interrupts off.
func tlbKeep() { BSSKeep(uintptr(unsafe.Pointer(&tlbCPU)), unsafe.Sizeof(tlbCPU)) }

// CPUShootdowns is the number of shootdown interrupts CPU cpu handled.
func CPUShootdowns(cpu int) uint64 { return atomic.LoadUint64(&tlbCPU[cpu].shootdowns) }

var shoot struct {
	start, end uintptr
	pending    uint64 // atomic: CPUs that have not yet acknowledged
	count      uint64 // shootdowns (statistics)
	ipis       uint64 // interrupts sent (statistics)
	lazy       uint64 // idle CPUs marked stale instead (statistics)
}

// flushAll and flushPage drop this CPU's translations: all of them, or
// those of the page at va.
func flushAll()            { amd64.FlushTLB() }
func flushPage(va uintptr) { amd64.Invlpg(va) }

// RefreshTLB drops this CPU's translations but the global ones (a CR3
// reload; kernel/time.go's periodic refresh).
func RefreshTLB() { amd64.FlushTLB() }

// shootdown makes every CPU drop its translations of [start, end) and
// returns when they all have. The caller holds vmMutex and no spin lock.
func (s Space[E]) shootdown(start, end uintptr) {
	c := sched.This()
	if c.Locks() != 0 {
		s.env.Fatal("TLB shootdown with a spin lock held: the CPUs it waits for may spin on it")
	}
	invalidate(start, end)
	atomic.AddUint64(&shoot.count, 1)
	others := sched.Online() &^ (1 << uint(c.ID))
	if others == 0 {
		return
	}
	shoot.start, shoot.end = start, end
	var targets uint64
	for m := others; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		st := &tlbCPU[i].state
		if atomic.CompareAndSwapUint32(st, tlbIdle, tlbStale) || atomic.LoadUint32(st) == tlbStale {
			atomic.AddUint64(&shoot.lazy, 1)
			continue
		}
		targets |= 1 << uint(i)
	}
	if targets == 0 {
		return
	}
	atomic.StoreUint64(&shoot.pending, targets)
	for m := targets; m != 0; m &= m - 1 {
		s.env.ShootdownIPI(bits.TrailingZeros64(m))
		atomic.AddUint64(&shoot.ipis, 1)
	}
	deadline := clock.Nanotime() + 5e9
	for atomic.LoadUint64(&shoot.pending) != 0 {
		if clock.Nanotime() > deadline {
			s.env.Fatal("TLB shootdown: a CPU did not answer within 5 s")
		}
		amd64.Pause()
	}
}

// ShootdownInterrupt handles the shootdown interrupt (Env.ShootdownIPI)
// on this CPU.
func ShootdownInterrupt() {
	id := sched.This().ID
	// The request may have been answered already, by ShootdownPoll while
	// this CPU had interrupts off: then the interrupt is stale, and the
	// range may be the next shootdown's, not yet announced to this CPU.
	if atomic.LoadUint64(&shoot.pending)&(uint64(1)<<uint(id)) == 0 {
		return
	}
	invalidate(shoot.start, shoot.end)
	tlbCPU[id].shootdowns++
	atomic.AndUint64(&shoot.pending, ^(uint64(1) << uint(id)))
}

// TLBEnterIdle marks CPU cpu, this one, as not using user translations (it
// is about to halt in its idle loop); TLBWake ends that, flushing the TLB
// if a shootdown skipped the CPU meanwhile.
func TLBEnterIdle(cpu int) { atomic.StoreUint32(&tlbCPU[cpu].state, tlbIdle) }

func TLBWake(cpu int) {
	if atomic.SwapUint32(&tlbCPU[cpu].state, tlbRunning) == tlbStale {
		amd64.FlushTLB()
	}
}

// ShootdownPoll answers a shootdown request for this CPU, if there is one,
// without its interrupt: for kernel code that polls a device for long with
// interrupts off (the console's transmitter), so that the CPU waiting for
// this one's answer does not wait out its deadline.
func ShootdownPoll() { ShootdownInterrupt() }
