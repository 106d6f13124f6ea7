package amd64

import "unsafe"

// CopyUser copies n bytes from src to dst, where one side is the
// program's memory, and returns how many it did not copy: 0, or, after a
// page fault at a user address the kernel's trap handler sent to
// UserFixup, the bytes from the faulting one on.
func CopyUser(dst, src, n uintptr) (left uintptr)

func copyUserPC() uintptr

// repMovsb is REP MOVSB's encoding.
const repMovsb = 0xa4f3

// copyInsn is the address of CopyUser's REP MOVSB (0 until found).
var copyInsn uintptr

// UserFixup is the exception table: for a kernel-mode fault at pc, where
// to resume if pc is the instruction of CopyUser that touches the
// program's memory (ok false for any other pc). The caller has checked
// that the faulting address is the program's.
func UserFixup(pc uintptr) (resume uintptr, ok bool) {
	insn := copyInsn
	if insn == 0 {
		insn = findCopyInsn()
	}
	if pc != insn || insn == 0 {
		return 0, false
	}
	return insn + 2, true
}

// findCopyInsn finds REP MOVSB in CopyUser's first 32 bytes (three
// register loads precede it).
func findCopyInsn() uintptr {
	start := copyUserPC()
	for i := uintptr(0); i < 32; i++ {
		if *word[uint16](start + i) == repMovsb {
			copyInsn = start + i
			return copyInsn
		}
	}
	return 0
}

// word is the T at a (an address of the image's text).
func word[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }
