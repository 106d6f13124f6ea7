// Package queue is the scheduler's ready queue: an unbounded lock-free FIFO of
// caller-owned items (tasks), Michael–Scott style, with hazard pointers per
// processor and node reuse, after "On the Design and Implementation of an
// Efficient Lock-Free Scheduler" (Negele, Friedrich, Oh, Egger), Figs. 4–6.
//
// A Domain holds the node arena and, per processor, two hazard pointers and
// two pooled nodes; all queues that items move between (ready queues, wait
// queues) must share one Domain. An item is owned either by its caller or by
// exactly one queue.
//
// Guarantees. Enqueue and Dequeue are lock-free and linearizable, hence FIFO
// per producer. Picking a node for reuse (acquire, the paper's Fig. 5, used
// by Enqueue and Release) has no retry on contention: it rescans the hazard
// pointers only after exchanging its candidate for a pooled node, wait-free
// as the paper argues. A dequeued item carries the queue's old dummy node
// away and reuses it on its next Enqueue, so an Enqueue/Dequeue pair takes no
// node from the arena in steady state, and the nodes out of the arena never
// exceed items + queues + 2·procs (a dummy per queue, two pool slots per
// processor). One deliberate change from Fig. 6: Enqueue drops its hazard
// pointer after swinging the tail, not before (see swing).
//
// It is kernel-context code, callable inside a trap with interrupts off while
// the collector runs: no operation allocates on the Go heap; no pointer is
// stored in memory (nodes and items are linked by uintptr), so there are no
// write barriers; every function is nosplit and calls nothing in the runtime
// (no scheduler, locks, bounds-check panics or stack growth: only inlined
// sync/atomic). TestKernelContext checks all of this on the compiler output.
// In return the caller owns all memory: the arena, Domain, Queues and items
// must stay alive and must not move (not on a goroutine stack), and at most
// one operation per processor index runs at a time (in the kernel: interrupts
// off around queue operations, or separate processor slots for interrupt
// handlers).
//
// hpPublish: a hazard pointer is published with an atomic swap, not a
// store, because the load that validates it must come after it. Go's
// sequentially consistent store orders that on amd64 (XCHG) and on Arm's
// cores (STLR, then LDAR), but not under QEMU's TCG emulating arm64 on an
// x86 host, where the store can wait in the host's store buffer while the
// load reads: a reclaimer could scan past the pointer and reuse the node.
// A swap is a locked instruction there (sync/twa's UnlockSlot has the
// measurement); on amd64 it is the same XCHG.
package queue

import (
	"sync/atomic"
	"unsafe"
)

// MaxProcs is the number of processor slots in a Domain.
const MaxProcs = 64

// cacheLine separates data written by different processors.
const cacheLine = 64

// Error is the type of the errors this package returns.
type Error string

func (e Error) Error() string { return string(e) }

// Errors. They are initialised statically (no init code, no allocation), and
// returning one copies an interface value.
var (
	ErrProc      error = Error("queue: processor index out of range")
	ErrExhausted error = Error("queue: node arena exhausted")
	ErrInit      error = Error("queue: bad Init arguments")
)

// Node is a link in a queue. Nodes come only from the arena handed to
// Domain.Init; the caller declares them (a static array in the kernel) and
// never touches their contents.
type Node struct {
	next uintptr // *Node; accessed atomically
	item uintptr // *Item; accessed atomically
}

const nodeSize = unsafe.Sizeof(Node{})

// Item is what a queue holds. Embed it in the task structure (as the first
// field if the task is to be recovered with a plain pointer conversion). The
// zero Item is ready to use: it takes a node from the arena on its first
// Enqueue and from then on always carries one.
type Item struct {
	// node is the item's node: while the item is queued, the node that holds
	// it; after Dequeue, the queue's old dummy node, which the item owns and
	// reuses on its next Enqueue; 0 if it has none.
	node uintptr
}

// Queue is a FIFO of items. Initialise it with Domain.InitQueue, which takes
// its first dummy node from the arena.
type Queue struct {
	head uintptr // *Node, the dummy; accessed atomically
	_    [cacheLine - unsafe.Sizeof(uintptr(0))]byte
	tail uintptr // *Node, the last node or a predecessor; accessed atomically
	_    [cacheLine - unsafe.Sizeof(uintptr(0))]byte
}

// proc is one processor's slot: its two hazard pointers, written only by the
// processor itself, and two pooled nodes, exchanged by any processor.
type proc struct {
	hp1, hp2     uintptr // *Node
	pool1, pool2 uintptr // *Node
	_            [cacheLine - 4*unsafe.Sizeof(uintptr(0))]byte
}

