// Package pit uses the 8254 programmable interval timer's channel 0 as a
// reference clock to calibrate faster counters (TSC, local APIC timer).
//
// Kernel-context: no allocation, no runtime calls.
package pit

import "yolk/drivers/x86"

// Hz is the PIT's input clock.
const Hz = 1193182

// Measure counts f's counter against channel 0 of the PIT for about
// 40 ms and returns the counter's rate in Hz. Channel 0's gate is always
// open (channel 2's needs port 0x61, which QEMU's microvm lacks), and the
// count is polled through latch commands, so the PIC line it drives may stay
// masked. ok is false if the PIT's count does not move within limit counter
// ticks (no PIT).
func Measure(counter func() uint64, limit uint64) (hz uint64, ok bool) {
	const span = 48000   // PIT ticks, ~40 ms
	x86.Outb(0x43, 0x30) // channel 0, lobyte/hibyte, mode 0
	x86.Outb(0x40, 0xFF)
	x86.Outb(0x40, 0xFF)
	prev, t0 := read0(), counter()
	t := t0
	var ticks uint64
	for ticks < span {
		var c uint64
		c, t = read0(), counter()
		// The count wraps from 0 to 0xFFFF: sum the steps modulo 2^16,
		// which is right while two reads are less than 55 ms apart.
		ticks += (prev - c) & 0xFFFF
		prev = c
		if t-t0 > limit {
			return 0, false
		}
	}
	return (t - t0) * Hz / ticks, true
}

// read0 latches and reads channel 0's count.
func read0() uint64 {
	x86.Outb(0x43, 0x00)
	lo := x86.Inb(0x40)
	hi := x86.Inb(0x40)
	return uint64(hi)<<8 | uint64(lo)
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
