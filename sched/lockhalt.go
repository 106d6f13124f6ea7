package sched

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// Halting lock waiters. A TWALock waiter far back in the queue (a
// long-term waiter of the TWA paper, polling its waiting-array slot)
// polls for haltAfter pauses and then halts its CPU until the slot
// changes. On real cores that only happens under long critical sections;
// on a virtual machine with more vCPUs than the host has cores it is the
// point: a vCPU that polls takes a host core from the lock's holder or
// its immediate successor, whose vCPU threads then wait for the host to
// run them, and every handover costs a host time slice (1.5–1.7 ms per
// handover at 4 vCPUs on 2 host cores, docs/smp.md). A halted vCPU gives
// its host core back. The immediate successor keeps polling the grant: it
// is next, and waking it would add a host wake-up to every handover.
//
// Protocol (no lost wake-up): the waiter stores the slot it sleeps on
// (CPU.haltOn) and its bit in lockHalted, then rereads the slot, and halts
// only if it has not changed; TWALock.Unlock increments the slot
// (twa.Lock.UnlockSlot), then reads lockHalted and kicks each CPU whose
// haltOn is that slot. All four accesses are sequentially consistent, so
// either the waiter's reread sees the increment or the releaser sees the
// waiter. The kick is an interrupt that ends the halt although the waiter
// runs with interrupts masked (haltForKick, per architecture); a kick that
// arrives after the waiter stopped halting is an interrupt with nothing to
// do. Slots shared by several locks or tickets only cause extra kicks.
// An Unlock that finds no ticket behind the new successor's increments no
// slot and kicks nobody: a waiter that takes such a ticket after it
// reads the new grant and is no long-term waiter (UnlockSlot's comment).

// haltAfter is the number of polls a long-term waiter makes before it
// halts: about 20–50 µs under emulation, a few µs on real cores — longer
// than a short critical section and its handover, so that without
// oversubscription waiters rarely halt.
const haltAfter = 1 << 10

// lockHalted has a bit per CPU halted (or about to halt) in a lock wait.
var lockHalted uint64 // atomic

// lockWait is TWALock's waiting policy (twa.Policy): the twa.Spin policy,
// except that long-term waiters halt after haltAfter polls. Kernel
// context: nosplit, no allocation, no runtime calls.
type lockWait struct{}

// AwaitEqual polls w until it holds v (the immediate successor).
//
//go:nosplit
func (lockWait) AwaitEqual(w *uint32, v uint32) {
	for atomic.LoadUint32(w) != v {
		pause()
	}
}

// AwaitChange polls the waiting-array slot w until it no longer holds
// old, halting this CPU after haltAfter polls.
//
//go:nosplit
func (lockWait) AwaitChange(w *uint64, old uint64) {
	for i := 0; atomic.LoadUint64(w) == old; i++ {
		if i < haltAfter || ncpu == 1 {
			pause()
			continue
		}
		c := This()
		bit := uint64(1) << uint(c.ID)
		if atomic.LoadUint64(&online)&bit == 0 {
			pause() // this CPU cannot take a kick yet
			continue
		}
		atomic.StoreUintptr(&c.haltOn, uintptr(unsafe.Pointer(w)))
		orMask(&lockHalted, bit)
		if atomic.LoadUint64(w) == old {
			atomic.AddUint64(&c.lockHalts, 1)
			haltForKick()
		}
		andMask(&lockHalted, ^bit)
		atomic.StoreUintptr(&c.haltOn, 0)
		i = 0
	}
}

// kickHalted wakes the CPUs halted on slot s after an Unlock incremented
// it.
//
//go:nosplit
func kickHalted(s *uint64) {
	m := atomic.LoadUint64(&lockHalted)
	for m != 0 {
		i := bits.TrailingZeros64(m)
		m &^= 1 << uint(i)
		c := &cpus[i]
		if atomic.LoadUintptr(&c.haltOn) == uintptr(unsafe.Pointer(s)) {
			atomic.AddUint64(&c.lockKicks, 1)
			kickLock(c)
		}
	}
}

//go:nosplit
func orMask(p *uint64, bit uint64) {
	for {
		old := atomic.LoadUint64(p)
		if atomic.CompareAndSwapUint64(p, old, old|bit) {
			return
		}
	}
}

//go:nosplit
func andMask(p *uint64, mask uint64) {
	for {
		old := atomic.LoadUint64(p)
		if atomic.CompareAndSwapUint64(p, old, old&mask) {
			return
		}
	}
}

// LockHalts is the number of times c halted in a spin-lock wait, and
// LockKicks the number of interrupts that ended such a halt sent to c.
func (c *CPU) LockHalts() uint64 { return atomic.LoadUint64(&c.lockHalts) }
func (c *CPU) LockKicks() uint64 { return atomic.LoadUint64(&c.lockKicks) }

// Prefault reads the variables a spin-lock waiter and its release read
// (online, lockHalted), so that a kernel that backs untouched memory lazily
// (yolk gives untouched BSS pages back at boot) backs them now. A waiter
// for the frame allocator's lock inside a page fault must not fault
// (twa.Prefault says why), and the boot may not touch either before its
// BSS is reclaimed: online is first written by Idle, which the CPUs enter
// after that. Kernel context, like the lock path.
//
// Not inlined: kernel/bssfault_test.go finds what it keeps in its body.
//
//go:nosplit
//go:noinline
func Prefault() {
	atomic.LoadUint64(&online)
	atomic.LoadUint64(&lockHalted)
}
