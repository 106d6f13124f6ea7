// Package arm64 wraps the arm64 instructions the kernel and its drivers need
// and Go cannot express: waiting for an interrupt, TLB maintenance and the
// barriers after page-table writes, ID registers, the spin-table release;
// and the kernel's one copy to and from the program's memory (CopyUser)
// with its exception table (UserFixup).
//
// Kernel-context: every function is a leaf in assembly (UserFixup, in Go,
// reads the text); no allocation. Only
// the instructions themselves: nothing here names a kernel symbol or a
// kernel type's layout (those stay in the kernel's own assembly), and a
// device's own system registers (GIC, generic timer) stay with its driver.
package arm64
