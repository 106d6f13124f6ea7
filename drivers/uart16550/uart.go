// Package uart16550 drives an 8250/16550-compatible UART on x86 I/O ports
// (COM1 at 0x3F8 on QEMU's pc, q35 and microvm machines). Transmit only,
// polled: the kernel's console and the self-test report go through it.
//
// Kernel-context: no allocation, no runtime calls.
package uart16550

import "yolk/drivers/x86"

// COM1 is the first serial port's I/O base.
const COM1 = 0x3F8

// Register offsets.
const (
	regData = 0 // THR when written
	regIER  = 1
	regFCR  = 2
	regLCR  = 3
	regMCR  = 4
	regLSR  = 5

	lsrTHRE = 0x20 // transmit holding register empty
)

// UART is one port.
type UART struct {
	Base uint16
}

// Init programs 115200 baud, 8N1, FIFOs on, interrupts off.
func (u *UART) Init() {
	x86.Outb(u.Base+regIER, 0)
	x86.Outb(u.Base+regLCR, 0x80) // DLAB
	x86.Outb(u.Base+regData, 1)   // divisor 1: 115200 baud
	x86.Outb(u.Base+regIER, 0)
	x86.Outb(u.Base+regLCR, 0x03) // 8N1
	x86.Outb(u.Base+regFCR, 0xC7) // enable and clear FIFOs
	x86.Outb(u.Base+regMCR, 0x03) // DTR, RTS
}

// Put sends one byte, waiting for room in the transmitter.
func (u *UART) Put(c byte) {
	for x86.Inb(u.Base+regLSR)&lsrTHRE == 0 {
		x86.Pause()
	}
	x86.Outb(u.Base+regData, c)
}
