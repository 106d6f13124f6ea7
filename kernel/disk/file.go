package disk

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/ext4"
	"yolk/kernel/mm"
	"yolk/kernel/namei"
)

// NumFiles is the size of the table of open files on disks.
const NumFiles = 1024

// File is an open file on a disk: what a descriptor (and its dups) names.
// Refs counts the descriptors and the calls using it (atomic; 0 is a free
// entry).
type File struct {
	Refs  int32
	m     int8 // the disk mount's index
	dir   bool
	ino   uint32
	depth int32 // a directory's names below the mount's root (paths from it)
	flags int32 // open's flags that F_GETFL shows
	off   int64 // the file offset; a directory's readdir cookie (under the mount's lock)
}

// keptFlags are the open flags F_GETFL shows.
const keptFlags = unix.O_ACCMODE | unix.O_APPEND | unix.O_NONBLOCK | unix.O_DIRECT | unix.O_SYNC | unix.O_DSYNC | unix.O_NOATIME | unix.O_LARGEFILE

// open opens inode ino (of type mode, created by this open if created)
// of mount i, depth names below its root, for open's flags; the mount's
// lock is held.
func (d *Disks[E]) open(i int, ino, mode uint32, depth int, flags int, created bool) (int, abi.Errno) {
	m := &d.m[i]
	acc := flags & unix.O_ACCMODE
	typ := mode & unix.S_IFMT
	switch {
	case acc == unix.O_ACCMODE:
		return -1, abi.EINVAL
	case typ == unix.S_IFLNK:
		return -1, abi.Errno(unix.ELOOP) // O_NOFOLLOW (O_PATH: not yet)
	case flags&unix.O_DIRECTORY != 0 && typ != unix.S_IFDIR:
		return -1, abi.Errno(unix.ENOTDIR)
	case typ == unix.S_IFDIR && (acc != unix.O_RDONLY || flags&unix.O_TRUNC != 0):
		return -1, abi.Errno(unix.EISDIR)
	case typ != unix.S_IFDIR && typ != unix.S_IFREG:
		return -1, abi.Errno(unix.ENXIO) // devices, FIFOs and sockets on a disk: not yet
	case (acc != unix.O_RDONLY || flags&unix.O_TRUNC != 0) && m.fs.ReadOnly():
		return -1, abi.Errno(unix.EROFS)
	}
	if flags&unix.O_TRUNC != 0 && !created {
		if e := m.fs.Truncate(ino, 0); e != 0 {
			return -1, e
		}
		d.resized(m, i, ino) // the caller runs cut
	}
	for h := range d.files {
		f := &d.files[h]
		if atomic.LoadInt32(&f.Refs) == 0 && atomic.CompareAndSwapInt32(&f.Refs, 0, -1) {
			f.m, f.dir, f.ino, f.depth = int8(i), typ == unix.S_IFDIR, ino, int32(depth)
			f.flags, f.off = int32(flags&keptFlags), 0
			atomic.StoreInt32(&f.Refs, 1)
			return h, 0
		}
	}
	return -1, abi.Errno(unix.ENFILE)
}

// Ref and Unref count a reference to open file h. The last one gone,
// the mount's orphans are looked at by its next call (lock): the file's
// inode may have lost its last name while open.
func (d *Disks[E]) Ref(h int) { atomic.AddInt32(&d.files[h].Refs, 1) }
func (d *Disks[E]) Unref(h int) {
	f := &d.files[h]
	m := int(f.m)
	if atomic.AddInt32(&f.Refs, -1) == 0 {
		atomic.StoreUint32(&d.m[m].reap, 1)
	}
}

// InUse reports whether an open file names inode ino of the mount on
// block device dev (ext4.Env's, for the mount's own calls).
func (d *Disks[E]) InUse(dev int, ino uint32) bool {
	for i := range d.files {
		f := &d.files[i]
		if atomic.LoadInt32(&f.Refs) > 0 && f.ino == ino && d.m[f.m].dev == dev {
			return true
		}
	}
	return d.mapped(dev, ino)
}

// lock takes mount m's lock, then frees the orphans no open file names
// any more if a file was closed since.
func (m *mount[E]) lock() {
	m.mu.Lock()
	// Cleared by a swap, not a store: the last Unref sets reap after its
	// count reaches 0, and the reap's InUse must see that count. A store
	// of 0 could reach memory after those loads (QEMU's TCG emulating
	// arm64 on an x86 host: sync/twa's UnlockSlot) and erase a later
	// close's 1, its orphan then freed only at the mount's next close.
	// The load first keeps every call's lock from writing the flag.
	if atomic.LoadUint32(&m.reap) != 0 && atomic.SwapUint32(&m.reap, 0) != 0 {
		m.fs.ReapOrphans(false)
	}
}

