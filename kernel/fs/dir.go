package fs

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// The tree: mkdir, unlink/rmdir, rename, symlink/readlink, getdents64,
// the working directory, modes and times, the read-only layer.

// Mkdir makes directory path (mode before the umask).
func (f *FS[E]) Mkdir(dir int, path []byte, mode uint32) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	r, e := f.walkNew(dir, path, true)
	if e != 0 {
		return e
	}
	_, e = f.newInode(r.dir, r.name, unix.S_IFDIR|mode&^f.umask&0o7777)
	return e
}

// Link makes newpath a further name (hard link) of what oldpath names
// (flags: AT_SYMLINK_FOLLOW follows a symbolic link oldpath names;
// AT_EMPTY_PATH with an empty oldpath links open file odir). Directories
// cannot be linked (EPERM), nor an open file whose last name is gone
// (ENOENT). A link from a read-only tree into a writable one is EXDEV:
// they stand for two mounts.
func (f *FS[E]) Link(odir int, oldpath []byte, ndir int, newpath []byte, flags int) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	if flags&^(unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return unix.EINVAL
	}
	var ino int32
	if len(oldpath) == 0 && flags&unix.AT_EMPTY_PATH != 0 {
		if odir == AtCWD {
			ino = f.cwd
		} else {
			fl := f.file(odir)
			if fl == nil {
				return unix.EBADF
			}
			if ino = f.fileInode(fl); ino < 0 {
				return unix.ENOENT // pipe(2)'s ends have no inode to name
			}
		}
	} else {
		wm := slashFollow
		if flags&unix.AT_SYMLINK_FOLLOW != 0 {
			wm = follow
		}
		o, e := f.walkExisting(odir, oldpath, wm)
		if e != 0 {
			return e
		}
		ino = o.ino
	}
	n, e := f.walkNew(ndir, newpath, false)
	if e != 0 {
		return e
	}
	ip := &f.inodes[ino]
	switch {
	case ip.ro:
		return unix.EXDEV
	case isDir(ip.mode):
		return unix.EPERM
	case ip.nlink == 0:
		return unix.ENOENT
	}
	_, e = f.newEntry(n.dir, n.name, ip.mode&unix.S_IFMT, ino)
	return e
}

// Mknod makes a regular file (type S_IFREG or 0), a FIFO (S_IFIFO), a
// socket's name (S_IFSOCK; opening it is ENXIO) or a device node (S_IFCHR,
// S_IFBLK; see the package comment) at path, with the permission bits of
// mode before the umask; dev is a device node's number. Directories are
// EPERM, other types EINVAL, as Linux.
func (f *FS[E]) Mknod(dir int, path []byte, mode uint32, dev uint64) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	typ := mode & unix.S_IFMT
	switch typ {
	case 0:
		typ = unix.S_IFREG
	case unix.S_IFREG, unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
	case unix.S_IFDIR:
		return unix.EPERM
	default:
		return unix.EINVAL
	}
	r, e := f.walkNew(dir, path, false)
	if e != 0 {
		return e
	}
	ino, e := f.newInode(r.dir, r.name, typ|mode&^f.umask&0o7777)
	if e == 0 && (typ == unix.S_IFCHR || typ == unix.S_IFBLK) {
		f.inodes[ino].rdev = dev
	}
	return e
}

// BindSocket makes path a socket node (mode: its permission bits, before
// the umask) recording the ID of the socket bind names by it, as Linux's
// unix_bind_bsd: EADDRINUSE if path exists, else mknod's errors.
func (f *FS[E]) BindSocket(dir int, path []byte, mode uint32, id uint64) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	r, e := f.walkNew(dir, path, false)
	if e == unix.EEXIST {
		return unix.EADDRINUSE
	}
	if e != 0 {
		return e
	}
	ino, e := f.newInode(r.dir, r.name, unix.S_IFSOCK|mode&^f.umask&0o7777)
	if e == 0 {
		f.inodes[ino].sock = id
	}
	return e
}

