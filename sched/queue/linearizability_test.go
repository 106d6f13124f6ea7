package queue

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Linearizability: concurrent histories of Enqueue and Dequeue, recorded with
// call and return times from one atomic clock, are checked by porcupine
// against a sequential FIFO queue.

type qInput struct {
	enq   bool
	value int // the enqueued value; unused for Dequeue
}

const emptyOut = -1 // a Dequeue that found the queue empty

// fifoModel is a sequential FIFO queue of ints. States are immutable slices.
var fifoModel = porcupine.Model{
	Init: func() any { return []int(nil) },
	Step: func(state, input, output any) (bool, any) {
		s := state.([]int)
		in := input.(qInput)
		if in.enq {
			return true, append(slices.Clip(s), in.value)
		}
		out := output.(int)
		if len(s) == 0 {
			return out == emptyOut, s
		}
		return out == s[0], s[1:]
	},
	Equal: func(a, b any) bool { return slices.Equal(a.([]int), b.([]int)) },
	Hash: func(s any) uint64 {
		h := uint64(14695981039346656037)
		for _, v := range s.([]int) {
			h = (h ^ uint64(v)) * 1099511628211
		}
		return h
	},
}

// TestLinearizableModel makes sure the model can say no: a history in which a
// Dequeue returns the second of two sequential Enqueues is illegal, and the
// same history in FIFO order is legal.
func TestLinearizableModel(t *testing.T) {
	hist := func(first int) []porcupine.Operation {
		return []porcupine.Operation{
			{ClientId: 0, Input: qInput{enq: true, value: 1}, Call: 0, Output: 0, Return: 1},
			{ClientId: 0, Input: qInput{enq: true, value: 2}, Call: 2, Output: 0, Return: 3},
			{ClientId: 1, Input: qInput{}, Call: 4, Output: first, Return: 5},
		}
	}
	if porcupine.CheckOperations(fifoModel, hist(2)) {
		t.Fatal("model accepts a LIFO history")
	}
	if !porcupine.CheckOperations(fifoModel, hist(1)) {
		t.Fatal("model rejects a FIFO history")
	}
}

// TestLinearizable records concurrent histories at 2, 4 and 8 processor
// slots, one goroutine (client) per slot, and checks each round's history.
// Each client owns a few items, enqueues one of them or dequeues at random
// (fixed seeds), yields between operations now and then and, through the
// racer, inside Enqueue at its race point.
func TestLinearizable(t *testing.T) {
	for _, c := range []struct{ clients, pool, rounds int }{
		// Items per client: the queue holds at most clients·pool items, so
		// the order of concurrent enqueues is settled by dequeues soon after;
		// a deep queue leaves the checker exponentially many orders to try.
		{2, 3, 40},
		{4, 3, 40},
		{8, 2, 20},
	} {
		atProcs(t, fmt.Sprintf("procs=%d", c.clients), c.clients, func(t *testing.T) {
			linearizable(t, c.clients, c.pool, scale(c.rounds, c.rounds/4))
		})
	}
}

func linearizable(t *testing.T, clients, pool, rounds int) {
	const opsEach = 50
	f := newFixture(t, clients, 1, clients*pool, 0)
	q := &f.queues[0]
	var clock atomic.Int64
	value := 0
	owned := make([][]*titem, clients)
	for c := range owned {
		for i := 0; i < pool; i++ {
			owned[c] = append(owned[c], &f.items[c*pool+i])
		}
	}
	overlaps, slowest := 0, time.Duration(0)
	for round := 0; round < rounds; round++ {
		hists := make([][]porcupine.Operation, clients)
		errs := make([]error, clients)
		var wg sync.WaitGroup
		var ready atomic.Int32
		for c := 0; c < clients; c++ {
			// Values are unique across the test and assigned up front.
			base := value
			value += opsEach
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := seeded(round, c)
				r := newRacer(rng)
				// Start together, so that operations overlap.
				ready.Add(1)
				for ready.Load() < int32(clients) {
					runtime.Gosched()
				}
				for i := 0; i < opsEach && errs[c] == nil; i++ {
					r.pause() // vary the interleaving on shared CPUs
					var op porcupine.Operation
					op.ClientId = c
					if n := len(owned[c]); n > 0 && rng.IntN(2) == 0 {
						ti := owned[c][n-1]
						owned[c] = owned[c][:n-1]
						ti.stamp = uint64(base + i)
						op.Input = qInput{enq: true, value: base + i}
						op.Call = clock.Add(1)
						errs[c] = r.enqueue(&f.d, c, q, &ti.Item)
						op.Return = clock.Add(1)
						op.Output = 0
					} else {
						op.Input = qInput{}
						op.Call = clock.Add(1)
						it, err := f.d.Dequeue(c, q)
						op.Return = clock.Add(1)
						errs[c] = err
						op.Output = emptyOut
						if it != nil {
							ti := f.item(it)
							op.Output = int(ti.stamp)
							owned[c] = append(owned[c], ti)
						}
					}
					hists[c] = append(hists[c], op)
				}
			}()
		}
		wait(t, &wg, "concurrent history")
		for c, err := range errs {
			if err != nil {
				t.Fatalf("round %d client %d: %v", round, c, err)
			}
		}
		// Drain sequentially, as one more client, so every round starts empty.
		for {
			op := porcupine.Operation{ClientId: clients, Input: qInput{}, Call: clock.Add(1)}
			it, err := f.d.Dequeue(0, q)
			op.Return = clock.Add(1)
			if err != nil {
				t.Fatal(err)
			}
			op.Output = emptyOut
			if it != nil {
				ti := f.item(it)
				op.Output = int(ti.stamp)
				owned[round%clients] = append(owned[round%clients], ti)
			}
			hists[0] = append(hists[0], op)
			if it == nil {
				break
			}
		}
		var history []porcupine.Operation
		for _, h := range hists {
			history = append(history, h...)
		}
		overlaps += countOverlaps(hists)
		t0 := time.Now()
		res := porcupine.CheckOperationsTimeout(fifoModel, history, 20*time.Second)
		if d := time.Since(t0); d > slowest {
			slowest = d
		}
		switch res {
		case porcupine.Ok:
		case porcupine.Illegal:
			t.Fatalf("round %d: history of %d operations is not linearizable", round, len(history))
		default:
			t.Fatalf("round %d: checker gave %s on %d operations", round, res, len(history))
		}
		held := map[*Item]bool{}
		for _, list := range owned {
			for _, ti := range list {
				held[&ti.Item] = true
			}
		}
		f.check(t, held)
	}
	// Without operations overlapping in time the check would be vacuous;
	// with one P they cannot (operations do not yield).
	if overlaps == 0 && runtime.GOMAXPROCS(0) > 1 {
		t.Fatal("no two operations overlapped in time")
	}
	t.Logf("%d rounds, GOMAXPROCS %d, %d overlapping pairs of operations, slowest check %v", rounds, runtime.GOMAXPROCS(0), overlaps, slowest)
}

// countOverlaps counts pairs of operations of different clients whose
// intervals overlap: concurrency the checker had to linearize.
func countOverlaps(hists [][]porcupine.Operation) int {
	n := 0
	for a := range hists {
		for b := a + 1; b < len(hists); b++ {
			for _, x := range hists[a] {
				for _, y := range hists[b] {
					if x.Call <= y.Return && y.Call <= x.Return {
						n++
					}
				}
			}
		}
	}
	return n
}
