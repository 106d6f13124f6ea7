package arm64

import "unsafe"

// CopyUser copies n bytes from src to dst, where one side is the
// program's memory, and returns how many it did not copy: 0, or, after a
// fault at a user address the kernel's trap handler sent to UserFixup,
// at most the bytes from the faulting word on.
func CopyUser(dst, src, n uintptr) (left uintptr)

func copyUserPC() uintptr

// ret is RET's encoding (RET X30).
const ret = 0xd65f03c0

// copyStart and copyFix bound CopyUser's loads and stores: [copyStart,
// copyFix); copyFix stores the bytes left and returns (0 until found).
var copyStart, copyFix uintptr

// UserFixup is the exception table: for a kernel-mode fault at pc, where
// to resume if pc is one of CopyUser's loads or stores (ok false for any
// other pc). The caller has checked that the faulting address is the
// program's.
func UserFixup(pc uintptr) (resume uintptr, ok bool) {
	if copyFix == 0 {
		findCopyFix()
	}
	if copyFix == 0 || pc < copyStart || pc >= copyFix {
		return 0, false
	}
	return copyFix, true
}

// findCopyFix finds CopyUser's first RET (within its first 32
// instructions); the instruction before it is the fixup.
func findCopyFix() {
	start := copyUserPC()
	for i := uintptr(4); i < 32*4; i += 4 {
		if *word[uint32](start + i) == ret {
			copyStart, copyFix = start, start+i-4
			return
		}
	}
}

// word is the T at a (an address of the image's text).
func word[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }
