// Package copytest is the hosted test both architectures' CopyUser share:
// every length to 300 and some larger ones, from and to every alignment
// within a word. Test code only; it never reaches the kernel.
package copytest

import (
	"testing"
	"unsafe"
)

// Check runs copyUser (arch/$GOARCH.CopyUser) over the lengths and
// alignments and checks the bytes copied, that none is left, and that
// the bytes around the destination are untouched.
func Check(t *testing.T, copyUser func(dst, src, n uintptr) uintptr) {
	lens := []int{4095, 4096, 4097, 65536 + 13}
	for n := 0; n <= 300; n++ {
		lens = append(lens, n)
	}
	for _, n := range lens {
		for so := 0; so < 8; so += 3 {
			for do := 0; do < 8; do++ {
				src := make([]byte, n+16)
				for i := range src {
					src[i] = byte(i*7 + 1)
				}
				dst := make([]byte, n+16)
				if left := copyUser(uintptr(unsafe.Pointer(&dst[do])), uintptr(unsafe.Pointer(&src[so])), uintptr(n)); left != 0 {
					t.Fatalf("CopyUser of %d: left %d", n, left)
				}
				for i := range dst {
					want := byte(0)
					if i >= do && i < do+n {
						want = src[so+i-do]
					}
					if dst[i] != want {
						t.Fatalf("CopyUser of %d (src+%d to dst+%d): byte %d is %#x, want %#x", n, so, do, i, dst[i], want)
					}
				}
			}
		}
	}
}
