package amd64

import "unsafe"

// CopyUser copies n bytes from src to dst, where one side is the
// program's memory, and returns how many it did not copy: 0, or, after a
// page fault at a user address the kernel's trap handler sent to
// UserFixup, the bytes from the faulting byte on.
func CopyUser(dst, src, n uintptr) (left uintptr)

func copyUserPC() uintptr

// The encodings of CopyUser's two instructions that touch memory.
var (
	repMovsq = [3]byte{0xf3, 0x48, 0xa5}
	repMovsb = [2]byte{0xf3, 0xa4}
)

// copyQ and copyB are the addresses of CopyUser's REP MOVSQ and REP
// MOVSB (0 until found).
var copyQ, copyB uintptr

// UserFixup is the exception table: for a kernel-mode fault at pc, where
// to resume if pc is one of CopyUser's two instructions that touch the
// program's memory (ok false for any other pc). The caller has checked
// that the faulting address is the program's.
func UserFixup(pc uintptr) (resume uintptr, ok bool) {
	if copyB == 0 {
		findCopyInsns()
	}
	switch {
	case copyQ == 0 || copyB == 0:
		return 0, false
	case pc == copyQ:
		return pc + uintptr(len(repMovsq)), true
	case pc == copyB:
		return pc + uintptr(len(repMovsb)), true
	}
	return 0, false
}

// findCopyInsns finds REP MOVSQ and, after it, REP MOVSB in CopyUser's
// first 64 bytes (register moves and arithmetic precede them, none with
// an F3 prefix).
func findCopyInsns() {
	start := copyUserPC()
	q := uintptr(0)
	for i := uintptr(0); i < 64; i++ {
		a := start + i
		switch {
		case q == 0 && *word[[3]byte](a) == repMovsq:
			q = a
		case q != 0 && *word[[2]byte](a) == repMovsb:
			copyQ, copyB = q, a
			return
		}
	}
}

// word is the T at a (an address of the image's text).
func word[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }
