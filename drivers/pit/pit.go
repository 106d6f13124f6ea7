//go:build amd64

// Package pit uses the 8254 programmable interval timer's channel 0 as a
// reference clock to calibrate faster counters (TSC, local APIC timer).
//
// Kernel-context: no allocation, no runtime calls.
package pit

import "yolk/arch/amd64"

// Hz is the PIT's input clock.
const Hz = 1193182

// warmup is how many readings are taken before a measurement starts:
// the narrowest of their brackets sets the limit above which a reading is
// left out (a reading stretched by an interrupt, an SMI or, under
// emulation, the translation of this code or a host preemption).
const warmup = 8

// Measure counts f's counter against channel 0 of the PIT for span PIT
// ticks (Hz per second) and returns the counter's rate in Hz. Channel 0's
// gate is always open (channel 2's needs port 0x61, which QEMU's microvm
// lacks), and the count is polled through latch commands, so the PIC line
// it drives may stay masked. ok is false if the measurement takes more
// than limit counter ticks (no PIT: its count never moves).
//
// The rate is the least-squares slope of the PIT's count against the
// counter over every reading of the span, each timed at the middle of the
// two counter reads around its latch command; readings whose bracket is
// more than twice the narrowest warm-up bracket are left out (none when
// that bracket is zero: a counter coarser than a port access), and the
// span counts from the first reading kept to the last. A single pair of
// readings would be off by up to one PIT tick (838 ns) at each end, 0.17 %
// of a 1 ms span; the fit over hundreds of readings averages that
// quantization away (under QEMU TCG, 1 ms spans come within 0.007 % of
// the host's TSC rate; kernel/time.go has the numbers). A host or SMI
// stall inside the span costs nothing as long as two readings are less
// than 55 ms apart.
func Measure(counter func() uint64, span, limit uint64) (hz uint64, ok bool) {
	amd64.Outb(0x43, 0x30) // channel 0, lobyte/hibyte, mode 0
	amd64.Outb(0x40, 0xFF)
	amd64.Outb(0x40, 0xFF)
	prev, t0, width := latch(counter)
	for i := 1; i < warmup; i++ {
		c, t, w := latch(counter)
		if w < width {
			width = w
		}
		prev, t0 = c, t // the fit's time origin
	}
	if width == 0 {
		// The counter is coarser than a port access: brackets say nothing.
		width = ^uint64(0)
	} else {
		width *= 2
	}
	var (
		ticks       uint64  // PIT ticks since the last warm-up reading
		ticks1      uint64  // ticks at the first reading in the fit
		n           float64 // readings in the fit
		mx, my, sxx float64 // running means and sums of squares (Welford)
		sxy         float64
	)
	for {
		c, t, w := latch(counter)
		// The count wraps from 0 to 0xFFFF: sum the steps modulo 2^16,
		// which is right while two reads are less than 55 ms apart.
		ticks += (prev - c) & 0xFFFF
		prev = c
		if t-t0 > limit {
			return 0, false
		}
		if w > width {
			continue
		}
		if n == 0 {
			ticks1 = ticks
		}
		x, y := float64(t-t0), float64(ticks)
		n++
		dx := x - mx
		mx += dx / n
		my += (y - my) / n
		sxx += dx * (x - mx)
		sxy += dx * (y - my)
		if ticks-ticks1 >= span {
			break
		}
	}
	if sxy <= 0 {
		return 0, false
	}
	return uint64(float64(Hz) * sxx / sxy), true
}

// latch latches and reads channel 0's count, and returns it with the
// counter at the latch command (the middle of the two reads around it) and
// the width of that bracket.
func latch(counter func() uint64) (count, t, width uint64) {
	before := counter()
	amd64.Outb(0x43, 0x00)
	after := counter()
	lo := amd64.Inb(0x40)
	hi := amd64.Inb(0x40)
	return uint64(hi)<<8 | uint64(lo), before + (after-before)/2, after - before
}

// MaskPIC remaps the legacy 8259 PICs to vectors base..base+15 and masks
// every line, so that they can neither raise interrupts nor alias CPU
// exceptions.
func MaskPIC(base uint8) {
	amd64.Outb(0x20, 0x11)
	amd64.Outb(0xA0, 0x11)
	amd64.Outb(0x21, base)
	amd64.Outb(0xA1, base+8)
	amd64.Outb(0x21, 4)
	amd64.Outb(0xA1, 2)
	amd64.Outb(0x21, 1)
	amd64.Outb(0xA1, 1)
	amd64.Outb(0x21, 0xFF)
	amd64.Outb(0xA1, 0xFF)
}

// Present reports whether channel 0 counts: a machine without a PIT
// (QEMU microvm with pit=off, Cloud Hypervisor) reads all ones from its
// ports. It programs channel 0 as Measure does and reads the count until
// it moves (a few µs) or 1000 reads have passed.
func Present() bool {
	amd64.Outb(0x43, 0x30)
	amd64.Outb(0x40, 0xFF)
	amd64.Outb(0x40, 0xFF)
	first, _, _ := latch(noCounter)
	for i := 0; i < 1000; i++ {
		if c, _, _ := latch(noCounter); c != first {
			return true
		}
	}
	return false
}

func noCounter() uint64 { return 0 }
