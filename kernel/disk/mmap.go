package disk

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
)

// Memory mappings of disk files (docs/disks.md): a page cache for the
// inodes that are mapped. Each mapped inode has a slot (mapSlot) that
// its areas name (the kernel's area file for slot c); its pages are in
// the cache's index (pageTab), each a frame holding the file's bytes.
//
//   - mmap fills the cache with the pages of the range it maps that are
//     before the file's end (I/O, under the mount's lock), so that a
//     page fault, which may not block, finds them: a MAP_SHARED area maps
//     the cache's page itself, a private one copies it (Fault).
//   - While a slot exists the cache is the file's truth: write(2) puts
//     its bytes into the cached pages (and a page that was not cached is
//     added: the write's bytes when it covered the page, else read back
//     from ext4 after the write), read(2) takes the
//     cached pages' bytes over ext4's. So a page of the file before its
//     end and missing from the cache holds zeroes (made by a truncation
//     or fallocate that grew the file): a fault gives it a zeroed page.
//   - The pages go to ext4 (WriteAt: journaled as write(2)'s) at msync,
//     fsync, sync, the last area's munmap and the program's end, when a
//     shared writable area was ever made of the inode (at mmap, or by
//     mprotect: MapWrite); every cached page before the end is written:
//     no page has a dirty bit.
//   - A truncation zeroes the cached bytes past the new end, then, once
//     the mount's lock is dropped, takes the pages past it from the
//     mappings (Env.Unback: SIGBUS there) and frees them (cut).
//   - The last area gone, the pages are written back and freed, the slot
//     too; a slot keeps its inode (InUse) as an open file does.
//
// Locks: the mount's lock, then the cache's spin lock (tabMu); a page
// fault holds mm's mmLock and takes tabMu only. Slots of mount i change
// under mount i's lock (busy is taken by compare-and-swap, across
// mounts).

// NumMaps is how many disk inodes can be mapped at once.
const NumMaps = 128

// mapSlot is a mapped inode.
type mapSlot struct {
	busy  int32 // atomic: the slot is taken
	refs  int32 // the areas naming it (FileRef), under the mount's lock
	m     int8
	ino   uint32
	size  int64  // atomic: the file's size (faults past it are SIGBUS)
	write bool   // a shared writable area was made: write the pages back
	full  uint32 // atomic: a page could not be cached; a missing one is not known to be zero
	gen   uint32 // shrinking truncations (cut)
	cut   bool   // shrunk: pages past size to take from the mappings
	pages int32  // the slot's pages in the cache, under tabMu
	hi    uint32 // every cached page's index is below it, under tabMu
}

// slotOf is mount i's slot for ino, -1 if it is not mapped; the mount's
// lock is held.
func (d *Disks[E]) slotOf(i int, ino uint32) int {
	for c := range d.maps {
		s := &d.maps[c]
		if atomic.LoadInt32(&s.busy) != 0 && s.refs > 0 && int(s.m) == i && s.ino == ino {
			return c
		}
	}
	return -1
}

// pageAt is the kernel address a as a page's bytes.
func pageAt(a uintptr) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&a))), pageSize)
}

