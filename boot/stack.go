package boot

// StackSize is the size of the boot stack. The boot context runs the kernel's
// initialisation on it and later becomes CPU 0's idle task.
const StackSize = 64 << 10

// Stack is the boot stack. It holds no Go pointers, so the collector ignores
// it.
var Stack [StackSize]byte

// PageTables is room for the early page tables built by the entry code: one
// top-level table (PML4; arm64 level 0), one PDPT (level 1) and four page
// directories (level 2) mapping the first 4 GiB with 2 MiB pages (blocks),
// one page table (arm64 level 3: the Raspberry Pi's first 2 MiB), plus one
// page of slack for 4 KiB alignment. The kernel keeps using
// these tables (one address space) and adds its own mappings to them.
var PageTables [8 * 4096]byte

// PageTableRoot returns the physical (= virtual) address of the PML4.
func PageTableRoot() uintptr {
	return (addrOf(&PageTables[0]) + 4095) &^ 4095
}

// StackBounds returns the boot stack's [lo, hi).
func StackBounds() (lo, hi uintptr) {
	lo = addrOf(&Stack[0])
	return lo, lo + StackSize
}
