// Command bigcopy times Go's copy of 128 MiB, between 8-byte-aligned
// addresses and with the destination 3 bytes off, into fresh pages and
// again into the same ones, in Go's benchmark format (docs/kernel-amd64.md,
// "AVX"). Without AVX, Go's memmove copies a misaligned block of 2 KiB or
// more with REP MOVSB, which QEMU's TCG runs a byte at a time.
package main

import (
	"fmt"
	"time"
)

func main() {
	const n = 1 << 27
	for _, off := range []int{0, 3} {
		src := make([]byte, n)
		dst := make([]byte, n+8)
		t0 := time.Now()
		copy(dst[off:], src)
		t1 := time.Now()
		copy(dst[off:], src)
		t2 := time.Now()
		fmt.Printf("BenchmarkCopy128MiB/fresh/offset=%d 1 %d ns/op\n", off, t1.Sub(t0).Nanoseconds())
		fmt.Printf("BenchmarkCopy128MiB/again/offset=%d 1 %d ns/op\n", off, t2.Sub(t1).Nanoseconds())
	}
}