// MapOpen readies open file h to be mapped from offset off, n bytes,
// shared and writable if sharedWrite: the pages of the range before the
// file's end are read into the cache. It returns the slot, with the
// area's reference (MapRef drops it), and whether the file is open for
// writing. Linux's errno: EACCES for a file not open for reading, or
// not for writing when shared and writable; ENODEV for a directory;
// ENOMEM when the cache is full.
func (d *Disks[E]) MapOpen(h int, off, n uintptr, sharedWrite bool) (int, bool, abi.Errno) {
	f := &d.files[h]
	acc := f.flags & unix.O_ACCMODE
	switch {
	case f.dir:
		return -1, false, abi.ENODEV
	case acc == unix.O_WRONLY || sharedWrite && acc != unix.O_RDWR:
		return -1, false, abi.EACCES
	}
	_, m := d.mnt(h)
	defer m.mu.Unlock()
	st, e := m.fs.Stat(f.ino)
	if e != 0 {
		return -1, false, e
	}
	c := d.slotOf(int(f.m), f.ino)
	if c < 0 {
		for k := range d.maps {
			if atomic.CompareAndSwapInt32(&d.maps[k].busy, 0, 1) {
				c = k
				break
			}
		}
		if c < 0 {
			return -1, false, abi.ENOMEM
		}
		d.maps[c] = mapSlot{busy: 1, m: f.m, ino: f.ino, size: int64(st.Size)}
	}
	s := &d.maps[c]
	s.refs++
	if sharedWrite {
		s.write = true
	}
	end := min(uint64(off)+uint64(n), st.Size)
	for o := uint64(off); o < end; o += pageSize {
		if e := d.fill(m, c, o); e != 0 {
			d.unref(m, c)
			return -1, false, e
		}
	}
	return c, acc == unix.O_RDWR, 0
}

// fill puts the page at file offset o of slot c into the cache if it is
// not there, read from ext4; the mount's lock is held.
func (d *Disks[E]) fill(m *mount[E], c int, o uint64) abi.Errno {
	e, _ := d.fillFrom(m, c, o, nil)
	return e
}

// fillFrom is fill with the page's bytes taken from src (a whole page
// just written to the file) instead of read back when src is not nil.
// had reports that the page was in the cache (nothing was done).
func (d *Disks[E]) fillFrom(m *mount[E], c int, o uint64, src []byte) (e abi.Errno, had bool) {
	idx := uint32(o / pageSize)
	d.tabMu.Lock()
	have := d.tab.get(c, idx) != 0
	d.tabMu.Unlock()
	if have {
		return 0, true
	}
	e0 := env[E]()
	a := e0.AllocPage()
	if a == 0 {
		return abi.ENOMEM, false
	}
	if src != nil {
		copy(pageAt(a), src)
	} else if _, e := m.fs.ReadAt(d.maps[c].ino, pageAt(a), uint64(idx)*pageSize); e != 0 {
		e0.FreePage(a)
		return e, false
	}
	d.tabMu.Lock()
	if d.tab.get(c, idx) != 0 {
		// A shared area's fault made the page meanwhile (Fault takes
		// tabMu only): it is the cache's, and mapped.
		d.tabMu.Unlock()
		e0.FreePage(a)
		return 0, true
	}
	ok := d.put(c, idx, a)
	d.tabMu.Unlock()
	if !ok {
		e0.FreePage(a)
		atomic.StoreUint32(&d.maps[c].full, 1)
		d.fullOnce()
		return abi.ENOMEM, false
	}
	return 0, false
}

// put adds page a at (c, idx) to the index, counted in the slot; false
// when the index is full, or a chunk of it is needed and no page is left.
// tabMu is held.
func (d *Disks[E]) put(c int, idx uint32, a uintptr) bool {
	for {
		full, need := d.tab.put(c, idx, a)
		if full {
			return false
		}
		if need < 0 {
			break
		}
		p := env[E]().AllocPage()
		if p == 0 {
			return false
		}
		d.tab.addChunk(need, p)
	}
	s := &d.maps[c]
	s.pages++
	s.hi = max(s.hi, idx+1)
	return true
}

// fullOnce says on the console, the first time, that the cache could not
// take a page: the inode's pages not cached are SIGBUS in its mappings
// from then on, not zeroes, until its last mapping goes.
func (d *Disks[E]) fullOnce() {
	if atomic.CompareAndSwapUint32(&d.fullSaid, 0, 1) {
		env[E]().Print("yolk: disk: the page cache of mapped files is full (4 GiB, or memory): a mapping's page it cannot hold is SIGBUS\n")
	}
}

