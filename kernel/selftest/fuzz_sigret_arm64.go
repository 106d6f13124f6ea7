package main

import (
	"math/rand/v2"
	"unsafe"
)

// sigretReserved are FPSR's reserved bits (all but the cumulative
// exception flags, QC, and NZCV of AArch32).
const sigretReserved = 0x07FFFF60

// sigretFrame builds an arm64 rt_sigframe (siginfo, then the ucontext:
// where rt_sigreturn reads it, at SP) in buf and returns SP for the
// probe, the kind of damage and what it must end in.
func sigretFrame(rng *rand.Rand, buf *[3 * pageSize]byte, mask uint64, land uintptr) (uintptr, string, int) {
	const uc, sigmask, mc = 128, 128 + 40, 128 + 176
	const regs, sp, pc, pstate, fp = mc + 8, mc + 256, mc + 264, mc + 272, mc + 288
	base := uintptr(unsafe.Pointer(&buf[0]))
	frame := (base + 63) &^ 63
	b := buf[frame-base:]
	for i := 0; i < 31; i++ { // X0..X30: anything (the landing puts back what Go needs; the probe writes X28, g)
		putU64(b, regs+i*8, rng.Uint64())
	}
	putU64(b, sp, 0x7e0000000000+rng.Uint64N(1<<30)&^15)
	putU64(b, pc, uint64(land))
	putU64(b, pstate, rng.Uint64()) // the kernel keeps NZCV
	putU64(b, sigmask, mask)
	putU32(b, fp, 0x46508001) // FPSIMD_MAGIC
	putU32(b, fp+4, 528)
	kind, want := "random registers", sigretLands
	switch rng.IntN(9) {
	case 1:
		kind = "reserved FP control bits"
		putU32(b, fp+8, rng.Uint32())  // FPSR
		putU32(b, fp+12, rng.Uint32()) // FPCR
	case 2:
		kind, want = "non-canonical PC", sigretFaults
		putU64(b, pc, 1<<63|rng.Uint64N(1<<47))
	case 3:
		kind, want = "kernel-half PC", sigretFaults
		putU64(b, pc, 0xffff800000000000+rng.Uint64N(1<<40))
	case 4:
		kind, want = "PC 0", sigretFaults
		putU64(b, pc, 0)
	case 5:
		kind, want = "kernel-half or non-canonical SP", sigretEither
		putU64(b, sp, []uint64{0xffff800000000000, 1 << 63, ^uint64(0) &^ 15}[rng.IntN(3)])
	case 6:
		kind, want = "bad FP record", sigretEither // Linux refuses an unknown record; yolk skips it
		putU32(b, fp, rng.Uint32())
		putU32(b, fp+4, rng.Uint32())
	case 7:
		kind, want = "no frame", sigretFaults
		return []uintptr{0x7e0000000000, 0xffff800000000000, 8}[rng.IntN(3)], kind, want
	}
	return frame, kind, want
}
