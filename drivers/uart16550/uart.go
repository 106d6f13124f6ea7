//go:build amd64

// Package uart16550 drives an 8250/16550-compatible UART on x86 I/O ports
// (COM1 at 0x3F8 on QEMU's pc, q35 and microvm machines). Transmit only,
// polled: the kernel's console and the self-test report go through it.
// Transmission is TamaGo's soc/intel/uart; that driver leaves the line
// settings to firmware, so Init programs them (there is no firmware under a
// PVH boot).
//
// Kernel-context: no allocation, no runtime calls.
package uart16550

import (
	"github.com/usbarmory/tamago/soc/intel/uart"

	"yolk/arch/amd64"
)

// COM1 is the first serial port's I/O base.
const COM1 = 0x3F8

// Register offsets.
const (
	regData = 0 // divisor latch low while DLAB is set
	regIER  = 1
	regFCR  = 2
	regLCR  = 3
	regMCR  = 4
	regLSR  = 5

	lsrDataReady = 0x01
	lsrTHRE      = 0x20 // the transmit holding register is empty
	lsrTEMT      = 0x40 // the holding and shift registers are both empty
	ierRx        = 0x01 // received data available
	mcrOut2      = 0x08 // gates the interrupt line on PC serial ports
)

// UART is one port. It is a plain value so a package-level UART is static
// data, usable before the runtime has initialised anything.
type UART struct {
	Base uint16
}

// Init programs 115200 baud, 8N1, FIFOs on, interrupts off.
func (u *UART) Init() {
	b := u.Base
	amd64.Outb(b+regIER, 0)
	amd64.Outb(b+regLCR, 0x80) // DLAB
	amd64.Outb(b+regData, 1)   // divisor 1: 115200 baud
	amd64.Outb(b+regIER, 0)
	amd64.Outb(b+regLCR, 0x03) // 8N1
	amd64.Outb(b+regFCR, 0xC7) // enable and clear FIFOs
	amd64.Outb(b+regMCR, 0x03) // DTR, RTS
}

// TxReady reports whether the transmitter has room for a byte.
func (u *UART) TxReady() bool { return amd64.Inb(u.Base+regLSR)&lsrTHRE != 0 }

// TxIdle reports whether every byte written has left the transmitter.
func (u *UART) TxIdle() bool { return amd64.Inb(u.Base+regLSR)&lsrTEMT != 0 }

// Put sends one byte, waiting for room in the transmitter.
func (u *UART) Put(c byte) {
	hw := uart.UART{Base: u.Base}
	hw.Tx(c)
}

// EnableRx turns the receive interrupt on or off (and, once, the OUT2 gate
// of the interrupt line).
func (u *UART) EnableRx(on bool) {
	amd64.Outb(u.Base+regMCR, 0x03|mcrOut2)
	var ier uint8
	if on {
		ier = ierRx
	}
	amd64.Outb(u.Base+regIER, ier)
}

// Get returns a received byte, if there is one.
func (u *UART) Get() (byte, bool) {
	if amd64.Inb(u.Base+regLSR)&lsrDataReady == 0 {
		return 0, false
	}
	return amd64.Inb(u.Base + regData), true
}
