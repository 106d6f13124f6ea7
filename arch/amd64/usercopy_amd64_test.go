package amd64

import (
	"testing"
	"unsafe"
)

func addr(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }

func TestCopyUser(t *testing.T) {
	src := []byte("0123456789abcdef")
	dst := make([]byte, len(src))
	if left := CopyUser(addr(&dst[0]), addr(&src[0]), uintptr(len(src))); left != 0 || string(dst) != string(src) {
		t.Fatalf("CopyUser: left %d, %q", left, dst)
	}
}

// TestUserFixup checks the exception table's one entry: CopyUser's REP
// MOVSB, resumed after its two bytes at a MOVQ CX (not at anything else).
func TestUserFixup(t *testing.T) {
	pc := findCopyInsn()
	if pc == 0 {
		t.Fatal("no REP MOVSB in CopyUser")
	}
	resume, ok := UserFixup(pc)
	if !ok || resume != pc+2 {
		t.Fatalf("UserFixup(%#x) = %#x, %v", pc, resume, ok)
	}
	if _, ok := UserFixup(pc + 2); ok {
		t.Fatal("UserFixup accepts the instruction after REP MOVSB")
	}
	if _, ok := UserFixup(copyUserPC()); ok {
		t.Fatal("UserFixup accepts CopyUser's first instruction")
	}
}