// SocketAt is the ID of the socket path's node names, as connect finds
// it: ENOENT (and the other lookup errors) if path does not resolve,
// ECONNREFUSED if it is not a socket; 0 for a node mknod made.
func (f *FS[E]) SocketAt(dir int, path []byte) (uint64, Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	r, e := f.walkExisting(dir, path, follow)
	if e != 0 {
		return 0, e
	}
	ip := &f.inodes[r.ino]
	if ip.mode&unix.S_IFMT != unix.S_IFSOCK {
		return 0, unix.ECONNREFUSED
	}
	return ip.sock, 0
}

// Symlink makes path a symbolic link to target.
func (f *FS[E]) Symlink(target []byte, dir int, path []byte) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	if len(target) == 0 {
		return unix.ENOENT
	}
	if len(target) >= PathMax {
		return unix.ENAMETOOLONG
	}
	r, e := f.walkNew(dir, path, false)
	if e != 0 {
		return e
	}
	a, e := f.allocPage()
	if e != 0 {
		return e
	}
	ino, e := f.newInode(r.dir, r.name, unix.S_IFLNK|0o777)
	if e != 0 {
		f.freePage(a)
		return e
	}
	ip := &f.inodes[ino]
	ip.direct[0], ip.pages = a, 1
	ip.size = int64(copy(mem(a, PageSize), target))
	return 0
}

// Readlink copies the target of symbolic link path into b, truncated to
// fit, and returns its length.
func (f *FS[E]) Readlink(dir int, path []byte, b []byte) (int, Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	if len(b) == 0 {
		return 0, unix.EINVAL
	}
	r, e := f.walkExisting(dir, path, slashFollow)
	if e != 0 {
		return 0, e
	}
	ip := &f.inodes[r.ino]
	if !isLink(ip.mode) {
		return 0, unix.EINVAL
	}
	return copy(b, f.linkTarget(ip)), 0
}

// Unlink removes path; with flags AT_REMOVEDIR an empty directory (rmdir).
func (f *FS[E]) Unlink(dir int, path []byte, flags int) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	if flags&^unix.AT_REMOVEDIR != 0 {
		return unix.EINVAL
	}
	r, e := f.walk(dir, path, noFollow)
	if e != 0 {
		return e
	}
	rmdir := flags&unix.AT_REMOVEDIR != 0
	if rmdir {
		switch r.kind {
		case lastDot:
			return unix.EINVAL
		case lastDotDot:
			return unix.ENOTEMPTY
		case lastRoot:
			return unix.EBUSY
		}
	} else if r.kind != lastNorm {
		return unix.EISDIR
	}
	if f.inodes[r.dir].ro {
		return unix.EROFS
	}
	if r.ino < 0 {
		return unix.ENOENT
	}
	ip := &f.inodes[r.ino]
	if rmdir {
		if !isDir(ip.mode) {
			return unix.ENOTDIR
		}
		if ip.head >= 0 {
			return unix.ENOTEMPTY
		}
	} else {
		if isDir(ip.mode) {
			return unix.EISDIR
		}
		if r.slash {
			return unix.ENOTDIR
		}
	}
	f.remove(r.ent)
	return 0
}

// Rename moves oldpath to newpath, replacing what newpath names (flags:
// RENAME_NOREPLACE).
func (f *FS[E]) Rename(odir int, oldpath []byte, ndir int, newpath []byte, flags int) Errno {
	// No defer: with this many returns it would not be open-coded.
	f.env.Lock()
	e := f.rename(odir, oldpath, ndir, newpath, flags)
	f.env.Unlock()
	return e
}

