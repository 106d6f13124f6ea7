package fs

import "golang.org/x/sys/unix"

// Memory mappings of files and fallocate. A mapping names its file by
// inode (MapOpen) and counts in the inode's maps: while any exists the
// inode is not freed and a truncation zeroes the pages past the new end
// instead of freeing them (a mapping may still reach them), so a shared
// mapping can map the file's pages themselves (MapPage): writes through
// it are the file's data at once, and read(2), write(2) and every other
// mapping see the same bytes, as on Linux's tmpfs. A private mapping
// copies a page when first touched (MapCopy).

// MapOpen checks that open file h may be mapped — shared and writable
// says MAP_SHARED with PROT_WRITE — and returns its inode, whose maps it
// counts (MapRef drops it), and whether it is open for writing. Linux's
// errno: EACCES for a file not open for reading, or not for writing when
// shared and writable; ENODEV for what cannot be mapped (a pipe, a
// directory, a device).
func (f *FS[E]) MapOpen(h int, sharedWrite bool) (int32, bool, Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	if fl == nil {
		return -1, false, unix.EBADF
	}
	if !canRead(fl) || sharedWrite && !canWrite(fl) {
		return -1, false, unix.EACCES
	}
	if fl.kind != kindInode || !isReg(f.inodes[fl.obj].mode) {
		return -1, false, unix.ENODEV
	}
	f.inodes[fl.obj].maps++
	return fl.obj, canWrite(fl), 0
}

// MapRef adds d to ino's mappings. The last one gone frees the pages a
// truncation kept, and the inode if nothing else holds it.
func (f *FS[E]) MapRef(ino int32, d int32) {
	f.env.Lock()
	defer f.env.Unlock()
	ip := &f.inodes[ino]
	if ip.maps += d; ip.maps > 0 {
		return
	}
	f.truncPages(ip, (ip.size+PageSize-1)/PageSize)
	ip.cut, ip.cutEnd = false, 0
	f.put(ino)
}

// TakeCut returns an inode shrunk while mapped since it was last
// returned, and its size: the kernel takes the pages past that end from
// the inode's mappings (Linux's SIGBUS there, and a private copy goes
// too), then calls ZeroPast. ok false if there is none.
func (f *FS[E]) TakeCut() (ino int32, size int64, ok bool) {
	f.env.Lock()
	defer f.env.Unlock()
	if !f.cuts {
		return -1, 0, false
	}
	for i := range f.inodes {
		if ip := &f.inodes[i]; ip.cut && ip.mode != 0 {
			ip.cut = false
			return int32(i), ip.size, true
		}
	}
	f.cuts = false
	return -1, 0, false
}

// ZeroPast zeroes the pages a truncation kept past ino's end, once the
// kernel has taken them from the mappings (TakeCut): what was written
// through a mapping between the truncation and then does not come back
// when the file grows again.
func (f *FS[E]) ZeroPast(ino int32) {
	f.env.Lock()
	defer f.env.Unlock()
	ip := &f.inodes[ino]
	for o := ip.size; o < ip.cutEnd; o = (o/PageSize + 1) * PageSize {
		if a, _ := f.block(ip, o/PageSize, false); a != 0 {
			clear(mem(a+uintptr(o%PageSize), PageSize-int(o%PageSize)))
		}
	}
}

// MapPage returns the address of ino's page at off (page-aligned),
// allocating it if it is a hole; 0 past the page holding the file's end
// (Linux's SIGBUS) or when memory is exhausted.
func (f *FS[E]) MapPage(ino int32, off int64) uintptr {
	f.env.Lock()
	defer f.env.Unlock()
	ip := &f.inodes[ino]
	if off < 0 || off >= (ip.size+PageSize-1)/PageSize*PageSize {
		return 0
	}
	a, _ := f.block(ip, off/PageSize, true)
	return a
}

// MapCopy copies ino's page at off into the page at dst (zeroed): the
// bytes before the file's end. False past the page holding the end.
func (f *FS[E]) MapCopy(ino int32, off int64, dst uintptr) bool {
	f.env.Lock()
	defer f.env.Unlock()
	ip := &f.inodes[ino]
	if off < 0 || off >= (ip.size+PageSize-1)/PageSize*PageSize {
		return false
	}
	f.readAt(ip, mem(dst, PageSize), off)
	return true
}

// Fallocate is fallocate(2) on open file h: mode 0 allocates the pages of
// [off, off+n) and grows the file to cover it, FALLOC_FL_KEEP_SIZE
// allocates without changing the size; other modes are EOPNOTSUPP (tmpfs
// would punch holes). Linux's order of checks and errno.
func (f *FS[E]) Fallocate(h, mode int, off, n int64) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	switch {
	case fl == nil:
		return unix.EBADF
	case off < 0 || n <= 0:
		return unix.EINVAL
	case mode&^unix.FALLOC_FL_KEEP_SIZE != 0:
		return unix.EOPNOTSUPP
	case !canWrite(fl):
		return unix.EBADF
	case fl.kind == kindPipe:
		return unix.ESPIPE
	}
	ip := &f.inodes[fl.obj]
	switch {
	case isFIFO(ip.mode):
		return unix.ESPIPE
	case isDir(ip.mode):
		return unix.EISDIR
	case !isReg(ip.mode):
		return unix.ENODEV
	case off+n > MaxFileSize || off+n < 0:
		return unix.EFBIG
	case ip.ro:
		return unix.EROFS
	case (off+n+PageSize-1)/PageSize-off/PageSize > f.maxPages-f.pages:
		return unix.ENOSPC // more pages than are left, holes or not (as tmpfs)
	}
	for i := off / PageSize; i <= (off+n-1)/PageSize; i++ {
		if _, e := f.block(ip, i, true); e != 0 {
			return e // the pages allocated stay, as on tmpfs until a truncation
		}
	}
	if mode == 0 && off+n > ip.size {
		ip.size = off + n
		now := f.env.Now()
		ip.mtime, ip.ctime = now, now
	}
	return 0
}
