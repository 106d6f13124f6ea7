package kernel

import "unsafe"

// regsSize is the size of the per-arch trap frame (regs_$GOARCH.go).
const regsSize = unsafe.Sizeof(Regs{})

// at converts an address the kernel owns or has checked to a pointer.
func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

// bytesAt is the n bytes at address a.
func bytesAt(a uintptr, n int) []byte { return unsafe.Slice(at[byte](a), n) }
