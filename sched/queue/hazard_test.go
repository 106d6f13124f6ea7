package queue

import (
	"fmt"
	"testing"
)

// The hazard path, step by step on one goroutine that plays several
// processors: Acquire meets nodes that other processors' hazard pointers
// name, exchanges them through the pools, and the queue stays correct and
// within items + queues + 2·procs nodes.

func mustEnqueue(t *testing.T, d *Domain, p int, q *Queue, it *Item) {
	t.Helper()
	if err := d.Enqueue(p, q, it); err != nil {
		t.Fatal(err)
	}
}

func mustDequeue(t *testing.T, f *fixture, p int, q *Queue, want *Item) {
	t.Helper()
	it, err := f.d.Dequeue(p, q)
	if err != nil || it != want {
		t.Fatalf("Dequeue = %p, %v; want %p", it, err, want)
	}
}

func TestAcquireExchange(t *testing.T) {
	f := newFixture(t, 3, 1, 1, 0)
	d, q, a := &f.d, &f.queues[0], &f.items[0].Item
	held := map[*Item]bool{a: true}
	step := func(name string, wantExchanges, wantTaken uint64) {
		t.Helper()
		mustDequeue(t, f, 0, q, a) // the enqueued node holds a, FIFO intact
		st := d.Stats()
		if st.Exchanges != wantExchanges || st.Taken != wantTaken {
			t.Fatalf("%s: %+v; want %d exchanges and %d nodes taken", name, st, wantExchanges, wantTaken)
		}
	}
	mustEnqueue(t, d, 0, q, a)
	mustDequeue(t, f, 0, q, a)
	d0 := a.nodeAddr() // the queue's first dummy, now carried by a

	// 1. Processor 1 names d0 in hp1 (it read it as the tail and stalled).
	// Acquire swaps d0 into proc 1's empty pool1 and gets nothing back:
	// the one case in which Enqueue takes a fresh node.
	d.setHazard(1, 1, d0)
	mustEnqueue(t, d, 0, q, a)
	if a.nodeAddr() == d0 || d.pool(1, 1) != d0 {
		t.Fatalf("hazardous d0 %#x reused: item node %#x, pool1 %#x", d0, a.nodeAddr(), d.pool(1, 1))
	}
	step("empty pool", 1, 3)
	d.setHazard(1, 1, 0)
	f.check(t, held)

	// 2. Proc 1 now names a's node; the pool gives d0 back, safe again.
	n1 := a.nodeAddr()
	d.setHazard(1, 1, n1)
	mustEnqueue(t, d, 0, q, a)
	if a.nodeAddr() != d0 || d.pool(1, 1) != n1 {
		t.Fatalf("exchange: item node %#x (want d0 %#x), pool1 %#x (want %#x)", a.nodeAddr(), d0, d.pool(1, 1), n1)
	}
	step("one exchange", 2, 3)
	d.setHazard(1, 1, 0)
	f.check(t, held)

	// 3. Fill proc 2's pool2 the same way, for the chain below: proc 2's
	// hp2 names a's node, the empty pool2 takes it, a gets a fresh node.
	n2 := a.nodeAddr()
	d.setHazard(2, 2, n2)
	mustEnqueue(t, d, 0, q, a) // n2 → pool(2,2), fresh node
	step("fill pool2", 3, 4)
	d.setHazard(2, 2, 0)
	f.check(t, held)

	// 4. Now a's node x is named by proc 1 (hp1); pool(1,1) holds n1, named
	// by proc 2 (hp2); pool(2,2) holds n2, named by nobody. Two exchanges.
	x := a.nodeAddr()
	d.setHazard(1, 1, x)
	d.setHazard(2, 2, n1)
	mustEnqueue(t, d, 0, q, a)
	if a.nodeAddr() != n2 || d.pool(1, 1) != x || d.pool(2, 2) != n1 {
		t.Fatalf("chain: item node %#x (want %#x), pools %#x %#x (want %#x %#x)",
			a.nodeAddr(), n2, d.pool(1, 1), d.pool(2, 2), x, n1)
	}
	step("two exchanges", 5, 4)
	d.setHazard(1, 1, 0)
	d.setHazard(2, 2, 0)
	f.check(t, held)

	// 5. A rescan: the node out of proc 2's pool is named by proc 0, which
	// the scan has passed already; only a second pass catches it.
	y := a.nodeAddr()
	d.setHazard(2, 2, y)  // a's node: swapped for pool(2,2) = n1
	d.setHazard(0, 2, n1) // n1: named by proc 0, swapped for pool(0,2) = 0
	mustEnqueue(t, d, 1, q, a)
	if a.nodeAddr() == y || a.nodeAddr() == n1 || d.pool(2, 2) != y || d.pool(0, 2) != n1 {
		t.Fatalf("rescan: item node %#x, pools %#x %#x", a.nodeAddr(), d.pool(2, 2), d.pool(0, 2))
	}
	step("rescan", 7, 5)
	d.setHazard(2, 2, 0)
	d.setHazard(0, 2, 0)
	f.check(t, held)

	// The pools hold 3 nodes, within 2·procs; the total is at the bound
	// items + queues + 2·procs minus the pool slots still empty.
	if st := d.Stats(); st.InUse != 5 || st.InUse > uint64(bound(1, 1, 3)) {
		t.Fatalf("nodes in use %d; want 5 (bound %d)", st.InUse, bound(1, 1, 3))
	}
}

