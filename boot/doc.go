// Package boot holds the per-architecture entry code that runs before any Go
// code: on amd64 the PVH entry (32-bit protected mode, paging off), the switch
// to long mode with identity-mapped early page tables, and the jump to the
// kernel's 64-bit start. It also decodes the PVH start-info block.
//
// Kernel-context: no allocation, no write barriers, no runtime calls. The
// 32-bit code is Go assembly restricted to encodings that mean the same in
// 32-bit and 64-bit mode (no REX prefixes, no RIP-relative operands).
package boot
