// Package twa provides TWA, the ticket lock augmented with a waiting array
// (Dice and Kogan, "TWA – Ticket Locks Augmented with a Waiting Array"): a
// spin lock for short critical sections, usable from goroutines and, with
// the Spin policy, from kernel context underneath the Go runtime.
//
// A Lock is a ticket and a grant counter. An arriving goroutine takes a
// ticket with one atomic add and owns the lock when grant reaches it. Only
// the immediate successor polls grant; waiters further back ("long-term",
// more than one ticket from grant) poll a slot of one 4096-slot waiting
// array shared by all locks, chosen by hashing (lock address, ticket).
// Unlock advances the grant — the handover — and then, if a ticket
// was taken behind the new successor's, increments the slot of the waiter
// that has just become the immediate successor. Only a
// single poller's cache line is invalidated by the handover's write, however
// long the queue, which is what keeps handover fast under contention.
//
// Guarantees. Mutual exclusion. FIFO admission: the lock is granted in the
// order in which Lock calls took their tickets; TryLock succeeds only on a
// free lock with nobody queued and never overtakes a waiter. Progress: a
// waiter is admitted after the waiters ahead of it have each held the lock
// once, so every Lock returns if every holder releases and every goroutine
// is eventually scheduled (starvation-free under fair scheduling). No
// wake-up is lost, also when unrelated locks collide in the waiting array
// (see Unlock). Abortability: none. A Lock call cannot time out or be
// cancelled, because a taken ticket must be served (a waiter that left
// would stall every ticket behind it); TryLock, which takes no ticket
// unless it succeeds, is the only way not to wait. Use sync/cqs for
// waiting that can be abandoned.
//
// Costs. A Lock is 8 bytes (two uint32 counters on one cache line, as in a
// classic ticket lock) and needs no per-waiter node. The waiting array is a
// one-time 32 KiB plus two 128-byte guard sectors for the whole program.
// Lock is one atomic add and one load when free, behind one call (Go's
// inliner rejects the generic Lock; Unlock and TryLock inline). Unlock is
// an atomic add and a load when at most one waiter is queued; with more it
// adds, unlike a ticket lock's, an atomic add on a second cache line, the
// waiting-array slot.
//
// What it may not do. It never parks: waiting goroutines stay runnable and
// poll. With the Yield policy a waiter yields the processor with
// runtime.Gosched after a short spin, which is how a preempted holder or a
// preempted successor gets to run when goroutines outnumber processors;
// under that oversubscription every handover may need a trip through the
// scheduler, and FIFO order forbids handing the lock to whoever happens to
// be running. It is not a replacement for sync.Mutex around long or
// blocking critical sections. Unlocking a lock that is not held corrupts it
// and is not detected. A Lock must not be copied after first use.
//
// Policies. How a waiter passes time is a type argument (see Policy): Yield
// for goroutines, Spin for kernel context. The lock logic and the Spin
// policy are nosplit, call no runtime function, allocate nothing and write
// no pointers (kernel_test.go checks the compiled code for amd64 and
// arm64), so Lock[Spin] may be used where the kernel must not enter the
// runtime. The other side of that: Go never preempts nosplit code, so a
// Spin waiter runs until it gets the lock. Ordinary goroutines must not use
// Lock[Spin]: a stop-the-world (a garbage collection) that has stopped the
// holder would wait forever for the spinning waiters, and with more
// waiters than Ps the holder may never run. Kernel code waits inside
// system calls and traps, which the runtime does not stop.
//
// The classic ticket lock and the MCS lock that TWA is measured against
// live in package yolk/sync/twa/baseline.
package twa

import (
	"sync/atomic"
	"unsafe"
)

// longTermThreshold is the paper's LongTermThreshold, 1: a waiter whose
// ticket is more than one ahead of grant waits in the waiting array; only
// the immediate successor polls grant.
const longTermThreshold = 1

// A Lock is a TWA lock whose waiters pass time as policy P says. The zero
// value is an unlocked lock.
//
// The counters are plain words accessed only through sync/atomic's
// functions, not atomic.Uint32: those functions are compiler intrinsics at
// every call site, whereas the methods of atomic.Uint32 are calls unless
// inlined, and the compiler does not always inline them into generic code
// instantiated in another package (kernel_test.go would catch the call).
type Lock[P Policy] struct {
	ticket uint32 // next ticket to hand out
	grant  uint32 // ticket of the holder; == ticket when free
}

