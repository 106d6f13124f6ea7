package boot

import "unsafe"

// PVH start-info layout (Xen public/arch-x86/hvm/start_info.h).
const (
	startInfoMagic = 0x336ec578

	// MemRAM is the memory-map type of usable RAM.
	MemRAM = 1
)

type startInfo struct {
	magic         uint32
	version       uint32
	flags         uint32
	nrModules     uint32
	modlistPaddr  uint64
	cmdlinePaddr  uint64
	rsdpPaddr     uint64
	memmapPaddr   uint64
	memmapEntries uint32
	_             uint32
}

// MemRegion is one entry of the firmware memory map.
type MemRegion struct {
	Addr, Size uint64
	Type       uint32
	_          uint32
}

// Info is what the kernel needs from the boot protocol. It holds addresses,
// not Go pointers, so it may live in kernel-owned memory.
type Info struct {
	Cmdline    uintptr // NUL-terminated, 0 if none
	RSDP       uintptr
	MemMap     uintptr // array of MemRegion
	MemEntries int
	// Module is the first boot module (QEMU -initrd), 0 if none, and
	// ModuleSize its length in bytes.
	Module, ModuleSize uintptr
	// Text is the physical address of an EGA text screen the boot
	// loader left (Multiboot2's framebuffer tag; GRUB under BIOS), 0 if
	// none, and its geometry: characters per row, rows, bytes per row.
	Text                          uintptr
	TextCols, TextRows, TextPitch int
}

// modlistEntry is one entry of the PVH module list.
type modlistEntry struct {
	paddr, size, cmdlinePaddr, _ uint64
}

// Region returns memory-map entry i.
func (in *Info) Region(i int) MemRegion {
	return *at[MemRegion](in.MemMap + uintptr(i)*unsafe.Sizeof(MemRegion{}))
}

// ParsePVH decodes the start-info block at addr. It reports false if the
// block is not a PVH start-info block or carries no memory map (version 0).
func ParsePVH(addr uintptr, in *Info) bool {
	si := at[startInfo](addr)
	if si.magic != startInfoMagic || si.version < 1 || si.memmapEntries == 0 {
		return false
	}
	in.Cmdline = uintptr(si.cmdlinePaddr)
	in.RSDP = uintptr(si.rsdpPaddr)
	in.MemMap = uintptr(si.memmapPaddr)
	in.MemEntries = int(si.memmapEntries)
	if si.nrModules > 0 && si.modlistPaddr != 0 {
		m := at[modlistEntry](uintptr(si.modlistPaddr))
		in.Module, in.ModuleSize = uintptr(m.paddr), uintptr(m.size)
	}
	return true
}

// at converts a physical (identity-mapped) address to a pointer.
func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }
