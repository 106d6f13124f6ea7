// Package kernel is yolk's kernel for amd64: it sits underneath the
// unmodified Go runtime (GOOS=linux) and answers its system calls. It takes
// over from boot in 64-bit mode, sets up the CPU (GDT, IDT, TSS, SYSCALL,
// SSE), physical memory and the page tables, the clock and timer, starts
// the other CPUs (smp.go: ACPI MADT, INIT-SIPI-SIPI, a real-mode
// trampoline), builds the Linux-style initial stack and starts the
// runtime's entry point as the first task. Faults are reported on the
// serial console with registers and a backtrace, stop every CPU and end
// QEMU with a failure status. docs/smp.md states the multiprocessor rules:
// interrupts, idle and wake-up, timers, TLB shootdown, the locks.
//
// Kernel-context: everything here runs inside traps and system calls on
// kernel stacks under a fake g, underneath a runtime that may be in any
// state. It never allocates on the Go heap, never stores Go pointers into
// memory (no write barriers: addresses are uintptr), and never calls into the
// runtime's scheduler. kcontext_test.go checks this on the built image.
package kernel
