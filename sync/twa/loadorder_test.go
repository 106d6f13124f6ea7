package twa

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// TestLoadOrderNoLostWakeup forces, deterministically, the interleaving
// that the order of a long-term waiter's two loads exists for (see wait
// and Unlock). The holder has ticket s, A has s+1 (the immediate
// successor) and W has s+2, a long-term waiter. W is stopped by
// loadGapHook between its two loads; meanwhile the holder unlocks: grant
// becomes s+1 and the slot of ticket s+2 is incremented. Then W goes on.
//
// With the paper's order (slot, then grant), W's grant load sees s+1, W
// becomes the immediate successor and gets the lock after A. With the
// loads swapped (grant, then slot), W saw the old grant and then snapshots
// the slot after the notification: it waits in the waiting array for an
// increment that has already happened, and nothing else will increment
// that slot — a lost wake-up. The test then fails after a bound (and
// rescues W by incrementing the slot itself, so no goroutine is left
// spinning). Checked by swapping the loads: the test fails for every
// policy and GOMAXPROCS below (docs/sync-twa.md).
func TestLoadOrderNoLostWakeup(t *testing.T) {
	for _, procs := range yieldProcs() {
		withProcs(t, procs, func(t *testing.T) {
			for _, s := range []uint32{0, nearWrap, ^uint32(0) - 1} {
				loadOrderCase(t, at[Yield](s), s)
			}
		})
	}
	// Spin waiters are never preempted: every goroutine needs a P (see
	// spinEnv), here the holder/test, A and W.
	spinEnv(t, 4, func(t *testing.T) {
		loadOrderCase(t, at[Spin](nearWrap), nearWrap)
	})
}

func loadOrderCase[P Policy](t *testing.T, l *Lock[P], s uint32) {
	t.Helper()
	reached, release := make(chan struct{}), make(chan struct{})
	var fired atomic.Bool
	loadGapHook = func(tx uint32) {
		if tx == s+2 && fired.CompareAndSwap(false, true) {
			close(reached)
			<-release
		}
	}
	defer func() { loadGapHook = nil }()

	if tx := l.lock(); tx != s { // the holder
		t.Fatalf("holder got ticket %d, want %d", tx, s)
	}
	aDone := make(chan uint32, 1)
	go func() { // A: the immediate successor
		tx := l.lock()
		l.Unlock()
		aDone <- tx
	}()
	for atomic.LoadUint32(&l.ticket) != s+2 {
		runtime.Gosched()
	}
	wDone := make(chan uint32, 1)
	go func() { // W: a long-term waiter
		tx := l.lock()
		l.Unlock()
		wDone <- tx
	}()
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("W never reached the gap between its loads: not a long-term waiter?")
	}
	l.Unlock() // grant s+1, then the slot of ticket s+2
	close(release)
	if tx := <-aDone; tx != s+1 {
		t.Fatalf("A was admitted with ticket %d, want %d", tx, s+1)
	}
	select {
	case tx := <-wDone:
		if tx != s+2 {
			t.Fatalf("W was admitted with ticket %d, want %d", tx, s+2)
		}
	case <-time.After(5 * time.Second):
		// Rescue W so that it does not spin for the rest of the run.
		atomic.AddUint64(waitSlot(unsafe.Pointer(l), s+2), 1)
		<-wDone
		t.Fatalf("lost wake-up: the long-term waiter with ticket %d missed the notification of the release that promoted it (start %d)", s+2, s)
	}
	if d := l.depth(); d != 0 {
		t.Fatalf("lock not free at the end: depth %d", d)
	}
}

// BenchmarkPause measures one pause(): the CPU's spin-wait hint (PAUSE on
// amd64, YIELD on arm64), which sets how long the Yield policy's
// yieldAfter polls take (docs/sync-twa.md).
func BenchmarkPause(b *testing.B) {
	for b.Loop() {
		pause()
	}
}
