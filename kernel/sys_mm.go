package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/drivers/clock"
	"yolk/kernel/abi"
	"yolk/kernel/disk"
	"yolk/kernel/mm"
	"yolk/kernel/share"
	"yolk/sched"
)

// Mappings of files (docs/files.md). An area of the address space names
// its file by an int32 (mm's FileRef and FileFault): an in-memory file's
// inode i is i+1 (its pages are mapped as they are, package fs), a share
// file h is -(h+1), a disk inode mapped in slot c of kernel/disk's page
// cache is disk.Area(c) (its cache's pages mapped as they are, or
// copied for a private mapping). A share has no page cache: mmap reads
// the file into the mapping's own pages, and msync, munmap, fsync and the
// program's end write the pages the program wrote in a shared mapping
// back to the host (share.WriteBack, mm's dirty.go).

func fsArea(ino int32) int32 { return ino + 1 }

const _ = uint(disk.AreasBase - share.NumFiles - 1) // disk areas past every share's

// FileRef is mm's reference count on an area's file: the inode's
// mappings, or the share file's references (the last closes it).
func (mmenv) FileRef(file, d int32) {
	if file > 0 {
		vfs.MapRef(file-1, d)
		return
	}
	if c, ok := disk.Slot(file); ok {
		dsk.MapRef(c, d)
		return
	}
	h := share.AreaFile(file)
	atomic.AddInt32(&shares.MapRefs, d)
	fileLock.Lock()
	for ; d > 0; d-- {
		shares.File(h).Refs++
	}
	for ; d < 0; d++ {
		shares.Unref(h)
	}
	fileLock.Unlock()
	shares.Reap()
}

// fileCut takes the pages past the end of in-memory files shrunk while
// mapped (ftruncate, truncate, O_TRUNC) from their mappings, as Linux's
// truncation unmaps them: touching one raises SIGBUS, and the
// bytes written through one before it went are zeroed, so the file grown
// again reads zeroes there (fs's TakeCut, ZeroPast).
func fileCut() {
	for {
		ino, size, ok := vfs.TakeCut()
		if !ok {
			return
		}
		vm.UnbackFile(fsArea(ino), int64(mm.PageRound(uintptr(size))))
		vfs.ZeroPast(ino)
	}
}

// FileFault gives mm a page of a file area, under mmLock (no blocking):
// an in-memory file's own page for a shared mapping, a copy of it for a
// private one; a share file's page is a zeroed frame (mmap filled the
// mapping; a page dropped since, by madvise or PROT_NONE, or one past
// the file's end at mmap that a growth made reachable, reads zeroes).
// None wholly past the file's end: the fault is SIGBUS.
func (mmenv) FileFault(file int32, off int64, shared bool, frame uintptr) (uintptr, bool) {
	if c, ok := disk.Slot(file); ok {
		fr := frame
		if fr != 0 {
			fr = mm.Phys(frame)
		}
		a, ok := dsk.Fault(c, off, shared, fr)
		if !ok || a == 0 {
			return 0, ok
		}
		return a - mm.PhysOff(), true
	}
	switch {
	case file < 0:
		// off is page-aligned: the page has bytes of the file if it
		// starts before the end (no rounding, which could wrap).
		size := atomic.LoadInt64(&shares.File(share.AreaFile(file)).Size)
		return frame, off < size
	case file > 0 && shared:
		a := vfs.MapPage(file-1, off)
		if a == 0 {
			return 0, false
		}
		return a - mm.PhysOff(), true
	case file > 0 && frame != 0:
		return frame, vfs.MapCopy(file-1, off, mm.Phys(frame))
	}
	return frame, true
}

func sysMmap(addr, n, prot, flags uintptr, fd int, off uintptr) (uintptr, abi.Errno) {
	if flags&unix.MAP_FIXED != 0 && flags&unix.MAP_FIXED_NOREPLACE == 0 && shares.Count() > 0 {
		shares.WriteBack(addr, addr+mm.PageRound(n), -1) // what it replaces
	}
	a, e := mmap(addr, n, prot, flags, fd, off)
	if e == 0 && flags&unix.MAP_FIXED_NOREPLACE != 0 && flags&unix.MAP_FIXED == 0 && a != addr {
		// MAP_FIXED_NOREPLACE: exactly at addr or not at all. The areas
		// place a mapping at its hint when the range is free, elsewhere
		// otherwise: elsewhere means the range was taken (EEXIST, as
		// Linux). Once a hint, such mappings were never unmapped by a
		// program that expected EEXIST, and a file's kept it alive.
		vm.Unmap(a, mm.PageRound(n))
		return 0, abi.EEXIST
	}
	return a, e
}