// Domain is the shared state of a set of queues: the node arena, the
// processor slots and counters. Its zero value is unusable; call Init.
type Domain struct {
	nprocs uintptr // number of processor slots in use, 1..MaxProcs
	base   uintptr // address of the arena's first node
	count  uintptr // arena length in nodes

	// arena allocation: fresh nodes by bumping, released ones on a free list
	bump uintptr // next fresh node index; atomic
	free uint64  // free-list top: generation<<32 | (index+1); atomic

	taken, returned, exchanges uint64 // atomic counters, see Stats
	_                          [cacheLine]byte

	procs [MaxProcs]proc
}

// Stats are a Domain's counters.
type Stats struct {
	Taken    uint64 // nodes handed out by the arena (fresh or released before)
	Returned uint64 // nodes given back to the arena by Release

	// InUse is Taken - Returned: the nodes in queues (a dummy per queue and
	// one per queued item), carried by dequeued items, or pooled.
	InUse uint64

	Fresh     uint64 // arena nodes ever used: the arena's high-water mark
	Exchanges uint64 // hazardous nodes exchanged for pooled ones
}

// Init prepares d for nprocs processors (1..MaxProcs) with the given node
// arena (1 .. 1<<32-1 nodes). d and arena must stay alive and in place for
// as long as d is used. An arena of items + queues + 2·nprocs nodes never
// runs out. Init must not run concurrently with anything else on d.
func (d *Domain) Init(nprocs int, arena []Node) error {
	if nprocs < 1 || nprocs > MaxProcs || len(arena) == 0 || uint64(len(arena)) >= 1<<32-1 {
		return ErrInit
	}
	d.nprocs = uintptr(nprocs)
	d.base = uintptr(unsafe.Pointer(&arena[0]))
	d.count = uintptr(len(arena))
	d.bump = 0
	d.free = 0
	d.taken, d.returned, d.exchanges = 0, 0, 0
	for i := range d.procs {
		d.procs[i] = proc{}
	}
	return nil
}

// InitQueue makes q an empty queue of d, taking its dummy node from the
// arena. It must not run concurrently with other operations on q.
//
//go:nosplit
func (d *Domain) InitQueue(q *Queue) error {
	n := d.take()
	if n == 0 {
		return ErrExhausted
	}
	node := nodeAt(n)
	atomic.StoreUintptr(&node.item, 0)
	atomic.StoreUintptr(&node.next, 0)
	atomic.StoreUintptr(&q.head, n)
	atomic.StoreUintptr(&q.tail, n)
	return nil
}

// slot returns processor p's slot, or nil if p is out of range. The mask
// keeps the index provably in range, so there is no bounds check to fail.
func (d *Domain) slot(p int) *proc {
	if uint(p) >= uint(d.nprocs) {
		return nil
	}
	return &d.procs[uint(p)&(MaxProcs-1)]
}

// Enqueue appends it, which the caller owns, to q, running on processor p.
// It reuses the node the item carries unless another processor's hazard
// pointer names it, in which case it exchanges it for a pooled node; only
// when that yields none does it take a node from the arena. It fails only
// with ErrProc (nothing done) or ErrExhausted (arena empty, it not queued).
//
//go:nosplit
func (d *Domain) Enqueue(p int, q *Queue, it *Item) error {
	pr := d.slot(p)
	if pr == nil {
		return ErrProc
	}
	n := d.prepare(it)
	if n == 0 {
		return ErrExhausted
	}
	tail := d.link(pr, q, n)
	d.swing(pr, q, tail, n)
	return nil
}

// prepare gives it a node that is safe to link (Fig. 6, lines 3–7), or
// returns 0 if the arena is exhausted.
//
//go:nosplit
func (d *Domain) prepare(it *Item) uintptr {
	n := d.acquire(it)
	if n == 0 {
		if n = d.take(); n == 0 {
			return 0
		}
	}
	it.node = n
	node := nodeAt(n)
	atomic.StoreUintptr(&node.item, uintptr(unsafe.Pointer(it)))
	atomic.StoreUintptr(&node.next, 0)
	return n
}

// link appends node n after q's last node and returns the node it was linked
// to, still protected by pr.hp1.
func (d *Domain) link(pr *proc, q *Queue, n uintptr) uintptr {
	for {
		tail := atomic.LoadUintptr(&q.tail)
		atomic.SwapUintptr(&pr.hp1, tail) // publish, full fence (hpPublish)
		if tail != atomic.LoadUintptr(&q.tail) {
			continue
		}
		t := nodeAt(tail)
		next := atomic.LoadUintptr(&t.next)
		if next != 0 { // tail lags: help it on
			atomic.CompareAndSwapUintptr(&q.tail, tail, next)
			continue
		}
		if atomic.CompareAndSwapUintptr(&t.next, 0, n) {
			return tail
		}
	}
}

