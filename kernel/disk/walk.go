package disk

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/ext4"
	"yolk/kernel/fs"
	"yolk/kernel/namei"
)

// Walk runs path operation op (namei.Op*) on the file pl names: pl.Path
// from directory pl.Ino of disk mount pl.M, pl.Depth names below its
// root (namei.Walk has checked that ".." never climbs above it). A
// symbolic link on the way (or last, when op follows it) moves the walk
// (namei.ErrMoved): its target and the rest of the path are written into
// b, and the next place is the root's (an absolute target) or the link's
// directory.
func (d *Disks[E]) Walk(op int, pl *namei.Place, a *namei.Args, b []byte) (next namei.Place, r uintptr, e abi.Errno) {
	i := index(pl.M)
	m := &d.m[i]
	if !m.on {
		return next, 0, abi.ENOENT
	}
	defer d.cut() // a truncation's (O_TRUNC, truncate(2)), after the unlock
	m.lock()
	defer m.mu.Unlock()
	return d.walk(op, i, pl, a, b)
}

// walk is Walk under the mount's lock (its returns outside Walk, whose
// defers stay open-coded: no deferprocStack in kernel context).
func (d *Disks[E]) walk(op, i int, pl *namei.Place, a *namei.Args, b []byte) (next namei.Place, r uintptr, e abi.Errno) {
	m := &d.m[i]
	dir, depth, path := pl.Ino, pl.Depth, pl.Path
	follow := namei.Follows(op, a.Flags)
	for {
		name, rest := nextName(path)
		k := 0
		for k < len(rest) && rest[k] == '/' {
			k++
		}
		last := k == len(rest)
		if len(name) > ext4.NameMax {
			return next, 0, abi.Errno(unix.ENAMETOOLONG)
		}
		if last {
			return d.last(op, i, pl.M, dir, depth, name, len(rest) > 0, follow, a, b)
		}
		ino, le := lookup(&m.fs, dir, name)
		if le != 0 {
			return next, 0, le
		}
		st, le := m.fs.Stat(ino)
		if le != 0 {
			return next, 0, le
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			return d.moved(pl.M, i, ino, dir, depth, rest, b)
		case unix.S_IFDIR:
			if t := d.pointAt(i, ino, name); t != 0 {
				return namei.Mounted(t, rest), 0, namei.ErrMoved
			}
		default:
			return next, 0, abi.Errno(unix.ENOTDIR)
		}
		switch {
		case isDot(name):
		case isDotDot(name):
			depth--
		default:
			depth++
		}
		dir, path = ino, rest
	}
}

func isDot(n []byte) bool    { return len(n) == 1 && n[0] == '.' }
func isDotDot(n []byte) bool { return len(n) == 2 && n[0] == '.' && n[1] == '.' }

// lookup is name in directory dir: dir itself for "" and ".".
func lookup[E Env[E]](f *ext4.FS[E], dir uint32, name []byte) (uint32, abi.Errno) {
	if len(name) == 0 || isDot(name) {
		return dir, 0
	}
	return f.Lookup(dir, name)
}

// moved is the walk's next place after symbolic link ino in directory
// dir: its target, then the rest of the path, written into b.
func (d *Disks[E]) moved(mt int32, i int, ino, dir uint32, depth int, rest, b []byte) (namei.Place, uintptr, abi.Errno) {
	n, e := d.m[i].fs.Readlink(ino, b)
	if e != 0 {
		return namei.Place{}, 0, e
	}
	if n == 0 {
		return namei.Place{}, 0, abi.ENOENT
	}
	if n+len(rest) > len(b) {
		return namei.Place{}, 0, abi.Errno(unix.ENAMETOOLONG)
	}
	n += copy(b[n:], rest)
	if b[0] == '/' {
		return namei.Abs(b[:n]), 0, namei.ErrMoved
	}
	return namei.DiskAt(mt, dir, depth, b[:n]), 0, namei.ErrMoved
}

// last runs op on name, the path's last, in directory dir of mount i
// (slash: the path ended with a slash after it).
func (d *Disks[E]) last(op, i int, mt int32, dir uint32, depth int, name []byte, slash, follow bool, a *namei.Args, b []byte) (next namei.Place, r uintptr, e abi.Errno) {
	m := &d.m[i]
	f := &m.fs
	ino, le := lookup(f, dir, name)
	var st ext4.Stat
	if le == 0 {
		if st, le = f.Stat(ino); le != 0 {
			return next, 0, le
		}
		typ := st.Mode & unix.S_IFMT
		if typ == unix.S_IFLNK && (follow || slash) {
			return d.moved(mt, i, ino, dir, depth, nil, b)
		}
		if slash && typ != unix.S_IFDIR {
			return next, 0, abi.Errno(unix.ENOTDIR)
		}
		if t := d.pointAt(i, ino, name); t != 0 {
			switch {
			case op == namei.OpUnlink && f.ReadOnly():
				return next, 0, abi.Errno(unix.EROFS) // Linux's mnt_want_write comes first
			case op == namei.OpUnlink && a.Flags&unix.AT_REMOVEDIR != 0:
				return next, 0, abi.Errno(unix.EBUSY) // rmdir of a mount point
			case op == namei.OpUnlink:
				return next, 0, abi.Errno(unix.EISDIR)
			}
			return namei.Mounted(t, nil), 0, namei.ErrMoved
		}
	} else if le != abi.ENOENT {
		return next, 0, le
	}
	creates := op == namei.OpMkdir || op == namei.OpMknod || op == namei.OpSymlink || op == namei.OpOpen && a.Flags&unix.O_CREAT != 0
	if le == abi.ENOENT && (!creates || slash && op != namei.OpMkdir) {
		return next, 0, le
	}
	if le == 0 && creates && (op != namei.OpOpen || a.Flags&unix.O_EXCL != 0) {
		return next, 0, abi.Errno(unix.EEXIST)
	}
	ro := f.ReadOnly()
	umask := env[E]().Umask()
	switch op {
	case namei.OpOpen:
		if le == abi.ENOENT {
			if ro {
				return next, 0, abi.Errno(unix.EROFS)
			}
			if ino, e = f.Mknod(dir, name, unix.S_IFREG|a.Mode&0o7777&^umask, 0, 0, 0); e != 0 {
				return next, 0, e
			}
			st.Mode = unix.S_IFREG
		}
		fdepth := depth + 1 // a directory's: paths from it climb that far
		switch {
		case len(name) == 0 || isDot(name):
			fdepth = depth
		case isDotDot(name):
			fdepth = depth - 1
		}
		h, e := d.open(i, ino, st.Mode, fdepth, a.Flags, le == abi.ENOENT)
		if e != 0 {
			return next, 0, e
		}
		r, e = env[E]().Install(h)
		return next, r, e
	case namei.OpStat:
		d.stat(i, &st, &a.St)
		return next, 0, 0
	case namei.OpStatfs:
		return next, 0, d.statfs(i, &a.Sfs)
	case namei.OpReadlink:
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return next, 0, abi.EINVAL
		}
		n, e := f.Readlink(ino, a.Out)
		return next, uintptr(n), e
	case namei.OpChdir:
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return next, 0, abi.Errno(unix.ENOTDIR)
		}
		depth := depth + 1
		switch {
		case len(name) == 0 || isDot(name):
			depth--
		case isDotDot(name):
			depth -= 2
		}
		d.chdir(i, ino, depth)
		return next, 0, 0
	}
	if ro {
		return next, 0, abi.Errno(unix.EROFS)
	}
	switch op {
	case namei.OpMkdir:
		_, e = f.Mkdir(dir, name, a.Mode&0o7777&^umask, 0, 0)
	case namei.OpMknod:
		_, e = f.Mknod(dir, name, a.Mode&unix.S_IFMT|a.Mode&0o7777&^umask, a.Dev, 0, 0)
	case namei.OpSymlink:
		_, e = f.Symlink(dir, name, a.Target, 0, 0)
	case namei.OpUnlink:
		switch {
		case a.Flags&unix.AT_REMOVEDIR != 0 && isDot(name):
			e = abi.EINVAL
		case a.Flags&unix.AT_REMOVEDIR != 0 && isDotDot(name):
			e = abi.Errno(unix.ENOTEMPTY)
		case a.Flags&unix.AT_REMOVEDIR != 0 && len(name) == 0:
			// The walk ends without a name only at the disk's root:
			// the mount point, busy as Linux's rmdir says (unlink's
			// EISDIR below comes first there, as in its may_delete).
			e = abi.Errno(unix.EBUSY)
		case len(name) == 0 || isDot(name) || isDotDot(name):
			e = abi.Errno(unix.EISDIR)
		case ino == namei.DiskRoot:
			e = abi.Errno(unix.EBUSY)
		case a.Flags&unix.AT_REMOVEDIR != 0:
			e = f.Rmdir(dir, name)
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			e = abi.Errno(unix.EISDIR)
		default:
			e = f.Unlink(dir, name)
		}
	case namei.OpTruncate:
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			e = abi.Errno(unix.EISDIR)
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			e = abi.EINVAL
		case a.Size < 0:
			e = abi.EINVAL
		default:
			e = f.Truncate(ino, uint64(a.Size))
			d.resized(m, i, ino)
		}
	case namei.OpChmod:
		e = f.Setattr(ino, ext4.Attr{Mask: ext4.AttrMode, Mode: a.Mode & 0o7777})
	case namei.OpChown:
		e = f.Setattr(ino, chown(a.UID, a.GID))
	case namei.OpUtimes:
		e = f.Setattr(ino, utimes(a.Times, env[E]().Now()))
	default:
		e = abi.EINVAL
	}
	return next, 0, e
}

