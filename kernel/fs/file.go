package fs

import "golang.org/x/sys/unix"

// Open files: open, close, read, write, seek, truncate, stat.

// file is open file h, nil if h is not one.
func (f *FS[E]) file(h int) *file {
	if h < 0 || h >= len(f.files) || f.files[h].refs == 0 {
		return nil
	}
	return &f.files[h]
}

// inodeFile is open file h if it is an inode's (not a pipe's or a FIFO's):
// EBADF if h is not open, notInode if it is not an inode's.
func (f *FS[E]) inodeFile(h int, notInode Errno) (*file, Errno) {
	fl := f.file(h)
	if fl == nil {
		return nil, unix.EBADF
	}
	if fl.kind != kindInode {
		return nil, notInode
	}
	return fl, 0
}

func (f *FS[E]) newFile(kind uint8, flags int, obj int32) (int, Errno) {
	for i := range f.files {
		if fl := &f.files[i]; fl.refs == 0 {
			f.lastID++
			*fl = file{refs: 1, kind: kind, flags: int32(flags), obj: obj, ino: -1, id: f.lastID}
			return i, 0
		}
	}
	return -1, unix.ENFILE
}

const keptFlags = unix.O_ACCMODE | unix.O_APPEND | unix.O_NONBLOCK | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_LARGEFILE

// Open opens path relative to dir (a handle or AtCWD) with Linux's open
// flags (O_CLOEXEC is the caller's: it belongs to the descriptor) and
// returns a handle. mode is a new file's permission bits, before the umask.
func (f *FS[E]) Open(dir int, path []byte, flags int, mode uint32) (int, Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	acc := flags & unix.O_ACCMODE
	if acc == unix.O_ACCMODE || flags&unix.O_TMPFILE == unix.O_TMPFILE || flags&unix.O_PATH != 0 {
		return -1, unix.EINVAL
	}
	creat := flags&unix.O_CREAT != 0
	if creat && flags&unix.O_DIRECTORY != 0 {
		return -1, unix.EINVAL // as Linux since 6.4
	}
	h, e := f.newFile(kindInode, flags&keptFlags, -1)
	if e != 0 {
		return -1, e
	}
	wm := follow
	if flags&unix.O_NOFOLLOW != 0 || creat && flags&unix.O_EXCL != 0 {
		wm = slashFollow
	}
	if creat {
		wm |= slashOK // a trailing slash is EISDIR below
	}
	r, e := f.walk(dir, path, wm)
	if e != 0 {
		f.files[h].refs = 0
		return -1, e
	}
	ino := r.ino
	if creat {
		switch {
		case r.slash:
			e = unix.EISDIR
		case ino < 0:
			if r.kind != lastNorm {
				e = unix.EISDIR
			} else if f.inodes[r.dir].ro {
				e = unix.EROFS
			} else {
				ino, e = f.newInode(r.dir, r.name, unix.S_IFREG|mode&^f.umask&0o7777)
			}
		case flags&unix.O_EXCL != 0:
			e = unix.EEXIST
		case isDir(f.inodes[ino].mode):
			e = unix.EISDIR
		}
	} else if ino < 0 {
		e = unix.ENOENT
	}
	if e == 0 {
		ip := &f.inodes[ino]
		switch {
		case flags&unix.O_DIRECTORY != 0 && !isDir(ip.mode):
			e = unix.ENOTDIR
		case isLink(ip.mode):
			e = unix.ELOOP
		case isDir(ip.mode) && (acc != unix.O_RDONLY || flags&unix.O_TRUNC != 0):
			e = unix.EISDIR
		case ip.mode&unix.S_IFMT == unix.S_IFSOCK || ip.mode&unix.S_IFMT == unix.S_IFBLK || isChr(ip.mode) && !memDev(ip):
			e = unix.ENXIO
		case isFIFO(ip.mode):
			e = f.openFIFO(h, ino) // O_TRUNC is ignored, and a FIFO is writable on a read-only tree
		case ip.ro && !isChr(ip.mode) && (acc != unix.O_RDONLY || flags&unix.O_TRUNC != 0):
			e = unix.EROFS // a device is writable on a read-only tree
		}
	}
	if e != 0 {
		f.files[h].refs = 0
		return -1, e
	}
	ip := &f.inodes[ino]
	if isFIFO(ip.mode) {
		return h, 0
	}
	if flags&unix.O_TRUNC != 0 && isReg(ip.mode) && ip.size != 0 {
		f.truncate(ip, 0)
	}
	ip.refs++
	f.files[h].obj = ino
	return h, 0
}

// Ref adds a reference to open file h (a descriptor dup'ed).
func (f *FS[E]) Ref(h int) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	if fl := f.file(h); fl != nil {
		fl.refs++
		return 0
	}
	return unix.EBADF
}

// Close drops a reference to h; the last one closes it.
func (f *FS[E]) Close(h int) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	if fl == nil {
		return unix.EBADF
	}
	if fl.refs--; fl.refs > 0 {
		return 0
	}
	ino := fl.obj
	if fl.kind == kindPipe {
		f.closePipe(fl)
		ino = fl.ino
	}
	if ino >= 0 {
		f.inodes[ino].refs--
		f.put(ino)
	}
	return 0
}

