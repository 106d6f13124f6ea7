package queue

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Stress tests: many goroutines playing processors, with fixed seeds and
// bounded sizes. Each checks at every quiescent point that no item is lost
// or duplicated, every node is accounted for and the node bound holds (the
// arenas are sized exactly at the bound, so exceeding it also fails with
// ErrExhausted), and that every consumer sees each producer's items of each
// queue in the order that producer enqueued them (FIFO per producer).

// procs hands out processor indices to goroutines.
type procs interface {
	with(g int, f func(p int))
}

// ownProcs gives goroutine g its own processor, index g.
type ownProcs struct{}

func (ownProcs) with(g int, f func(p int)) { f(g) }

// hopProcs lets goroutines hop between a few processor indices, one
// operation at a time, never two goroutines on one index at once: tasks
// migrating between CPUs.
type hopProcs chan int

func newHopProcs(n int) hopProcs {
	h := make(hopProcs, n)
	for p := 0; p < n; p++ {
		h <- p
	}
	return h
}

func (h hopProcs) with(_ int, f func(p int)) {
	p := <-h
	f(p)
	h <- p
}

// fifoChecker records what one consumer dequeues from each queue and checks
// that each producer's stamps arrive in increasing order.
type fifoChecker struct {
	last map[[2]int]uint64 // (queue, producer) → last stamp seen
	err  error
}

func (c *fifoChecker) see(q int, ti *titem) {
	k := [2]int{q, ti.from}
	if last, ok := c.last[k]; ok && ti.stamp <= last && c.err == nil {
		c.err = fmt.Errorf("queue %d: item %d stamped %d by producer %d came after stamp %d", q, ti.id, ti.stamp, ti.from, last)
	}
	c.last[k] = ti.stamp
}

func scale(n, short int) int {
	if testing.Short() {
		return short
	}
	return n
}

// TestProducersConsumers: producers and consumers on one queue, each on its
// own processor slot, at 2, 4 and 8 slots (half and half, all producers but
// one, all consumers but one), or 8 goroutines hopping over 3 slots. Every
// goroutine yields at seeded points (racer), producers also inside Enqueue.
func TestProducersConsumers(t *testing.T) {
	type tcase struct {
		nprocs, prod, cons int
		hop                bool
	}
	var cases []tcase
	for _, np := range procCounts {
		cases = append(cases, tcase{np, np / 2, np - np/2, false})
		if np > 2 {
			cases = append(cases, tcase{np, np - 1, 1, false}, tcase{np, 1, np - 1, false})
		}
	}
	cases = append(cases, tcase{3, 4, 4, true})
	for _, c := range cases {
		mode := "own"
		if c.hop {
			mode = "hop"
		}
		atProcs(t, fmt.Sprintf("procs=%d/%s/%dx%d", c.nprocs, mode, c.prod, c.cons), c.nprocs, func(t *testing.T) {
			perProd := scale(3000, 500)
			f := newFixture(t, c.nprocs, 1, c.prod*perProd, 0)
			q := &f.queues[0]
			var ps procs = ownProcs{}
			if c.hop {
				ps = newHopProcs(c.nprocs)
			}
			for round := 0; round < 3; round++ {
				var wg sync.WaitGroup
				var consumed atomic.Int64
				total := int64(c.prod * perProd)
				errs := make([]error, c.prod+c.cons)
				got := make([][]*titem, c.cons)
				for g := 0; g < c.prod; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := newRacer(seeded(round, g))
						mine := f.items[g*perProd : (g+1)*perProd]
						for i := range mine {
							mine[i].from, mine[i].stamp = g, uint64(round*perProd+i)
							r.pause()
							ps.with(g, func(p int) {
								if err := r.enqueue(&f.d, p, q, &mine[i].Item); err != nil && errs[g] == nil {
									errs[g] = err
								}
							})
						}
					}()
				}
				for k := 0; k < c.cons; k++ {
					g := c.prod + k
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := newRacer(seeded(round, g))
						fc := &fifoChecker{last: map[[2]int]uint64{}}
						for consumed.Load() < total && errs[g] == nil {
							var it *Item
							var err error
							r.pause()
							ps.with(g, func(p int) { it, err = f.d.Dequeue(p, q) })
							if err != nil {
								errs[g] = err
							} else if it == nil {
								runtime.Gosched()
							} else {
								consumed.Add(1)
								ti := f.item(it)
								fc.see(0, ti)
								got[k] = append(got[k], ti)
							}
						}
						if errs[g] == nil {
							errs[g] = fc.err
						}
					}()
				}
				wait(t, &wg, fmt.Sprintf("round %d", round))
				for g, err := range errs {
					if err != nil {
						t.Fatalf("round %d goroutine %d: %v", round, g, err)
					}
				}
				held := map[*Item]bool{}
				for _, list := range got {
					for _, ti := range list {
						if held[&ti.Item] {
							t.Fatalf("round %d: item %d dequeued twice", round, ti.id)
						}
						held[&ti.Item] = true
					}
				}
				if len(held) != len(f.items) {
					t.Fatalf("round %d: %d distinct items dequeued, want %d", round, len(held), len(f.items))
				}
				f.check(t, held)
			}
		})
	}
}

