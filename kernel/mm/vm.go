package mm

import (
	"sync/atomic"

	"yolk/boot"
	"yolk/kernel/abi"
	"yolk/sched"
)

// Virtual memory. One address space: the boot page tables identity-map the
// first 4 GiB with 2 MiB pages (kernel image, RAM, MMIO); user mappings live
// above it, described by a sorted array of areas (vmas) and backed lazily,
// one zeroed 4 KiB frame per page on first touch. An area may map a file
// (its kernel name and offset): its pages come from Env.FileFault, a
// shared mapping's being the file's own frames, marked borrowed in their
// entries so that unback leaves them to the file (docs/files.md). Kernel stacks live in the
// upper half with unmapped guard gaps.
//
// Locking. vmMutex, the kernel's CES mutex (sched.Mutex), serializes the
// system calls that change the address space (mmap, munmap, mprotect,
// madvise): they may run long (big ranges, and waiting for other CPUs to
// drop stale translations). mmLock, a TWA spin lock, guards the area array
// and page-table entries for the short steps: a page fault takes only
// mmLock (a trap handler must not block), and the system calls take it
// around each step. Removing or weakening a mapping clears its entries
// under mmLock in batches, then, without mmLock, has every CPU drop the
// translations (shootdown, tlb_$GOARCH.go) and only then frees the
// frames; the area goes first, so a fault in a range being unmapped finds
// no area and is not backed again. (A thread touching a range while another remaps it
// with MAP_FIXED may therefore see SIGSEGV where Linux would make it wait;
// the Go runtime never does that.)

// Page-table entries are built and read through the helpers of
// vm_$GOARCH.go: amd64 and arm64 (4 KiB granule, 48-bit addresses) share
// the four-level, 512-entry layout and differ only in the bits.

const (
	userMin   = 1 << 32
	userMax   = 0x7ffffffff000
	mmapStart = 0x7f0000000000 // top of the region for mappings without a usable hint
)

// An area's protection: mmap's PROT_READ, PROT_WRITE and PROT_EXEC.
const (
	ProtRead  = 1
	ProtWrite = 2
	ProtExec  = 4
)

type vma struct {
	start, end uintptr
	prot       uint32
	shared     bool  // MAP_SHARED of a file: its pages are the file's (Env.FileFault)
	noWrite    bool  // shared, of a file not open for writing: never writable (mprotect: EACCES)
	noCharge   bool  // never checked against memory when made writable (ChargeNow, ChargeNone)
	file       int32 // 0: anonymous memory; else the kernel's name of the file mapped
	off        int64 // a file area's: the file offset of start
}

// joins reports whether w continues v: adjacent, the same protection and
// the same file at the following offset (then they are one area).
func (v *vma) joins(w *vma) bool {
	return v.end == w.start && v.prot == w.prot && v.file == w.file && v.shared == w.shared && v.noWrite == w.noWrite &&
		v.noCharge == w.noCharge &&
		(v.file == 0 || v.off+int64(v.end-v.start) == w.off)
}

// A file area holds a reference to its file (Env.FileRef). The area
// operations run under mmLock, where the kernel's file locks may not be
// taken: they log the changes of references instead (a split takes one, a
// removal or a merge drops one), and the Space operation applies the log
// once mmLock is dropped (flushRefs), under vmMutex.
var (
	refLog [len(vmas) + 8]struct{ file, d int32 }
	nrefs  int
)

func logRef(file, d int32) {
	if nrefs < len(refLog) { // bounded: one entry per area at most, plus splits and merges
		refLog[nrefs].file, refLog[nrefs].d = file, d
		nrefs++
	}
}

// flushRefs applies the reference log: the new references first, so no
// file loses its last one on the way. vmMutex is held, mmLock not.
func (s Space[E]) flushRefs() {
	for i := 0; i < nrefs; i++ {
		if refLog[i].d > 0 {
			s.env.FileRef(refLog[i].file, refLog[i].d)
		}
	}
	for i := 0; i < nrefs; i++ {
		if refLog[i].d < 0 {
			s.env.FileRef(refLog[i].file, refLog[i].d)
		}
	}
	nrefs = 0
}

var (
	vmMutex sched.Mutex
	mmLock  sched.TWALock
	// vmSeq counts the area table's changes, two per change: odd while
	// one is under way (changeAreas to areasChanged, under mmLock). The
	// user-memory check reads the table without mmLock and keeps what
	// it read only if vmSeq was even and has not moved (a sequence
	// count, as Linux's seqcount_t): usermem.go.
	vmSeq      uint32
	vmas       [4096]vma
	nvmas      int
	mmapCursor uintptr = mmapStart
	// pagesMapped counts user pages backed by frames; tableFrames the
	// page tables walk made (and pruneTables has not freed). Both under
	// mmLock.
	pagesMapped, tableFrames int64
	// bssFaulted counts the reclaimed BSS pages backed again (atomic).
	bssFaulted int64
)

