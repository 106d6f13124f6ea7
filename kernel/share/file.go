package share

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
)

// The open files on shares: a descriptor of the kernel's kind fileShare
// holds an index here. Refs counts descriptors and calls in progress
// (under the descriptor lock, Env.LockFiles); the last reference clunks
// the fid. Reads and writes go through the 9P client, a buffer at a
// time.

// File is an open file on a share.
type File struct {
	Used  bool
	Refs  int32
	Dev   int32
	Fid   virtio9p.Fid
	Flags int32 // open flags: access mode, O_APPEND, O_NONBLOCK
	Dir   bool
	Off   int64  // file offset; a directory's: the next entry's cookie
	Qpath uint64 // the host file's qid path: which open files are one file (Resized)
	// Size is the file's size its mappings' faults are judged by (a
	// page wholly past it is SIGBUS, the kernel's FileFault) and its
	// write-backs are bounded by: read at mmap, kept by the program's
	// changes of the size (Resized), and read here, at the moment of
	// use, by everything that uses it (sizes.go).
	Size int64
}

// File is open file h.
func (s *Shares[E]) File(h int) *File { return &s.files[h] }

// Put drops a reference taken outside the descriptor lock.
func (s *Shares[E]) Put(h int) {
	e := env[E]()
	e.LockFiles()
	s.Unref(h)
	e.UnlockFiles()
	s.Reap()
}

// Unref drops a reference; the descriptor lock is held. The last marks
// the file for Reap.
func (s *Shares[E]) Unref(h int) {
	if s.files[h].Refs--; s.files[h].Refs == 0 {
		s.dead[h] = true
		atomic.AddInt32(&s.closing, 1)
	}
}

// Reap clunks the fids of files whose last reference is gone.
func (s *Shares[E]) Reap() {
	e := env[E]()
	for atomic.LoadInt32(&s.closing) > 0 {
		e.LockFiles()
		h := -1
		if atomic.LoadInt32(&s.closing) > 0 {
			for i := range s.dead {
				if s.dead[i] {
					h = i
					break
				}
			}
		}
		var dev int32
		var fid virtio9p.Fid
		if h >= 0 {
			s.dead[h] = false
			atomic.AddInt32(&s.closing, -1)
			dev, fid = s.files[h].Dev, s.files[h].Fid
			s.files[h].Fid = virtio9p.NoFid
		}
		e.UnlockFiles()
		if h < 0 {
			return
		}
		s.devs[dev].c.Clunk(fid)
		s.dirForget(h)
		e.LockFiles()
		s.files[h].Used = false
		e.UnlockFiles()
	}
}

// install gives fid, open with flags, an open file and a descriptor; on
// failure the fid is clunked.
func (s *Shares[E]) install(dev int, fid virtio9p.Fid, flags int, dir bool, qpath uint64) (uintptr, abi.Errno) {
	s.Reap()
	e := env[E]()
	e.LockFiles()
	h := -1
	for i := range s.files {
		if !s.files[i].Used {
			h = i
			break
		}
	}
	if h >= 0 {
		s.files[h] = File{Used: true, Refs: 1, Dev: int32(dev), Fid: fid, Flags: int32(flags), Dir: dir, Qpath: qpath}
	}
	e.UnlockFiles()
	if h < 0 {
		s.c(dev).Clunk(fid)
		return 0, abi.Errno(unix.ENFILE)
	}
	fd, ie := e.Install(h)
	if ie != 0 {
		s.Put(h)
	}
	return fd, ie
}

// RW reads or writes b at open file h: at off, or at and advancing its
// offset when off < 0 (read, write). b is the program's memory: the
// client reaches it only through Env.Copy.
func (s *Shares[E]) RW(h int, b []byte, off int64, write bool) (uintptr, abi.Errno) {
	f := &s.files[h]
	c := &s.devs[f.Dev].c
	if f.Dir {
		return 0, abi.Errno(unix.EISDIR)
	}
	acc := int(f.Flags) & unix.O_ACCMODE
	if write && acc == unix.O_RDONLY || !write && acc == unix.O_WRONLY {
		return 0, abi.EBADF
	}
	pos := off
	if off < 0 {
		pos = atomic.LoadInt64(&f.Off)
		if write && f.Flags&unix.O_APPEND != 0 {
			var a virtio9p.Attr
			if e := c.Getattr(f.Fid, &a); e != 0 {
				return 0, abi.Errno(e)
			}
			pos = int64(a.Size)
		}
	}
	var n int
	var e virtio9p.Errno
	if write {
		n, e = c.Write(f.Fid, uint64(pos), b)
	} else {
		n, e = c.Read(f.Fid, uint64(pos), b)
	}
	if off < 0 && n > 0 {
		atomic.StoreInt64(&f.Off, pos+int64(n))
	}
	if write && n > 0 {
		s.Resized(f.Dev, f.Qpath, pos+int64(n), false) // a write past the end grows the file
	}
	return uintptr(n), abi.Errno(e)
}

