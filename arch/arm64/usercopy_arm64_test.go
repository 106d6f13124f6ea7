package arm64

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

// TestUserFixup checks the exception table against CopyUser's code: the
// precise loop starts with CBZ R2 and ends with a branch back to it, the
// fixup stores R2, and faults resume where the comment says.
func TestUserFixup(t *testing.T) {
	findCopyFix()
	start := copyUserPC()
	if copyFix == 0 || copyPrecise <= start+64 {
		t.Fatalf("precise loop at %#x, fixup at %#x (CopyUser at %#x)", copyPrecise, copyFix, start)
	}
	if ins := *word[uint32](copyPrecise); ins&0xff00001f != 0xb4000002 {
		t.Errorf("precise loop starts with %#08x, want CBZ R2", ins)
	}
	// B back by 6 instructions: 0x14000000 | (-6 & 0x3ffffff).
	if ins := *word[uint32](copyFix - 4); ins != 0x17fffffa {
		t.Errorf("precise loop ends with %#08x, want B precise", ins)
	}
	for pc, want := range map[uintptr]uintptr{start: copyPrecise, start + 64: copyPrecise, copyPrecise - 4: copyPrecise, copyPrecise: copyFix, copyFix - 4: copyFix} {
		if resume, ok := UserFixup(pc); !ok || resume != want {
			t.Errorf("UserFixup(CopyUser+%#x) = %#x, %v; want CopyUser+%#x", pc-start, resume-start, ok, want-start)
		}
	}
	for _, pc := range []uintptr{start - 4, copyFix, copyFix + 4} {
		if _, ok := UserFixup(pc); ok {
			t.Errorf("UserFixup accepts CopyUser+%#x", pc-start)
		}
	}
}
