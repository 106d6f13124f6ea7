package kernel

import (
	"sync/atomic"
	"unsafe"
	"yolk/kernel/procfs"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
)

// Open files on host shares, the kind shareOps: reads and writes through
// the 9P client, seek, stat and statfs, getdents, truncate, sync, fchdir,
// the open flags. The path calls' share halves are in sys_share.go.

// shareRW reads or writes b at the share file h: at off, or at and
// advancing its offset when off < 0 (read, write).
func shareRW(h int, b []byte, off int64, write bool) (uintptr, abi.Errno) {
	f := &shareFiles[h]
	c := &shares[f.dev].c
	if f.dir {
		return 0, abi.Errno(unix.EISDIR)
	}
	acc := int(f.flags) & unix.O_ACCMODE
	if write && acc == unix.O_RDONLY || !write && acc == unix.O_WRONLY {
		return 0, abi.EBADF
	}
	pos := off
	if off < 0 {
		pos = atomic.LoadInt64(&f.off)
		if write && f.flags&unix.O_APPEND != 0 {
			var a virtio9p.Attr
			if e := c.Getattr(f.fid, &a); e != 0 {
				return 0, abi.Errno(e)
			}
			pos = int64(a.Size)
		}
	}
	var n int
	var e virtio9p.Errno
	if write {
		n, e = c.Write(f.fid, uint64(pos), b)
	} else {
		n, e = c.Read(f.fid, uint64(pos), b)
	}
	if off < 0 && n > 0 {
		atomic.StoreInt64(&f.off, pos+int64(n))
	}
	if write && n > 0 {
		shareResized(f.dev, f.qpath, pos+int64(n), false) // a write past the end grows the file
	}
	return uintptr(n), abi.Errno(e)
}

// shareSeek is lseek on share file h.
func shareSeek(h int, off int64, whence int) (uintptr, abi.Errno) {
	f := &shareFiles[h]
	var pos int64
	switch whence {
	case unix.SEEK_SET:
		pos = off
	case unix.SEEK_CUR:
		if f.dir {
			return 0, abi.EINVAL
		}
		pos = atomic.LoadInt64(&f.off) + off
	case unix.SEEK_END:
		if f.dir {
			return 0, abi.EINVAL
		}
		var a virtio9p.Attr
		if e := shares[f.dev].c.Getattr(f.fid, &a); e != 0 {
			return 0, abi.Errno(e)
		}
		pos = int64(a.Size) + off
	default:
		return 0, abi.EINVAL
	}
	if pos < 0 {
		return 0, abi.EINVAL
	}
	atomic.StoreInt64(&f.off, pos)
	return uintptr(pos), 0
}

// shareStat fills st from fid's attributes.
func shareStat(dev int, fid virtio9p.Fid, st *unix.Stat_t) abi.Errno {
	var a virtio9p.Attr
	if e := shares[dev].c.Getattr(fid, &a); e != 0 {
		return abi.Errno(e)
	}
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
	return 0
}

func setInt[T ~int32 | ~int64 | ~uint32 | ~uint64](p *T, v int64) { *p = T(v) }

// shareGetdents is getdents64 on share file h: Rreaddir's entries are
// read into the second half of b and rewritten as linux_dirent64 from its
// start (an entry grows by at most 3 bytes, never past the next one).
func shareGetdents(h int, b []byte) (uintptr, abi.Errno) {
	f := &shareFiles[h]
	if !f.dir {
		return 0, abi.Errno(unix.ENOTDIR)
	}
	in := b[len(b)/2:]
	n, e := shares[f.dev].c.Readdir(f.fid, uint64(atomic.LoadInt64(&f.off)), in)
	if e != 0 {
		return 0, abi.Errno(e)
	}
	out := 0
	p := in[:n]
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
		atomic.StoreInt64(&f.off, int64(de.Offset))
	}
	if out == 0 && n > 0 {
		return 0, abi.EINVAL // the buffer cannot hold the next entry
	}
	return uintptr(out), 0
}

// v9fsMagic is the f_type of Linux's 9p file system.
const v9fsMagic = 0x01021997

// shareStatfs fills st from the host's figures for fid's file system, as
// Linux's v9fs_statfs.
func shareStatfs(dev int, fid virtio9p.Fid, st *unix.Statfs_t) abi.Errno {
	var s virtio9p.Statfs
	if e := shares[dev].c.Statfs(fid, &s); e != 0 {
		return abi.Errno(e)
	}
	*st = unix.Statfs_t{Type: v9fsMagic, Bsize: int64(s.Bsize), Blocks: s.Blocks, Bfree: s.Bfree, Bavail: s.Bavail,
		Files: s.Files, Ffree: s.Ffree, Namelen: int64(s.Namelen), Frsize: int64(s.Bsize), Flags: stValid | stRelatime}
	st.Fsid.Val[0], st.Fsid.Val[1] = int32(s.Fsid), int32(s.Fsid>>32)
	return 0
}

// stRelatime is statfs's ST_RELATIME, a mount's default.
const stRelatime = 0x1000

