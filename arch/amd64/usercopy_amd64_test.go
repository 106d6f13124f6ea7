package amd64

import (
	"testing"

	"yolk/arch/internal/copytest"
)

// TestCopyUser: every length to 300 and some larger ones, every
// alignment within a word (arch/internal/copytest).
func TestCopyUser(t *testing.T) { copytest.Check(t, CopyUser) }

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
