package arm64

import "unsafe"

// CopyUser copies n bytes from src to dst, where one side is the
// program's memory, and returns how many it did not copy: 0, or, after a
// fault at a user address the kernel's trap handler sent to UserFixup,
// the bytes from the faulting byte on. It uses R0-R10.
func CopyUser(dst, src, n uintptr) (left uintptr)

func copyUserPC() uintptr

// ret is RET's encoding (RET X30).
const ret = 0xd65f03c0

// bytesLen is the byte loop's length in bytes (7 instructions: CBZ,
// MOVBU, MOVB, ADD, ADD, SUB, B), which ends just before the fixup.
const bytesLen = 7 * 4

// copyStart, copyBytes and copyFix are CopyUser's start, its byte loop
// and the store of the bytes left (0 until found): a fault in
// [copyStart, copyBytes) resumes at copyBytes, one in [copyBytes,
// copyFix) at copyFix.
var copyStart, copyBytes, copyFix uintptr

// UserFixup is the exception table: for a kernel-mode fault at pc, where
// to resume if pc is one of CopyUser's loads or stores (ok false for any
// other pc). The caller has checked that the faulting address is the
// program's, so the loads of CopyUser's arguments never come here.
func UserFixup(pc uintptr) (resume uintptr, ok bool) {
	if copyFix == 0 {
		findCopyFix()
	}
	switch {
	case copyFix == 0 || pc < copyStart || pc >= copyFix:
		return 0, false
	case pc < copyBytes:
		return copyBytes, true
	}
	return copyFix, true
}

// findCopyFix finds CopyUser's first RET (within its first 64
// instructions); the instruction before it is the fixup, and the byte
// loop the bytesLen bytes before that.
func findCopyFix() {
	start := copyUserPC()
	for i := uintptr(4); i < 64*4; i += 4 {
		if *word[uint32](start + i) == ret {
			copyStart, copyBytes, copyFix = start, start+i-4-bytesLen, start+i-4
			return
		}
	}
}

// word is the T at a (an address of the image's text).
func word[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }
