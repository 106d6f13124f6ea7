// Package amd64 wraps the amd64 instructions the kernel and its drivers need
// and Go cannot express: port I/O, MSRs, control registers, CPUID, TSC,
// descriptor-table loads, interrupt flag and halt; and the kernel's one copy
// to and from the program's memory (CopyUser) with its exception table
// (UserFixup).
//
// Kernel-context: every function is a leaf in assembly (UserFixup, in Go,
// reads the text); no allocation. Only
// the instructions themselves: nothing here names a kernel symbol or a
// kernel type's layout (those stay in the kernel's own assembly).
package amd64
