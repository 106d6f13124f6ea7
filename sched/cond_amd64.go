package sched

import (
	"unsafe"

	"yolk/arch/amd64"
)

// loadCond is the 32-bit word at a, a wait's condition, read through the
// architecture's user copy: false if a is the program's memory and no
// longer mapped (the kernel's fault handler fixes the copy up).
func loadCond(a uintptr) (v uint32, ok bool) {
	ok = amd64.CopyUser(uintptr(unsafe.Pointer(&v)), a, 4) == 0
	return v, ok
}