// TestHazardTailSwing plays a real interleaving. Proc 0 has linked its node
// after the tail T but not yet swung the tail; meanwhile proc 1 dequeues the
// item (which carries T away) and enqueues it again. T is still named by
// proc 0's hp1, so proc 1 must not reuse it.
func TestHazardTailSwing(t *testing.T) {
	f := newFixture(t, 2, 2, 2, 0)
	d, qa, qb := &f.d, &f.queues[0], &f.queues[1]
	x, y := &f.items[0].Item, &f.items[1].Item
	T := headOf(qa)

	tail, n := d.enqueueLink(0, qa, x) // proc 0 stalls here
	if tail != T || d.hazard(0, 1) != T {
		t.Fatalf("link: tail %#x hp1 %#x, want both %#x", tail, d.hazard(0, 1), T)
	}
	mustDequeue(t, f, 1, qa, x) // x carries T away
	if x.nodeAddr() != T {
		t.Fatalf("x carries %#x, want the old dummy %#x", x.nodeAddr(), T)
	}
	mustEnqueue(t, d, 1, qa, x) // T is hazardous: pooled, fresh node instead
	if x.nodeAddr() == T || d.pool(0, 1) != T {
		t.Fatalf("T reused while proc 0 names it: x node %#x, pool %#x", x.nodeAddr(), d.pool(0, 1))
	}
	mustDequeue(t, f, 1, qa, x) // x carries n away; qa's dummy is x's fresh node
	d.enqueueSwing(0, qa, tail, n)
	if d.hazard(0, 1) != 0 {
		t.Fatal("hp1 still set after the swing")
	}
	mustEnqueue(t, d, 1, qb, x) // n moves to queue b
	mustEnqueue(t, d, 0, qa, y)
	mustDequeue(t, f, 0, qa, y)
	mustDequeue(t, f, 0, qb, x)
	for _, q := range []*Queue{qa, qb} {
		if it, _ := d.Dequeue(1, q); it != nil {
			t.Fatalf("queue not empty: %p", it)
		}
	}
	f.check(t, map[*Item]bool{x: true, y: true})
}

// TestPaperOrderTailSwing shows why Enqueue drops hp1 only after swinging the
// tail. The paper's Fig. 6 clears hp1 (line 18) before the CAS on the tail
// (line 19). Replaying the interleaving above in that order, T is reused,
// becomes the tail again, and the late CAS moves the tail back onto a node
// that has left the queue: the next Enqueue on queue a lands in queue b.
func TestPaperOrderTailSwing(t *testing.T) {
	f := newFixture(t, 2, 2, 2, 0)
	d, qa, qb := &f.d, &f.queues[0], &f.queues[1]
	x, y := &f.items[0].Item, &f.items[1].Item
	T := headOf(qa)

	tail, n := d.enqueueLink(0, qa, x)
	d.setHazard(0, 1, 0) // paper, line 18; proc 0 stalls before line 19
	mustDequeue(t, f, 1, qa, x)
	mustEnqueue(t, d, 1, qa, x) // nothing names T now: x reuses it
	if x.nodeAddr() != T {
		t.Fatalf("x node %#x, want T %#x", x.nodeAddr(), T)
	}
	mustDequeue(t, f, 1, qa, x) // x carries n away; T is qa's dummy and tail
	if !casTail(qa, tail, n) {  // paper, line 19: succeeds, by ABA on T
		t.Fatal("the late tail CAS failed; the ABA did not happen")
	}
	if tailOf(qa) != n || x.nodeAddr() != n {
		t.Fatal("setup: tail should name n, the node x carries")
	}
	mustEnqueue(t, d, 1, qb, x) // n now lives in queue b
	mustEnqueue(t, d, 0, qa, y) // links after qa's tail, n: into queue b
	if it, _ := d.Dequeue(0, qa); it != nil {
		t.Fatalf("queue a yielded %p; the corruption did not happen", it)
	}
	mustDequeue(t, f, 0, qb, x)
	mustDequeue(t, f, 0, qb, y) // y, enqueued on a, came out of b
}