// Lock acquires l, waiting in ticket order if it is held. Tickets and
// grants are compared with unsigned wrap-around arithmetic: tx-grant is the
// number of holders ahead of tx, correct while fewer than 2³² Lock calls are
// in progress at once.
//
//go:nosplit
func (l *Lock[P]) Lock() {
	l.lock()
}

// lock is Lock, returning the ticket it was admitted with (for tests that
// check admission order).
//
// Lock[Yield] runs the fast path in lockSplit, an ordinary function, and
// Lock[Spin] runs it here, in nosplit code. The test costs nothing: in each
// compiled instantiation unsafe.Sizeof(p) is a constant (Yield is one byte,
// Spin none), so Lock[Spin] contains neither the test nor the call
// (kernel_test.go checks).
//
//go:nosplit
func (l *Lock[P]) lock() uint32 {
	var p P
	if unsafe.Sizeof(p) != 0 {
		return l.lockSplit()
	}
	tx := atomic.AddUint32(&l.ticket, 1) - 1
	if atomic.LoadUint32(&l.grant) != tx {
		l.wait(tx)
	}
	return tx
}

// lockSplit is Lock's fast path for goroutines. It is not nosplit, so its
// prologue checks for a requested preemption before the ticket is taken.
// Go preempts a goroutine only in such a prologue or by a signal, at
// whatever instruction it interrupts; with Lock nosplit, a goroutine whose
// preemption had been requested was often stopped by the signal inside the
// caller's critical section. A FIFO lock whose holder is descheduled while
// others queue turns every later handover into a trip through the
// scheduler, and at GOMAXPROCS=1 that convoy never dissolves
// (docs/sync-twa.md measures it). noinline keeps the prologue.
//
//go:noinline
func (l *Lock[P]) lockSplit() uint32 {
	tx := atomic.AddUint32(&l.ticket, 1) - 1
	if atomic.LoadUint32(&l.grant) != tx {
		l.wait(tx)
	}
	return tx
}

// wait waits until grant reaches ticket tx.
//
//go:nosplit
func (l *Lock[P]) wait(tx uint32) {
	var p P
	if tx-atomic.LoadUint32(&l.grant) > longTermThreshold {
		// Long-term waiting. Read the slot first, then grant: if the
		// snapshot already contains the notification for tx, grant already
		// shows the release that sent it (see Unlock), so the recheck below
		// leaves the loop instead of waiting for an event that has passed.
		slot := waitSlot(unsafe.Pointer(l), tx)
		for {
			u := atomic.LoadUint64(slot)
			if h := loadGapHook; h != nil {
				h(tx)
			}
			if tx-atomic.LoadUint32(&l.grant) <= longTermThreshold {
				break
			}
			p.AwaitChange(slot, u)
		}
	}
	// Short-term waiting, as in a classic ticket lock.
	p.AwaitEqual(&l.grant, tx)
}

// Grant is the address of l's grant counter, the word the immediate
// successor polls (Policy.AwaitEqual): a policy whose successor may stop
// polling (a kernel's CPU that halts) is woken by a release through it.
//
//go:nosplit
func (l *Lock[P]) Grant() *uint32 { return &l.grant }

// loadGapHook, if not nil, is called by a long-term waiter between its two
// loads (slot, then grant) with its ticket. Tests set it to hold a waiter
// there while a release runs, the interleaving that the order of the loads
// must survive (TestLoadOrderNoLostWakeup). It is nil in production: then
// the long-term loop pays one load and one branch per wake-up, not per
// poll, and Lock[Spin] calls nothing (TestKernelPathNoRuntimeCalls sees
// the indirect call only as code; it is never reached with a nil hook).
// It must be set only while no goroutine uses a Lock.
var loadGapHook func(tx uint32)

// TryLock acquires l if it is free and nobody is queued, and reports
// whether it did. It takes no ticket when it fails, so it never delays the
// queue.
//
//go:nosplit
func (l *Lock[P]) TryLock() bool {
	_, ok := l.tryLock()
	return ok
}

