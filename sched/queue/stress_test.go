package queue

import (
	"fmt"
	"math/rand/v2"
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
// own processor or hopping between fewer processors than goroutines.
func TestProducersConsumers(t *testing.T) {
	for _, c := range []struct {
		name               string
		nprocs, prod, cons int
		hop                bool
	}{
		{"own/2x2", 4, 2, 2, false},
		{"own/3x1", 4, 3, 1, false},
		{"hop/4x4on3", 3, 4, 4, true},
	} {
		t.Run(c.name, func(t *testing.T) {
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
						mine := f.items[g*perProd : (g+1)*perProd]
						for i := range mine {
							mine[i].from, mine[i].stamp = g, uint64(round*perProd+i)
							ps.with(g, func(p int) {
								if err := f.d.Enqueue(p, q, &mine[i].Item); err != nil && errs[g] == nil {
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
						fc := &fifoChecker{last: map[[2]int]uint64{}}
						for consumed.Load() < total && errs[g] == nil {
							var it *Item
							var err error
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
// Workers keep up to a few items out of the queues (running tasks).
func TestMigration(t *testing.T) {
	for _, c := range []struct {
		name                    string
		nprocs, workers, queues int
		hop                     bool
	}{
		{"own/4w3q", 4, 4, 3, false},
		{"hop/6w4q", 3, 6, 4, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			const nitems = 48
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
						rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
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
								ps.with(w, func(p int) { errs[w] = f.d.Enqueue(p, q, &ti.Item) })
								continue
							}
							var it *Item
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
