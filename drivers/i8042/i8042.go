//go:build amd64

// Package i8042 resets the machine through the PC keyboard controller's
// reset line (command 0xFE on port 0x64, the pulse-output command for its
// CPU-reset pin). A microVM engine that has no other way out takes that
// reset as the guest's end: Firecracker stops the VM, Cloud Hypervisor
// too, and QEMU with -no-reboot exits with status 0.
//
// Kernel-context: no allocation, no runtime calls.
package i8042

import "yolk/arch/amd64"

const (
	portStatus  = 0x64
	portCommand = 0x64
	statusIBF   = 0x02 // the input buffer is full: the controller has not taken the last byte
	cmdReset    = 0xFE
)

// Reset asks the controller to reset the machine: it waits, bounded as
// Linux's kb_wait does (a missing controller reads all ones), for room in
// its input buffer, then sends the command. It returns only when nothing
// reset the machine (no controller).
func Reset() {
	for i := 0; i < 0x10000 && amd64.Inb(portStatus)&statusIBF != 0; i++ {
	}
	amd64.Outb(portCommand, cmdReset)
}
