package queue

import "testing"

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
