package sched

import (
	"sync/atomic"

	"yolk/drivers/clock"
)

// The scheduler trace: each CPU's last switches and wake-ups in a ring, for
// finding where a late wake-up's time went (BenchmarkPreemptWake reads it
// through a self-test call). Off unless SetTrace turned it on; then one
// event is a few stores into a fixed array, no allocation.

// TraceEvent is one scheduler event on one CPU.
type TraceEvent struct {
	At       int64 // clock.Nanotime
	CPU      uint8
	Ev       uint8 // TraceSwitch or TraceReady
	Why      uint8 // TraceSwitch: why From left (Why* constants)
	Q        uint8 // the ready queue To came from (switch) or went on (ready); 2: none
	From, To int32 // TIDs (TraceReady: To only)
	FromUsed int64 // From's CPU time since it blocked, as it left (after adding this run)
	ToUsed   int64 // To's, as it starts (switch) or as it is queued (ready)
}

// TraceEvent.Ev values.
const (
	TraceSwitch = iota + 1
	TraceReady
)

// Why a task left its CPU (TraceEvent.Why).
const (
	WhyBlock     = iota // blocked, waited for a mutex or exited
	WhyYield            // Yield, or YieldSlice at the end of a slice
	WhySysBudget        // YieldSlice: used its Budget while a woken task waits
	WhySlice            // Preempt: its slice is over
	WhyWoke             // Preempt: the interrupt woke a task
	WhyBudget           // Preempt: used its Budget while a woken task waits
	WhyHandoff          // a mutex exchange
)

// noQueue is TraceEvent.Q for a task that came from no ready queue.
const noQueue = 2

const (
	traceCPUs = 8    // CPUs traced
	traceLen  = 1024 // events per CPU (a power of 2)
)

var (
	traceOn   uint32 // atomic
	traceRing [traceCPUs]struct {
		n  uint64 // atomic: events written
		ev [traceLen]TraceEvent
	}
)

// SetTrace turns the trace on (emptying the rings) or off.
func SetTrace(on bool) {
	atomic.StoreUint32(&traceOn, 0)
	if on {
		for i := range traceRing {
			atomic.StoreUint64(&traceRing[i].n, 0)
		}
		atomic.StoreUint32(&traceOn, 1)
	}
}

// trace records e on this CPU's ring, if the trace is on. e.At, if not 0,
// is the clock reading the scheduler decided by (a switch's): a reading of
// its own here could come a host stall later and misstate how long a task
// ran by the scheduler's clock.
func trace(e TraceEvent) {
	c := This()
	if atomic.LoadUint32(&traceOn) == 0 || c.ID >= traceCPUs {
		return
	}
	r := &traceRing[c.ID]
	if e.At == 0 {
		e.At = clock.Nanotime()
	}
	e.CPU = uint8(c.ID)
	n := atomic.LoadUint64(&r.n)
	r.ev[n%traceLen] = e
	atomic.StoreUint64(&r.n, n+1)
}

// TraceRead calls f with each recorded event still in the rings, CPU by
// CPU, oldest first; events written meanwhile may be torn (the trace is
// for reading after the fact).
func TraceRead(f func(*TraceEvent)) {
	for i := range traceRing {
		r := &traceRing[i]
		n := atomic.LoadUint64(&r.n)
		first := uint64(0)
		if n > traceLen {
			first = n - traceLen
		}
		for j := first; j < n; j++ {
			f(&r.ev[j%traceLen])
		}
	}
}
