// Package tsc is the kernel's monotonic clock: the time-stamp counter scaled
// to nanoseconds. The kernel calibrates it once at boot (SetHz).
//
// Kernel-context: no allocation, no runtime calls.
package tsc

import (
	"math/bits"

	"yolk/drivers/x86"
)

var (
	hz   uint64
	base uint64
	mult uint64 // ns = (ticks * mult) >> 32
)

// SetHz starts the clock at 0 with the counter running at f Hz.
func SetHz(f uint64) {
	hz = f
	mult = (1e9 << 32) / f
	base = x86.Rdtsc()
}

// Hz is the calibrated counter frequency.
func Hz() uint64 { return hz }

// Base is the counter value at which the clock read 0.
func Base() uint64 { return base }

// Nanotime is nanoseconds since SetHz.
func Nanotime() int64 {
	h, l := bits.Mul64(x86.Rdtsc()-base, mult)
	return int64(h<<32 | l>>32)
}

// Mult is the scale: ns = ((counter - Base()) * Mult()) >> 32.
func Mult() uint64 { return mult }