// MapRef adds delta to slot c's areas (mm's FileRef, under the address
// space's mutex: it takes the mount's lock). The last one gone, the
// pages are written back and freed, and the slot.
func (d *Disks[E]) MapRef(c int, delta int32) {
	m := &d.m[d.maps[c].m]
	m.lock()
	defer m.mu.Unlock()
	if delta > 0 {
		d.maps[c].refs += delta
		return
	}
	for ; delta < 0; delta++ {
		d.unref(m, c)
	}
}

// unref drops one of slot c's areas; the mount's lock is held.
func (d *Disks[E]) unref(m *mount[E], c int) {
	s := &d.maps[c]
	if s.refs--; s.refs > 0 {
		return
	}
	d.writeBack(m, c)
	d.freePages(c, 0)
	s.write, s.cut = false, false
	atomic.StoreUint32(&m.reap, 1) // the inode may have lost its last name while mapped
	atomic.StoreInt32(&s.busy, 0)
}

// freePages frees slot c's pages from page index from on; the mount's
// lock is held and no mapping reaches them.
func (d *Disks[E]) freePages(c int, from uint32) {
	e0 := env[E]()
	s := &d.maps[c]
	d.tabMu.Lock()
	w := d.tab.walk(c, from, s.hi)
	for s.pages > 0 {
		i := d.tab.next(&w)
		if i < 0 {
			break
		}
		e0.FreePage(d.tab.at(i).page)
		if emptied := d.tab.del(i); emptied != 0 {
			e0.FreePage(emptied)
		}
		s.pages--
	}
	s.hi = min(s.hi, from)
	d.tabMu.Unlock()
}

// writeBack writes slot c's cached pages before the file's end to ext4
// if a shared writable area was made of it; the mount's lock is held.
func (d *Disks[E]) writeBack(m *mount[E], c int) abi.Errno {
	s := &d.maps[c]
	if !s.write || m.fs.ReadOnly() {
		return 0
	}
	var err abi.Errno
	size := atomic.LoadInt64(&s.size)
	// By page index (entries move in the index when other slots' pages
	// are freed), until every page of the slot has been seen.
	d.tabMu.Lock()
	left := s.pages
	d.tabMu.Unlock()
	for idx := uint64(0); int64(idx*pageSize) < size && left > 0; idx++ {
		off := int64(idx * pageSize)
		d.tabMu.Lock()
		if !d.tab.runCached(c, idx) {
			d.tabMu.Unlock()
			idx = nextRun(idx) - 1
			continue
		}
		a := d.tab.get(c, uint32(idx))
		d.tabMu.Unlock()
		if a == 0 {
			continue
		}
		left--
		// The page stays: only this mount's calls free a slot's
		// pages, and its lock is held.
		if _, e := m.fs.WriteAt(s.ino, pageAt(a)[:min(pageSize, size-off)], uint64(off)); e != 0 {
			err = e
		}
	}
	return err
}

// WriteBack writes slot c's pages back to ext4 (sync and the program's
// end, which then make every call durable).
func (d *Disks[E]) WriteBack(c int) abi.Errno { return d.writeBackSync(c, false) }

// Msync writes slot c's pages back and makes them durable (msync: the
// journal's running transaction committed, or the device flushed).
func (d *Disks[E]) Msync(c int) abi.Errno { return d.writeBackSync(c, true) }

func (d *Disks[E]) writeBackSync(c int, sync bool) abi.Errno {
	m := &d.m[d.maps[c].m]
	m.lock()
	defer m.mu.Unlock()
	if atomic.LoadInt32(&d.maps[c].busy) == 0 || d.maps[c].refs == 0 {
		return 0
	}
	e := d.writeBack(m, c)
	if sync {
		if e2 := m.fs.Datasync(); e == 0 {
			e = e2
		}
	}
	return e
}

// WriteBackAll writes every mapped inode's pages back (sync, the
// program's end).
func (d *Disks[E]) WriteBackAll() abi.Errno {
	var err abi.Errno
	for c := range d.maps {
		if atomic.LoadInt32(&d.maps[c].busy) != 0 {
			if e := d.WriteBack(c); e != 0 {
				err = e
			}
		}
	}
	return err
}