// TestMigration moves items at random between several queues, as tasks move
// between ready queues and wait queues, and now and then releases an item's
// node (a task exiting) so that its next Enqueue takes one from the arena.
// Workers keep up to a few items out of the queues (running tasks). Each
// worker has its own processor slot (2, 4 and 8 slots) or they hop over
// fewer slots than workers; all yield at seeded points (racer).
func TestMigration(t *testing.T) {
	for _, c := range []struct {
		nprocs, workers, queues, nitems int
		hop                             bool
	}{
		{2, 2, 2, 24, false},
		{4, 4, 3, 48, false},
		{8, 8, 4, 64, false},
		{3, 6, 4, 48, true},
	} {
		mode := "own"
		if c.hop {
			mode = "hop"
		}
		atProcs(t, fmt.Sprintf("procs=%d/%s/%dw%dq", c.nprocs, mode, c.workers, c.queues), c.nprocs, func(t *testing.T) {
			nitems := c.nitems
			ops := scale(20000, 3000)
			f := newFixture(t, c.nprocs, c.queues, nitems, 0)
			var ps procs = ownProcs{}
			if c.hop {
				ps = newHopProcs(c.nprocs)
			}
			// Deal the items out to the queues; from = -1 marks the setup.
			for i := range f.items {
				f.items[i].from, f.items[i].stamp = -1, uint64(i)
				mustEnqueue(t, &f.d, 0, &f.queues[i%c.queues], &f.items[i].Item)
			}
			held := make([][]*titem, c.workers)
			stamps := make([][]uint64, c.workers)
			checkers := make([]*fifoChecker, c.workers)
			for w := range stamps {
				stamps[w] = make([]uint64, c.queues)
				checkers[w] = &fifoChecker{last: map[[2]int]uint64{}}
			}
			var releases atomic.Int64
			for round := 0; round < 4; round++ {
				var wg sync.WaitGroup
				errs := make([]error, c.workers)
				for w := 0; w < c.workers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := seeded(round, w)
						r := newRacer(rng)
						fc := checkers[w]
						for i := 0; i < ops && errs[w] == nil; i++ {
							qi := rng.IntN(c.queues)
							q := &f.queues[qi]
							if n := len(held[w]); n > 0 && (n >= 4 || rng.IntN(2) == 0) {
								ti := held[w][n-1]
								held[w] = held[w][:n-1]
								if rng.IntN(64) == 0 {
									f.d.Release(&ti.Item)
									releases.Add(1)
								}
								ti.from, ti.stamp = w, stamps[w][qi]
								stamps[w][qi]++
								r.pause()
								ps.with(w, func(p int) { errs[w] = r.enqueue(&f.d, p, q, &ti.Item) })
								continue
							}
							var it *Item
							r.pause()
							ps.with(w, func(p int) { it, errs[w] = f.d.Dequeue(p, q) })
							if it != nil {
								ti := f.item(it)
								if ti.from >= 0 {
									fc.see(qi, ti)
								}
								held[w] = append(held[w], ti)
							}
						}
						if errs[w] == nil {
							errs[w] = fc.err
						}
					}()
				}
				wait(t, &wg, fmt.Sprintf("round %d", round))
				for w, err := range errs {
					if err != nil {
						t.Fatalf("round %d worker %d: %v", round, w, err)
					}
				}
				hm := map[*Item]bool{}
				for _, list := range held {
					for _, ti := range list {
						if hm[&ti.Item] {
							t.Fatalf("round %d: item %d held twice", round, ti.id)
						}
						hm[&ti.Item] = true
					}
				}
				f.check(t, hm)
			}
			if releases.Load() == 0 {
				t.Fatal("no item was released; the free-list path went unexercised")
			}
			t.Logf("stats %+v, %d releases", f.d.Stats(), releases.Load())
		})
	}
}