// mmap checks its arguments in Linux's order (sys_mmap, do_mmap,
// get_unmapped_area): the offset's alignment (EINVAL, for anonymous
// mappings too), a file mapping's descriptor (EBADF), then mm.MapArea's
// length and address checks, then MAP_FIXED_NOREPLACE's EEXIST
// (mm.MapTaken), then what depends on the mapping's kind.
func mmap(addr, n, prot, flags uintptr, fd int, off uintptr) (uintptr, abi.Errno) {
	anon := flags&unix.MAP_ANONYMOUS != 0
	if off&(mm.PageSize-1) != 0 {
		return 0, abi.EINVAL
	}
	if !anon && badFD(fd, 0) != 0 {
		return 0, abi.EBADF
	}
	addr, n, e := mm.MapArea(addr, n, flags)
	if e != 0 {
		return 0, e
	}
	if mm.MapTaken(addr, n, flags) {
		return 0, abi.EEXIST
	}
	if !anon {
		return mmapFile(addr, n, prot, flags, fd, off)
	}
	typ := flags & (unix.MAP_SHARED | unix.MAP_PRIVATE)
	if typ != unix.MAP_PRIVATE && typ != unix.MAP_SHARED {
		return 0, abi.EINVAL
	}
	return vm.Map(addr, n, uint32(prot&7), flags&unix.MAP_FIXED != 0, mm.MapCharge(flags, typ == unix.MAP_SHARED, true))
}

// mmapFile maps file descriptor fd from offset off, n bytes (a whole
// number of pages) at addr, which mmap checked, with the rest of Linux's
// checks in its order: the offset, the mapping type and
// MAP_SHARED_VALIDATE's flags (mm.MapFileType), the access mode (EACCES),
// whether the file can be mapped (ENODEV).
func mmapFile(addr, n, prot, flags uintptr, fd int, off uintptr) (uintptr, abi.Errno) {
	shared, e := mm.MapFileType(n, flags, off)
	if e != 0 {
		return 0, e
	}
	m := fileMap{addr: addr, n: n, prot: uint32(prot & 7), flags: flags, off: off, shared: shared,
		sharedWrite: shared && prot&unix.PROT_WRITE != 0, fixed: flags&unix.MAP_FIXED != 0}
	o, e := fdGet(fd)
	if e != 0 {
		return 0, e
	}
	defer fdPut(o)
	if f := o.ops().mmap; f != nil {
		return f(o, noEscapeP(&m))
	}
	return 0, abi.ENODEV // sockets, epoll, eventfd, the console: readable, not mappable
}

// fileMap is a file mapping mmapFile checked, for its kind's mmap.
type fileMap struct {
	addr, n, flags, off        uintptr
	prot                       uint32
	shared, sharedWrite, fixed bool
}

// memMmap maps an in-memory file's own pages.
func memMmap(o ofile, m *fileMap) (uintptr, abi.Errno) {
	ino, writable, e := vfs.MapOpen(o.h, m.sharedWrite)
	if e != 0 {
		return 0, abi.Errno(e)
	}
	return vm.MapFile(m.addr, m.n, m.prot, m.fixed, fsArea(ino), int64(m.off), m.shared, m.shared && !writable, mm.MapCharge(m.flags, m.shared, false))
}

// diskMmap maps a disk file's pages in kernel/disk's page cache.
func diskMmap(o ofile, m *fileMap) (uintptr, abi.Errno) {
	c, writable, e := dsk.MapOpen(o.h, m.off, m.n, m.sharedWrite)
	if e != 0 {
		return 0, e
	}
	return vm.MapFile(m.addr, m.n, m.prot, m.fixed, disk.Area(c), int64(m.off), m.shared, m.shared && !writable, mm.MapCharge(m.flags, m.shared, false))
}

