// Package vgatext writes text to an EGA/VGA text-mode screen: cells of two
// bytes (character, attribute) in rows of Pitch bytes, at the address the
// boot loader reports (Multiboot2's framebuffer tag of type "EGA text",
// 0xB8000 on a PC booted through BIOS). It keeps its own cursor, wraps
// long lines and scrolls; it does not move the hardware cursor.
//
// Kernel-context: no allocation, no runtime calls. The caller serializes
// (the kernel's console lock) and passes the buffer's current address, so
// the same Screen works before and after the kernel's physical map moves
// it.
package vgatext

import "unsafe"

// Attr is the attribute of written cells: light grey on black.
const Attr = 0x07

// Screen is a text screen's geometry and the cursor.
type Screen struct {
	Cols, Rows, Pitch int // characters per row, rows, bytes per row
	row, col          int
}

// Valid reports whether the geometry describes a usable text screen.
func (s *Screen) Valid() bool {
	return s.Cols > 0 && s.Rows > 0 && s.Pitch >= 2*s.Cols
}

// Clear blanks the screen at mem and puts the cursor top left.
func (s *Screen) Clear(mem uintptr) {
	for r := 0; r < s.Rows; r++ {
		s.blankRow(mem, r)
	}
	s.row, s.col = 0, 0
}

// Put writes c at the cursor of the screen at mem: '\n' starts a new line,
// '\r' returns to its start, other bytes are shown as the screen's font
// has them. A full last row scrolls the screen up.
func (s *Screen) Put(mem uintptr, c byte) {
	switch c {
	case '\n':
		s.newline(mem)
		return
	case '\r':
		s.col = 0
		return
	}
	if s.col == s.Cols {
		s.newline(mem)
	}
	*cell(mem, s.Pitch, s.row, s.col) = uint16(Attr)<<8 | uint16(c)
	s.col++
}

// Cursor returns the cursor's row and column.
func (s *Screen) Cursor() (row, col int) { return s.row, s.col }

func (s *Screen) newline(mem uintptr) {
	s.col = 0
	if s.row+1 < s.Rows {
		s.row++
		return
	}
	for r := 1; r < s.Rows; r++ {
		for c := 0; c < s.Cols; c++ {
			*cell(mem, s.Pitch, r-1, c) = *cell(mem, s.Pitch, r, c)
		}
	}
	s.blankRow(mem, s.Rows-1)
}

func (s *Screen) blankRow(mem uintptr, r int) {
	for c := 0; c < s.Cols; c++ {
		*cell(mem, s.Pitch, r, c) = uint16(Attr)<<8 | ' '
	}
}

// cell is the 16-bit cell at row r, column c.
func cell(mem uintptr, pitch, r, c int) *uint16 {
	a := mem + uintptr(r*pitch+2*c)
	return *(**uint16)(unsafe.Pointer(&a))
}