// shareOps: files and directories on host shares.
var shareOps = fileOps{
	dupOK: true,
	read:  func(o ofile, u *uio) (uintptr, abi.Errno) { return shareTransfer(o.h, u, -1, false) },
	write: func(o ofile, u *uio) (uintptr, abi.Errno) { return shareTransfer(o.h, u, -1, true) },
	pread: sharePread,
	seek:  func(o ofile, off int64, whence int) (uintptr, abi.Errno) { return shareSeek(o.h, off, whence) },
	stat: func(o ofile, st *unix.Stat_t) abi.Errno {
		return shareStat(int(shareFiles[o.h].dev), shareFiles[o.h].fid, st)
	},
	statfs: func(o ofile, st *unix.Statfs_t) abi.Errno {
		return shareStatfs(int(shareFiles[o.h].dev), shareFiles[o.h].fid, st)
	},
	getdents: func(o ofile, b []byte) (uintptr, abi.Errno) { return shareGetdents(o.h, b) },
	truncate: shareTruncate,
	allocate: func(o ofile, mode int, off, n int64) abi.Errno { return shareFallocate(o.h, mode, off, n) },
	sync:     shareSync,
	chdir:    shareFchdir,
	chmod: func(o ofile, mode uint32) abi.Errno {
		return shareSetattr(nil, o.h, &virtio9p.SetAttr{Valid: virtio9p.SetMode, Mode: mode & 0o7777}, false)
	},
	chown:    func(o ofile, uid, gid int) abi.Errno { return shareSetattr(nil, o.h, shareOwner(uid, gid), false) },
	getfl:    shareGetfl,
	setfl:    shareSetfl,
	mmap:     shareMmap,                                                                        // sys_mm.go
	pollable: func(o ofile) (int32, uint64, uintptr, abi.Errno) { return -1, 0, 0, abi.EPERM }, // a regular file or directory, as Linux
}

func sharePread(o ofile, u *uio, off int64, write bool) (uintptr, abi.Errno) {
	return shareTransfer(o.h, u, off, write)
}

// shareTransfer is read, write (off < 0), pread and pwrite on share file
// h, a buffer at a time. The program's buffers are reached only through
// the client's environment's fault-safe Copy: another thread may unmap
// them while a request waits for the host.
func shareTransfer(h int, u *uio, off int64, write bool) (uintptr, abi.Errno) {
	if e := u.check(!write); e != 0 {
		return 0, e
	}
	done := int64(0)
	return u.each(func(p, n uintptr, _ bool) (uintptr, abi.Errno) {
		at := off
		if off >= 0 {
			at = off + done
		}
		c, e := shareRW(h, bytesAt(p, int(n)), at, write)
		done += int64(c)
		return c, e
	})
}

func shareTruncate(o ofile, size int64) abi.Errno {
	f := &shareFiles[o.h]
	if f.flags&unix.O_ACCMODE == unix.O_RDONLY || f.dir {
		return abi.EINVAL
	}
	return shareSetattr(nil, o.h, &virtio9p.SetAttr{Valid: virtio9p.SetSize, Size: uint64(size)}, false)
}

// shareSync is fsync and fdatasync: the file is synced on the host,
// after the shared mappings made through this open file are written back
// (sys_mm.go).
func shareSync(o ofile, datasync bool) abi.Errno {
	e := shareWriteBack(mm.UserMin, mm.UserMax, o.h)
	if se := abi.Errno(shares[shareFiles[o.h].dev].c.Fsync(shareFiles[o.h].fid, datasync)); se != 0 {
		e = se
	}
	return e
}

// shareFchdir enters a share directory again by the guest path it was
// opened by (shareDirRemember; EINVAL when it has none).
func shareFchdir(o ofile) abi.Errno {
	var np [fs.PathMax]byte
	n := shareDirPath(o.h, np[:])
	switch {
	case !shareFiles[o.h].dir:
		return abi.Errno(unix.ENOTDIR)
	case n < 0:
		return abi.EINVAL // not done: opened when no path slot was free
	}
	return chdirPath(np[:n])
}

func shareGetfl(o ofile) (uintptr, abi.Errno) {
	return uintptr(shareFiles[o.h].flags) &^ (unix.O_CREAT | unix.O_EXCL | unix.O_TRUNC | unix.O_NOCTTY | unix.O_CLOEXEC), 0
}

func shareSetfl(o ofile, flags int) abi.Errno {
	const settable = unix.O_APPEND | unix.O_NONBLOCK
	f := &shareFiles[o.h]
	atomic.StoreInt32(&f.flags, f.flags&^settable|int32(flags&settable))
	return 0
}

// shareInstall gives fid, open with flags, a share file and a
// descriptor; on failure the fid is clunked.
func shareInstall(dev int, fid virtio9p.Fid, flags int, dir bool, qpath uint64) (uintptr, abi.Errno) {
	shareReap()
	fileLock.Lock()
	h := -1
	for i := range shareFiles {
		if !shareFiles[i].used {
			h = i
			break
		}
	}
	if h >= 0 {
		shareFiles[h] = shareFile{used: true, refs: 1, dev: int32(dev), fid: fid, flags: int32(flags), dir: dir, qpath: qpath}
	}
	fileLock.Unlock()
	if h < 0 {
		shares[dev].c.Clunk(fid)
		return 0, abi.Errno(unix.ENFILE)
	}
	fd, e := allocFD(fileShare, 0, int32(h))
	if e != 0 {
		sharePut(h)
	}
	return fd, e
}

// shareOwner is chown's change: -1 leaves an ID as it is.
func shareOwner(uid, gid int) *virtio9p.SetAttr {
	a := virtio9p.SetAttr{UID: uint32(uid), GID: uint32(gid)}
	if uid != -1 {
		a.Valid |= virtio9p.SetUID
	}
	if gid != -1 {
		a.Valid |= virtio9p.SetGID
	}
	return &a
}

// shareProcFD: a share file, its qid path as its identity.
func shareProcFD(o ofile, s *procfs.Snapshot, d *procfs.FD) {
	sf := &shareFiles[o.h]
	d.Kind, d.Ino, d.Pos = procfs.FDFile, sf.qpath, atomic.LoadInt64(&sf.off)
	d.MntID, d.Path = procSharePath(s, o.h)
}