// walk returns the address of va's page-table entry, creating the
// intermediate tables if create; 0 if absent (or inside a 2 MiB page).
func walk(va uintptr, create bool) uintptr {
	table := boot.PageTableRoot()
	for shift := uint(39); shift > 12; shift -= 9 {
		e := at[uint64](Phys(table) + (va>>shift)&511*8)
		if !pteValid(*e) {
			if !create {
				return 0
			}
			f := AllocFrame()
			if f == 0 {
				return 0
			}
			tableFrames++
			*e = pteTable(f)
			pteWritten()
		} else if pteBlock(*e) {
			return 0
		}
		table = pteFrame(*e)
	}
	return Phys(table) + (va>>12)&511*8
}

// mapPage maps va to frame f, read-write, not executable (a kernel
// stack).
func mapPage(va, f uintptr) bool {
	pte := walk(va, true)
	if pte == 0 {
		return false
	}
	*at[uint64](pte) = ptePage(f, ProtRead|ProtWrite)
	pteWritten()
	return true
}

// unbackBatch is how many frames unback frees per shootdown.
const unbackBatch = 256

// unback clears the page-table entries of [start, end) and frees their
// frames once no CPU can still reach them through its TLB. The caller holds
// vmMutex, not mmLock, and has already removed the range's areas or made
// sure no fault backs the range again for the area it keeps (madvise).
func (s Space[E]) unback(start, end uintptr) {
	var batch [unbackBatch]uintptr
	for va := start; va < end; {
		lo, n := va, 0
		mmLock.Lock()
		for va < end && n < len(batch) {
			pte := walk(va, false)
			if pte == 0 {
				// No page table here: skip to the next 2 MiB boundary.
				va = (va + 1<<21) &^ (1<<21 - 1)
				continue
			}
			if e := at[uint64](pte); pteValid(*e) {
				batch[n] = pteFrame(*e)
				if *e&pteBorrowed != 0 {
					batch[n] |= 1 // a file's page: not ours to free
				}
				*e = 0
				n++
				pagesMapped--
			}
			va += PageSize
		}
		mmLock.Unlock()
		if n > 0 {
			s.shootdown(lo, min(va, end))
			for _, f := range batch[:n] {
				if f&1 == 0 {
					FreeFrame(f)
				}
			}
		}
	}
}

// changeAreas takes mmLock for a change of the area table and makes
// vmSeq odd; areasChanged makes it even and lets mmLock go.
func changeAreas() {
	mmLock.Lock()
	atomic.AddUint32(&vmSeq, 1)
}

func areasChanged() {
	atomic.AddUint32(&vmSeq, 1)
	mmLock.Unlock()
}

