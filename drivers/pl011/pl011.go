// Package pl011 drives an Arm PrimeCell PL011 UART (QEMU virt's console at
// 0x09000000, SPI 1 = interrupt ID 33; Raspberry Pi's at 0x3F201000):
// line setup, polled transmit, and receive with its interrupt for console
// input. It is our own: TamaGo's arm64 drivers do not build with the stock
// Go toolchain.
//
// Kernel-context: no allocation, no runtime calls. The registers are
// reached through package mmio (device memory); every function acts on
// the UART at the Base it is given. Transmit and receive may run on
// different CPUs at once (they touch different registers), but two
// writers need the caller's lock.
package pl011

import "yolk/drivers/mmio"

// Register offsets and bits (PL011 TRM, DDI 0183G, 3.2-3.3).
const (
	regDR    = 0x00 // data; bits 8-11 are the received byte's error flags
	regRSR   = 0x04 // receive status / error clear
	regFR    = 0x18
	regIBRD  = 0x24
	regFBRD  = 0x28
	regLCRH  = 0x2C
	regCR    = 0x30
	regIFLS  = 0x34
	regIMSC  = 0x38
	regMIS   = 0x40
	regICR   = 0x44
	regDMACR = 0x48

	frBUSY = 1 << 3
	frRXFE = 1 << 4 // receive FIFO empty
	frTXFF = 1 << 5 // transmit FIFO full

	lcrhFEN   = 1 << 4
	lcrhWLEN8 = 3 << 5

	crUARTEN = 1 << 0
	crTXE    = 1 << 8
	crRXE    = 1 << 9

	// Interrupt bits (IMSC, RIS, MIS, ICR).
	IntRX  = 1 << 4 // receive FIFO at its trigger level
	IntRT  = 1 << 6 // receive timeout: bytes wait below the level
	intAll = 0x7FF

	drErrors = 0xF00 // framing, parity, break, overrun
)

// drainSpins bounds Init's wait for the transmitter: about 10 ms of
// reads at 115200 baud on hardware, far more than a 32-byte FIFO needs.
const drainSpins = 1 << 20

// QEMU virt's console.
const (
	VirtBase = 0x09000000
	VirtIRQ  = 33
	// VirtClock is the UART reference clock virt's device tree gives
	// (apb-pclk, 24 MHz); QEMU ignores the divisor anyway.
	VirtClock = 24_000_000
)

// Register access; hosted tests replace them with a model of the device.
var (
	read32  = mmio.Read32
	write32 = mmio.Write32
)

// UART is one PL011. It is a plain value so a package-level UART is static
// data, usable before the runtime has initialised anything.
type UART struct {
	Base uintptr
}

func (u UART) r(off uintptr) uint32    { return read32(u.Base + off) }
func (u UART) w(off uintptr, v uint32) { write32(u.Base+off, v) }

// Divisor is the baud-rate divisor for a reference clock of clk Hz: the
// integer part and the 6-bit fraction, rounded to nearest (TRM 3.3.6:
// clk / (16 * baud)).
func Divisor(clk, baud uint32) (ibrd, fbrd uint32) {
	// 64 * clk / (16 * baud) = 4 * clk / baud, in 1/64ths, rounded.
	d := (8*uint64(clk)/uint64(baud) + 1) / 2
	return uint32(d >> 6), uint32(d & 63)
}

// Init programs 8N1 with FIFOs, interrupts masked and cleared, and enables
// transmit and receive. If clk and baud are nonzero it also sets the
// divisor for baud at reference clock clk; else it keeps the firmware's
// (QEMU's model ignores it). It lets what firmware queued drain first
// (BUSY stays set while the FIFO holds data, even with the UART disabled,
// so the wait is bounded), then follows the TRM's order: disable, flush
// the FIFOs, program, enable.
func (u UART) Init(clk, baud uint32) {
	for i := 0; i < drainSpins && u.r(regFR)&frBUSY != 0; i++ {
	}
	u.w(regCR, 0)
	u.w(regLCRH, 0) // FEN off flushes the FIFOs
	if clk != 0 && baud != 0 {
		i, f := Divisor(clk, baud)
		u.w(regIBRD, i)
		u.w(regFBRD, f)
	}
	u.w(regLCRH, lcrhWLEN8|lcrhFEN) // the write that latches IBRD/FBRD
	u.w(regIFLS, 0)                 // RX and TX interrupt at 1/8 full
	u.w(regIMSC, 0)
	u.w(regICR, intAll)
	u.w(regDMACR, 0)
	u.w(regCR, crUARTEN|crTXE|crRXE)
}

// Put sends one byte, waiting for room in the transmit FIFO.
func (u UART) Put(c byte) {
	for u.r(regFR)&frTXFF != 0 {
	}
	u.w(regDR, uint32(c))
}

// Write sends p (bytes as they are: no newline translation).
func (u UART) Write(p []byte) {
	for _, c := range p {
		u.Put(c)
	}
}

// Flush waits until every byte has left the transmitter.
func (u UART) Flush() {
	for u.r(regFR)&frBUSY != 0 {
	}
}

// Get returns the next received byte, if there is one. A byte received
// with a framing, parity, break or overrun error is still returned (ok),
// with bad set, and the error is cleared.
func (u UART) Get() (c byte, ok, bad bool) {
	if u.r(regFR)&frRXFE != 0 {
		return 0, false, false
	}
	d := u.r(regDR)
	if d&drErrors != 0 {
		u.w(regRSR, 0)
		bad = true
	}
	return byte(d), true, bad
}

// EnableRX unmasks the receive and receive-timeout interrupts: the UART's
// line (virt: ID 33) is raised while bytes wait in the FIFO.
func (u UART) EnableRX() { u.w(regIMSC, u.r(regIMSC)|IntRX|IntRT) }

// DisableRX masks them again.
func (u UART) DisableRX() { u.w(regIMSC, u.r(regIMSC)&^(IntRX|IntRT)) }

// Pending is the masked interrupt status (IntRX, IntRT, ...).
func (u UART) Pending() uint32 { return u.r(regMIS) }

// AckRX clears the receive interrupts. Draining the FIFO with Get clears
// them too; call AckRX after draining, before the GIC's end of interrupt,
// so that a timeout raised while draining is not left asserted.
func (u UART) AckRX() { u.w(regICR, IntRX|IntRT) }
