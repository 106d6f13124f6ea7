package vgatext

import (
	"strings"
	"testing"
	"unsafe"
)

// screenText renders buf (rows of pitch bytes) as text, one line per row,
// and checks every cell's attribute.
func screenText(t *testing.T, buf []uint16, s *Screen) string {
	t.Helper()
	var b strings.Builder
	for r := 0; r < s.Rows; r++ {
		for c := 0; c < s.Cols; c++ {
			v := buf[r*s.Pitch/2+c]
			if v>>8 != Attr {
				t.Fatalf("cell %d,%d attribute %#x", r, c, v>>8)
			}
			b.WriteByte(byte(v))
		}
		b.WriteByte('|')
	}
	return b.String()
}

// heapScreen keeps TestScreen's cells on the heap, where they do not
// move: the screen is reached through a uintptr, which the runtime does
// not update when it copies a goroutine's stack (CI once saw the writes
// after a stack growth go to the old copy).
var heapScreen []uint16

// TestScreen writes into a 6x3 screen whose rows are 16 bytes apart
// (pitch wider than the text): wrapping, '\r', '\n', scrolling, and the
// padding between rows left alone.
func TestScreen(t *testing.T) {
	s := &Screen{Cols: 6, Rows: 3, Pitch: 16}
	buf := make([]uint16, 3*8)
	heapScreen = buf // on the heap: a stack copied as it grows would leave mem pointing at the old one
	for i := range buf {
		buf[i] = 0xEEEE
	}
	mem := uintptr(unsafe.Pointer(&buf[0]))
	if !s.Valid() || (&Screen{Cols: 6, Rows: 3, Pitch: 11}).Valid() {
		t.Fatal("Valid")
	}
	s.Clear(mem)
	put := func(str string) {
		for i := 0; i < len(str); i++ {
			s.Put(mem, str[i])
		}
	}
	put("ab\ncdefghij")
	if got, want := screenText(t, buf, s), "ab    |cdefgh|ij    |"; got != want {
		t.Errorf("after wrapping: %q, want %q", got, want)
	}
	put("\rX\nline4")
	if got, want := screenText(t, buf, s), "cdefgh|Xj    |line4 |"; got != want {
		t.Errorf("after scrolling: %q, want %q", got, want)
	}
	if r, c := s.Cursor(); r != 2 || c != 5 {
		t.Errorf("cursor %d,%d, want 2,5", r, c)
	}
	for r := 0; r < 3; r++ {
		for _, v := range buf[r*8+6 : r*8+8] {
			if v != 0xEEEE {
				t.Fatalf("row %d: padding beyond the text written: %#x", r, v)
			}
		}
	}
}
