package mm

import "sync/atomic"

// Dirty pages of the shared file mappings the kernel writes back
// (docs/share.md). A shared mapping of a file without a page cache (a
// share file, kernel/share) holds frames of its own, which the kernel
// writes to the file at msync, munmap, fsync and the program's end. Only
// the pages the program stored to since the last write-back may go: a
// page only read would put what it read over what the file got
// meanwhile (a pwrite, the host). Such a page is tracked: a page of a
// shared file area whose entry is not borrowed (a file with a page cache
// lends its own pages, which need no write-back). Its entry's pteDirty
// says it was written since it was last cleaned:
//
//   - amd64: the CPU's dirty bit, set by the hardware at the first write
//     through an entry whose bit is clear;
//   - arm64: a software bit (no hardware dirty-bit management is assumed):
//     a clean tracked page is mapped read-only, and the write fault that
//     makes it writable sets the bit (PageFault, pteFaulted), as Linux
//     does without DBM.
//
// A page first touched by a write is mapped dirty, by a read or a fetch
// clean (fileFault). TakeDirty finds and cleans dirty pages: it clears
// the bit (on arm64 also the write permission) under mmLock and then has
// every CPU drop its cached translation (a shootdown) — on amd64 a cached
// translation still has the bit set, and a write through it would not
// set it again. The caller reads the pages' bytes only after that, so a
// store made before the clean is in what it writes back and a store made
// after marks the page again.
//
// The entries of user pages are updated with compare-and-swap where the
// CPU may set its accessed and dirty bits at the same time (amd64): a
// plain store could lose a dirty bit set between its load and its store.
//
// The kernel's own writes into a mapping (the 9P read that fills it at
// mmap, read(2) into it) dirty its pages as the program's do: a caller
// that filled a mapping cleans it afterwards (TakeDirty until the end).

// tracked reports whether the page of area v whose entry is e is tracked
// for write-back.
func tracked(v *vma, e uint64) bool { return v.shared && v.file != 0 && e&pteBorrowed == 0 }

// pteFaulted is entry old of a page of area v once a write or fetch
// fault gave it what its area allows: the dirty bit kept, set by a
// write; a tracked page not dirty stays clean (on arm64 read-only: its
// first write must fault).
func pteFaulted(v *vma, old uint64, write bool) uint64 {
	e := ptePage(pteFrame(old), v.prot) | old&(pteBorrowed|pteDirty)
	if write {
		e |= pteDirty
	}
	if tracked(v, old) && e&pteDirty == 0 {
		e = pteClean(e)
	}
	return e
}

// pteFirst is the entry of a tracked page's fresh frame f in area v,
// first touched by a write or not.
func pteFirst(v *vma, f uintptr, write bool) uint64 {
	if write {
		return ptePage(f, v.prot) | pteDirty
	}
	return pteClean(ptePage(f, v.prot))
}

// TakeDirty bounds: the pages one call cleans (one shootdown) and the
// pages it looks at under mmLock.
const (
	dirtyBatch = 256
	dirtyScan  = 4096
)

// TakeDirty cleans the first run of dirty tracked pages in [addr, end)
// (addr is rounded down to its page; a page that starts before end is
// in) and returns it, [start, stop), once no CPU can write to it through
// a cached translation: the caller reads its bytes after. At most
// dirtyBatch pages a call, and dirtyScan looked at: start == stop when
// the part looked at had none. Either way the caller goes on from stop
// (past addr) until it reaches end. The caller holds the areas
// (HoldAreas: vmMutex, which a shootdown needs) and no spin lock.
func (s Space[E]) TakeDirty(addr, end uintptr) (start, stop uintptr) {
	va := addr &^ (PageSize - 1)
	n := 0
	mmLock.Lock()
	for scanned := 0; va < end && n < dirtyBatch && scanned < dirtyScan; scanned++ {
		pte := walk(va, false)
		if pte == 0 {
			if n > 0 {
				break
			}
			va = (va + 1<<21) &^ (1<<21 - 1) // no page table: the next 2 MiB
			continue
		}
		e := at[uint64](pte)
		old := atomic.LoadUint64(e)
		if !pteValid(old) || old&pteDirty == 0 || old&pteBorrowed != 0 {
			if n > 0 {
				break
			}
			va += PageSize
			continue
		}
		for !atomic.CompareAndSwapUint64(e, old, pteClean(old)) {
			old = atomic.LoadUint64(e)
		}
		if n == 0 {
			start = va
		}
		n++
		va += PageSize
	}
	mmLock.Unlock()
	if n == 0 {
		return va, va
	}
	s.shootdown(start, va)
	return start, va
}
