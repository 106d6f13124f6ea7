package amd64

import (
	"testing"
	"unsafe"
)

func addr(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }

func TestCopyUser(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 16, 4095, 4096, 4097} {
		src := make([]byte, n+1)
		for i := range src {
			src[i] = byte(i*7 + 1)
		}
		dst := make([]byte, n+1)
		if left := CopyUser(addr(&dst[0]), addr(&src[0]), uintptr(n)); left != 0 || string(dst[:n]) != string(src[:n]) || dst[n] != 0 {
			t.Fatalf("CopyUser of %d: left %d, copied wrong", n, left)
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
