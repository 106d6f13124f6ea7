// Package kernel is yolk's kernel for amd64 and arm64: it sits underneath
// the unmodified Go runtime (GOOS=linux) and answers its system calls. It
// takes over from boot with paging on, sets up the CPU, physical memory and
// the page tables, the clock and timer, starts the other CPUs, builds the
// Linux-style initial stack and starts the runtime's entry point as the
// first task. Faults are reported on the serial console with registers and
// a backtrace, stop every CPU and end QEMU with a failure status.
// docs/smp.md states the multiprocessor rules (interrupts, idle and
// wake-up, timers, TLB shootdown, the locks); docs/arm64.md the arch seam:
// the files without a suffix are the arch-neutral core, each *_amd64 file
// has an *_arm64 twin (CPU set-up, entry and trap frames, signal frame,
// timer, vDSO, console, SMP start-up, the boot sequence). Memory
// management, with its own twins (page-table entries, TLB, physical map),
// is package kernel/mm.
//
// Kernel-context: everything here runs inside traps and system calls on
// kernel stacks under a fake g, underneath a runtime that may be in any
// state. It never allocates on the Go heap, never stores Go pointers into
// memory (no write barriers: addresses are uintptr), and never calls into the
// runtime's scheduler. kcontext_test.go checks this on the built images of
// both architectures.
package kernel
