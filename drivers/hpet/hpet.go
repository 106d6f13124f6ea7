// Package hpet reads the High Precision Event Timer's main counter, a
// reference clock for calibrating the TSC (kernel/tsc) where there is no
// PIT. Its registers come from the ACPI "HPET" table (acpi.HPETBase).
//
// Kernel-context: no allocation, no runtime calls; HPET holds no pointers.
package hpet

import "yolk/drivers/mmio"

// Registers (IA-PC HPET 1.0a, 2.3).
const (
	regCaps    = 0x00 // bits 63:32 the counter's period in fs; bit 13 a 64-bit counter
	regConfig  = 0x10 // bit 0 ENABLE_CNF: the main counter runs
	regCounter = 0xF0
)

// HPET is a timer's main counter: its registers' address, rate and width.
type HPET struct {
	base uintptr
	Hz   uint64
	Mask uint64
}

// Open reads the capabilities of the HPET whose registers are at base (a
// virtual address), starts its main counter if the firmware left it
// stopped, and reports false for a period of 0 or over 100 ns (the
// specification's bound: no HPET there).
func Open(base uintptr) (HPET, bool) {
	c := mmio.Read64(base + regCaps)
	period := c >> 32
	if period == 0 || period > 100e6 {
		return HPET{}, false
	}
	if cfg := mmio.Read64(base + regConfig); cfg&1 == 0 {
		mmio.Write64(base+regConfig, cfg|1)
	}
	h := HPET{base: base, Hz: 1e15 / period, Mask: 0xFFFFFFFF}
	if c&(1<<13) != 0 {
		h.Mask = ^uint64(0)
	}
	return h, true
}

// Count is the main counter.
func (h *HPET) Count() uint64 { return mmio.Read64(h.base+regCounter) & h.Mask }
