package kernel

import "unsafe"

// Regs is the frame the entry assembly pushes on a syscall or trap.
type Regs struct {
	FSBase                                                           uint64
	R15, R14, R13, R12, R11, R10, R9, R8, BP, DI, SI, DX, CX, BX, AX uint64
	Vector, Error                                                    uint64
	IP, CS, Flags, SP, SS                                            uint64
}

const regsSize = unsafe.Sizeof(Regs{})

// at converts an address the kernel owns or has checked to a pointer.
func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

// bytesAt is the n bytes at address a.
func bytesAt(a uintptr, n int) []byte { return unsafe.Slice(at[byte](a), n) }
