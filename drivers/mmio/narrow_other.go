//go:build !amd64 && !arm64

package mmio

// Hosts other than amd64 and arm64 (never the kernel's): plain accesses
// through a pointer, enough for hosted builds and tests.

func Read8(a uintptr) uint8       { return *at[uint8](a) }
func Write8(a uintptr, v uint8)   { *at[uint8](a) = v }
func Read16(a uintptr) uint16     { return *at[uint16](a) }
func Write16(a uintptr, v uint16) { *at[uint16](a) = v }
