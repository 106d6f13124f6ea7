//go:build !race

// The race detector would report the reads this test is about: the check
// reads the area table while it changes, and keeps only what a sequence
// count vouches for.

package mm

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestUserRangeDuringChanges checks ranges of an area that never changes
// while another goroutine inserts and removes areas below it, which moves
// its place in the table back and forth (the copies a lock-free reader
// could catch half done). The area must always be found, with its
// protection, and the hole after it never.
func TestUserRangeDuringChanges(t *testing.T) {
	resetVM()
	defer resetVM()
	const below = 32 // areas the writer toggles below the stable one
	stable := uintptr(modelBase + 2*below*PageSize)
	if _, e := areaMap(stable, 4*PageSize, ProtRead|ProtWrite, true); e != 0 {
		t.Fatalf("map: %v", e)
	}
	var stop atomic.Bool
	var changes atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			for _, remove := range []bool{false, true} {
				for j := 0; j < below; j++ {
					a := uintptr(modelBase + 2*j*PageSize) // a page apart: never merged
					atomic.AddUint32(&vmSeq, 1)
					if remove {
						removeVMA(a, a+PageSize)
					} else if _, e := areaMap(a, PageSize, ProtRead, true); e != 0 {
						panic("map below")
					}
					atomic.AddUint32(&vmSeq, 1)
					changes.Add(1)
				}
			}
		}
	}()
	checks := 0
	for end := time.Now().Add(time.Second); time.Now().Before(end) || changes.Load() < 1000; checks++ {
		if !userRange(stable, 4*PageSize, ProtWrite) {
			t.Fatalf("check %d (%d changes): the stable area not found writable", checks, changes.Load())
		}
		if !userRange(stable+PageSize, 2*PageSize, ProtRead) {
			t.Fatalf("check %d (%d changes): inside the stable area not found readable", checks, changes.Load())
		}
		if userRange(stable+3*PageSize, 2*PageSize, ProtRead) {
			t.Fatalf("check %d (%d changes): the hole after the stable area found readable", checks, changes.Load())
		}
	}
	stop.Store(true)
	<-done
	t.Logf("%d checks during %d changes", checks, changes.Load())
}
