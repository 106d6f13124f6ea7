package arm64

import (
	"testing"

	"yolk/arch/internal/copytest"
)

// TestCopyUser: every length to 300 and some larger ones, every
// alignment within a word (arch/internal/copytest).
func TestCopyUser(t *testing.T) { copytest.Check(t, CopyUser) }

// TestUserFixup checks the exception table against CopyUser's code: the
// byte loop starts with CBZ R2 and ends with a branch back to it, and
// faults resume where CopyUser's comment says.
func TestUserFixup(t *testing.T) {
	findCopyFix()
	start := copyUserPC()
	if copyFix == 0 || copyBytes <= start+64 {
		t.Fatalf("byte loop at %#x, fixup at %#x (CopyUser at %#x)", copyBytes, copyFix, start)
	}
	if ins := *word[uint32](copyBytes); ins&0xff00001f != 0xb4000002 {
		t.Errorf("byte loop starts with %#08x, want CBZ R2", ins)
	}
	// B back by 6 instructions: 0x14000000 | (-6 & 0x3ffffff).
	if ins := *word[uint32](copyFix - 4); ins != 0x17fffffa {
		t.Errorf("byte loop ends with %#08x, want B bytes", ins)
	}
	for pc, want := range map[uintptr]uintptr{start: copyBytes, start + 64: copyBytes, copyBytes - 4: copyBytes, copyBytes: copyFix, copyFix - 4: copyFix} {
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