// Seek is lseek on open file h.
func (s *Shares[E]) Seek(h int, off int64, whence int) (uintptr, abi.Errno) {
	f := &s.files[h]
	var pos int64
	switch whence {
	case unix.SEEK_SET:
		pos = off
	case unix.SEEK_CUR:
		if f.Dir {
			return 0, abi.EINVAL
		}
		pos = atomic.LoadInt64(&f.Off) + off
	case unix.SEEK_END:
		if f.Dir {
			return 0, abi.EINVAL
		}
		var a virtio9p.Attr
		if e := s.devs[f.Dev].c.Getattr(f.Fid, &a); e != 0 {
			return 0, abi.Errno(e)
		}
		pos = int64(a.Size) + off
	default:
		return 0, abi.EINVAL
	}
	if pos < 0 {
		return 0, abi.EINVAL
	}
	atomic.StoreInt64(&f.Off, pos)
	return uintptr(pos), 0
}

// Fstat is fstat of open file h.
func (s *Shares[E]) Fstat(h int, st *unix.Stat_t) abi.Errno {
	return s.stat(int(s.files[h].Dev), s.files[h].Fid, st)
}

// stat fills st from fid's attributes.
func (s *Shares[E]) stat(dev int, fid virtio9p.Fid, st *unix.Stat_t) abi.Errno {
	var a virtio9p.Attr
	if e := s.c(dev).Getattr(fid, &a); e != 0 {
		return abi.Errno(e)
	}
	fillStat(st, dev, &a)
	return 0
}

// fillStat is stat's answer for attributes a of a file on share dev.
func fillStat(st *unix.Stat_t, dev int, a *virtio9p.Attr) {
	*st = unix.Stat_t{
		Dev:    uint64(0x9000 + dev), // one device per share
		Ino:    a.Qid.Path,
		Mode:   a.Mode,
		Uid:    a.UID,
		Gid:    a.GID,
		Rdev:   a.Rdev,
		Size:   int64(a.Size),
		Blocks: int64(a.Blocks),
		Atim:   unix.Timespec{Sec: int64(a.Atime), Nsec: int64(a.AtimeNs)},
		Mtim:   unix.Timespec{Sec: int64(a.Mtime), Nsec: int64(a.MtimeNs)},
		Ctim:   unix.Timespec{Sec: int64(a.Ctime), Nsec: int64(a.CtimeNs)},
	}
	setInt(&st.Nlink, int64(a.Nlink))
	setInt(&st.Blksize, int64(a.Blksize))
}

func setInt[T ~int32 | ~int64 | ~uint32 | ~uint64](p *T, v int64) { *p = T(v) }

// Getdents is getdents64 on open file h: Rreaddir's entries are read
// into the second half of b and rewritten as linux_dirent64 from its
// start (an entry grows by at most 3 bytes, never past the next one).
func (s *Shares[E]) Getdents(h int, b []byte) (uintptr, abi.Errno) {
	f := &s.files[h]
	if !f.Dir {
		return 0, abi.Errno(unix.ENOTDIR)
	}
	in := b[len(b)/2:]
	n, e := s.devs[f.Dev].c.Readdir(f.Fid, uint64(atomic.LoadInt64(&f.Off)), in)
	if e != 0 {
		return 0, abi.Errno(e)
	}
	out, last, ok := dirents(b, n)
	if ok {
		atomic.StoreInt64(&f.Off, last)
	}
	if out == 0 && n > 0 {
		return 0, abi.EINVAL // the buffer cannot hold the next entry
	}
	return uintptr(out), 0
}

// dirents rewrites the n bytes of Rreaddir's entries in the second half
// of b as linux_dirent64 from its start: the bytes written, and the
// cookie of the last entry written (ok: one was).
func dirents(b []byte, n int) (out int, last int64, ok bool) {
	p := b[len(b)/2:][:n]
	var name [256]byte
	for len(p) > 0 {
		de, k := virtio9p.NextDirEntry(p)
		if k == 0 {
			break
		}
		nl := copy(name[:], de.Name)
		rec := (19 + nl + 1 + 7) &^ 7
		if out+rec > len(b)/2+(n-len(p)+k) || out+rec > len(b) {
			break
		}
		p = p[k:]
		d := b[out : out+rec]
		*(*uint64)(unsafe.Pointer(&d[0])) = de.Qid.Path
		*(*int64)(unsafe.Pointer(&d[8])) = int64(de.Offset)
		*(*uint16)(unsafe.Pointer(&d[16])) = uint16(rec)
		d[18] = de.Type
		copy(d[19:], name[:nl])
		clear(d[19+nl:])
		out += rec
		last, ok = int64(de.Offset), true
	}
	return out, last, ok
}

