// Package clock is the kernel's monotonic clock: the CPU's free-running
// counter (the x86 time-stamp counter, the arm64 virtual counter
// CNTVCT_EL0) scaled to nanoseconds. The kernel sets its frequency once at
// boot (SetHz: calibrated on amd64, CNTFRQ_EL0 on arm64).
//
// Kernel-context: no allocation, no runtime calls.
package clock

import "math/bits"

var (
	hz   uint64
	base uint64
	mult uint64 // ns = (ticks * mult) >> 32
)

// SetHz starts the clock at 0 with the counter running at f Hz.
func SetHz(f uint64) {
	hz = f
	mult = (1e9 << 32) / f
	base = Counter()
}

// Hz is the counter frequency.
func Hz() uint64 { return hz }

// Base is the counter value at which the clock read 0.
func Base() uint64 { return base }

// Nanotime is nanoseconds since SetHz.
func Nanotime() int64 {
	h, l := bits.Mul64(Counter()-base, mult)
	return int64(h<<32 | l>>32)
}

// Mult is the scale: ns = ((counter - Base()) * Mult()) >> 32.
func Mult() uint64 { return mult }
