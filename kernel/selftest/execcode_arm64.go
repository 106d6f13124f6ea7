package main

// retCode is a function that returns at once: RET (X30).
var retCode = []byte{0xc0, 0x03, 0x5f, 0xd6}

// syncICache makes the instruction written at p visible to instruction
// fetches, as a Linux program must before it runs code it wrote
// (__clear_cache): the data cache line cleaned to the point of
// unification, the instruction cache's invalidated (execcode_arm64.s).
// QEMU does not need it; a Cortex-A53 or A72 does.
func syncICache(p uintptr)