// TestAcquireChain builds, at 2, 3, 4 and 8 processor slots, the longest
// chain of exchanges one acquire can meet with every other processor's pools
// full: proc 0 enqueues an item whose node x is named by proc 1's hp1; what
// comes out of each pool is named by the next processor's hp1, and in the
// second pass by hp2. acquire must walk all 2·(procs-1) exchanges, across
// every slot, and settle on the last pooled node, which nothing names,
// without a fresh node.
func TestAcquireChain(t *testing.T) {
	for _, np := range []int{2, 3, 4, 8} {
		t.Run(fmt.Sprintf("procs=%d", np), func(t *testing.T) {
			f := newFixture(t, np, 1, 1, 0)
			d, q, it := &f.d, &f.queues[0], &f.items[0].Item
			mustEnqueue(t, d, 0, q, it)
			mustDequeue(t, f, 0, q, it)
			x := it.nodeAddr()
			a := make([]uintptr, np) // a[i], b[i]: proc i's pooled nodes
			b := make([]uintptr, np)
			for i := 1; i < np; i++ {
				a[i], b[i] = d.takeNode(), d.takeNode()
				if a[i] == 0 || b[i] == 0 {
					t.Fatal("arena exhausted filling the pools")
				}
				d.setPool(i, 1, a[i])
				d.setPool(i, 2, b[i])
			}
			named1 := func(i int) uintptr { // what proc i's hp1 names
				if i == 1 {
					return x
				}
				return a[i-1]
			}
			named2 := func(i int) uintptr { // and its hp2
				if i == 1 {
					return a[np-1]
				}
				return b[i-1]
			}
			for i := 1; i < np; i++ {
				d.setHazard(i, 1, named1(i))
				d.setHazard(i, 2, named2(i))
			}
			before := d.Stats()
			mustEnqueue(t, d, 0, q, it)
			st := d.Stats()
			if got, want := it.nodeAddr(), b[np-1]; got != want {
				t.Fatalf("item node %#x, want the last pooled node %#x", got, want)
			}
			if n := st.Exchanges - before.Exchanges; n != uint64(2*(np-1)) {
				t.Fatalf("%d exchanges, want %d", n, 2*(np-1))
			}
			if st.Taken != before.Taken {
				t.Fatalf("took %d nodes from the arena, want 0", st.Taken-before.Taken)
			}
			for i := 1; i < np; i++ {
				if d.pool(i, 1) != named1(i) || d.pool(i, 2) != named2(i) {
					t.Fatalf("proc %d pools %#x %#x, want %#x %#x", i, d.pool(i, 1), d.pool(i, 2), named1(i), named2(i))
				}
				d.setHazard(i, 1, 0)
				d.setHazard(i, 2, 0)
			}
			mustDequeue(t, f, 0, q, it)
			f.check(t, map[*Item]bool{it: true})
			if st := d.Stats(); st.InUse != uint64(bound(1, 1, np)-2) {
				t.Fatalf("%d nodes in use, want %d (bound %d less proc 0's empty pools)", st.InUse, bound(1, 1, np)-2, bound(1, 1, np))
			}
		})
	}
}

