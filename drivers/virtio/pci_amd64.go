package virtio

import "yolk/arch/amd64"

// Configuration mechanism #1's ports (PCI Local Bus 3.0, 3.2.2.3.2); hosted
// tests replace the port accessors with a model.
const (
	portConfigAddress = 0xcf8
	portConfigData    = 0xcfc
)

var (
	inl  = amd64.Inl
	outl = amd64.Outl
	outw = amd64.Outw
)

func portRead32(addr uint32) uint32 {
	outl(portConfigAddress, addr)
	return inl(portConfigData)
}

func portWrite16(addr uint32, off, v uint16) {
	outl(portConfigAddress, addr)
	outw(portConfigData+off&2, v)
}

func portWrite32(addr, v uint32) {
	outl(portConfigAddress, addr)
	outl(portConfigData, v)
}
