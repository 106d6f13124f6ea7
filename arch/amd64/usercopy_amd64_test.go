package amd64

import (
	"testing"
	"unsafe"
)

func addr(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }

// TestCopyUser copies every length to 300 and some larger ones, from and
// to every alignment within a word, and checks the bytes around the
// destination are untouched.
func TestCopyUser(t *testing.T) {
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
				if left := CopyUser(addr(&dst[do]), addr(&src[so]), uintptr(n)); left != 0 {
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

// TestUserFixup checks the exception table's entries: CopyUser's REP
// MOVSQ and REP MOVSB, each resumed just after itself (and nothing else).
func TestUserFixup(t *testing.T) {
	findCopyInsns()
	if copyQ == 0 || copyB == 0 || copyB <= copyQ {
		t.Fatalf("REP MOVSQ at %#x, REP MOVSB at %#x", copyQ, copyB)
	}
	for pc, want := range map[uintptr]uintptr{copyQ: copyQ + 3, copyB: copyB + 2} {
		if resume, ok := UserFixup(pc); !ok || resume != want {
			t.Errorf("UserFixup(%#x) = %#x, %v; want %#x", pc, resume, ok, want)
		}
	}
	for _, pc := range []uintptr{copyUserPC(), copyQ + 3, copyB + 2, copyQ + 1} {
		if _, ok := UserFixup(pc); ok {
			t.Errorf("UserFixup accepts %#x", pc)
		}
	}
}
