package mm

import (
	"sync/atomic"

	"yolk/arch/amd64"
)

// archMapFlags are amd64's mmap flags MAP_SHARED_VALIDATE accepts beside
// the generic ones (MapFileType): MAP_32BIT, MAP_ABOVE4G.
const archMapFlags = 0x40 | 0x80

// amd64 page-table entries (Intel SDM vol. 3, 4.5): everything runs in
// ring 0, so no entry has the user bit; a 2 MiB page has PS; XD forbids
// instruction fetches (EFER.NXE is set at boot, boot/entry_amd64.s and
// the APs' trampoline).
const (
	ptePresent = 1 << 0
	pteWrite   = 1 << 1
	pteA       = 1 << 5 // set by the CPU on the first access
	pteD       = 1 << 6 // set by the CPU on the first write
	ptePS      = 1 << 7
	pteXD      = 1 << 63
	pteAddr    = 0x000ffffffffff000
	// pteBorrowed (a bit the CPU ignores) marks a file's page mapped as
	// is: unback does not free it.
	pteBorrowed = 1 << 9
	// pteDirty says the page was written since it was last cleaned
	// (dirty.go): the CPU's own dirty bit, which it sets with a locked
	// update on the first write through an entry whose bit is clear.
	pteDirty = pteD
)

// pteClean is entry e as cleaned (dirty.go): the dirty bit cleared; the
// entry stays writable, and the CPU sets the bit again at the next write
// (once every CPU's cached translation, which has it set, is gone).
func pteClean(e uint64) uint64 { return e &^ pteDirty }

// pteTable is an entry pointing at the next-level table at pa.
func pteTable(pa uintptr) uint64 { return uint64(pa) | ptePresent | pteWrite }

// ptePage is a 4 KiB page of normal memory at pa, writable if prot has
// ProtWrite, executable if it has ProtExec (readable always).
func ptePage(pa uintptr, prot uint32) uint64 {
	e := uint64(pa) | ptePresent
	if prot&ProtWrite != 0 {
		e |= pteWrite
	}
	if prot&ProtExec == 0 {
		e |= pteXD
	}
	return e
}

// pteUntouched is a writable page at pa whose accessed bit is clear (bss.go).
func pteUntouched(pa uintptr) uint64 { return uint64(pa) | ptePresent | pteWrite }

func pteValid(e uint64) bool      { return e&ptePresent != 0 }
func pteBlock(e uint64) bool      { return e&(ptePresent|ptePS) == ptePresent|ptePS }
func pteFrame(e uint64) uintptr   { return uintptr(e & pteAddr) }
func pteReadOnly(e uint64) uint64 { return e &^ pteWrite }
func pteNoExec(e uint64) uint64   { return e | pteXD }
func pteAccessed(e uint64) bool   { return e&pteA != 0 }

// UnmapLow removes the identity mapping of [0, 2 MiB) once the boot data
// there (PVH start info, memory map, command line) has been read.
func UnmapLow() {
	*at[uint64](identityPDE(0)) = 0
	amd64.Invlpg(0)
	amd64.SetCR3(amd64.CR3())
}

// pteWritten orders a page-table write before the accesses that use it:
// nothing to do on x86, whose table walks see the CPU's own stores in order.
func pteWritten() {}

// areasUnchanged reports whether vmSeq still holds s, read after the
// reads of the area table before it: amd64 does not reorder loads.
func areasUnchanged(s uint32) bool { return atomic.LoadUint32(&vmSeq) == s }
