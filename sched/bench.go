package sched

import "yolk/drivers/clock"

func swtchAll(from, to *Context, gp uintptr)
func benchEntryPC() uintptr

// Benchmark state: the task measuring (A), its partner (B) and the variant.
var (
	benchA, benchB uintptr
	benchAll       bool
)

// benchPartner is B's body: every time it runs, it switches straight back.
func benchPartner() {
	a, b := taskAt(benchA), taskAt(benchB)
	for {
		if benchAll {
			swtchAll(&b.ctx, &a.ctx, a.G())
		} else {
			swtch(&b.ctx, &a.ctx, a.G())
		}
	}
}

// SwitchBench measures n round trips (two switches each) between the
// current task and partner, a task with a kernel stack that is not otherwise
// in use, with the minimal switch (all=false) or the save-everything one.
// It bypasses the ready queue and finalizers: it times the switch alone. It
// returns the elapsed nanoseconds.
func SwitchBench(partner *Task, n int, all bool) int64 {
	a := Current()
	benchA, benchB, benchAll = a.addr(), partner.addr(), all
	if all {
		prepareAll(partner, benchEntryPC())
	} else {
		partner.Prepare(partner.KStackHi, benchEntryPC())
	}
	start := clock.Nanotime()
	for i := 0; i < n; i++ {
		if all {
			swtchAll(&a.ctx, &partner.ctx, partner.G())
		} else {
			swtch(&a.ctx, &partner.ctx, partner.G())
		}
	}
	return clock.Nanotime() - start
}