// TestAcquireRandomHazards: at 2, 4 and 8 processor slots, one goroutine
// plays them all through seeded random steps. Before each step the other
// processors' hazard pointers name random nodes in use (or none); the step
// enqueues a held item, dequeues, or releases a held item on a random
// processor. After an Enqueue the item's node must be named by no hazard
// pointer; if its old node was named by none it must be reused as it is; a
// node is taken from the arena only when an exchange met an empty pool slot.
// Then the hazards are cleared and the whole Domain is checked.
func TestAcquireRandomHazards(t *testing.T) {
	for _, np := range procCounts {
		t.Run(fmt.Sprintf("procs=%d", np), func(t *testing.T) {
			const nitems, nqueues = 6, 2
			steps := scale(3000, 500)
			f := newFixture(t, np, nqueues, nitems, 0)
			d := &f.d
			rng := seeded(1, np)
			held := map[*Item]bool{}
			var hand []*Item // held items, in a fixed order
			for i := range f.items {
				held[&f.items[i].Item] = true
				hand = append(hand, &f.items[i].Item)
			}
			emptyPools := func() int {
				n := 0
				for p := 0; p < np; p++ {
					for k := 1; k <= 2; k++ {
						if d.pool(p, k) == 0 {
							n++
						}
					}
				}
				return n
			}
			var exchanges, fresh int
			for s := 0; s < steps; s++ {
				// Nodes a hazard pointer could name: queue nodes, held
				// items' nodes, pooled nodes.
				var cand []uintptr
				for qi := range f.queues {
					nodes, _ := walk(&f.queues[qi], len(f.arena))
					cand = append(cand, nodes...)
				}
				for _, it := range hand {
					if it.nodeAddr() != 0 {
						cand = append(cand, it.nodeAddr())
					}
				}
				for p := 0; p < np; p++ {
					for k := 1; k <= 2; k++ {
						if n := d.pool(p, k); n != 0 {
							cand = append(cand, n)
						}
					}
				}
				p := rng.IntN(np)
				named := map[uintptr]bool{}
				for o := 0; o < np; o++ {
					for k := 1; k <= 2; k++ {
						var h uintptr
						if o != p && rng.IntN(3) != 0 {
							h = cand[rng.IntN(len(cand))]
							named[h] = true
						}
						d.setHazard(o, k, h)
					}
				}
				q := &f.queues[rng.IntN(nqueues)]
				switch op := rng.IntN(8); {
				case op < 4 && len(hand) > 0:
					i := rng.IntN(len(hand))
					it := hand[i]
					old, before, empty := it.nodeAddr(), d.Stats(), emptyPools()
					mustEnqueue(t, d, p, q, it)
					hand = append(hand[:i], hand[i+1:]...)
					delete(held, it)
					st := d.Stats()
					if named[it.nodeAddr()] {
						t.Fatalf("step %d: item enqueued on node %#x, which a hazard pointer names", s, it.nodeAddr())
					}
					if old != 0 && !named[old] && (it.nodeAddr() != old || st.Exchanges != before.Exchanges) {
						t.Fatalf("step %d: unnamed node %#x not reused (got %#x, %d exchanges)", s, old, it.nodeAddr(), st.Exchanges-before.Exchanges)
					}
					took := int(st.Taken - before.Taken)
					switch {
					case old == 0 && (took != 1 || st.Exchanges != before.Exchanges):
						t.Fatalf("step %d: a released item took %d nodes with %d exchanges; want 1 and none", s, took, st.Exchanges-before.Exchanges)
					case old != 0 && took != empty-emptyPools():
						t.Fatalf("step %d: took %d nodes from the arena; %d empty pool slots were filled", s, took, empty-emptyPools())
					case old != 0:
						fresh += took
					}
					exchanges += int(st.Exchanges - before.Exchanges)
				case op < 7:
					it, err := d.Dequeue(p, q)
					if err != nil {
						t.Fatal(err)
					}
					if it != nil {
						held[it] = true
						hand = append(hand, it)
					}
				case len(hand) > 0:
					d.Release(hand[rng.IntN(len(hand))])
				}
				for o := 0; o < np; o++ {
					d.setHazard(o, 1, 0)
					d.setHazard(o, 2, 0)
				}
				f.check(t, held)
			}
			if exchanges == 0 {
				t.Fatal("no exchange happened; the hazard path went unexercised")
			}
			t.Logf("%d steps, %d exchanges, %d nodes taken after an exchange met an empty pool, stats %+v", steps, exchanges, fresh, d.Stats())
		})
	}
}