// tryLock is TryLock returning the ticket it was admitted with. The CAS
// succeeds only if ticket still equals the grant observed after reading it;
// since grant never passes ticket and only grows, grant equals the ticket
// at the CAS, so the lock was free.
//
//go:nosplit
func (l *Lock[P]) tryLock() (uint32, bool) {
	t := atomic.LoadUint32(&l.ticket)
	if atomic.LoadUint32(&l.grant) != t {
		return 0, false
	}
	return t, atomic.CompareAndSwapUint32(&l.ticket, t, t+1)
}

// Unlock releases l, handing it to the next ticket if one is queued. It
// must be called by the holder (any goroutine may, as with sync.Mutex).
//
// The order is the paper's: first the grant store, which is the handover
// and which the immediate successor observes directly; then, outside the
// critical path, the atomic increment of the waiting-array slot of ticket
// k+1, the waiter that has just become the immediate successor (skipped
// when no such ticket was taken: UnlockSlot).
//
// Why no wake-up is lost. Let waiter W hold ticket t = k+1 in long-term
// waiting. W loads its slot (snapshot u) and then loads grant; it waits
// only if that grant is still below k. This Unlock stores grant = k and
// then increments the slot. Go's sync/atomic operations are sequentially
// consistent, so the four accesses have one total order consistent with
// each goroutine's program order. If W's slot load comes after the
// increment, W's later grant load also comes after the grant store and
// returns k or more: W stops long-term waiting. Otherwise W's snapshot u
// predates the increment, the slot will differ from u, and W's AwaitChange
// returns and rechecks. Either way W leaves long-term waiting. This is the
// message-passing pattern, so release/acquire ordering would already
// suffice; sequential consistency is more than needed. Increments by other
// locks or tickets sharing the slot only add rechecks, and 64-bit slots
// cannot wrap back to a snapshot.
//
//go:nosplit
func (l *Lock[P]) Unlock() {
	l.UnlockSlot()
}

// UnlockSlot is Unlock, returning the waiting-array slot it incremented,
// or nil if it incremented none: a policy whose long-term waiters may
// stop polling (a kernel's CPU that halts) wakes those waiting on that
// slot after the increment, which preserves the argument above (the
// waiter stores that it sleeps on the slot, then rereads it; the
// releaser increments it, then reads who sleeps).
//
// The increment is skipped when no ticket k+longTermThreshold has been
// taken, which is every release of a lock nobody queues for: under
// QEMU's TCG the atomic increment of a slot elsewhere in memory is a
// third of the cost of an uncontended Lock and Unlock. No wake-up is lost:
// the waiter W that would hold that ticket takes it (ticket's increment)
// before it loads its slot and then grant; the ticket load here follows
// the grant store. If it does not see W's ticket, W's increment, and so
// W's grant load, come after the grant store: W reads k or more and is
// not a long-term waiter.
//
// The grant is stored by an atomic add (only the holder writes grant, so
// it stores grant+1 as a plain store would), a read-modify-write, not by
// a store: the argument needs the ticket load after the grant store, and
// QEMU's TCG, emulating arm64 on an x86 host, does not keep a store
// (STLR) ahead of a later load (LDAR) of another word, as Arm's
// architecture does: the host's store buffer still holds the grant while
// the ticket is read. A store-buffering test under qemu-aarch64 saw both
// stores missed in a quarter to a third of its rounds in most runs
// (TestStoreThenLoad); here a long-term waiter took the
// ticket this release missed, read the old grant and waited on a slot
// nobody incremented, and the kernel's lock stopped every CPU
// (TestSMPKernelLocks on virt-gicv3 with 4 CPUs, 5 boots in 40;
// TestBurstsCollidingLocks under qemu-aarch64, make hosted). An atomic
// read-modify-write is a full barrier there (a locked instruction); on
// amd64 Go's store is one already (XCHG).
//
//go:nosplit
func (l *Lock[P]) UnlockSlot() *uint64 {
	k := atomic.AddUint32(&l.grant, 1)
	if atomic.LoadUint32(&l.ticket)-k <= longTermThreshold {
		return nil
	}
	s := waitSlot(unsafe.Pointer(l), k+longTermThreshold)
	atomic.AddUint64(s, 1)
	return s
}
