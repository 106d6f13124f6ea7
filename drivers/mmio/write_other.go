//go:build !amd64

package mmio

import "sync/atomic"

// Write32 writes v to the 32-bit register at address a (arm64: STLR).
func Write32(a uintptr, v uint32) { atomic.StoreUint32(at[uint32](a), v) }

// Write64 writes v to the 64-bit register at address a (8-byte aligned).
func Write64(a uintptr, v uint64) { atomic.StoreUint64(at[uint64](a), v) }