// findVMA returns the index of the first area that ends above a.
func findVMA(a uintptr) int {
	lo, hi := 0, nvmas
	for lo < hi {
		m := (lo + hi) / 2
		if vmas[m].end <= a {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// overlaps reports whether any area intersects [start, end).
func overlaps(start, end uintptr) bool {
	i := findVMA(start)
	return i < nvmas && vmas[i].start < end
}

// insertVMA records v; its range must be free. A file area brings its
// reference, dropped (logged) if it merges into a neighbour.
func insertVMA(v vma) bool {
	i := findVMA(v.start)
	if i > 0 && vmas[i-1].joins(&v) {
		vmas[i-1].end = v.end
		if v.file != 0 {
			logRef(v.file, -1)
		}
		if i < nvmas && vmas[i-1].joins(&vmas[i]) {
			vmas[i-1].end = vmas[i].end
			if v.file != 0 {
				logRef(v.file, -1)
			}
			copy(vmas[i:nvmas-1], vmas[i+1:nvmas])
			nvmas--
		}
		return true
	}
	if i < nvmas && v.joins(&vmas[i]) {
		vmas[i].start, vmas[i].off = v.start, v.off
		if v.file != 0 {
			logRef(v.file, -1)
		}
		return true
	}
	if nvmas == len(vmas) {
		return false
	}
	copy(vmas[i+1:nvmas+1], vmas[i:nvmas])
	vmas[i] = v
	nvmas++
	return true
}

// removeVMA forgets [start, end), splitting areas that straddle it (a
// file area's second half starts further into the file).
func removeVMA(start, end uintptr) bool {
	i := findVMA(start)
	for i < nvmas && vmas[i].start < end {
		v := vmas[i]
		switch {
		case v.start < start && v.end > end: // split in two
			if nvmas == len(vmas) {
				return false
			}
			copy(vmas[i+1:nvmas+1], vmas[i:nvmas])
			nvmas++
			vmas[i].end = start
			vmas[i+1].start = end
			if v.file != 0 {
				vmas[i+1].off += int64(end - v.start)
				logRef(v.file, 1)
			}
			return true
		case v.start < start:
			vmas[i].end = start
			i++
		case v.end > end:
			vmas[i].start = end
			vmas[i].off += int64(end - v.start)
			return true
		default:
			if v.file != 0 {
				logRef(v.file, -1)
			}
			copy(vmas[i:nvmas-1], vmas[i+1:nvmas])
			nvmas--
		}
	}
	return true
}

// splitAt cuts the area that strictly contains a in two (the room was
// checked).
func splitAt(a uintptr) {
	i := findVMA(a)
	if i >= nvmas || vmas[i].start >= a || nvmas == len(vmas) {
		return
	}
	copy(vmas[i+1:nvmas+1], vmas[i:nvmas])
	nvmas++
	vmas[i].end = a
	vmas[i+1].start = a
	if vmas[i+1].file != 0 {
		vmas[i+1].off += int64(a - vmas[i].start)
		logRef(vmas[i+1].file, 1)
	}
}

// findFree picks a free range of n bytes below the mmap cursor.
func findFree(n uintptr) uintptr {
	// Every candidate stays in [userMin, mmapCursor): n is bounded before
	// it is subtracted, so nothing wraps into the kernel half.
	if n == 0 || n > mmapCursor-userMin {
		return 0
	}
	cand := mmapCursor - n
	for {
		i := findVMA(cand)
		if i >= nvmas || vmas[i].start >= cand+n {
			mmapCursor = cand
			return cand
		}
		if vmas[i].start-userMin < n {
			return 0
		}
		cand = vmas[i].start - n
	}
}

func inUser(start, end uintptr) bool {
	return start >= userMin && end <= userMax && start < end
}

// Charge says how a mapping counts against memory under Linux's default,
// heuristic overcommit (vm.overcommit_memory 0): a single request for
// more than the machine's memory is refused with ENOMEM
// (__vm_enough_memory: RAM and swap; no swap here), smaller ones are
// taken whatever is free.
type Charge uint8

const (
	// ChargeWrite: a private mapping is checked when it is writable, at
	// mmap or when mprotect makes it so (accountable_mapping,
	// mprotect_fixup): a PROT_NONE or read-only reservation costs
	// nothing, as the Go runtime's large PROT_NONE arenas need.
	ChargeWrite Charge = iota
	// ChargeNow: a shared anonymous mapping is checked at mmap whatever
	// its protection, and never again (shmem_acct_size).
	ChargeNow
	// ChargeNone: never checked — MAP_NORESERVE, a shared file mapping.
	ChargeNone
)

// overcommits reports whether n bytes charged at once are more than the
// frames the allocator owns.
func overcommits(n uintptr) bool {
	return n/PageSize > uintptr(atomic.LoadInt64(&framesAll))
}

// charged reports whether a mapping of n bytes with prot, charged as c,
// is too large for the machine (ENOMEM).
func charged(n uintptr, prot uint32, c Charge) bool {
	return (c == ChargeNow || c == ChargeWrite && prot&ProtWrite != 0) && overcommits(n)
}

// Map creates an anonymous mapping of n bytes (a multiple of PageSize)
// with prot at addr — exactly there if fixed, replacing what is there; at
// addr if that range is free; elsewhere otherwise — and returns its
// address (see kernel's sysMmap). ENOMEM, with nothing replaced, for a
// mapping c refuses.
func (s Space[E]) Map(addr, n uintptr, prot uint32, fixed bool, c Charge) (uintptr, abi.Errno) {
	if charged(n, prot, c) {
		return 0, abi.ENOMEM
	}
	vmMutex.Lock()
	defer vmMutex.Unlock()
	if fixed {
		if !inUser(addr, addr+n) {
			return 0, abi.ENOMEM
		}
		if err := s.remove(addr, n); err != 0 {
			return 0, err
		}
	}
	changeAreas()
	a, e := areaPlace(addr, n, vma{prot: prot, noCharge: c != ChargeWrite}, fixed)
	areasChanged()
	s.flushRefs()
	return a, e
}

// MapFile is Map for a mapping of file (the kernel's name for it, not 0)
// from offset off, shared (MAP_SHARED) or private. The caller has taken
// the reference the area holds (Env.FileRef); it is dropped if the
// mapping fails. Pages come from Env.FileFault when first touched. A
// shared mapping of a file not open for writing (noWrite) may not be made
// writable later. c is the mapping's Charge (ChargeNone for a shared one).
func (s Space[E]) MapFile(addr, n uintptr, prot uint32, fixed bool, file int32, off int64, shared, noWrite bool, c Charge) (uintptr, abi.Errno) {
	if charged(n, prot, c) {
		s.env.FileRef(file, -1)
		return 0, abi.ENOMEM
	}
	vmMutex.Lock()
	defer vmMutex.Unlock()
	if fixed {
		if !inUser(addr, addr+n) {
			s.env.FileRef(file, -1)
			return 0, abi.ENOMEM
		}
		if err := s.remove(addr, n); err != 0 {
			s.env.FileRef(file, -1)
			return 0, err
		}
	}
	changeAreas()
	a, e := areaPlace(addr, n, vma{prot: prot, file: file, off: off, shared: shared, noWrite: noWrite, noCharge: c != ChargeWrite}, fixed)
	areasChanged()
	if e != 0 {
		logRef(file, -1)
	}
	s.flushRefs()
	return a, e
}

// areaPlace records area v, n bytes at addr — exactly there if fixed,
// replacing what is there; at addr if that range is free; elsewhere
// otherwise — and returns its address. mmLock is held (or the test owns
// the areas).
func areaPlace(addr, n uintptr, v vma, fixed bool) (uintptr, abi.Errno) {
	switch {
	case fixed:
		if !inUser(addr, addr+n) {
			return 0, abi.ENOMEM
		}
		if !removeVMA(addr, addr+n) {
			return 0, abi.ENOMEM
		}
	case addr != 0 && inUser(addr, addr+n) && !overlaps(addr, addr+n):
	default:
		if addr = findFree(n); addr == 0 {
			return 0, abi.ENOMEM
		}
	}
	v.start, v.end = addr, addr+n
	if !insertVMA(v) {
		return 0, abi.ENOMEM
	}
	return addr, 0
}

// Unmap removes [addr, addr+n).
func (s Space[E]) Unmap(addr, n uintptr) abi.Errno {
	if !inUser(addr, addr+n) {
		return abi.EINVAL
	}
	vmMutex.Lock()
	defer vmMutex.Unlock()
	return s.remove(addr, n)
}

// remove forgets the areas in [addr, addr+n) and then unbacks the range;
// vmMutex is held.
func (s Space[E]) remove(addr, n uintptr) abi.Errno {
	changeAreas()
	ok := removeVMA(addr, addr+n)
	areasChanged()
	if !ok {
		return abi.ENOMEM
	}
	s.unback(addr, addr+n)
	s.flushRefs() // after unback: no CPU reaches a file's pages any more
	s.pruneTables(addr, addr+n)
	return 0
}

// pruneBatch is how many page tables pruneTables frees per shootdown.
const pruneBatch = 63

// pruneTables frees the page tables under the user range [start, end)
// that map nothing any more — the last-level table of each 2 MiB region,
// then the tables above it that became empty (never the root) — so that
// mappings made and removed all over the address space do not keep a
// table each (Linux's free_pgtables at munmap). A table is taken out of
// its parent under mmLock, and freed once no CPU can still reach it
// through a cached walk (the shootdown: INVLPG and TLBI VAE1IS drop the
// paging-structure entries too). Only at munmap: madvise keeps its area,
// which would soon need the tables again. vmMutex is held.
func (s Space[E]) pruneTables(start, end uintptr) {
	var batch [pruneBatch]uintptr
	for va := start &^ (1<<21 - 1); va < end; {
		lo, n := va, 0
		mmLock.Lock()
		for va < end && n+3 <= len(batch) {
			// The root's, the 1 GiB table's and the 2 MiB table's
			// entries on the way to va's last-level table.
			var ents [3]*uint64
			table, skip := boot.PageTableRoot(), uintptr(0)
			for l, shift := 0, uint(39); l < 3; l, shift = l+1, shift-9 {
				e := at[uint64](Phys(table) + (va>>shift)&511*8)
				if !pteValid(*e) || pteBlock(*e) {
					skip = 1 << shift
					break
				}
				ents[l] = e
				table = pteFrame(*e)
			}
			if skip == 0 {
				skip = 1 << 21
				for l := 2; l >= 0 && tableEmpty(pteFrame(*ents[l])); l-- {
					batch[n] = pteFrame(*ents[l])
					n++
					tableFrames--
					*ents[l] = 0
				}
				if n > 0 {
					pteWritten()
				}
			}
			va = (va + skip) &^ (skip - 1)
		}
		mmLock.Unlock()
		if n > 0 {
			s.shootdown(lo, min(va, end))
			for _, f := range batch[:n] {
				FreeFrame(f)
			}
		}
	}
}

// tableEmpty reports whether the page table at physical address t has no
// entry.
func tableEmpty(t uintptr) bool {
	for i := uintptr(0); i < 512; i++ {
		if *at[uint64](Phys(t) + i*8) != 0 {
			return false
		}
	}
	return true
}

// DontNeed drops the frames behind [addr, addr+n): the next touch sees
// zeroes, as MADV_DONTNEED promises for private anonymous memory.
func (s Space[E]) DontNeed(addr, n uintptr) abi.Errno {
	if !inUser(addr, addr+n) {
		return abi.EINVAL
	}
	vmMutex.Lock()
	s.unback(addr, addr+n)
	vmMutex.Unlock()
	return 0
}

// Protect changes the protection of [addr, addr+n). Pages made
// inaccessible lose their frames (their contents are not kept); pages made
// read-only or not executable lose the write or execute permission of
// their page-table entries, with a TLB shootdown; pages made writable or
// executable get it back at their next write or instruction fetch fault.
// ENOMEM, with nothing changed, if a private area made writable is, in
// the range, larger than the machine's memory (ChargeWrite).
func (s Space[E]) Protect(addr, n uintptr, prot uint32) abi.Errno {
	if !inUser(addr, addr+n) {
		return abi.EINVAL
	}
	vmMutex.Lock()
	defer vmMutex.Unlock()
	changeAreas()
	var err abi.Errno
	weakens := false
	if prot&ProtWrite != 0 && protectCharged(addr, addr+n) {
		err = abi.ENOMEM
	} else {
		weakens = protectWeakens(addr, addr+n, prot)
		err = areaProtect(addr, n, prot)
	}
	atomic.AddUint32(&vmSeq, 1) // the areas are changed; mmLock stays for the entries
	changed := false
	if err == 0 && prot != 0 && weakens {
		for va := addr; va < addr+n; va += PageSize {
			pte := walk(va, false)
			if pte == 0 {
				// No page table here: skip to the next 2 MiB boundary.
				va = (va+1<<21)&^(1<<21-1) - PageSize
				continue
			}
			// A compare-and-swap: the CPU may set the entry's dirty
			// bit meanwhile (dirty.go), which must not be lost.
			e := at[uint64](pte)
			for {
				old := atomic.LoadUint64(e)
				if !pteValid(old) {
					break
				}
				w := old
				if prot&ProtWrite == 0 {
					w = pteReadOnly(w)
				}
				if prot&ProtExec == 0 {
					w = pteNoExec(w)
				}
				if w == old {
					break
				}
				if atomic.CompareAndSwapUint64(e, old, w) {
					changed = true
					break
				}
			}
		}
	}
	mmLock.Unlock()
	if changed {
		s.shootdown(addr, addr+n)
	}
	if err == 0 && prot == 0 {
		s.unback(addr, addr+n)
	}
	s.flushRefs()
	return err
}

// protectWeakens reports whether prot takes write or execute permission
// from an area in [start, end): only then may a page-table entry there
// allow more than prot (an entry never allows more than its area).
// mmLock is held.
func protectWeakens(start, end uintptr, prot uint32) bool {
	for i := findVMA(start); i < nvmas && vmas[i].start < end; i++ {
		if vmas[i].prot&^prot&(ProtWrite|ProtExec) != 0 {
			return true
		}
	}
	return false
}

// protectCharged reports whether making [start, end) writable makes an
// area that was not, private and charged when writable, writable over
// more than the machine's memory: Linux's mprotect_fixup checks each
// area's part so (only the first time; here each time). mmLock is held.
func protectCharged(start, end uintptr) bool {
	for i := findVMA(start); i < nvmas && vmas[i].start < end; i++ {
		v := &vmas[i]
		if v.prot&ProtWrite == 0 && !v.shared && !v.noCharge && overcommits(min(v.end, end)-max(v.start, start)) {
			return true
		}
	}
	return false
}

// areaProtect records prot for [addr, addr+n); mmLock is held. As on
// Linux it is ENOMEM, with nothing changed, when part of the range is not
// mapped or the areas could run out: the range's ends may each split an
// area (a file area's pieces keep their offsets), and a split the second
// could not follow would leave the change half made. Areas that then
// join are merged. EACCES, with nothing changed, for write access to a
// shared mapping of a file not open for writing.
func areaProtect(addr, n uintptr, prot uint32) abi.Errno {
	end := addr + n
	if !covered(addr, end) {
		return abi.ENOMEM
	}
	need := 0
	if i := findVMA(addr); vmas[i].start < addr {
		need++
	}
	if j := findVMA(end - 1); vmas[j].end > end {
		need++
	}
	if nvmas+need > len(vmas) {
		return abi.ENOMEM
	}
	for i := findVMA(addr); prot&ProtWrite != 0 && i < nvmas && vmas[i].start < end; i++ {
		if vmas[i].noWrite {
			return abi.EACCES // as Linux for a shared mapping of a file open read-only
		}
	}
	splitAt(addr)
	splitAt(end)
	for i := findVMA(addr); i < nvmas && vmas[i].start < end; i++ {
		vmas[i].prot = prot
	}
	// Merge what now joins, from the area before addr to the one after.
	i := findVMA(addr)
	if i > 0 {
		i--
	}
	for i+1 < nvmas && vmas[i].start <= end {
		if vmas[i].joins(&vmas[i+1]) {
			vmas[i].end = vmas[i+1].end
			if vmas[i].file != 0 {
				logRef(vmas[i].file, -1)
			}
			copy(vmas[i+1:nvmas-1], vmas[i+2:nvmas])
			nvmas--
		} else {
			i++
		}
	}
	return 0
}

// Overlaps reports whether an area overlaps [start, end)
// (MAP_FIXED_NOREPLACE).
func Overlaps(start, end uintptr) bool {
	mmLock.Lock()
	defer mmLock.Unlock()
	return overlaps(start, end)
}

// Mapped reports whether areas cover [start, end) without a gap (msync).
func Mapped(start, end uintptr) bool {
	mmLock.Lock()
	defer mmLock.Unlock()
	return covered(start, end)
}

// covered reports whether areas cover [start, end) without a gap.
func covered(start, end uintptr) bool {
	for i := findVMA(start); start < end; i++ {
		if i >= nvmas || vmas[i].start > start || vmas[i].end <= start {
			return false
		}
		start = vmas[i].end
	}
	return true
}

// Fault is what PageFault made of a page fault: FaultBacked, the page is
// there now (resume); FaultSegv, nothing is mapped there (the kernel
// reports it or sends SIGSEGV, SEGV_MAPERR); FaultAccess, an area or the
// image covers the address but does not allow the access — a PROT_NONE
// area, a write to a read-only one, an instruction fetch from one
// without PROT_EXEC, touched before or not (SIGSEGV, SEGV_ACCERR, as
// Linux's access_error); FaultBus, a file area's page its
// file cannot give — wholly past its end, or a hole of a full file system
// (SIGBUS, BUS_ADRERR, as Linux).
type Fault uint8

const (
	FaultBacked Fault = iota
	FaultSegv
	FaultAccess
	FaultBus
)

// Page-fault codes: x86's error code, which arm64's trap handler builds
// from the syndrome too.
const (
	FaultPresent = 1 << 0 // a present page refused the access
	FaultWrite   = 1 << 1
	FaultFetch   = 1 << 4 // an instruction fetch
)

// PageFault backs the page at addr if an area covers it that allows the
// access (code: FaultPresent, FaultWrite, FaultFetch), or gives a page
// its write or execute permission back after mprotect gave its area
// that, or backs a page of the demand-paged BSS (bss.go). It reports
// FaultSegv, FaultAccess or FaultBus for a fault the kernel must report
// or signal.
func (s Space[E]) PageFault(addr uintptr, code uint64) Fault {
	page := addr &^ (PageSize - 1)
	if page >= bssLazyLo && page < bssLazyHi && code&FaultPresent == 0 {
		if s.bssFault(page) {
			return FaultBacked
		}
		return FaultSegv
	}
	// Only user mappings are backed on demand; anything else (a wild
	// kernel pointer, address 0) is reported, and so is a fault inside
	// mmLock's own critical section, whose lock this would wait for.
	// Below the areas a present page of the image that refused the
	// access is its read-only text or data: an access error. The rest
	// of the identity map and the kernel half are not the program's,
	// mapped for it nowhere, as on Linux.
	if !inUser(page, page+PageSize) || mmLock.HeldHere() {
		if code&FaultPresent != 0 && page >= imageLo && page < imageHi {
			return FaultAccess
		}
		return FaultSegv
	}
	write, fetch := code&FaultWrite != 0, code&FaultFetch != 0
	if code&FaultPresent != 0 && !write && !fetch {
		return FaultAccess // a present page refused a read: reserved bits
	}
	mmLock.Lock()
	defer mmLock.Unlock()
	i := findVMA(page)
	if i >= nvmas || vmas[i].start > page {
		return FaultSegv
	}
	// A fetch is refused before the page is backed, as arm64 Linux
	// does; x86 Linux backs it and refuses the fetch that follows, to
	// the same SEGV_ACCERR.
	if vmas[i].prot == 0 || write && vmas[i].prot&ProtWrite == 0 || fetch && vmas[i].prot&ProtExec == 0 {
		return FaultAccess
	}
	// No frame for the page or its page table: the program is out of
	// memory (Env.OOMKill, which stops the machine with mmLock held).
	pte := walk(page, true)
	if pte == 0 {
		s.env.OOMKill()
	}
	e := at[uint64](pte)
	switch {
	case !pteValid(*e) && vmas[i].file != 0:
		return s.fileFault(&vmas[i], page, e, write)
	case !pteValid(*e):
		f := AllocFrame()
		if f == 0 {
			s.env.OOMKill()
		}
		*e = ptePage(f, vmas[i].prot)
		pteWritten()
		pagesMapped++
	case write, fetch:
		// A read-only or non-executable entry of an area mprotect has
		// made writable or executable (or one this CPU's TLB still
		// holds from before another CPU did it): only this CPU's stale
		// entry needs to go. A tracked page keeps its dirty bit, and
		// a write sets it (dirty.go; on arm64 this is the write fault
		// of a clean page).
		for old := atomic.LoadUint64(e); !atomic.CompareAndSwapUint64(e, old, pteFaulted(&vmas[i], old, write)); {
			old = atomic.LoadUint64(e)
		}
		invalidate(page, page+PageSize)
	}
	return FaultBacked
}

// fileFault backs page of file area v, whose entry is e, for a write or
// not: with the file's own page (a shared mapping of a file with a page
// cache: the entry is marked borrowed, unback does not free it), or with
// a frame of its own the kernel fills (a private copy; a share file's
// page, which a shared mapping tracks for write-back: dirty.go). mmLock
// is held. FaultBus when the file has no page there (Env.FileFault: past
// its end).
func (s Space[E]) fileFault(v *vma, page uintptr, e *uint64, write bool) Fault {
	off := v.off + int64(page-v.start)
	f, ok := s.env.FileFault(v.file, off, v.shared, 0)
	if !ok {
		return FaultBus
	}
	if f != 0 {
		*e = ptePage(f, v.prot) | pteBorrowed
	} else {
		if f = AllocFrame(); f == 0 {
			s.env.OOMKill()
		}
		if _, ok := s.env.FileFault(v.file, off, v.shared, f); !ok {
			FreeFrame(f)
			return FaultBus
		}
		*e = ptePage(f, v.prot)
		if v.shared {
			*e = pteFirst(v, f, write)
		}
	}
	pteWritten()
	pagesMapped++
	return FaultBacked
}

// UnbackFile drops the pages of file's areas from file offset from
// (page-aligned) on: the file was shrunk to there, and a fault past its
// end no longer gets a page (Env.FileFault), so touching them raises
// SIGBUS as on Linux. A file's own pages stay the file's (borrowed),
// private copies are freed.
func (s Space[E]) UnbackFile(file int32, from int64) {
	vmMutex.Lock()
	defer vmMutex.Unlock()
	// vmMutex keeps the areas as they are (their changes hold it too).
	for i := 0; i < nvmas; i++ {
		v := &vmas[i]
		if v.file != file || v.off+int64(v.end-v.start) <= from {
			continue
		}
		start := v.start
		if from > v.off {
			start += uintptr(from - v.off)
		}
		s.unback(start, v.end)
	}
}

// HoldAreas keeps the areas as they are — no map, unmap, protect or
// DontNeed on any thread — until ReleaseAreas, for a caller that uses what
// FileArea returned across blocking I/O (the file an area holds stays
// open). It takes vmMutex: the caller holds no spin lock and calls none of
// those meanwhile.
func HoldAreas() { vmMutex.Lock() }

// ReleaseAreas ends HoldAreas.
func ReleaseAreas() { vmMutex.Unlock() }

// FileArea describes the first file area that intersects [addr, end), cut
// to that range: its bounds, file, offset at start, whether it is shared
// and its protection; ok false if there is none (for msync and munmap's
// write-back).
func FileArea(addr, end uintptr) (start, stop uintptr, file int32, off int64, shared bool, prot uint32, ok bool) {
	mmLock.Lock()
	defer mmLock.Unlock()
	for i := findVMA(addr); i < nvmas && vmas[i].start < end; i++ {
		if v := &vmas[i]; v.file != 0 {
			start, stop = max(v.start, addr), min(v.end, end)
			return start, stop, v.file, v.off + int64(start-v.start), v.shared, v.prot, true
		}
	}
	return 0, 0, 0, 0, false, 0, false
}

// Readable reports whether the 8 bytes at a can be read without faulting
// (for the kernel's fault report: its stack walk).
func Readable(a uintptr) bool {
	if a&7 != 0 || a < lowGuard {
		return false
	}
	if a < 1<<32 {
		return true
	}
	pte := walk(a, false)
	return pte != 0 && pteValid(*at[uint64](pte))
}

// lowGuard is the size of the unmapped region at address 0, so nil
// dereferences fault: the first 2 MiB identity page is removed after boot
// (the Raspberry Pi's image starts at 0x80000: its guard ends there).
var lowGuard uintptr = 2 << 20

// SetLowGuard sets the size of the unmapped region at address 0 (at boot,
// for a machine whose image starts below 2 MiB).
func SetLowGuard(n uintptr) { lowGuard = n }

// Kernel stacks: slot i gets [KStackBase + (i+1)*KStackStride - KStackSize,
// KStackBase + (i+1)*KStackStride), mapped eagerly; the gap below is a
// guard that faults. The kernel's trap stacks follow the last slot.
const (
	KStackBase   = 0xffff800000000000
	KStackStride = 64 << 10
	KStackSize   = 32 << 10
)

// AllocKStack returns slot's kernel stack, mapping it the first time
// (all of it or, out of frames, none: a slot with its first page mapped
// holds a whole stack). A
// slot keeps its stack when its task ends: mapping fresh frames over it
// later would leave other CPUs' TLBs pointing at the old ones (the task
// switch benchmark's partner, taking an exited thread's slot, once ran on
// two CPUs' different views of its stack).
func AllocKStack(slot int) (lo, hi uintptr, ok bool) {
	hi = KStackBase + uintptr(slot+1)*KStackStride
	lo = hi - KStackSize
	mmLock.Lock()
	pte := walk(lo, false)
	mapped := pte != 0 && pteValid(*at[uint64](pte))
	mmLock.Unlock()
	if mapped {
		return lo, hi, true
	}
	return lo, hi, MapKernel(lo, hi)
}

// MapKernel backs [lo, hi) in the kernel's upper half with fresh frames.
// It maps all of the range or, out of frames part-way, none of it: the
// pages it mapped are unmapped and their frames freed (a frame whose page
// table could not be made too), so that AllocKStack, which takes a slot
// whose first page is mapped as a whole stack, never sees half of one.
// No address in the range has been handed out yet, so no code has used
// a translation of it and no shootdown is needed; the invalidation drops
// whatever this CPU (on arm64 any CPU) may have cached speculatively.
func MapKernel(lo, hi uintptr) bool {
	mmLock.Lock()
	defer mmLock.Unlock()
	for va := lo; va < hi; va += PageSize {
		f := AllocFrame()
		if f != 0 && mapPage(va, f) {
			continue
		}
		if f != 0 {
			FreeFrame(f)
		}
		for p := lo; p < va; p += PageSize {
			e := at[uint64](walk(p, false))
			f := pteFrame(*e)
			*e = 0
			pteWritten()
			flushPage(p)
			FreeFrame(f)
		}
		return false
	}
	return true
}

// FrameOf returns the physical frame behind user page va, or behind a
// page of the demand-paged BSS; 0 if none (for the self-tests).
func FrameOf(va uintptr) uintptr {
	va &^= PageSize - 1
	if va >= bssLazyLo && va < bssLazyHi {
		// bssFault fills these entries with a CAS and no lock.
		if pte := walk(va, false); pte != 0 {
			if e := atomic.LoadUint64(at[uint64](pte)); pteValid(e) {
				return pteFrame(e)
			}
		}
		return 0
	}
	if !inUser(va, va+1) {
		return 0
	}
	mmLock.Lock()
	defer mmLock.Unlock()
	if pte := walk(va, false); pte != 0 && pteValid(*at[uint64](pte)) {
		return pteFrame(*at[uint64](pte))
	}
	return 0
}