func (f *FS[E]) rename(odir int, oldpath []byte, ndir int, newpath []byte, flags int) Errno {
	if flags&^unix.RENAME_NOREPLACE != 0 {
		return unix.EINVAL
	}
	o, e := f.walk(odir, oldpath, noFollow)
	if e != 0 {
		return e
	}
	n, e := f.walk(ndir, newpath, noFollow)
	if e != 0 {
		return e
	}
	if o.kind != lastNorm {
		return unix.EBUSY
	}
	if n.kind != lastNorm {
		if flags != 0 {
			return unix.EEXIST
		}
		return unix.EBUSY
	}
	if f.inodes[o.dir].ro || f.inodes[n.dir].ro {
		return unix.EROFS
	}
	if o.ino < 0 {
		return unix.ENOENT
	}
	if n.ino >= 0 && flags&unix.RENAME_NOREPLACE != 0 {
		return unix.EEXIST
	}
	if n.ino < 0 && f.inodes[n.dir].nlink == 0 {
		return unix.ENOENT
	}
	oi := &f.inodes[o.ino]
	if !isDir(oi.mode) && (o.slash || n.slash) {
		return unix.ENOTDIR
	}
	if isDir(oi.mode) {
		// No directory into itself or below.
		for d := n.dir; ; d = f.inodes[d].parent {
			if d == o.ino {
				return unix.EINVAL
			}
			if d == f.root || d < 0 {
				break
			}
		}
	}
	if n.ino >= 0 {
		// ... nor over an ancestor of the source.
		for d := o.dir; ; d = f.inodes[d].parent {
			if d == n.ino {
				return unix.ENOTEMPTY
			}
			if d == f.root || d < 0 {
				break
			}
		}
	}
	if n.ino == o.ino {
		return 0 // the same name, or two hard links to one inode: nothing to do, as Linux
	}
	if n.ino >= 0 {
		ni := &f.inodes[n.ino]
		switch {
		case isDir(oi.mode) && !isDir(ni.mode):
			return unix.ENOTDIR
		case !isDir(oi.mode) && isDir(ni.mode):
			return unix.EISDIR
		case isDir(ni.mode) && ni.head >= 0:
			return unix.ENOTEMPTY
		}
		f.remove(n.ent)
	}
	f.unlinkEntry(o.ent)
	if isDir(oi.mode) && o.dir != n.dir {
		f.inodes[o.dir].nlink--
		f.inodes[n.dir].nlink++
	}
	f.link(n.dir, o.ent, n.name)
	oi.ctime = f.env.Now()
	return 0
}

// Getdents fills b with linux_dirent64 records of directory h from its
// offset on: ".", "..", then the entries in creation order. The offset
// is a position (d_off) that survives entries added or removed between
// calls. It returns the bytes filled, 0 at the end, EINVAL if b cannot
// hold the next record.
func (f *FS[E]) Getdents(h int, b []byte) (int, Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	fl, e := f.inodeFile(h, unix.ENOTDIR)
	if e != 0 {
		return 0, e
	}
	d := &f.inodes[fl.obj]
	if !isDir(d.mode) {
		return 0, unix.ENOTDIR
	}
	if d.nlink == 0 {
		return 0, unix.ENOENT
	}
	n := 0
	dots := [2]byte{'.', '.'}
	for {
		var ino int32
		var name []byte
		var next int64
		switch {
		case fl.off == 0:
			ino, name, next = fl.obj, dots[:1], 1
		case fl.off == 1:
			ino, name, next = d.parent, dots[:], 2
			if fl.obj == f.root {
				ino = fl.obj
			}
		default:
			ent := d.head
			for ent >= 0 && f.inodes[ent].seq < fl.off {
				ent = f.inodes[ent].next
			}
			if ent < 0 {
				// At the end: entries made from now on are not
				// listed until a rewind, as tmpfs since Linux 6.12.
				fl.off = dirEOF
				return n, 0
			}
			name, next = f.inodes[ent].nameBytes(), f.inodes[ent].seq+1
			ino = f.inodeOf(ent)
		}
		reclen := (19 + len(name) + 1 + 7) &^ 7
		if len(b)-n < reclen {
			if n == 0 {
				return 0, unix.EINVAL
			}
			return n, 0
		}
		rec := b[n : n+reclen]
		binary.LittleEndian.PutUint64(rec[0:], uint64(ino)+1)
		binary.LittleEndian.PutUint64(rec[8:], uint64(next))
		binary.LittleEndian.PutUint16(rec[16:], uint16(reclen))
		rec[18] = dtype(f.inodes[ino].mode)
		clear(rec[19+copy(rec[19:], name):])
		n += reclen
		fl.off = next
	}
}