// TestSteadyStateReuse: at 2, 4 and 8 processor slots, one goroutine each,
// items circulate between two queues by Dequeue/Enqueue pairs (the queue
// work of a task switch), with seeded yields inside Enqueue so that hazard
// pointers name nodes that others are about to reuse. No item is released,
// so once every item has a node, the only way to take one from the arena is
// an exchange that meets an empty pool slot, which then stays full: after
// any number of pairs, Taken = queues + items + non-empty pool slots exactly,
// at most 2·procs more than after the first Enqueue of each item. That is
// zero nodes per pair in steady state.
func TestSteadyStateReuse(t *testing.T) {
	for _, np := range procCounts {
		atProcs(t, fmt.Sprintf("procs=%d", np), np, func(t *testing.T) {
			const nqueues = 2
			nitems := 2 * np
			pairs := scale(4000, 800)
			f := newFixture(t, np, nqueues, nitems, 0)
			for i := range f.items {
				mustEnqueue(t, &f.d, 0, &f.queues[i%nqueues], &f.items[i].Item)
			}
			setup := f.d.Stats()
			if want := uint64(nqueues + nitems); setup.Taken != want {
				t.Fatalf("after setup %d nodes taken, want %d", setup.Taken, want)
			}
			var done atomic.Int64
			for round := 0; round < 3; round++ {
				var wg sync.WaitGroup
				errs := make([]error, np)
				for p := 0; p < np; p++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := seeded(round, p)
						r := newRacer(rng)
						for n := 0; n < pairs && errs[p] == nil; {
							r.pause()
							it, err := f.d.Dequeue(p, &f.queues[rng.IntN(nqueues)])
							if err != nil {
								errs[p] = err
								break
							}
							if it == nil {
								runtime.Gosched()
								continue
							}
							f.item(it)
							errs[p] = r.enqueue(&f.d, p, &f.queues[rng.IntN(nqueues)], it)
							n++
							done.Add(1)
						}
					}()
				}
				wait(t, &wg, fmt.Sprintf("round %d", round))
				for p, err := range errs {
					if err != nil {
						t.Fatalf("round %d proc %d: %v", round, p, err)
					}
				}
				f.check(t, nil)
				pooled := 0
				for p := 0; p < np; p++ {
					for k := 1; k <= 2; k++ {
						if f.d.pool(p, k) != 0 {
							pooled++
						}
					}
				}
				st := f.d.Stats()
				if want := uint64(nqueues + nitems + pooled); st.Taken != want || st.Returned != 0 {
					t.Fatalf("round %d: %d nodes taken, %d returned; want %d taken (queues %d + items %d + pooled %d), none returned",
						round, st.Taken, st.Returned, want, nqueues, nitems, pooled)
				}
			}
			st := f.d.Stats()
			t.Logf("GOMAXPROCS %d: %d pairs took %d nodes (%.5f a pair), %d exchanges", runtime.GOMAXPROCS(0),
				done.Load(), st.Taken-setup.Taken, float64(st.Taken-setup.Taken)/float64(done.Load()), st.Exchanges)
		})
	}
}
