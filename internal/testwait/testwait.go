// Package testwait bounds the waits of concurrency tests: a lost wake-up or
// a stuck operation must fail the test with evidence, not hang it. For tests
// only; it allocates freely.
package testwait

import (
	"runtime"
	"sync"
	"time"
)

// Wait waits for wg and reports whether it finished within d.
func Wait(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Stacks returns the stacks of all goroutines.
func Stacks() []byte {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}