// shareMmap reads a share file into the mapping's pages.
func shareMmap(o ofile, m *fileMap) (uintptr, abi.Errno) {
	h := o.h
	addr, n, off, fixed, shared := m.addr, m.n, m.off, m.fixed, m.shared
	f := shares.File(h)
	acc := int(f.Flags) & unix.O_ACCMODE
	switch {
	case acc == unix.O_WRONLY || m.sharedWrite && acc != unix.O_RDWR:
		return 0, abi.EACCES
	case f.Dir:
		return 0, abi.ENODEV
	}
	// The file's size is what faults past its end are judged by
	// (FileFault): the host's, recorded in the file's slot under the
	// sizes lock (share.MapSize), the mapping counted first so that a
	// change made after is recorded after it. The pages up to it are
	// read in through a writable mapping, then given the protection
	// asked for; those wholly past it stay unbacked.
	atomic.AddInt32(&shares.MapRefs, 1)
	if e := shares.MapSize(h); e != 0 {
		atomic.AddInt32(&shares.MapRefs, -1)
		return 0, e
	}
	fileLock.Lock()
	f.Refs++ // the area's reference, which FileRef drops
	fileLock.Unlock()
	p := m.prot
	fill := p | mm.ProtWrite
	if p == 0 {
		fill = 0
	}
	// The charge is the protection asked for's, not the filling's: a
	// read-only private mapping is not checked (nor, made writable
	// later, is it then).
	charge := mm.MapCharge(m.flags, shared, false)
	if p&mm.ProtWrite == 0 {
		charge = mm.ChargeNone
	}
	a, e := vm.MapFile(addr, n, fill, fixed, share.Area(h), int64(off), shared, shared && acc != unix.O_RDWR, charge)
	if e != 0 || p == 0 {
		return a, e
	}
	// Up to the size in the slot now, not the one MapSize read: the
	// program may have changed it since (another thread).
	k := min(int64(n), max(atomic.LoadInt64(&f.Size)-int64(off), 0))
	if _, re := shares.Client(f.Dev).Read(f.Fid, uint64(off), bytesAt(a, int(k))); re != 0 {
		vm.Unmap(a, n)
		return 0, abi.Errno(re)
	}
	if shared {
		// The fill's stores marked the pages written (mm's dirty.go):
		// clean them, so that only the program's go back.
		mm.HoldAreas()
		for q := a; q < a+n; {
			_, q = vm.TakeDirty(q, a+n)
		}
		mm.ReleaseAreas()
	}
	if p != fill {
		vm.Protect(a, n, p)
	}
	return a, 0
}

// exitWriteBack writes back the shared mappings of share files when the
// program ends (exit_group, a signal's default action, reboot): on Linux
// their pages stay in the page cache, which writes them to the file
// after the process; here the machine stops. An in-memory file's mapping
// is its pages: nothing to do. Once: a thread that ends the program
// meanwhile waits for the first to stop the machine. Each wait for the
// host is bounded (share.ExitWait); an error is reported on serial.
func exitWriteBack(code uint8) {
	t := sched.Current()
	if t != nil {
		dsk.EndAll()
	}
	if shares.Count() == 0 || t == nil {
		return
	}
	if !atomic.CompareAndSwapInt32(&shareEnder, 0, t.TID) {
		for {
			sched.Block(nil, 0, 0, 0, clock.Nanotime()+1e9)
		}
	}
	atomic.StoreInt32(&exitCode, int32(code))
	if e := shares.WriteBack(mm.UserMin, mm.UserMax, -1); e != 0 {
		klog("share: writing back a shared mapping at the program's end: errno ")
		kprintDec(int64(e))
		kprint("\n")
	}
}

// sysMsync: an in-memory file's shared mapping is its pages (nothing to
// do); a share file's is written back, for MS_ASYNC too (Linux would
// write it some time later). ENOMEM if part of the range is not mapped,
// as Linux, after syncing the rest.
func sysMsync(addr, n uintptr, flags int) abi.Errno {
	if addr&(mm.PageSize-1) != 0 || flags&^(unix.MS_ASYNC|unix.MS_INVALIDATE|unix.MS_SYNC) != 0 ||
		flags&unix.MS_ASYNC != 0 && flags&unix.MS_SYNC != 0 {
		return abi.EINVAL
	}
	end := addr + mm.PageRound(n) // a length that rounds to 0 is an empty range (Linux)
	if end < addr {
		return abi.ENOMEM
	}
	if end == addr {
		return 0
	}
	if !mm.UserSpan(addr, end-addr) {
		return abi.ENOMEM
	}
	err := shares.WriteBack(addr, end, -1)
	if e := disk.OnAreas(addr, end, func(c int) abi.Errno { return dsk.Msync(c) }); e != 0 {
		err = e
	}
	if !mm.Mapped(addr, end) {
		return abi.ENOMEM
	}
	return err
}

