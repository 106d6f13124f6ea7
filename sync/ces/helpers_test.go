package ces

import (
	"runtime"
	"sync"
	"testing"
	"time"
	_ "unsafe" // go:linkname

	"yolk/internal/testwait"
)

// procPin and procUnpin are runtime push linknames (the runtime marks them
// "Do not remove or change the type signature"), so the linker accepts this
// reference without -checklinkname=0. procPin returns the id of the P the
// calling goroutine runs on and disables preemption until procUnpin.
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// currentP returns the id of the processor (P) the caller runs on.
func currentP() int {
	p := procPin()
	procUnpin()
	return p
}

// withProcs runs f once per GOMAXPROCS value in procs, as a subtest.
func withProcs(t *testing.T, procs []int, f func(t *testing.T)) {
	for _, p := range procs {
		t.Run("procs="+itoa(p), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(p))
			f(t)
		})
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// waitOrDump waits for wg; after d it fails the test with all goroutine
// stacks (a lost wake-up shows up as goroutines parked in park).
func waitOrDump(t *testing.T, wg *sync.WaitGroup, d time.Duration, what string) {
	t.Helper()
	if !testwait.Wait(wg, d) {
		t.Fatalf("%s: not finished after %v (lost wake-up?); all goroutines:\n%s", what, d, testwait.Stacks())
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
		time.Sleep(10 * time.Microsecond)
	}
}

// scale shrinks sizes under -short.
func scale(n int) int {
	if testing.Short() {
		return max(n/4, 1)
	}
	return n
}

// locker is what the mutex tests need from Mutex and DispatchMutex.
type locker interface {
	Lock()
	Unlock()
	TryLock() bool
	core() *lock
	lockSlow(stamp bool) (ticket uint64, delay int64)
	unlockSlow() bool
}

// lockT locks l and reports its arrival ticket (0: not queued) and, if
// stamp, its queuing delay in ns.
func lockT(l locker, stamp bool) (ticket uint64, delay int64) {
	if l.core().tryFast() {
		return 0, 0
	}
	return l.lockSlow(stamp)
}

// unlockT unlocks l and reports whether it handed l to a waiter.
func unlockT(l locker) bool {
	if l.core().state.CompareAndSwap(mLocked, 0) {
		return false
	}
	return l.unlockSlow()
}

func (m *Mutex) core() *lock         { return &m.l }
func (m *DispatchMutex) core() *lock { return &m.l }

var lockers = []struct {
	name string
	new  func() locker
}{
	{"ces", func() locker { return new(Mutex) }},
	{"dispatch", func() locker { return new(DispatchMutex) }},
}