// mnt is open file h's mount, locked; the caller unlocks it.
func (d *Disks[E]) mnt(h int) (*File, *mount[E]) {
	f := &d.files[h]
	m := &d.m[f.m]
	m.lock()
	return f, m
}

// Read reads open file h into the program's [p, p+n) at offset off (the
// file's offset if off < 0, advanced): what there is before the file's
// end.
func (d *Disks[E]) Read(h int, p, n uintptr, off int64) (uintptr, abi.Errno) {
	return d.rw(h, p, n, off, false)
}

// Write writes the program's [p, p+n) to open file h at offset off (the
// file's offset if off < 0, advanced; its end with O_APPEND).
func (d *Disks[E]) Write(h int, p, n uintptr, off int64) (uintptr, abi.Errno) {
	return d.rw(h, p, n, off, true)
}

func (d *Disks[E]) rw(h int, p, n uintptr, at int64, write bool) (uintptr, abi.Errno) {
	f := &d.files[h]
	acc := f.flags & unix.O_ACCMODE
	switch {
	case f.dir:
		return 0, abi.Errno(unix.EISDIR)
	case write && acc == unix.O_RDONLY, !write && acc == unix.O_WRONLY:
		return 0, abi.EBADF
	}
	sm := &d.m[f.m]
	sm.stageMu.Lock()
	defer sm.stageMu.Unlock()
	done := uintptr(0)
	for done < n {
		c := min(n-done, stageSize)
		buf := sm.stage[:c]
		for i := 0; i < len(buf); i += pageSize {
			buf[i] = 0 // backed now, not by a fault inside the copy or under mu
		}
		if write {
			// Up to the first page that cannot be read: a short write,
			// as Linux's (the next round returns with what was done).
			k := copyInPrefix(buf, p+done)
			if k == 0 {
				return partial(done, abi.EFAULT)
			}
			c, buf = uintptr(k), buf[:k]
		}
		_, m := d.mnt(h)
		off := at
		if off < 0 {
			off = f.off
			if write && f.flags&unix.O_APPEND != 0 {
				st, e := m.fs.Stat(f.ino)
				if e != 0 {
					m.mu.Unlock()
					return partial(done, e)
				}
				off = int64(st.Size)
			}
		} else {
			off += int64(done)
		}
		var k int
		var e abi.Errno
		if write {
			k, e = m.fs.WriteAt(f.ino, buf, uint64(off))
			d.wrote(m, int(f.m), f.ino, buf[:k], off)
		} else {
			k, e = m.fs.ReadAt(f.ino, buf, uint64(off))
			d.read(int(f.m), f.ino, buf[:k], off)
		}
		if at < 0 && k > 0 {
			f.off = off + int64(k)
		}
		m.mu.Unlock()
		if !write && k > 0 {
			if got := copyOutPrefix(p+done, buf[:k]); got < k {
				// The file's offset moves past what was delivered only.
				if at < 0 {
					_, m := d.mnt(h)
					f.off = off + int64(got)
					m.mu.Unlock()
				}
				return partial(done+uintptr(got), abi.EFAULT)
			}
		}
		done += uintptr(k)
		if e != 0 {
			if write && done > 0 && f.flags&unix.O_DSYNC != 0 {
				d.Sync(h, f.flags&unix.O_SYNC != unix.O_SYNC) // the bytes it reports written
			}
			return partial(done, e)
		}
		if uintptr(k) < c {
			break // the end of the file (a read), or of the disk
		}
	}
	if write && done > 0 && f.flags&unix.O_DSYNC != 0 {
		// O_SYNC, O_DSYNC: durable before the call returns.
		if e := d.Sync(h, f.flags&unix.O_SYNC != unix.O_SYNC); e != 0 {
			return partial(done, e)
		}
	}
	return done, 0
}

// copyInPrefix copies the program's bytes at p into b a page's worth
// at a time, up to the first that faults: the bytes copied.
func copyInPrefix(b []byte, p uintptr) int {
	if mm.CopyIn(b, p) == 0 {
		return len(b)
	}
	n := 0
	for n < len(b) {
		c := min(len(b)-n, pageSize)
		if mm.CopyIn(b[n:n+c], p+uintptr(n)) != 0 {
			break
		}
		n += c
	}
	return n
}

