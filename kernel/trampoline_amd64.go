package kernel

import (
	"unsafe"

	"yolk/boot"
	"yolk/drivers/lapic"
	"yolk/kernel/mm"
)

// Offsets in the trampoline page (trampoline_amd64.s has the same).
const (
	trampolineLen    = 100
	trampolineProt32 = 34
	tGDTR            = 0xC0
	tFar32           = 0xC8
	tCR3             = 0xD0
	tFar64           = 0xD8
	tGDT             = 0xE0
)

// trampolineGDT is the GDT the trampoline loads: null, 64-bit code (0x08),
// data (0x10), 32-bit code (0x18). Accessed bits preset: the CPU never
// writes to it.
var trampolineGDT = [4]uint64{0, 0x00af9b000000ffff, 0x00cf93000000ffff, 0x00cf9b000000ffff}

func trampolineCode() uintptr
func apEntry64PC() uintptr

// trampolinePage picks the page the APs start in: a 4 KiB page of RAM below
// 1 MiB (STARTUP names it by its page number), above the real-mode
// interrupt table. Nothing the kernel keeps lives there: the boot data in
// low memory (start info, memory map, command line, ACPI) has been read
// before the APs start. A boot loader may have put the boot module there
// (Multiboot2 leaves that to GRUB): its pages are skipped.
func trampolinePage() uintptr {
	for _, p := range [...]uintptr{0x8000, 0x9000, 0x7000, 0x6000, 0x5000, 0x4000, 0x3000, 0x2000, 0x1000} {
		if m := bootInfo.Module; bootInfo.ModuleSize != 0 && p < m+bootInfo.ModuleSize && m < p+mm.PageSize {
			continue
		}
		for i := 0; i < bootInfo.MemEntries; i++ {
			r := bootInfo.Region(i)
			if r.Type == boot.MemRAM && uint64(p) >= r.Addr && uint64(p)+mm.PageSize <= r.Addr+r.Size {
				return p
			}
		}
	}
	return 0
}

// installTrampoline copies the start-up code to page and fills in its data.
func installTrampoline(page uintptr) {
	b := bytesAt(mm.Phys(page), mm.PageSize)
	clear(b)
	// (copy between two unsafe.Slice views crashes go1.26's compiler)
	for i, code := 0, trampolineCode(); i < trampolineLen; i++ {
		b[i] = *at[byte](code + uintptr(i))
	}
	put16 := func(off int, v uint16) { *(*uint16)(unsafe.Pointer(&b[off])) = v }
	put32 := func(off int, v uint32) { *(*uint32)(unsafe.Pointer(&b[off])) = v }
	for i, d := range trampolineGDT {
		*(*uint64)(unsafe.Pointer(&b[tGDT+8*i])) = d
	}
	put16(tGDTR, uint16(len(trampolineGDT)*8-1))
	put32(tGDTR+2, uint32(page+tGDT))
	put32(tFar32, uint32(page+trampolineProt32))
	put16(tFar32+4, 0x18)
	put32(tCR3, uint32(boot.PageTableRoot()))
	put32(tFar64, uint32(apEntry64PC()))
	put16(tFar64+4, selCode)
}

// startAP sends CPU id (APIC ID irq) the INIT-STARTUP sequence.
func startAP(irq uint32, page uintptr) { lapic.StartAP(irq, uint8(page>>12)) }