// V9fsMagic is the f_type of Linux's 9p file system.
const V9fsMagic = 0x01021997

// statfs's flags: ST_VALID, which Linux sets in every answer, and
// ST_RELATIME, a mount's default.
const (
	stValid    = 0x20
	stRelatime = 0x1000
)

// Fstatfs is fstatfs of open file h.
func (s *Shares[E]) Fstatfs(h int, st *unix.Statfs_t) abi.Errno {
	return s.statfs(int(s.files[h].Dev), s.files[h].Fid, st)
}

// statfs fills st from the host's figures for fid's file system, as
// Linux's v9fs_statfs.
func (s *Shares[E]) statfs(dev int, fid virtio9p.Fid, st *unix.Statfs_t) abi.Errno {
	var sf virtio9p.Statfs
	if e := s.c(dev).Statfs(fid, &sf); e != 0 {
		return abi.Errno(e)
	}
	*st = unix.Statfs_t{Type: V9fsMagic, Bsize: int64(sf.Bsize), Blocks: sf.Blocks, Bfree: sf.Bfree, Bavail: sf.Bavail,
		Files: sf.Files, Ffree: sf.Ffree, Namelen: int64(sf.Namelen), Frsize: int64(sf.Bsize), Flags: stValid | stRelatime}
	st.Fsid.Val[0], st.Fsid.Val[1] = int32(sf.Fsid), int32(sf.Fsid>>32)
	return 0
}

// Ftruncate is ftruncate of open file h.
func (s *Shares[E]) Ftruncate(h int, size int64) abi.Errno {
	f := &s.files[h]
	if f.Flags&unix.O_ACCMODE == unix.O_RDONLY || f.Dir {
		return abi.EINVAL
	}
	return s.fsetattr(h, &virtio9p.SetAttr{Valid: virtio9p.SetSize, Size: uint64(size)})
}

// Fchmod and Fchown are fchmod and fchown of open file h.
func (s *Shares[E]) Fchmod(h int, mode uint32) abi.Errno {
	return s.fsetattr(h, &virtio9p.SetAttr{Valid: virtio9p.SetMode, Mode: mode & 0o7777})
}
func (s *Shares[E]) Fchown(h, uid, gid int) abi.Errno { return s.fsetattr(h, owner(uid, gid)) }

// fsetattr sets attributes of open file h.
func (s *Shares[E]) fsetattr(h int, a *virtio9p.SetAttr) abi.Errno {
	f := &s.files[h]
	if a.Valid&virtio9p.SetSize != 0 {
		return s.setSize(f.Dev, f.Fid, f.Qpath, a)
	}
	return abi.Errno(s.devs[f.Dev].c.Setattr(f.Fid, a))
}

// Fsync syncs open file h on the host.
func (s *Shares[E]) Fsync(h int, datasync bool) abi.Errno {
	return abi.Errno(s.devs[s.files[h].Dev].c.Fsync(s.files[h].Fid, datasync))
}

// FchdirPath copies the guest path open directory h was opened by
// (dirRemember) into b for fchdir: its length, ENOTDIR for a file,
// EINVAL when it has none.
func (s *Shares[E]) FchdirPath(h int, b []byte) (int, abi.Errno) {
	n := s.DirPath(h, b)
	switch {
	case !s.files[h].Dir:
		return 0, abi.Errno(unix.ENOTDIR)
	case n < 0:
		return 0, abi.EINVAL // not done: opened when no path slot was free
	}
	return n, 0
}

// Getfl and Setfl are fcntl's F_GETFL and F_SETFL on open file h.
func (s *Shares[E]) Getfl(h int) (uintptr, abi.Errno) {
	return uintptr(s.files[h].Flags) &^ (unix.O_CREAT | unix.O_EXCL | unix.O_TRUNC | unix.O_NOCTTY | unix.O_CLOEXEC), 0
}

func (s *Shares[E]) Setfl(h int, flags int) abi.Errno {
	const settable = unix.O_APPEND | unix.O_NONBLOCK
	f := &s.files[h]
	atomic.StoreInt32(&f.Flags, f.Flags&^settable|int32(flags&settable))
	return 0
}

// owner is chown's change: -1 leaves an ID as it is.
func owner(uid, gid int) *virtio9p.SetAttr {
	a := virtio9p.SetAttr{UID: uint32(uid), GID: uint32(gid)}
	if uid != -1 {
		a.Valid |= virtio9p.SetUID
	}
	if gid != -1 {
		a.Valid |= virtio9p.SetGID
	}
	return &a
}
