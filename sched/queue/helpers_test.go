package queue

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"yolk/internal/testwait"
)

// titem is a test task: the queue's Item first, so *Item converts back.
type titem struct {
	Item
	id    int
	from  int    // who enqueued it last
	stamp uint64 // that enqueuer's sequence number for that queue
}

// fixture owns all the memory a Domain uses. It is returned by pointer, so it
// lives on the heap, never on a goroutine stack that could move.
type fixture struct {
	d      Domain
	nprocs int
	arena  []Node
	queues []Queue
	items  []titem
}

// bound is the most nodes the queues may ever hold out of the arena.
func bound(items, queues, nprocs int) int { return items + queues + 2*nprocs }

// newFixture builds a Domain whose arena holds exactly bound() nodes plus
// extra, so taking more nodes than the bound fails with ErrExhausted.
func newFixture(t testing.TB, nprocs, nqueues, nitems, extra int) *fixture {
	t.Helper()
	f := &fixture{
		nprocs: nprocs,
		arena:  make([]Node, bound(nitems, nqueues, nprocs)+extra),
		queues: make([]Queue, nqueues),
		items:  make([]titem, nitems),
	}
	if err := f.d.Init(nprocs, f.arena); err != nil {
		t.Fatal(err)
	}
	for i := range f.queues {
		if err := f.d.InitQueue(&f.queues[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range f.items {
		f.items[i].id = i
	}
	return f
}

func (f *fixture) item(it *Item) *titem {
	ti := (*titem)(unsafe.Pointer(it))
	if ti.id < 0 || ti.id >= len(f.items) || &f.items[ti.id] != ti {
		panic(fmt.Sprintf("dequeued %p, not one of the fixture's items", it))
	}
	return ti
}

// check verifies, with no operation running, that the queues and items are
// consistent and that every node out of the arena is accounted for exactly
// once: each queue is a chain from its dummy to its tail; every item is in
// exactly one queue or in held; a queued item's node is the node holding it;
// pooled nodes, item nodes, queue nodes and free-list nodes are all distinct
// arena nodes; their number equals the Domain's counters and stays within
// the bound. It returns the items of each queue in order.
func (f *fixture) check(t testing.TB, held map[*Item]bool) [][]*titem {
	t.Helper()
	d := &f.d
	st := d.Stats()
	owner := map[uintptr]string{}
	mark := func(n uintptr, who string) {
		t.Helper()
		if !d.inArena(n) {
			t.Fatalf("%s: node %#x is not an arena node", who, n)
		}
		if prev, dup := owner[n]; dup {
			t.Fatalf("node %#x held twice: by %s and by %s", n, prev, who)
		}
		owner[n] = who
	}
	queued := map[*Item]int{}
	out := make([][]*titem, len(f.queues))
	for qi := range f.queues {
		q := &f.queues[qi]
		nodes, items := walk(q, len(f.arena))
		if len(nodes) == 0 || len(nodes) > len(f.arena) {
			t.Fatalf("queue %d: broken chain of %d nodes", qi, len(nodes))
		}
		if last := nodes[len(nodes)-1]; tailOf(q) != last {
			t.Fatalf("queue %d: tail %#x is not the last node %#x", qi, tailOf(q), last)
		}
		mark(nodes[0], fmt.Sprintf("queue %d dummy", qi))
		for i := 1; i < len(nodes); i++ {
			it := items[i]
			ti := f.item(it)
			if q0, dup := queued[it]; dup {
				t.Fatalf("item %d queued twice: in queue %d and queue %d", ti.id, q0, qi)
			}
			if held[it] {
				t.Fatalf("item %d is both held and in queue %d", ti.id, qi)
			}
			queued[it] = qi
			if it.nodeAddr() != nodes[i] {
				t.Fatalf("item %d in queue %d: node %#x, held by %#x", ti.id, qi, it.nodeAddr(), nodes[i])
			}
			mark(nodes[i], fmt.Sprintf("queue %d item %d", qi, ti.id))
			out[qi] = append(out[qi], ti)
		}
	}
	for i := range f.items {
		it := &f.items[i].Item
		_, inq := queued[it]
		if !inq && !held[it] {
			t.Fatalf("item %d lost: in no queue and not held", i)
		}
		if !inq && it.nodeAddr() != 0 {
			mark(it.nodeAddr(), fmt.Sprintf("held item %d", i))
		}
	}
	for p := 0; p < f.nprocs; p++ {
		for k := 1; k <= 2; k++ {
			if h := d.hazard(p, k); h != 0 {
				t.Fatalf("proc %d hp%d = %#x while quiescent", p, k, h)
			}
			if n := d.pool(p, k); n != 0 {
				mark(n, fmt.Sprintf("proc %d pool%d", p, k))
			}
		}
	}
	inUse := len(owner)
	free := d.freeList(len(f.arena))
	for _, n := range free {
		mark(n, "free list")
	}
	if uint64(inUse) != st.InUse {
		t.Fatalf("%d nodes accounted for, counters say %d in use (%+v)", inUse, st.InUse, st)
	}
	if uint64(len(free)) != st.Returned+st.Fresh-st.Taken {
		t.Fatalf("free list has %d nodes, counters say %d (%+v)", len(free), st.Returned+st.Fresh-st.Taken, st)
	}
	if b := bound(len(f.items), len(f.queues), f.nprocs); inUse > b {
		t.Fatalf("%d nodes in use, bound items+queues+2·procs = %d", inUse, b)
	}
	return out
}

// watchdog bounds a stress round: a corrupted queue can make an operation
// spin forever (a cycle in the list), which must fail the test, not hang it.
const watchdog = 30 * time.Second

// wait waits for wg or fails the test after the watchdog period.
func wait(t testing.TB, wg *sync.WaitGroup, what string) {
	t.Helper()
	if !testwait.Wait(wg, watchdog) {
		t.Fatalf("%s: goroutines still running after %v; an operation is stuck", what, watchdog)
	}
}

// procCounts are the processor slot counts the concurrent tests run at, each
// slot driven by its own goroutine: the kernel is SMP (up to MaxProcs CPUs),
// and 8 goroutines on CI's 2 cores is the most that keeps the suite short.
var procCounts = []int{2, 4, 8}

// atProcs runs f as subtest name with GOMAXPROCS raised to nprocs if it is
// lower, so that each goroutine playing a processor has a thread of its own
// that the host can preempt at any instruction, inside queue operations too:
// the hosted analogue of more vCPUs than physical CPUs. With fewer Ps than
// goroutines, Go switches goroutines only where they yield or block, or on a
// preemption request every 10 ms that Enqueue (go:nosplit) never honours, so
// operations mostly run whole. (Measured with mutations, docs/sched-queue.md:
// raised, TestSteadyStateReuse/procs=8 caught a Dequeue that does not publish
// its hazard pointer in 10 of 11 runs, against 6 of 11 at GOMAXPROCS 2.) It
// raises GOMAXPROCS over a -cpu setting, never lowers it.
func atProcs(t *testing.T, name string, nprocs int, f func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		if n := runtime.GOMAXPROCS(0); n < nprocs {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(nprocs))
		}
		f(t)
	})
}

// racer injects seeded yields so that goroutines playing processors really
// interleave on a machine with fewer CPUs: between operations, and inside
// Enqueue at its race point (enqueuePause: linked, tail not yet swung, hp1
// naming the old tail). Dequeue has no such point to stop at: the package
// is kernel-context code and calls out to nothing; there only the host's
// preemption of the threads (see atProcs) interleaves. A racer belongs to
// one goroutine.
type racer struct{ rng *rand.Rand }

func newRacer(rng *rand.Rand) racer { return racer{rng} }

// seeded returns the fixed-seed generator for goroutine g of a round.
func seeded(round, g int) *rand.Rand { return rand.New(rand.NewPCG(uint64(round), uint64(g))) }

// pause yields one time in eight, between operations.
func (r racer) pause() {
	if r.rng.IntN(8) == 0 {
		runtime.Gosched()
	}
}

// enqueue is Enqueue on processor p, yielding at its race point one time in
// four.
func (r racer) enqueue(d *Domain, p int, q *Queue, it *Item) error {
	if r.rng.IntN(4) == 0 {
		return d.enqueuePause(p, q, it, runtime.Gosched)
	}
	return d.Enqueue(p, q, it)
}