// dirEOF is a directory's offset once its listing has reached the end.
const dirEOF = 1<<63 - 1

// dtype is the d_type of a file of mode m: the type bits shifted down,
// as Linux's fs_umode_to_dtype (DT_DIR is S_IFDIR>>12, DT_REG S_IFREG>>12,
// and so on for every type; DT_UNKNOWN is 0).
func dtype(m uint32) byte { return byte((m & unix.S_IFMT) >> 12) }

// Getcwd writes the working directory's path and a NUL into b and
// returns the length with the NUL; ERANGE if b is too small, ENOENT if
// the directory was removed.
func (f *FS[E]) Getcwd(b []byte) (int, Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	if f.inodes[f.cwd].nlink == 0 {
		return 0, unix.ENOENT
	}
	// Build it backwards at the end of b, then move it to the front.
	end := len(b)
	if end < 1 {
		return 0, unix.ERANGE
	}
	end--
	b[end] = 0
	i := end
	for d := f.cwd; d != f.root; d = f.inodes[d].parent {
		name := f.inodes[d].nameBytes()
		if i < len(name)+1 {
			return 0, unix.ERANGE
		}
		i -= len(name)
		copy(b[i:], name)
		i--
		b[i] = '/'
	}
	if i == end {
		if i < 1 {
			return 0, unix.ERANGE
		}
		i--
		b[i] = '/'
	}
	return copy(b, b[i:]), 0
}

// Chdir makes path the working directory.
func (f *FS[E]) Chdir(dir int, path []byte) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	r, e := f.walkExisting(dir, path, follow)
	if e != 0 {
		return e
	}
	return f.setCwd(r.ino)
}

// Fchdir makes directory h the working directory.
func (f *FS[E]) Fchdir(h int) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	fl, e := f.inodeFile(h, unix.ENOTDIR)
	if e != 0 {
		return e
	}
	return f.setCwd(fl.obj)
}

func (f *FS[E]) setCwd(ino int32) Errno {
	if !isDir(f.inodes[ino].mode) {
		return unix.ENOTDIR
	}
	f.inodes[ino].refs++
	old := f.cwd
	f.cwd = ino
	f.inodes[old].refs--
	f.put(old)
	return 0
}

// Chmod sets the permission bits of path (flags: AT_SYMLINK_NOFOLLOW,
// which Linux refuses with EOPNOTSUPP on a link).
func (f *FS[E]) Chmod(dir int, path []byte, mode uint32, flags int) Errno {
	return f.setPathAttr(dir, path, flags, attr{what: attrMode, mode: mode})
}

// Fchmod sets the permission bits of open file h.
func (f *FS[E]) Fchmod(h int, mode uint32) Errno {
	return f.setFileAttr(h, attr{what: attrMode, mode: mode})
}

// Chown sets the owner and group of path (-1 for either: unchanged;
// flags: AT_SYMLINK_NOFOLLOW changes a symbolic link itself).
func (f *FS[E]) Chown(dir int, path []byte, uid, gid int, flags int) Errno {
	return f.setPathAttr(dir, path, flags, attr{what: attrOwner, uid: uid, gid: gid})
}

// Fchown sets the owner and group of open file h.
func (f *FS[E]) Fchown(h int, uid, gid int) Errno {
	return f.setFileAttr(h, attr{what: attrOwner, uid: uid, gid: gid})
}

// Utimes sets the access and modification times of path, in nanoseconds
// since the epoch; UtimeNow and UtimeOmit as in utimensat (flags:
// AT_SYMLINK_NOFOLLOW; any other is EINVAL, as Linux).
func (f *FS[E]) Utimes(dir int, path []byte, atime, mtime int64, flags int) Errno {
	return f.setPathAttr(dir, path, flags, attr{what: attrTimes, atime: atime, mtime: mtime})
}

