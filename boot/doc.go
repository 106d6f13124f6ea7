// Package boot holds the per-architecture entry code that runs before any Go
// code. amd64: the PVH entry (32-bit protected mode, paging off), the switch
// to long mode with identity-mapped early page tables, and the jump to the
// kernel's 64-bit start; it also decodes the PVH start-info block. arm64:
// the ELF entry QEMU virt jumps to (and PSCI CPU_ON's for secondaries): the
// drop from EL2 to EL1, the early page tables, the MMU and FP/SIMD, and the
// jump to the kernel's start on SP_EL0.
//
// Kernel-context: no allocation, no write barriers, no runtime calls. The
// amd64 32-bit code is Go assembly restricted to encodings that mean the
// same in 32-bit and 64-bit mode (no REX prefixes, no RIP-relative
// operands); the arm64 code writes EL2 registers the assembler does not
// name as WORD encodings.
package boot
