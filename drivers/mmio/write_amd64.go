package mmio

// Write32 writes v to the 32-bit register at address a: one MOVL.
func Write32(a uintptr, v uint32)

// Write64 writes v to the 64-bit register at address a (8-byte aligned):
// one MOVQ.
func Write64(a uintptr, v uint64)