// Special time values for Utimes.
const (
	UtimeNow  = -1
	UtimeOmit = -2
)

// attr is a change of an inode's attributes (Linux's struct iattr).
type attr struct {
	what         int    // attrMode, attrOwner or attrTimes
	mode         uint32 // attrMode: the permission bits
	uid, gid     int    // attrOwner: -1 leaves one unchanged
	atime, mtime int64  // attrTimes: as Utimes
}

const (
	attrMode = iota
	attrOwner
	attrTimes
)

// setPathAttr makes change a to what path names (flags:
// AT_SYMLINK_NOFOLLOW).
func (f *FS[E]) setPathAttr(dir int, path []byte, flags int, a attr) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	r, e := f.walkAt(dir, path, flags)
	if e != 0 {
		return e
	}
	if a.what == attrMode && isLink(f.inodes[r.ino].mode) {
		return unix.EOPNOTSUPP
	}
	return f.setAttr(r.ino, a)
}

// setFileAttr makes change a to open file h.
func (f *FS[E]) setFileAttr(h int, a attr) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	if fl == nil {
		return unix.EBADF
	}
	ino := f.fileInode(fl)
	if ino < 0 {
		return 0 // pipe(2)'s ends: accepted, nothing kept
	}
	return f.setAttr(ino, a)
}

// setAttr makes change a to inode ino and stamps it on the inode's ctime
// (Linux's notify_change); EROFS if the inode is read-only.
func (f *FS[E]) setAttr(ino int32, a attr) Errno {
	ip := &f.inodes[ino]
	if ip.ro {
		return unix.EROFS
	}
	now := f.env.Now()
	switch a.what {
	case attrMode:
		ip.mode = ip.mode&unix.S_IFMT | a.mode&0o7777
	case attrOwner:
		if a.uid != -1 {
			ip.uid = uint32(a.uid)
		}
		if a.gid != -1 {
			ip.gid = uint32(a.gid)
		}
		if !isDir(ip.mode) {
			// As Linux's chown_common, for root too: set-user-ID goes,
			// set-group-ID with group execute.
			ip.mode &^= unix.S_ISUID
			if ip.mode&unix.S_IXGRP != 0 {
				ip.mode &^= unix.S_ISGID
			}
		}
	case attrTimes:
		setTime(&ip.atime, a.atime, now)
		setTime(&ip.mtime, a.mtime, now)
	}
	ip.ctime = now
	return 0
}

func setTime(p *int64, v, now int64) {
	switch v {
	case UtimeOmit:
	case UtimeNow:
		*p = now
	default:
		*p = v
	}
}

// fileInode is the inode behind open file fl: its own, a FIFO's, -1 for
// pipe(2)'s ends.
func (f *FS[E]) fileInode(fl *file) int32 {
	if fl.kind == kindPipe {
		return fl.ino
	}
	return fl.obj
}

// SetReadOnly makes path and, if it is a directory, everything under it
// read-only: writes, creations, removals and renames there fail with
// EROFS. The kernel fills a package directory and then calls this.
func (f *FS[E]) SetReadOnly(dir int, path []byte) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	r, e := f.walkExisting(dir, path, noFollow)
	if e != 0 {
		return e
	}
	// Depth-first through the listings, without a stack: next sibling,
	// else up to the first ancestor with one.
	top := r.ent
	for i := top; ; {
		f.inodes[i].ro = true
		f.inodes[f.inodeOf(i)].ro = true
		if isDir(f.inodes[i].mode) && f.inodes[i].head >= 0 {
			i = f.inodes[i].head
			continue
		}
		for i != top && f.inodes[i].next < 0 {
			i = f.inodes[i].parent
		}
		if i == top {
			return 0
		}
		i = f.inodes[i].next
	}
}