// chown is chown's attributes (-1: unchanged).
func chown(uid, gid int) ext4.Attr {
	var at ext4.Attr
	if uid != -1 {
		at.Mask |= ext4.AttrUid
		at.Uid = uint32(uid)
	}
	if gid != -1 {
		at.Mask |= ext4.AttrGid
		at.Gid = uint32(gid)
	}
	return at
}

// utimes is utimensat's attributes: times[0] the access time, [1] the
// modification time, each fs.UtimeNow, fs.UtimeOmit or nanoseconds.
func utimes(times [2]int64, now int64) ext4.Attr {
	var at ext4.Attr
	for k, t := range times {
		if t == fs.UtimeOmit {
			continue
		}
		if t == fs.UtimeNow {
			t = now
		}
		tm := ext4.Time{Sec: t / 1e9, Nsec: uint32(t % 1e9)}
		if t < 0 && t%1e9 != 0 {
			tm = ext4.Time{Sec: t/1e9 - 1, Nsec: uint32(t%1e9 + 1e9)}
		}
		if k == 0 {
			at.Mask |= ext4.AttrAtime
			at.Atime = tm
		} else {
			at.Mask |= ext4.AttrMtime
			at.Mtime = tm
		}
	}
	return at
}

// Rename renames o's last name to n's, both on disk mount pl.M (namei.Where's
// places: the path from a directory, its last name not walked).
func (d *Disks[E]) Rename(o, n *namei.Place, flags int) abi.Errno {
	if flags != 0 {
		return abi.EINVAL // RENAME_NOREPLACE, RENAME_EXCHANGE: not yet
	}
	return d.two(o, n, func(f *ext4.FS[E], od uint32, oname []byte, nd uint32, nname []byte) abi.Errno {
		if len(oname) == 0 || len(nname) == 0 {
			// A path with no last name is the disk's root, whose
			// name is the mount point's in the outer file system:
			// Linux finds the two parents on different mounts.
			return abi.Errno(unix.EXDEV)
		}
		if isDot(oname) || isDotDot(oname) || isDot(nname) || isDotDot(nname) ||
			d.pointNamed(o.M, f, od, oname) || d.pointNamed(n.M, f, nd, nname) {
			return abi.Errno(unix.EBUSY) // a mount point, as Linux's
		}
		return f.Rename(od, oname, nd, nname)
	})
}

// Link makes n's last name a hard link to o's file.
func (d *Disks[E]) Link(o, n *namei.Place) abi.Errno {
	return d.two(o, n, func(f *ext4.FS[E], od uint32, oname []byte, nd uint32, nname []byte) abi.Errno {
		ino, e := lookup(f, od, oname)
		if e != 0 {
			return e
		}
		if st, e := f.Stat(ino); e != 0 || st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return abi.EPERM // Linux: no hard link to a directory
		}
		if _, e := lookup(f, nd, nname); e == 0 {
			return abi.Errno(unix.EEXIST)
		}
		return f.Link(ino, nd, nname)
	})
}

// two runs op, under the mount's lock, on the directories holding o's and
// n's last names, which intermediate names must reach without links.
func (d *Disks[E]) two(o, n *namei.Place, op func(f *ext4.FS[E], od uint32, oname []byte, nd uint32, nname []byte) abi.Errno) abi.Errno {
	m := &d.m[index(o.M)]
	if !m.on {
		return abi.ENOENT
	}
	m.lock()
	defer m.mu.Unlock()
	od, oname, e := parent(&m.fs, o.Ino, o.Path)
	if e != 0 {
		return e
	}
	nd, nname, e := parent(&m.fs, n.Ino, n.Path)
	if e != 0 {
		return e
	}
	if m.fs.ReadOnly() {
		return abi.Errno(unix.EROFS)
	}
	return op(&m.fs, od, oname, nd, nname)
}

// parent walks path from dir to the directory holding its last name.
func parent[E Env[E]](f *ext4.FS[E], dir uint32, path []byte) (uint32, []byte, abi.Errno) {
	for len(path) > 0 && path[len(path)-1] == '/' {
		path = path[:len(path)-1]
	}
	for {
		name, rest := nextName(path)
		if len(rest) == 0 {
			return dir, name, 0
		}
		ino, e := lookup(f, dir, name)
		if e != 0 {
			return 0, nil, e
		}
		st, e := f.Stat(ino)
		if e != 0 {
			return 0, nil, e
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return 0, nil, abi.Errno(unix.ENOTDIR) // a link on the way: namei.Where followed it (DiskPoint)
		}
		dir, path = ino, rest
	}
}

// nextName splits path into its first name (leading slashes skipped)
// and the rest, from the slash after the name on.
func nextName(path []byte) (name, rest []byte) {
	for len(path) > 0 && path[0] == '/' {
		path = path[1:]
	}
	j := 0
	for j < len(path) && path[j] != '/' {
		j++
	}
	return path[:j], path[j:]
}
