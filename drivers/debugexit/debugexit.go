//go:build amd64

// Package debugexit drives QEMU's isa-debug-exit device: a write of v to its
// port ends QEMU with exit status (v<<1)|1.
//
// Kernel-context: no allocation, no runtime calls.
package debugexit

import "yolk/arch/amd64"

// Port is the device's I/O base as the host tool configures it
// (-device isa-debug-exit,iobase=0xf4,iosize=0x04).
const Port = 0xf4

// Exit asks QEMU to exit with status (code<<1)|1. It returns only when the
// device is absent (real hardware, or QEMU started without it).
func Exit(code uint8) {
	amd64.Outl(Port, uint32(code))
}