// MapWrite records that an area of slot c was made shared and writable
// (mprotect): its pages are written back from now on.
func (d *Disks[E]) MapWrite(c int) {
	m := &d.m[d.maps[c].m]
	m.lock()
	d.maps[c].write = true
	m.mu.Unlock()
}

// Fault gives mm the page at offset off of slot c's file, under mmLock
// (mm.Env's FileFault): asked with frame 0, the cache's page (kernel
// address) for a shared area, 0 for a private one, which is given a
// zeroed frame (kernel address) to copy the page into. ok false past the
// file's end, or for a page the full cache cannot hold.
func (d *Disks[E]) Fault(c int, off int64, shared bool, frame uintptr) (uintptr, bool) {
	s := &d.maps[c]
	idx := uint32(off / pageSize)
	d.tabMu.Lock()
	defer d.tabMu.Unlock()
	if off >= atomic.LoadInt64(&s.size) {
		return 0, false
	}
	if !shared && frame == 0 {
		return 0, true
	}
	a := d.tab.get(c, idx)
	if a == 0 {
		if atomic.LoadUint32(&s.full) != 0 {
			return 0, false // the page may hold bytes the cache could not keep
		}
		if !shared {
			return frame, true // a zero page (made by a truncation or fallocate)
		}
		e0 := env[E]()
		if a = e0.AllocPage(); a == 0 {
			return 0, false
		}
		if !d.put(c, idx, a) {
			e0.FreePage(a)
			return 0, false
		}
	}
	if shared {
		return a, true
	}
	copy(pageAt(frame), pageAt(a))
	return frame, true
}

// wrote updates mount i's mapped inode ino after write(2) put b at off
// (ext4 has the bytes): the cached pages take them, a page not cached
// is read back from ext4 and added, the size grows. The mount's lock is
// held.
func (d *Disks[E]) wrote(m *mount[E], i int, ino uint32, b []byte, off int64) {
	c := d.slotOf(i, ino)
	if c < 0 || len(b) == 0 {
		return
	}
	s := &d.maps[c]
	for o := off &^ (pageSize - 1); o < off+int64(len(b)); {
		d.tabMu.Lock()
		a := d.tab.get(c, uint32(o/pageSize))
		if a != 0 {
			lo, hi := max(o, off), min(o+pageSize, off+int64(len(b)))
			copy(pageAt(a)[lo-o:hi-o], b[lo-off:hi-off])
		}
		d.tabMu.Unlock()
		if a == 0 {
			var src []byte // a whole page written: its bytes, not read back
			if o >= off && o+pageSize <= off+int64(len(b)) {
				src = b[o-off : o-off+pageSize]
			}
			e, had := d.fillFrom(m, c, uint64(o), src)
			if had {
				continue // a fault made the page meanwhile: the bytes go into it
			}
			if e != 0 {
				atomic.StoreUint32(&s.full, 1)
				d.fullOnce()
			}
		}
		o += pageSize
	}
	if end := off + int64(len(b)); end > atomic.LoadInt64(&s.size) {
		atomic.StoreInt64(&s.size, end)
	}
}

// read lays mount i's mapped inode ino's cached bytes over b, which
// ext4 read from off. The mount's lock is held.
func (d *Disks[E]) read(i int, ino uint32, b []byte, off int64) {
	c := d.slotOf(i, ino)
	if c < 0 || len(b) == 0 {
		return
	}
	d.tabMu.Lock()
	defer d.tabMu.Unlock()
	for o := off &^ (pageSize - 1); o < off+int64(len(b)); o += pageSize {
		if a := d.tab.get(c, uint32(o/pageSize)); a != 0 {
			lo, hi := max(o, off), min(o+pageSize, off+int64(len(b)))
			copy(b[lo-off:hi-off], pageAt(a)[lo-o:hi-o])
		}
	}
}

