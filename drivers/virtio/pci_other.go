//go:build !amd64

package virtio

// No configuration ports off amd64: every function reads as absent, and
// PCIConfig needs an ECAM address.

func portRead32(addr uint32) uint32          { return 0xffffffff }
func portWrite16(addr uint32, off, v uint16) {}
func portWrite32(addr, v uint32)             {}
