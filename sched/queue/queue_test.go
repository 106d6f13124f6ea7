package queue

import (
	"errors"
	"testing"
)

func TestSequentialFIFO(t *testing.T) {
	const n = 10
	f := newFixture(t, 1, 1, n, 0)
	q := &f.queues[0]
	if it, err := f.d.Dequeue(0, q); it != nil || err != nil {
		t.Fatalf("Dequeue on an empty queue = %v, %v; want nil, nil", it, err)
	}
	for round := 0; round < 3; round++ {
		for i := range f.items {
			if err := f.d.Enqueue(0, q, &f.items[i].Item); err != nil {
				t.Fatal(err)
			}
		}
		got := f.check(t, nil)[0]
		if len(got) != n {
			t.Fatalf("round %d: queue holds %d items, want %d", round, len(got), n)
		}
		held := map[*Item]bool{}
		for i := 0; i < n; i++ {
			it, err := f.d.Dequeue(0, q)
			if err != nil || it == nil {
				t.Fatalf("round %d: Dequeue %d = %v, %v", round, i, it, err)
			}
			if id := f.item(it).id; id != i {
				t.Fatalf("round %d: dequeued item %d, want %d", round, id, i)
			}
			held[it] = true
		}
		if it, _ := f.d.Dequeue(0, q); it != nil {
			t.Fatalf("round %d: queue not empty after %d dequeues", round, n)
		}
		f.check(t, held)
	}
	// n items, one queue, no hazards: n+1 nodes, the first round's.
	if st := f.d.Stats(); st.Taken != n+1 || st.Exchanges != 0 {
		t.Fatalf("stats %+v; want Taken %d and no exchanges", st, n+1)
	}
}

func TestErrors(t *testing.T) {
	var d Domain
	var q Queue
	var it Item
	if err := d.Enqueue(0, &q, &it); !errors.Is(err, ErrProc) {
		t.Errorf("Enqueue on an uninitialised Domain: %v, want ErrProc", err)
	}
	if _, err := d.Dequeue(0, &q); !errors.Is(err, ErrProc) {
		t.Errorf("Dequeue on an uninitialised Domain: %v, want ErrProc", err)
	}
	if err := d.InitQueue(&q); !errors.Is(err, ErrExhausted) {
		t.Errorf("InitQueue on an uninitialised Domain: %v, want ErrExhausted", err)
	}
	for _, c := range []struct{ procs, nodes int }{{0, 4}, {MaxProcs + 1, 4}, {1, 0}} {
		if err := d.Init(c.procs, make([]Node, c.nodes)); !errors.Is(err, ErrInit) {
			t.Errorf("Init(%d, %d nodes) = %v, want ErrInit", c.procs, c.nodes, err)
		}
	}

	f := newFixture(t, 2, 1, 3, 0)
	q0 := &f.queues[0]
	for _, p := range []int{-1, 2, MaxProcs, 1 << 40} {
		if err := f.d.Enqueue(p, q0, &f.items[0].Item); !errors.Is(err, ErrProc) {
			t.Errorf("Enqueue on proc %d: %v, want ErrProc", p, err)
		}
		if it, err := f.d.Dequeue(p, q0); it != nil || !errors.Is(err, ErrProc) {
			t.Errorf("Dequeue on proc %d: %v, %v, want nil, ErrProc", p, it, err)
		}
	}
	f.check(t, map[*Item]bool{&f.items[0].Item: true, &f.items[1].Item: true, &f.items[2].Item: true})

	// An arena of exactly one node: the queue's dummy. The item gets none.
	g := &fixture{nprocs: 1, arena: make([]Node, 1), queues: make([]Queue, 1), items: make([]titem, 1)}
	if err := g.d.Init(1, g.arena); err != nil {
		t.Fatal(err)
	}
	if err := g.d.InitQueue(&g.queues[0]); err != nil {
		t.Fatal(err)
	}
	if err := g.d.Enqueue(0, &g.queues[0], &g.items[0].Item); !errors.Is(err, ErrExhausted) {
		t.Errorf("Enqueue with an exhausted arena: %v, want ErrExhausted", err)
	}
	if it, err := g.d.Dequeue(0, &g.queues[0]); it != nil || err != nil {
		t.Errorf("queue not empty after a failed Enqueue: %v, %v", it, err)
	}
	if err := g.d.InitQueue(new(Queue)); !errors.Is(err, ErrExhausted) {
		t.Errorf("InitQueue with an exhausted arena: %v, want ErrExhausted", err)
	}
	g.check(t, map[*Item]bool{&g.items[0].Item: true})
}

