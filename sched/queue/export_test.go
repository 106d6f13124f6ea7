package queue

import "sync/atomic"

// Test access to the internals. Everything here is for quiescent inspection
// or for driving the halves of an operation one step at a time.

func (it *Item) nodeAddr() uintptr { return it.node }

func (d *Domain) hazard(p, k int) uintptr {
	pr := d.slot(p)
	if k == 1 {
		return atomic.LoadUintptr(&pr.hp1)
	}
	return atomic.LoadUintptr(&pr.hp2)
}

// setHazard plays processor p publishing hazard pointer k.
func (d *Domain) setHazard(p, k int, n uintptr) {
	pr := d.slot(p)
	if k == 1 {
		atomic.StoreUintptr(&pr.hp1, n)
	} else {
		atomic.StoreUintptr(&pr.hp2, n)
	}
}

func (d *Domain) pool(p, k int) uintptr {
	pr := d.slot(p)
	if k == 1 {
		return atomic.LoadUintptr(&pr.pool1)
	}
	return atomic.LoadUintptr(&pr.pool2)
}

func (d *Domain) setPool(p, k int, n uintptr) {
	pr := d.slot(p)
	if k == 1 {
		atomic.StoreUintptr(&pr.pool1, n)
	} else {
		atomic.StoreUintptr(&pr.pool2, n)
	}
}

// enqueueLink runs the first half of Enqueue on processor p: it leaves the
// node linked after tail, tail not yet swung and p's hp1 still naming tail.
func (d *Domain) enqueueLink(p int, q *Queue, it *Item) (tail, n uintptr) {
	n = d.prepare(it)
	return d.link(d.slot(p), q, n), n
}

// enqueueSwing is the second half of Enqueue, as this package orders it.
func (d *Domain) enqueueSwing(p int, q *Queue, tail, n uintptr) { d.swing(d.slot(p), q, tail, n) }

// enqueuePause is Enqueue, made of the same steps, with pause called at its
// race point: the node linked after the tail, the tail not yet swung, p's
// hp1 still naming the old tail. Other processors then find the tail lagging
// and a hazardous node to avoid.
func (d *Domain) enqueuePause(p int, q *Queue, it *Item, pause func()) error {
	pr := d.slot(p)
	if pr == nil {
		return ErrProc
	}
	n := d.prepare(it)
	if n == 0 {
		return ErrExhausted
	}
	tail := d.link(pr, q, n)
	pause()
	d.swing(pr, q, tail, n)
	return nil
}

func casTail(q *Queue, old, new uintptr) bool { return atomic.CompareAndSwapUintptr(&q.tail, old, new) }

func headOf(q *Queue) uintptr { return atomic.LoadUintptr(&q.head) }
func tailOf(q *Queue) uintptr { return atomic.LoadUintptr(&q.tail) }

// walk returns the nodes of a quiescent queue, dummy first, and the items
// they hold (nil for the dummy).
func walk(q *Queue, limit int) (nodes []uintptr, items []*Item) {
	for n := headOf(q); n != 0 && len(nodes) <= limit; n = atomic.LoadUintptr(&nodeAt(n).next) {
		nodes = append(nodes, n)
		if len(nodes) == 1 {
			items = append(items, nil)
		} else {
			items = append(items, itemAt(atomic.LoadUintptr(&nodeAt(n).item)))
		}
	}
	return nodes, items
}

// freeList returns the nodes on the arena's free list.
func (d *Domain) freeList(limit int) []uintptr {
	var out []uintptr
	for idx := uintptr(uint32(atomic.LoadUint64(&d.free))); idx != 0 && len(out) <= limit; {
		n := d.base + (idx-1)*nodeSize
		out = append(out, n)
		next := atomic.LoadUintptr(&nodeAt(n).next)
		if next == 0 {
			break
		}
		idx = (next-d.base)/nodeSize + 1
	}
	return out
}

// inArena reports whether n is the address of one of d's arena nodes.
func (d *Domain) inArena(n uintptr) bool {
	return n >= d.base && n < d.base+d.count*nodeSize && (n-d.base)%nodeSize == 0
}

func (d *Domain) takeNode() uintptr { return d.take() }
