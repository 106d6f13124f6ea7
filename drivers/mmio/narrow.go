//go:build amd64 || arm64

package mmio

// The 8- and 16-bit accesses are assembly: sync/atomic has no loads or
// stores of those widths. amd64: one MOVB/MOVW (device registers are
// uncached, so the CPU neither merges nor reorders them). arm64:
// LDARB/LDARH and STLRB/STLRH, ordered like the 32- and 64-bit accesses.
// The compiler cannot move memory accesses across a call to them.

// Read8 reads the 8-bit register at address a.
func Read8(a uintptr) uint8

// Write8 writes v to the 8-bit register at address a.
func Write8(a uintptr, v uint8)

// Read16 reads the 16-bit register at address a (2-byte aligned).
func Read16(a uintptr) uint16

// Write16 writes v to the 16-bit register at address a (2-byte aligned).
func Write16(a uintptr, v uint16)
