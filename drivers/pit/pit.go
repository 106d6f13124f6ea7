// Package pit uses the 8254 programmable interval timer's channel 2 as a
// reference clock to calibrate faster counters (TSC, local APIC timer).
//
// Kernel-context: no allocation, no runtime calls.
package pit

import "yolk/drivers/x86"

// Hz is the PIT's input clock.
const Hz = 1193182

// Measure runs f's counter across a gated channel-2 countdown of ms
// milliseconds and returns the counter difference. ok is false if the
// countdown never finished within limit counter ticks (no PIT).
func Measure(ms int, counter func() uint64, limit uint64) (delta uint64, ok bool) {
	latch := Hz * ms / 1000
	// Gate on, speaker off.
	x86.Outb(0x61, x86.Inb(0x61)&^0x02|0x01)
	// Channel 2, lobyte/hibyte, mode 0 (interrupt on terminal count).
	x86.Outb(0x43, 0xB0)
	x86.Outb(0x42, uint8(latch))
	x86.Outb(0x42, uint8(latch>>8))
	t0 := counter()
	for x86.Inb(0x61)&0x20 == 0 {
		if counter()-t0 > limit {
			return 0, false
		}
	}
	return counter() - t0, true
}

// MaskPIC remaps the legacy 8259 PICs to vectors base..base+15 and masks
// every line, so that they can neither raise interrupts nor alias CPU
// exceptions.
func MaskPIC(base uint8) {
	x86.Outb(0x20, 0x11)
	x86.Outb(0xA0, 0x11)
	x86.Outb(0x21, base)
	x86.Outb(0xA1, base+8)
	x86.Outb(0x21, 4)
	x86.Outb(0xA1, 2)
	x86.Outb(0x21, 1)
	x86.Outb(0xA1, 1)
	x86.Outb(0x21, 0xFF)
	x86.Outb(0xA1, 0xFF)
}