// Flags is h's open flags (F_GETFL).
func (f *FS[E]) Flags(h int) (int, Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	if fl == nil {
		return 0, unix.EBADF
	}
	return int(fl.flags), 0
}

// SetFlags changes h's O_APPEND and O_NONBLOCK (F_SETFL).
func (f *FS[E]) SetFlags(h, flags int) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	if fl == nil {
		return unix.EBADF
	}
	const m = unix.O_APPEND | unix.O_NONBLOCK
	fl.flags = fl.flags&^m | int32(flags&m)
	return 0
}

// Read reads from h at its offset (a pipe: EAGAIN when empty with a
// writer, 0 at end of file).
func (f *FS[E]) Read(h int, b []byte) (int, Errno) { return f.rw(h, b, atOffset, false) }

// Pread reads from h at off, leaving its offset alone.
func (f *FS[E]) Pread(h int, b []byte, off int64) (int, Errno) {
	if off < 0 {
		return 0, unix.EINVAL // before anything else, as Linux
	}
	return f.rw(h, b, off, false)
}

// Write writes to h at its offset (O_APPEND: at the end). A pipe takes
// what fits: EAGAIN when nothing does (or, for up to PipeBuf bytes, when
// not all does), EPIPE when no reader is left.
func (f *FS[E]) Write(h int, b []byte) (int, Errno) { return f.rw(h, b, atOffset, true) }

// Pwrite writes to h at off (with O_APPEND at the end, as Linux does),
// leaving its offset alone.
func (f *FS[E]) Pwrite(h int, b []byte, off int64) (int, Errno) {
	if off < 0 {
		return 0, unix.EINVAL // before anything else, as Linux
	}
	return f.rw(h, b, off, true)
}

// atOffset as rw's offset is the open file's own (read, write).
const atOffset = -1

// rw reads into b (write false) or writes b to open file h at off, or at
// its offset (off atOffset), which it then advances past the bytes moved.
// A pipe has no offset: ESPIPE for an off of its own.
func (f *FS[E]) rw(h int, b []byte, off int64, write bool) (n int, e Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	switch {
	case fl == nil:
		return 0, unix.EBADF
	case off != atOffset && fl.kind != kindInode:
		return 0, unix.ESPIPE // before the access mode, as Linux
	case write && !canWrite(fl), !write && !canRead(fl):
		return 0, unix.EBADF
	case fl.kind == kindPipe && write:
		return f.writePipe(fl, b)
	case fl.kind == kindPipe:
		return f.readPipe(fl, b)
	}
	pos := off
	if off == atOffset {
		pos = fl.off
	}
	var end int64
	if write {
		n, end, e = f.pwrite(fl, b, pos)
	} else {
		n, end, e = f.pread(fl, b, pos)
	}
	if off == atOffset {
		fl.off = end
	}
	return n, e
}

// pread reads inode file fl at off into b and returns the offset after
// what it read.
func (f *FS[E]) pread(fl *file, b []byte, off int64) (n int, end int64, e Errno) {
	ip := &f.inodes[fl.obj]
	if isDir(ip.mode) {
		return 0, off, unix.EISDIR
	}
	if isChr(ip.mode) {
		if ip.rdev == DevNull {
			return 0, off, 0
		}
		clear(b) // zero and full
		return len(b), off + int64(len(b)), 0
	}
	n = f.readAt(ip, b, off)
	if now := f.env.Now(); ip.atime <= ip.mtime || ip.atime <= ip.ctime { // relatime
		ip.atime = now
	}
	return n, off + int64(n), 0
}

// pwrite writes b to inode file fl at off (with O_APPEND at the end) and
// returns the offset after what it wrote. A memory device has no offset
// (end is off): null and zero take everything, full nothing (ENOSPC).
func (f *FS[E]) pwrite(fl *file, b []byte, off int64) (n int, end int64, e Errno) {
	ip := &f.inodes[fl.obj]
	if isChr(ip.mode) {
		if ip.rdev == DevFull {
			return 0, off, unix.ENOSPC
		}
		return len(b), off, 0
	}
	if fl.flags&unix.O_APPEND != 0 {
		off = ip.size
	}
	n, e = f.writeAt(ip, b, off)
	return n, off + int64(n), e
}

