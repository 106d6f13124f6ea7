package arm64

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestLoadAfterLoads checks that LoadAfterLoads reads the word it is
// given, also while another thread changes it (each value it returns
// was stored, and they never go back).
func TestLoadAfterLoads(t *testing.T) {
	for _, v := range []uint32{0, 1, 0x80000000, ^uint32(0)} {
		if got := LoadAfterLoads(&v); got != v {
			t.Errorf("LoadAfterLoads(&%#x) = %#x", v, got)
		}
	}
	var w uint32
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 100000; i++ {
			atomic.AddUint32(&w, 2)
		}
	}()
	last := uint32(0)
	for last < 200000 {
		v := LoadAfterLoads(&w)
		if v < last || v&1 != 0 {
			t.Fatalf("read %d after %d", v, last)
		}
		last = v
	}
	wg.Wait()
}
