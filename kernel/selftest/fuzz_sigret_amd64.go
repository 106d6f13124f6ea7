package main

import (
	"math/rand/v2"
	"unsafe"
)

// sigretReserved are MXCSR's reserved bits.
const sigretReserved = 0xFFFF0000

// sigretFrame builds an amd64 rt_sigframe's ucontext (where rt_sigreturn
// reads it: at SP) in buf and returns SP for the probe, the kind of
// damage and what it must end in.
func sigretFrame(rng *rand.Rand, buf *[3 * pageSize]byte, mask uint64, land uintptr) (uintptr, string, int) {
	const gregs, fpregs, sigmask = 40, 40 + 23*8, 304 - 8
	base := uintptr(unsafe.Pointer(&buf[0]))
	uc := (base + 63) &^ 63
	fp := uc + 1024
	b := buf[uc-base:]
	for i := 0; i < 15; i++ { // R8..RCX: anything
		putU64(b, gregs+i*8, rng.Uint64())
	}
	putU64(b, gregs+15*8, 0x7e0000000000+rng.Uint64N(1<<30)) // RSP: the landing sets its own
	putU64(b, gregs+16*8, uint64(land))
	putU64(b, gregs+17*8, rng.Uint64()) // RFLAGS: the kernel keeps the arithmetic flags, DF, AC
	putU64(b, fpregs, uint64(fp))
	putU64(b, sigmask, mask)
	fxsave(fp)
	putU32(buf[fp-base:], 24, 0x1F80) // MXCSR
	kind, want := "random registers", sigretLands
	switch rng.IntN(9) {
	case 1:
		kind = "reserved FP control bits"
		putU32(buf[fp-base:], 24, 0x1F80|1<<(16+rng.IntN(16)))
	case 2:
		kind, want = "non-canonical RIP", sigretFaults
		putU64(b, gregs+16*8, 1<<63|rng.Uint64N(1<<47))
	case 3:
		kind, want = "kernel-half RIP", sigretFaults
		putU64(b, gregs+16*8, 0xffff800000000000+rng.Uint64N(1<<40))
	case 4:
		kind, want = "RIP 0", sigretFaults
		putU64(b, gregs+16*8, 0)
	case 5:
		kind, want = "kernel-half or non-canonical RSP", sigretEither
		putU64(b, gregs+15*8, []uint64{0xffff800000000000, 1 << 63, ^uint64(0) &^ 15}[rng.IntN(3)])
	case 6:
		kind, want = "misaligned or unmapped FP area", sigretFaults
		putU64(b, fpregs, []uint64{uint64(fp + 8), 0x7e0000000000, 0xffff800000000000}[rng.IntN(3)])
	case 7:
		kind, want = "no frame", sigretFaults
		return []uintptr{0x7e0000000000, 0xffff800000000000, 8}[rng.IntN(3)], kind, want
	}
	return uc, kind, want
}
