package main

import (
	"math/rand/v2"
	"unsafe"

	"golang.org/x/sys/cpu"
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
	switch rng.IntN(10) {
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
	case 8:
		// An XSAVE area as a signal frame holds one (Linux's software
		// bytes and second magic number). Its header either holds some
		// of x87, SSE and AVX (the frame lands) or one field XRSTOR
		// faults on: XSTATE_BV with state not enabled, XCOMP_BV, a
		// reserved byte (as Linux, SIGSEGV).
		if !cpu.X86.HasAVX {
			break // frames hold the FXSAVE image alone
		}
		kind = "an XSAVE header"
		fb := buf[fp-base:]
		putU32(fb, 464, 0x46505853)
		putU32(fb, 468, 832+4)
		putU64(fb, 472, 7)
		putU32(fb, 480, 832)
		putU32(fb, 832, 0x46505845)
		clear(fb[512:576])
		putU64(fb, 512, rng.Uint64N(8))
		if rng.IntN(2) == 0 {
			kind, want = "an XSAVE header XRSTOR faults on", sigretFaults
			switch rng.IntN(3) {
			case 0:
				putU64(fb, 512, 8<<rng.IntN(60))
			case 1:
				putU64(fb, 520, 1<<63|rng.Uint64N(8))
			case 2:
				fb[528+rng.IntN(48)] = byte(1 + rng.IntN(255))
			}
		}
	}
	return uc, kind, want
}
