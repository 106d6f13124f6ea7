package twa

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestStoreThenLoad checks what UnlockSlot's grant write relies on: an
// atomic read-modify-write (here Swap) of one word is visible before a
// later load of another, the store-buffering pattern (thread A writes x
// and reads y, thread B writes y and reads x: at least one must see the
// other's write). It also counts, for the log only, the rounds in which
// Go's atomic Store missed both: none on amd64 (its store is XCHG) or on
// Arm's cores (STLR, then LDAR), many under qemu-aarch64 on an x86 host
// (make hosted runs this package there), where QEMU's TCG lets the store
// wait in the host's store buffer — why the grant is not stored.
func TestStoreThenLoad(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs: the two threads must run at once")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	rounds := 100000
	if testing.Short() {
		rounds = 20000
	}
	// About a second each: on a busy host a round waits for both
	// threads to run at once (the clock is read every 16 rounds).
	if n, missed := storeBuffering(rounds, time.Second, true); missed != 0 {
		t.Errorf("Swap: %d of %d rounds saw neither write: a read-modify-write is no full barrier here", missed, n)
	}
	n, missed := storeBuffering(rounds, time.Second, false)
	t.Logf("Store: %d of %d rounds saw neither write", missed, n)
}

// storeBuffering runs up to rounds rounds, for at most d, of the
// store-buffering pattern on two locked threads, writing with Swap or
// Store, and returns the rounds run and those in which both threads'
// loads missed the other's write.
func storeBuffering(rounds int, d time.Duration, swap bool) (n, missed int) {
	var x, y, start, ack atomic.Uint32
	var stop atomic.Bool
	missedB := make([]bool, rounds)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := uint32(1); ; i++ {
			for start.Load() < i {
			}
			if stop.Load() {
				return
			}
			if swap {
				y.Swap(i)
			} else {
				y.Store(i)
			}
			missedB[i-1] = x.Load() < i
			ack.Store(i)
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	end := time.Now().Add(d)
	i := uint32(1)
	for ; int(i) <= rounds && (i%16 != 0 || time.Now().Before(end)); i++ {
		start.Store(i)
		if swap {
			x.Swap(i)
		} else {
			x.Store(i)
		}
		missedA := y.Load() < i
		for ack.Load() < i {
		}
		if missedA && missedB[i-1] {
			missed++
		}
	}
	stop.Store(true)
	start.Store(i) // the first round not run: the thread sees stop
	<-exited
	return int(i - 1), missed
}