// sysMlock is mlock, munlock and mlock2 (flags: MLOCK_ONFAULT): memory
// is never paged out here, so locking only checks its arguments as
// Linux's do_mlock does — EINVAL for unknown flags, the length rounded
// with the start's offset (wrapping as Linux's PAGE_ALIGN does), EINVAL
// past the top, ENOMEM when part of the range is not mapped.
func sysMlock(addr, n uintptr, flags int) abi.Errno {
	if flags&^unix.MLOCK_ONFAULT != 0 {
		return abi.EINVAL
	}
	start := addr &^ (mm.PageSize - 1)
	end := start + mm.PageRound(n+addr&(mm.PageSize-1))
	if end < start {
		return abi.EINVAL
	}
	if end == start {
		return 0
	}
	if !mm.UserSpan(start, end-start) || !mm.Mapped(start, end) {
		return abi.ENOMEM
	}
	return 0
}

// sysMlockall: EINVAL for flags Linux refuses (none, unknown, or
// MCL_ONFAULT alone); nothing to lock (see sysMlock).
func sysMlockall(flags int) abi.Errno {
	const all = unix.MCL_CURRENT | unix.MCL_FUTURE | unix.MCL_ONFAULT
	if flags == 0 || flags&^all != 0 || flags == unix.MCL_ONFAULT {
		return abi.EINVAL
	}
	return 0
}

// sysFallocate: the in-memory file system allocates pages (package fs); a
// share has no Tfallocate in 9P2000.L, so mode 0 grows the file to cover
// the range with Tsetattr (the host file is sparse there: no blocks are
// reserved) and FALLOC_FL_KEEP_SIZE only checks its arguments.
func sysFallocate(fd, mode int, off, n int64) abi.Errno {
	o, e := fdGet(fd)
	if e != 0 {
		return e
	}
	defer fdPut(o)
	if f := o.ops().allocate; f != nil {
		return f(o, mode, off, n)
	}
	switch {
	case off < 0 || n <= 0:
		return abi.EINVAL
	case mode&^unix.FALLOC_FL_KEEP_SIZE != 0:
		return abi.EOPNOTSUPP
	}
	return abi.ENODEV // sockets, the console, epoll, eventfd
}

func sysMadvise(addr, n uintptr, advice int) abi.Errno {
	if err := mm.CheckPage(addr, n); err != 0 {
		return err
	}
	if !mm.UserSpan(addr, n) {
		return abi.EINVAL
	}
	switch advice {
	case unix.MADV_DONTNEED, unix.MADV_FREE:
		return vm.DontNeed(addr, mm.PageRound(n))
	}
	return 0 // hints (huge pages, collapse, ...) need no action
}

// sysMunmap writes a share file's shared mapping back first (Linux's page
// cache keeps the pages; here they go with the mapping).
func sysMunmap(addr, n uintptr) abi.Errno {
	if err := mm.CheckPage(addr, n); err != 0 {
		return err
	}
	if !mm.UserSpan(addr, n) {
		return abi.EINVAL
	}
	if shares.Count() > 0 {
		shares.WriteBack(addr, addr+mm.PageRound(n), -1)
	}
	return vm.Unmap(addr, mm.PageRound(n))
}

func sysMprotect(addr, n, prot uintptr) abi.Errno {
	if err := mm.CheckPage(addr, n); err != 0 {
		return err
	}
	if !mm.UserSpan(addr, n) {
		return abi.ENOMEM
	}
	if prot&unix.PROT_WRITE == 0 && shares.Count() > 0 {
		shares.WriteBack(addr, addr+mm.PageRound(n), -1) // before its writes are taken away
	}
	if prot&unix.PROT_WRITE != 0 {
		disk.OnAreas(addr, addr+mm.PageRound(n), func(c int) abi.Errno { dsk.MapWrite(c); return 0 })
	}
	return vm.Protect(addr, mm.PageRound(n), uint32(prot&7))
}
