// Package prof is a yolk test fixture for go test's output files: a
// CPU-bound function for -cpuprofile, one that allocates for -memprofile,
// and statements for -coverprofile (one of them never run).
package prof

import "time"

// Spin is busy for d and returns what it computed: the CPU profile's hot
// function.
func Spin(d time.Duration) uint64 {
	x := uint64(1)
	for end := time.Now().Add(d); time.Now().Before(end); {
		for range 1 << 12 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

// Grow allocates n buffers of 4 KiB: the memory profile's.
func Grow(n int) [][]byte {
	var bufs [][]byte
	for range n {
		bufs = append(bufs, make([]byte, 4096))
	}
	return bufs
}

// Unused is never called by the tests.
func Unused() int { return 1 }