// copyOutPrefix is copyInPrefix the other way: b to the program's p.
func copyOutPrefix(p uintptr, b []byte) int {
	if mm.CopyOut(p, b) == 0 {
		return len(b)
	}
	n := 0
	for n < len(b) {
		c := min(len(b)-n, pageSize)
		if mm.CopyOut(p+uintptr(n), b[n:n+c]) != 0 {
			break
		}
		n += c
	}
	return n
}

// partial is what a call that moved done bytes before error e returns:
// the bytes, as Linux's read and write.
func partial(done uintptr, e abi.Errno) (uintptr, abi.Errno) {
	if done > 0 {
		return done, 0
	}
	return 0, e
}

const pageSize = 4096

// Seek is lseek on open file h.
func (d *Disks[E]) Seek(h int, off int64, whence int) (uintptr, abi.Errno) {
	f, m := d.mnt(h)
	defer m.mu.Unlock()
	if f.dir {
		if whence != unix.SEEK_SET || off < 0 {
			return 0, abi.EINVAL
		}
		f.off = off // a readdir cookie (0: the start)
		return uintptr(off), 0
	}
	st, e := m.fs.Stat(f.ino)
	if e != 0 {
		return 0, e
	}
	size := int64(st.Size)
	var to int64
	switch whence {
	case unix.SEEK_SET:
		to = off
	case unix.SEEK_CUR:
		to = f.off + off
	case unix.SEEK_END:
		to = size + off
	case unix.SEEK_DATA, unix.SEEK_HOLE:
		if off < 0 || off >= size {
			return 0, abi.Errno(unix.ENXIO)
		}
		to = off // the whole file is data (holes: not reported yet)
		if whence == unix.SEEK_HOLE {
			to = size
		}
	default:
		return 0, abi.EINVAL
	}
	if to < 0 {
		return 0, abi.EINVAL
	}
	f.off = to
	return uintptr(to), 0
}

// Stat is fstat on open file h.
func (d *Disks[E]) Stat(h int, st *unix.Stat_t) abi.Errno {
	f, m := d.mnt(h)
	defer m.mu.Unlock()
	s, e := m.fs.Stat(f.ino)
	if e == 0 {
		d.stat(int(f.m), &s, st)
	}
	return e
}

// Statfs is fstatfs on open file h.
func (d *Disks[E]) Statfs(h int, st *unix.Statfs_t) abi.Errno {
	f, m := d.mnt(h)
	defer m.mu.Unlock()
	return d.statfs(int(f.m), st)
}

// dirents is a Filler writing linux_dirent64 records into b.
type dirents struct {
	b    []byte
	n    int
	last uint64 // the cookie after the last record written
}

func (w *dirents) Fill(ino, next uint64, typ uint8, name []byte) bool {
	rec := (19 + len(name) + 1 + 7) &^ 7
	if w.n+rec > len(w.b) {
		return false
	}
	r := w.b[w.n : w.n+rec]
	clear(r)
	*(*uint64)(unsafe.Pointer(&r[0])) = ino
	*(*int64)(unsafe.Pointer(&r[8])) = int64(next)
	*(*uint16)(unsafe.Pointer(&r[16])) = uint16(rec)
	r[18] = typ
	copy(r[19:], name)
	w.n += rec
	w.last = next
	return true
}

// Getdents is getdents64 on open file h into kernel buffer b: EINVAL if
// not even the next record fits.
func (d *Disks[E]) Getdents(h int, b []byte) (uintptr, abi.Errno) {
	f, m := d.mnt(h)
	defer m.mu.Unlock()
	if !f.dir {
		return 0, abi.Errno(unix.ENOTDIR)
	}
	if f.off == ext4.ReaddirEnd {
		return 0, 0
	}
	w := dirents{b: b}
	next, e := ext4.Readdir(&m.fs, f.ino, uint64(f.off), noEscapeP(&w))
	if w.n > 0 {
		f.off = int64(w.last)
		return uintptr(w.n), 0
	}
	if e != 0 {
		return 0, e
	}
	if next != ext4.ReaddirEnd {
		return 0, abi.EINVAL // the buffer holds no record
	}
	f.off = ext4.ReaddirEnd
	return 0, 0
}

// Truncate is ftruncate on open file h.
func (d *Disks[E]) Truncate(h int, size int64) abi.Errno {
	defer d.cut() // after the unlock
	f, m := d.mnt(h)
	defer m.mu.Unlock()
	if f.dir || f.flags&unix.O_ACCMODE == unix.O_RDONLY || size < 0 {
		return abi.EINVAL
	}
	e := m.fs.Truncate(f.ino, uint64(size))
	d.resized(m, int(f.m), f.ino)
	return e
}

