package baseline

import (
	"sync/atomic"
	"unsafe"

	"yolk/sync/twa"
)

// MCS is the Mellor-Crummey–Scott queue lock. Each acquisition brings a
// node; Lock swaps the node into the tail and, if there was a predecessor,
// links itself behind it and polls a flag in its own node. Unlock passes
// the lock by clearing the successor's flag, or empties the queue with a
// CAS on the tail when there is no successor. The zero value is an
// unlocked lock.
type MCS[P twa.Policy] struct {
	tail unsafe.Pointer // *MCSNode of the last arrival; nil when free
}

// An MCSNode is one acquisition's place in an MCS queue. The same node
// must be passed to Lock (or a successful TryLock) and to the matching
// Unlock, and may be reused only after that Unlock returns.
//
// The linked flag exists because a policy waits on a 32-bit word: a
// releaser whose successor has swapped itself into the tail but not yet
// stored the link waits for linked (stored after next), not on the pointer.
type MCSNode struct {
	next    unsafe.Pointer // *MCSNode of the successor, set by the successor
	linked  uint32         // 1 once next is set
	waiting uint32         // 1 until the predecessor hands over
}

// Lock acquires l using node n, waiting in arrival order if l is held.
func (l *MCS[P]) Lock(n *MCSNode) {
	atomic.StorePointer(&n.next, nil)
	atomic.StoreUint32(&n.linked, 0)
	atomic.StoreUint32(&n.waiting, 1)
	pred := (*MCSNode)(atomic.SwapPointer(&l.tail, unsafe.Pointer(n)))
	if pred == nil {
		return
	}
	atomic.StorePointer(&pred.next, unsafe.Pointer(n))
	atomic.StoreUint32(&pred.linked, 1)
	var p P
	p.AwaitEqual(&n.waiting, 0)
}

// TryLock acquires l using node n if no one holds or waits for it, and
// reports whether it did.
func (l *MCS[P]) TryLock(n *MCSNode) bool {
	atomic.StorePointer(&n.next, nil)
	atomic.StoreUint32(&n.linked, 0)
	return atomic.CompareAndSwapPointer(&l.tail, nil, unsafe.Pointer(n))
}

// Unlock releases l, which was acquired with node n.
func (l *MCS[P]) Unlock(n *MCSNode) {
	if atomic.LoadUint32(&n.linked) == 0 {
		if atomic.CompareAndSwapPointer(&l.tail, unsafe.Pointer(n), nil) {
			return
		}
		var p P
		p.AwaitEqual(&n.linked, 1)
	}
	atomic.StoreUint32(&(*MCSNode)(atomic.LoadPointer(&n.next)).waiting, 0)
}
