package sched

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// Halting lock waiters. A TWALock waiter polls for haltAfter pauses and
// then halts its CPU until the word it polls changes: a waiter far back in
// the queue (a long-term waiter of the TWA paper) its waiting-array slot,
// the immediate successor the lock's grant. On real cores that only
// happens under long critical sections; on a virtual machine with more
// vCPUs than the host has cores it is the point: a vCPU that polls takes
// a host core from the lock's holder, whose vCPU thread then waits for
// the host to run it, and every handover costs a host time slice (1.5–1.7
// ms per handover at 4 vCPUs on 2 host cores, docs/smp.md). A halted vCPU
// gives its host core back. A successor that halts costs its handover a
// host wake-up, so it polls as long as a long-term waiter first: about
// what a short critical section and its handover take many times over.
//
// Protocol (no lost wake-up): the waiter stores the word it sleeps on
// (CPU.haltOn) and its bit in lockHalted, then rereads the word, and
// halts only if it has not changed; TWALock.Unlock adds to the grant and
// increments the slot (twa.Lock.UnlockSlot), then reads lockHalted and
// kicks each CPU whose haltOn is that lock's grant or that slot. All these
// accesses are sequentially consistent, and each write before a load of
// another word is a read-modify-write (a CAS, an add: UnlockSlot says why
// a store is not enough under QEMU's TCG for arm64), so either the
// waiter's reread sees the grant or the increment, or the releaser sees
// the waiter. The
// kick is an interrupt that ends the halt although the waiter runs with
// interrupts masked (haltForKick, per architecture); a kick that arrives
// after the waiter stopped halting is an interrupt with nothing to do.
// Slots shared by several locks or tickets only cause extra kicks. An
// Unlock that finds no ticket behind the new successor's increments no
// slot: a waiter that takes such a ticket after it reads the new grant
// and is no long-term waiter (UnlockSlot's comment).

// haltAfter is the number of polls a waiter makes before it halts:
// about 20–50 µs under emulation, a few µs on real cores — longer than a
// short critical section and its handover, so that without
// oversubscription waiters rarely halt.
const haltAfter = 1 << 10

// lockHalted has a bit per CPU halted (or about to halt) in a lock wait.
var lockHalted uint64 // atomic

// lockWait is TWALock's waiting policy (twa.Policy): the twa.Spin policy,
// except that waiters halt after haltAfter polls. Kernel context:
// nosplit, no allocation, no runtime calls.
type lockWait struct{}

// AwaitEqual polls the grant w until it holds v (the immediate
// successor), halting this CPU after haltAfter polls.
//
//go:nosplit
func (lockWait) AwaitEqual(w *uint32, v uint32) {
	for i := 0; atomic.LoadUint32(w) != v; i++ {
		if i < haltAfter || ncpu == 1 || !sleepOn(unsafe.Pointer(w)) {
			pause()
			continue
		}
		if atomic.LoadUint32(w) != v {
			halt()
		}
		awake()
		i = 0
	}
}

// AwaitChange polls the waiting-array slot w until it no longer holds
// old, halting this CPU after haltAfter polls.
//
//go:nosplit
func (lockWait) AwaitChange(w *uint64, old uint64) {
	for i := 0; atomic.LoadUint64(w) == old; i++ {
		if i < haltAfter || ncpu == 1 || !sleepOn(unsafe.Pointer(w)) {
			pause()
			continue
		}
		if atomic.LoadUint64(w) == old {
			halt()
		}
		awake()
		i = 0
	}
}

// sleepOn says that this CPU is about to halt until word w changes (its
// haltOn, then its bit in lockHalted); false if it cannot take a kick
// yet. awake takes it back.
//
//go:nosplit
func sleepOn(w unsafe.Pointer) bool {
	c := This()
	bit := uint64(1) << uint(c.ID)
	if atomic.LoadUint64(&online)&bit == 0 {
		return false
	}
	atomic.StoreUintptr(&c.haltOn, uintptr(w))
	orMask(&lockHalted, bit)
	return true
}

//go:nosplit
func awake() {
	c := This()
	andMask(&lockHalted, ^(uint64(1) << uint(c.ID)))
	atomic.StoreUintptr(&c.haltOn, 0)
}

// halt halts this CPU until a kick (or any interrupt).
//
//go:nosplit
func halt() {
	atomic.AddUint64(&This().lockHalts, 1)
	haltForKick()
}

// kickHalted wakes the CPUs halted on a lock's grant or on slot s (nil
// if none) after an Unlock stored the one and incremented the other.
//
//go:nosplit
func kickHalted(grant *uint32, s *uint64) {
	m := atomic.LoadUint64(&lockHalted)
	for m != 0 {
		i := bits.TrailingZeros64(m)
		m &^= 1 << uint(i)
		c := &cpus[i]
		if on := atomic.LoadUintptr(&c.haltOn); on == uintptr(unsafe.Pointer(grant)) ||
			s != nil && on == uintptr(unsafe.Pointer(s)) {
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