// Allocate is fallocate on open file h (mode 0 or FALLOC_FL_KEEP_SIZE).
func (d *Disks[E]) Allocate(h int, mode int, off, n int64) abi.Errno {
	f, m := d.mnt(h)
	defer m.mu.Unlock()
	switch {
	case f.flags&unix.O_ACCMODE == unix.O_RDONLY:
		return abi.EBADF
	case f.dir:
		return abi.Errno(unix.EISDIR)
	case mode&^unix.FALLOC_FL_KEEP_SIZE != 0:
		return abi.Errno(unix.EOPNOTSUPP)
	case off < 0 || n <= 0:
		return abi.EINVAL
	}
	e := m.fs.Fallocate(f.ino, uint64(off), uint64(n), mode&unix.FALLOC_FL_KEEP_SIZE != 0)
	d.resized(m, int(f.m), f.ino) // grown: no cut
	return e
}

// Sync is fsync (datasync false) and fdatasync on open file h: a shared
// writable mapping's pages are written (mmap.go), then ext4 makes every
// call so far durable (its journal's running transaction committed, the
// device flushed).
func (d *Disks[E]) Sync(h int, datasync bool) abi.Errno {
	f, m := d.mnt(h)
	defer m.mu.Unlock()
	var err abi.Errno
	if c := d.slotOf(int(f.m), f.ino); c >= 0 {
		err = d.writeBack(m, c)
	}
	sync := m.fs.Sync
	if datasync {
		sync = m.fs.Datasync
	}
	if e := sync(); e != 0 {
		return e
	}
	return err
}

// Setattr is fchmod (what: ext4.AttrMode) and fchown on open file h.
func (d *Disks[E]) Setattr(h int, mode uint32, uid, gid int, chmod bool) abi.Errno {
	f, m := d.mnt(h)
	defer m.mu.Unlock()
	if m.fs.ReadOnly() {
		return abi.Errno(unix.EROFS)
	}
	if chmod {
		return m.fs.Setattr(f.ino, ext4.Attr{Mask: ext4.AttrMode, Mode: mode & 0o7777})
	}
	return m.fs.Setattr(f.ino, chown(uid, gid))
}

// Getfl is F_GETFL on open file h.
func (d *Disks[E]) Getfl(h int) uintptr { return uintptr(atomic.LoadInt32(&d.files[h].flags)) }

// Setfl is F_SETFL on open file h: O_APPEND, O_NONBLOCK, O_DIRECT and
// O_NOATIME change.
func (d *Disks[E]) Setfl(h int, flags int) {
	const can = unix.O_APPEND | unix.O_NONBLOCK | unix.O_DIRECT | unix.O_NOATIME
	f := &d.files[h]
	for {
		old := atomic.LoadInt32(&f.flags)
		if atomic.CompareAndSwapInt32(&f.flags, old, old&^can|int32(flags&can)) {
			return
		}
	}
}

// Chdir is fchdir on open file h.
func (d *Disks[E]) Chdir(h int) abi.Errno {
	f := &d.files[h]
	if !f.dir {
		return abi.Errno(unix.ENOTDIR)
	}
	d.chdir(int(f.m), f.ino, int(f.depth))
	return 0
}

// At is where a path relative to open file h starts (a directory's
// descriptor as dirfd).
func (d *Disks[E]) At(h int, path []byte) (namei.Place, abi.Errno) {
	f := &d.files[h]
	if !f.dir {
		return namei.Place{}, abi.Errno(unix.ENOTDIR)
	}
	if len(path) == 0 {
		path = dot[:]
	}
	return namei.DiskAt(namei.MountDisk+int32(f.m), f.ino, int(f.depth), path), 0
}

var dot = [...]byte{'.'}

// Key is open file h's st_dev and inode number, what its file locks are
// keyed by (two opens of one inode share them). It takes no lock.
func (d *Disks[E]) Key(h int) (dev, ino uint64) {
	f := &d.files[h]
	return d.m[f.m].rd, uint64(f.ino)
}

// Where says where open file h is: its mount index and inode.
func (d *Disks[E]) Where(h int) (int, uint32) { return int(d.files[h].m), d.files[h].ino }

// noEscapeP is p, hidden from escape analysis (ext4's Readdir keeps no
// Filler).
func noEscapeP[T any](p *T) *T {
	x := uintptr(unsafe.Pointer(p))
	return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&x)))
}