// Seek moves h's offset (SEEK_SET, SEEK_CUR, SEEK_END, SEEK_DATA,
// SEEK_HOLE; directories SET and CUR only).
func (f *FS[E]) Seek(h int, off int64, whence int) (int64, Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	if fl == nil {
		return 0, unix.EBADF
	}
	if whence < 0 || whence > unix.SEEK_HOLE {
		return 0, unix.EINVAL // before ESPIPE, as Linux
	}
	if fl.kind != kindInode {
		return 0, unix.ESPIPE
	}
	ip := &f.inodes[fl.obj]
	if isChr(ip.mode) {
		fl.off = 0 // the memory devices stay at 0, as Linux's null_lseek
		return 0, 0
	}
	pos := off
	switch whence {
	case unix.SEEK_SET:
	case unix.SEEK_CUR:
		pos = fl.off + off
	case unix.SEEK_END, unix.SEEK_DATA, unix.SEEK_HOLE:
		if isDir(ip.mode) {
			return 0, unix.EINVAL
		}
		if whence == unix.SEEK_END {
			pos = ip.size + off
			break
		}
		if off < 0 || off >= ip.size {
			return 0, unix.ENXIO
		}
		// Page granularity, as tmpfs: data is a page that exists.
		pos = -1
		for i := off / PageSize; i*PageSize < ip.size; i++ {
			if a, _ := f.block(ip, i, false); (a != 0) == (whence == unix.SEEK_DATA) {
				pos = max(off, i*PageSize)
				break
			}
		}
		if pos < 0 {
			if whence == unix.SEEK_DATA {
				return 0, unix.ENXIO
			}
			pos = ip.size
		}
	default:
		return 0, unix.EINVAL
	}
	if pos < 0 {
		return 0, unix.EINVAL
	}
	fl.off = pos
	return pos, 0
}

// Ftruncate sets the size of the regular file open for writing as h.
func (f *FS[E]) Ftruncate(h int, size int64) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	if size < 0 {
		return unix.EINVAL
	}
	fl, e := f.inodeFile(h, unix.EINVAL)
	if e != 0 {
		return e
	}
	if !isReg(f.inodes[fl.obj].mode) || !canWrite(fl) {
		return unix.EINVAL
	}
	return f.setSize(&f.inodes[fl.obj], size)
}

// Truncate sets the size of the regular file at path.
func (f *FS[E]) Truncate(dir int, path []byte, size int64) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	if size < 0 {
		return unix.EINVAL
	}
	r, e := f.walkExisting(dir, path, follow)
	if e != 0 {
		return e
	}
	ip := &f.inodes[r.ino]
	switch {
	case isDir(ip.mode):
		return unix.EISDIR
	case !isReg(ip.mode):
		return unix.EINVAL
	case ip.ro:
		return unix.EROFS
	}
	return f.setSize(ip, size)
}

func (f *FS[E]) setSize(ip *inode, size int64) Errno {
	if size > MaxFileSize {
		return unix.EFBIG
	}
	f.truncate(ip, size)
	return 0
}

// Fstat describes open file h.
func (f *FS[E]) Fstat(h int, st *unix.Stat_t) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	if fl == nil {
		return unix.EBADF
	}
	if fl.kind == kindPipe && fl.ino >= 0 {
		f.stat(fl.ino, st) // a FIFO
		return 0
	}
	if fl.kind != kindInode {
		*st = unix.Stat_t{Dev: Dev, Ino: uint64(NumInodes + 1 + fl.obj), Mode: unix.S_IFIFO | 0o600}
		set(&st.Nlink, 1)
		set(&st.Blksize, PageSize)
		return 0
	}
	f.stat(fl.obj, st)
	return 0
}

// Stat describes path (flags: AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH).
func (f *FS[E]) Stat(dir int, path []byte, flags int, st *unix.Stat_t) Errno {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH|unix.AT_NO_AUTOMOUNT) != 0 {
		return unix.EINVAL
	}
	if len(path) == 0 && flags&unix.AT_EMPTY_PATH != 0 {
		if dir == AtCWD {
			f.env.Lock()
			defer f.env.Unlock()
			f.stat(f.cwd, st)
			return 0
		}
		return f.Fstat(dir, st)
	}
	f.env.Lock()
	defer f.env.Unlock()
	r, e := f.walkExisting(dir, path, followMode(flags))
	if e != 0 {
		return e
	}
	f.stat(r.ino, st)
	return 0
}

func (f *FS[E]) stat(ino int32, st *unix.Stat_t) {
	ip := &f.inodes[ino]
	*st = unix.Stat_t{
		Dev:    Dev,
		Ino:    uint64(ino) + 1,
		Mode:   ip.mode,
		Uid:    ip.uid,
		Gid:    ip.gid,
		Rdev:   ip.rdev,
		Size:   ip.size,
		Blocks: ip.pages * (PageSize / 512),
		Atim:   ts(ip.atime),
		Mtim:   ts(ip.mtime),
		Ctim:   ts(ip.ctime),
	}
	set(&st.Nlink, int64(ip.nlink)) // the types of these differ between architectures
	set(&st.Blksize, PageSize)
	if isDir(ip.mode) {
		// tmpfs reports a directory's size as a multiple of entries.
		st.Size = int64(ip.nextSeq) * 20
	}
}

// Fsync is fsync(2) on h: nothing to write back; EINVAL for a pipe, as
// Linux.
func (f *FS[E]) Fsync(h int) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	_, e := f.inodeFile(h, unix.EINVAL)
	return e
}

func set[T ~int32 | ~int64 | ~uint32 | ~uint64](p *T, v int64) { *p = T(v) }
