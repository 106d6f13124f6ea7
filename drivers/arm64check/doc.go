// Package arm64check holds a test: it builds a linux/arm64 program that
// calls every function of the arm64 drivers (fdt, gic, gtimer, mmio,
// pl011, psci, semihosting) and of virtio, and checks in its disassembly
// that none of them calls the allocator, a write barrier or the runtime's
// scheduler, the same rule kernel's TestKernelContextNoAllocNoWriteBarrier
// applies to the amd64 image. It proves the drivers' kernel-context
// promise before an arm64 kernel links them (virtio is linked by neither
// kernel yet; this is its proof until then); it has no code of its own.
package arm64check