// TestRelease: released nodes go back to the arena and are taken again before
// fresh ones; a hazardous node is exchanged, not freed.
func TestRelease(t *testing.T) {
	f := newFixture(t, 2, 1, 4, 0)
	q := &f.queues[0]
	held := map[*Item]bool{}
	for i := range f.items {
		held[&f.items[i].Item] = true
		if err := f.d.Enqueue(0, q, &f.items[i].Item); err != nil {
			t.Fatal(err)
		}
		if _, err := f.d.Dequeue(0, q); err != nil {
			t.Fatal(err)
		}
	}
	f.check(t, held)
	before := f.d.Stats()
	for i := range f.items {
		f.d.Release(&f.items[i].Item)
		if f.items[i].nodeAddr() != 0 {
			t.Fatalf("item %d keeps node %#x after Release", i, f.items[i].nodeAddr())
		}
	}
	f.check(t, held)
	if st := f.d.Stats(); st.Returned != 4 || st.InUse != before.InUse-4 {
		t.Fatalf("after releasing 4 items: %+v (before %+v)", st, before)
	}
	// Re-enqueueing the items takes the released nodes, no fresh ones.
	for i := range f.items {
		if err := f.d.Enqueue(0, q, &f.items[i].Item); err != nil {
			t.Fatal(err)
		}
		delete(held, &f.items[i].Item)
	}
	f.check(t, held)
	if st := f.d.Stats(); st.Fresh != before.Fresh || st.InUse != before.InUse {
		t.Fatalf("re-enqueue after Release: %+v, want Fresh %d and InUse %d", st, before.Fresh, before.InUse)
	}

	// Release of an item whose node processor 1 still names: the node is
	// parked in processor 1's pool and nothing goes back to the arena.
	it, _ := f.d.Dequeue(0, q)
	held[it] = true
	hot := it.nodeAddr()
	f.d.setHazard(1, 2, hot)
	ret := f.d.Stats().Returned
	f.d.Release(it)
	if f.d.pool(1, 2) != hot || f.d.Stats().Returned != ret {
		t.Fatalf("hazardous node %#x: pool %#x, returned %d→%d", hot, f.d.pool(1, 2), ret, f.d.Stats().Returned)
	}
	f.d.setHazard(1, 2, 0)
	f.check(t, held)
}

// TestZeroAllocs: an Enqueue/Dequeue pair allocates nothing on the Go heap
// and, in steady state, takes no node from the arena.
func TestZeroAllocs(t *testing.T) {
	f := newFixture(t, 2, 2, 2, 0)
	a, b := &f.queues[0], &f.queues[1]
	if err := f.d.Enqueue(0, a, &f.items[0].Item); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Enqueue(1, b, &f.items[1].Item); err != nil {
		t.Fatal(err)
	}
	warm := f.d.Stats()
	var failed error
	pair := func(p int, from, to *Queue) {
		it, err := f.d.Dequeue(p, from)
		if err == nil && it == nil {
			err = errors.New("queue empty")
		}
		if err == nil {
			err = f.d.Enqueue(p, to, it)
		}
		if err != nil && failed == nil {
			failed = err
		}
	}
	allocs := testing.AllocsPerRun(1000, func() {
		pair(0, a, a) // the same queue: the item reuses the dummy it carries
		pair(1, b, a) // between queues, as tasks move to and from wait queues
		pair(0, a, b)
	})
	if failed != nil {
		t.Fatal(failed)
	}
	if allocs != 0 {
		t.Fatalf("%v heap allocations per round of pairs, want 0", allocs)
	}
	if st := f.d.Stats(); st.Taken != warm.Taken {
		t.Fatalf("steady state took %d nodes from the arena", st.Taken-warm.Taken)
	}
	f.check(t, nil)
}

// TestEmpty: the hint agrees with the queue when nothing runs concurrently
// (under concurrent dequeues it may be wrong for an instant: see Empty).
func TestEmpty(t *testing.T) {
	f := newFixture(t, 1, 1, 3, 0)
	q := &f.queues[0]
	if !f.d.Empty(q) {
		t.Fatalf("a new queue is not empty")
	}
	for i := range f.items {
		f.d.Enqueue(0, q, &f.items[i].Item)
		if f.d.Empty(q) {
			t.Fatalf("empty with %d items", i+1)
		}
	}
	for i := range f.items {
		if f.d.Empty(q) {
			t.Fatalf("empty with %d items left", len(f.items)-i)
		}
		f.d.Dequeue(0, q)
	}
	if !f.d.Empty(q) {
		t.Fatalf("not empty after every item left")
	}
}

// TestFront: Front names the item Dequeue would return, nil on an empty
// queue, and does not remove it.
func TestFront(t *testing.T) {
	f := newFixture(t, 1, 1, 3, 0)
	q := &f.queues[0]
	if it := f.d.Front(q); it != nil {
		t.Fatalf("Front of an empty queue: %v, want nil", it)
	}
	for i := range f.items {
		mustEnqueue(t, &f.d, 0, q, &f.items[i].Item)
	}
	for i := range f.items {
		if it := f.d.Front(q); it != &f.items[i].Item {
			t.Fatalf("Front: item %v, want item %d", it, i)
		}
		it, err := f.d.Dequeue(0, q)
		if err != nil || it != &f.items[i].Item {
			t.Fatalf("Dequeue after Front: %v, %v; want item %d", it, err, i)
		}
	}
	if it := f.d.Front(q); it != nil {
		t.Fatalf("Front of the emptied queue: %v, want nil", it)
	}
}
