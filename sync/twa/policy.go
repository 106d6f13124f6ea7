package twa

import (
	"runtime"
	"sync/atomic"
	_ "unsafe" // go:linkname
)

// canSpin is the runtime's test of whether sync.Mutex may spin: more than
// one CPU and one P, another P running, and nothing else runnable on this
// P. The runtime exports it for linkname on purpose (it promises not to
// change it, go.dev/issue/67401), so the linker allows the reference
// without -checklinkname=0. Yield calls it with 0, using only that test.
//
//go:linkname canSpin sync.runtime_canSpin
func canSpin(i int) bool

// A Policy is how a waiter spends the time between two polls of the word it
// waits on. The locks take it as a type argument and call it only once they
// have to wait; the uncontended Lock, Unlock and TryLock never reach it.
//
// A policy owns the whole polling loop, not a single step, so the poll that
// detects a handover never goes through an indirect call: Go calls a method
// of a type parameter through the instantiation's dictionary, which here
// happens once per wait, not once per poll.
//
// Implementations are small value types; their size also carries one bit.
// A zero-size policy (Spin) is for kernel context. A policy of non-zero
// size (Yield, one byte) is for goroutines, and Lock then runs its fast
// path in an ordinary function, where a requested preemption is taken
// before the ticket (see Lock.lockSplit); the size is a constant in each
// compiled instantiation, so the test costs nothing. A policy must not
// change what the lock guarantees: it returns only once the condition
// holds.
type Policy interface {
	// AwaitEqual returns once *w holds v. w is read with atomic loads.
	AwaitEqual(w *uint32, v uint32)
	// AwaitChange returns once *w no longer holds old. w is read with
	// atomic loads.
	AwaitChange(w *uint64, old uint64)
}

// yieldAfter is how many unsuccessful polls, each followed by one pause,
// the Yield policy makes at most before it starts yielding the processor.
// At about 20 ns per PAUSE (BenchmarkPause on the 2-core host of
// docs/sync-twa.md), that is about 2.6 µs: a handover and a short
// critical section, the same order of spinning as sync.Mutex does before
// it parks.
const yieldAfter = 128

// Yield is the waiting policy for goroutines. It polls with the CPU's pause
// hint for at most yieldAfter polls and only while spinning can help — the
// runtime's own test for sync.Mutex (canSpin) — and otherwise calls
// runtime.Gosched between polls, so that when goroutines outnumber
// processors the lock holder, or the waiter the lock has just been granted
// to, gets a processor. At GOMAXPROCS=1 it never spins. It never parks: a
// waiting goroutine stays runnable, and if its thread is descheduled by the
// operating system no yield can help.
//
// Yield is one byte rather than zero so that Lock[Yield] is compiled apart
// from Lock[Spin] and takes a requested preemption before its ticket.
type Yield struct{ _ byte }

// AwaitEqual polls w until it holds v.
func (Yield) AwaitEqual(w *uint32, v uint32) {
	for i := 0; atomic.LoadUint32(w) != v; i++ {
		if i < yieldAfter && canSpin(0) {
			pause()
		} else {
			runtime.Gosched()
		}
	}
}

// AwaitChange polls w until it no longer holds old.
func (Yield) AwaitChange(w *uint64, old uint64) {
	for i := 0; atomic.LoadUint64(w) == old; i++ {
		if i < yieldAfter && canSpin(0) {
			pause()
		} else {
			runtime.Gosched()
		}
	}
}

// Spin is the waiting policy for kernel context: it polls with the CPU's
// pause hint and nothing else. Its methods are nosplit, call no Go runtime
// function, allocate nothing and store no pointers, so it may run underneath
// the Go runtime, on a stack the runtime does not know, with interrupts
// masked. Goroutines must use Yield: nosplit code is never preempted, so a
// goroutine spinning with Spin keeps its processor until it gets the lock,
// and a stop-the-world that has stopped the holder waits for it forever.
type Spin struct{}

// AwaitEqual polls w until it holds v.
//
//go:nosplit
func (Spin) AwaitEqual(w *uint32, v uint32) {
	for atomic.LoadUint32(w) != v {
		pause()
	}
}

// AwaitChange polls w until it no longer holds old.
//
//go:nosplit
func (Spin) AwaitChange(w *uint64, old uint64) {
	for atomic.LoadUint64(w) == old {
		pause()
	}
}