// swing moves q's tail from tail to the freshly linked n and only then drops
// the hazard pointer on tail. The paper drops it first (Fig. 6, lines 18–19);
// that leaves an ABA window: tail can be dequeued, reused and become q's tail
// again before the CAS, which then moves the tail back onto a retired node
// (TestPaperOrderTailSwing replays it: an item enqueued on one queue comes
// out of another).
func (d *Domain) swing(pr *proc, q *Queue, tail, n uintptr) {
	atomic.CompareAndSwapUintptr(&q.tail, tail, n)
	atomic.StoreUintptr(&pr.hp1, 0)
}

// Dequeue removes the item at the front of q, running on processor p, and
// returns it, now owned by the caller and carrying q's old dummy node. It
// returns nil, nil if q is empty and nil, ErrProc if p is out of range.
func (d *Domain) Dequeue(p int, q *Queue) (*Item, error) {
	pr := d.slot(p)
	if pr == nil {
		return nil, ErrProc
	}
	var head, item uintptr
	for {
		head = atomic.LoadUintptr(&q.head)
		atomic.SwapUintptr(&pr.hp1, head) // publish, full fence (hpPublish)
		if head != atomic.LoadUintptr(&q.head) {
			continue
		}
		h := nodeAt(head)
		// Protect next with hp2 (Fig. 6, lines 27–30). head cannot be
		// reused while hp1 names it, so head.next changes at most once,
		// from 0: this loop runs at most twice.
		next := atomic.LoadUintptr(&h.next)
		for {
			atomic.SwapUintptr(&pr.hp2, next) // hpPublish
			n := atomic.LoadUintptr(&h.next)
			if n == next {
				break
			}
			next = n
		}
		if next == 0 {
			atomic.StoreUintptr(&pr.hp1, 0)
			atomic.StoreUintptr(&pr.hp2, 0)
			return nil, nil
		}
		// The tail must leave head before head is retired.
		if atomic.LoadUintptr(&q.tail) == head {
			atomic.CompareAndSwapUintptr(&q.tail, head, next)
		}
		item = atomic.LoadUintptr(&nodeAt(next).item)
		if atomic.CompareAndSwapUintptr(&q.head, head, next) {
			break
		}
	}
	atomic.StoreUintptr(&pr.hp1, 0)
	atomic.StoreUintptr(&pr.hp2, 0)
	it := itemAt(item)
	it.node = head // the retired dummy travels with the item
	return it, nil
}

// Empty reports whether q looked empty: its dummy node had no successor.
// It reads without hazard pointers, so a concurrent Dequeue may retire and
// reuse the node it looks at and make the answer wrong (nodes are never
// freed: the read itself is safe). It is a hint, for a caller that looks
// again later.
//
//go:nosplit
func (d *Domain) Empty(q *Queue) bool {
	return atomic.LoadUintptr(&nodeAt(atomic.LoadUintptr(&q.head)).next) == 0
}

// Front returns the item at the front of q, or nil if q looked empty. Like
// Empty it reads without hazard pointers: a concurrent Dequeue may retire
// and reuse the node it looks at, so the answer may be an item that has
// left q since, or nil. Items are the caller's and stay in place, so
// reading the one returned is safe; what it says is a hint.
//
//go:nosplit
func (d *Domain) Front(q *Queue) *Item {
	next := atomic.LoadUintptr(&nodeAt(atomic.LoadUintptr(&q.head)).next)
	if next == 0 {
		return nil
	}
	if it := atomic.LoadUintptr(&nodeAt(next).item); it != 0 {
		return itemAt(it)
	}
	return nil
}

// Release gives the node that it, owned by the caller, carries back to the
// arena, for an item that leaves the queues for good (a task that exits). If
// another processor's hazard pointer names the node, a pooled node exchanged
// for it goes back instead. An item released and enqueued again takes a node
// from the arena. Wait-free but for the arena's free list (lock-free).
//
//go:nosplit
func (d *Domain) Release(it *Item) {
	n := d.acquire(it)
	it.node = 0
	if n != 0 {
		d.put(n)
	}
}

// Stats returns d's counters. They are read one by one, so they are exact
// only when no operation is running.
func (d *Domain) Stats() Stats {
	s := Stats{
		Taken:     atomic.LoadUint64(&d.taken),
		Returned:  atomic.LoadUint64(&d.returned),
		Fresh:     uint64(atomic.LoadUintptr(&d.bump)),
		Exchanges: atomic.LoadUint64(&d.exchanges),
	}
	s.InUse = s.Taken - s.Returned
	return s
}

// Procs is the number of processor slots d was initialised with.
func (d *Domain) Procs() int { return int(d.nprocs) }