// resized updates mount i's mapped inode ino after a truncation or
// fallocate set its size: the cached bytes past a smaller end are
// zeroed (the file grown again reads zeroes), and the slot is marked
// for cut, which the caller runs once the mount's lock is dropped. The
// mount's lock is held.
func (d *Disks[E]) resized(m *mount[E], i int, ino uint32) {
	c := d.slotOf(i, ino)
	if c < 0 {
		return
	}
	st, e := m.fs.Stat(ino)
	if e != 0 {
		return
	}
	s := &d.maps[c]
	size := int64(st.Size)
	old := atomic.SwapInt64(&s.size, size)
	if size >= old {
		return
	}
	d.tabMu.Lock()
	for o := size &^ (pageSize - 1); o < old; o += pageSize {
		if a := d.tab.get(c, uint32(o/pageSize)); a != 0 {
			clear(pageAt(a)[max(size-o, 0):])
		}
	}
	d.tabMu.Unlock()
	s.gen++
	s.cut = true
}

// cut takes the pages past the end of the mapped inodes a truncation
// shrank from their mappings (Env.Unback: touching one raises SIGBUS, as
// Linux's truncation unmaps them), then frees those still past the end,
// unless another truncation came meanwhile (its own cut frees them).
// No mount's lock is held.
func (d *Disks[E]) cut() {
	for c := range d.maps {
		s := &d.maps[c]
		if atomic.LoadInt32(&s.busy) == 0 {
			continue
		}
		m := &d.m[s.m]
		m.lock()
		if !s.cut || s.refs == 0 {
			m.mu.Unlock()
			continue
		}
		s.cut = false
		gen, size := s.gen, atomic.LoadInt64(&s.size)
		m.mu.Unlock()
		env[E]().Unback(c, int64(mm.PageRound(uintptr(size))))
		m.lock()
		if s.refs > 0 && s.gen == gen {
			d.freePages(c, uint32(mm.PageRound(uintptr(atomic.LoadInt64(&s.size)))/pageSize))
		}
		m.mu.Unlock()
	}
}

// MapSlot says which inode slot c maps: its mount's st_dev and the
// inode number (/proc/self/maps).
func (d *Disks[E]) MapSlot(c int) (dev uint64, ino uint32) {
	s := &d.maps[c]
	return d.m[s.m].rd, s.ino
}

// mapped reports whether a slot of the mount on block device dev names
// inode ino (InUse: a mapping keeps the inode as an open file does).
func (d *Disks[E]) mapped(dev int, ino uint32) bool {
	for c := range d.maps {
		s := &d.maps[c]
		if atomic.LoadInt32(&s.busy) != 0 && s.ino == ino && d.m[s.m].dev == dev {
			return true
		}
	}
	return false
}

// AreasBase is the first disk area file's negation: an area of the
// address space names mapped slot c by the int32 Area(c) (mm's file),
// past every share file's -(h+1) and the in-memory files' positive ones.
const AreasBase = 1 << 20

// Area is the area file of mapped slot c; Slot the slot of area file
// file, and whether it is a disk's.
func Area(c int) int32            { return -int32(AreasBase + c) }
func Slot(file int32) (int, bool) { return int(-int64(file)) - AreasBase, file <= -AreasBase }

// OnAreas runs f on the slot of each shared disk area in [addr, end),
// the areas held (msync's write-back, mprotect's PROT_WRITE).
func OnAreas(addr, end uintptr, f func(c int) abi.Errno) abi.Errno {
	var err abi.Errno
	mm.HoldAreas()
	defer mm.ReleaseAreas()
	for addr < end {
		_, e, file, _, shared, _, ok := mm.FileArea(addr, end)
		if !ok {
			break
		}
		addr = e
		if c, disk := Slot(file); disk && shared {
			if fe := f(c); fe != 0 {
				err = fe
			}
		}
	}
	return err
}
