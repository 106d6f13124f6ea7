package mm

import "yolk/arch/arm64"

// archMapFlags are arm64's mmap flags MAP_SHARED_VALIDATE accepts beside
// the generic ones (MapFileType): none.
const archMapFlags = 0

// arm64 translation-table descriptors (4 KiB granule; Arm ARM D8.3):
// bits 1:0 are 11 for a table (levels 0-2) or a page (level 3), 01 for a
// block; AttrIndx 0 (MAIR: normal write-back), inner shareable; AP[2]
// makes a page read-only; AF must be set or the first access faults —
// which is how the demand-paged BSS learns which pages were touched
// (pteUntouched; kernel/entry_arm64.s sets the flag on that fault); PXN
// forbids instruction fetches at EL1, where everything runs (UXN, for
// EL0, goes with it).
const (
	pteValidBit = 1 << 0
	pteTableBit = 1 << 1
	pteRO       = 1 << 7  // AP[2]
	pteSH       = 3 << 8  // inner shareable
	pteAF       = 1 << 10 // access flag
	pteXN       = 3 << 53 // PXN | UXN
	pteAddr     = 0x0000fffffffff000
	pteNormal   = pteValidBit | pteTableBit | pteSH | pteAF
	// pteBorrowed (bit 55, for software) marks a file's page mapped as
	// is: unback does not free it.
	pteBorrowed = 1 << 55
	// pteDirty (bit 56, for software) says the page was written since
	// it was last cleaned (dirty.go). No hardware dirty-bit management
	// is assumed (TCR_EL1.HD is clear, and FEAT_HAFDBS is optional): a
	// clean page of a tracked mapping is read-only, and the write fault
	// that makes it writable sets the bit, as Linux does without DBM.
	pteDirty = 1 << 56
)

// pteClean is entry e as cleaned (dirty.go): read-only, without the
// dirty bit, so the next write faults and marks it again.
func pteClean(e uint64) uint64 { return e&^pteDirty | pteRO }

func pteTable(pa uintptr) uint64 { return uint64(pa) | pteValidBit | pteTableBit }

// ptePage is a 4 KiB page of normal memory at pa, writable if prot has
// ProtWrite, executable if it has ProtExec (readable always).
func ptePage(pa uintptr, prot uint32) uint64 {
	e := uint64(pa) | pteNormal
	if prot&ProtWrite == 0 {
		e |= pteRO
	}
	if prot&ProtExec == 0 {
		e |= pteXN
	}
	return e
}

func pteUntouched(pa uintptr) uint64 { return uint64(pa) | pteNormal&^pteAF }

func pteValid(e uint64) bool      { return e&pteValidBit != 0 }
func pteBlock(e uint64) bool      { return e&(pteValidBit|pteTableBit) == pteValidBit }
func pteFrame(e uint64) uintptr   { return uintptr(e & pteAddr) }
func pteReadOnly(e uint64) uint64 { return e | pteRO }
func pteNoExec(e uint64) uint64   { return e | pteXN }
func pteAccessed(e uint64) bool   { return e&pteAF != 0 }

// UnmapLow has nothing to do: the boot page tables never mapped the first
// 2 MiB (virt) or the first 512 KiB, below the image (the Raspberry Pi).
func UnmapLow() {}

// pteWritten orders a page-table write before the accesses that use it
// (DSB ISHST; ISB): an arm64 table walk may otherwise miss the new entry
// and fault (TCG never does; hardware may).
func pteWritten() { arm64.TableSync() }

// areasUnchanged reports whether vmSeq still holds s, read after the
// reads of the area table before it. arm64 may satisfy an earlier load
// after a load-acquire, so the re-read follows a load barrier (DMB
// ISHLD, where Linux's read_seqcount_retry has smp_rmb). It writes
// nothing: a compare-and-swap here, which also orders them, made every
// user-memory check on every CPU write vmSeq's cache line.
func areasUnchanged(s uint32) bool { return arm64.LoadAfterLoads(&vmSeq) == s }
