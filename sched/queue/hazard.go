package queue

import "sync/atomic"

// acquire returns a node for it to use that no processor's hazard pointer
// names, or 0 if there is none (Fig. 5 of the paper). It starts from the node
// the item carries; each time the candidate equals processor q's hazard
// pointer hpN it is exchanged, atomically, for q's pooled node poolN, and the
// scan goes on with what came out of the pool. Pooled nodes are pairwise
// distinct and distinct from the candidate, so there is always one more node
// than hazard pointers that can name them, and a full scan without an
// exchange ends the loop; that scan is what makes the result safe.
//
// The caller owns it, so neither it nor its node is in any queue.
func (d *Domain) acquire(it *Item) uintptr {
	n := it.node
	if n == 0 {
		return 0
	}
	np := d.nprocs
	for {
		swapped := false
		for i := range d.procs {
			if uintptr(i) >= np {
				break
			}
			pr := &d.procs[i]
			if n == atomic.LoadUintptr(&pr.hp1) {
				n = atomic.SwapUintptr(&pr.pool1, n)
			} else if n == atomic.LoadUintptr(&pr.hp2) {
				n = atomic.SwapUintptr(&pr.pool2, n)
			} else {
				continue
			}
			atomic.AddUint64(&d.exchanges, 1)
			if n == 0 {
				return 0 // the pool slot was empty: it keeps the hazardous node
			}
			swapped = true
		}
		if !swapped {
			return n
		}
	}
}
