package kernel

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/procfs"
)

// /proc and /sys, mounted (pathwalk.go): paths walk kernel/procfs's tree
// (procPath), and an open file of kind fileProc is a node of it whose
// text is rendered anew from a fresh snapshot at every read from its
// offset, as Linux's seq_file generates a file for each read. Nothing
// here is writable: the answers are Linux's to root (a file opens for
// writing, and a write is EINVAL; unlink, chmod and the like are EPERM,
// truncate does nothing). The working directory may be a directory of
// /proc or /sys (procCwd).

// procFile is an open file of /proc or /sys. refs counts descriptors and
// calls (fileLock).
type procFile struct {
	refs  int32
	node  procfs.Node
	mode  uint32
	m     int32 // mountProc or mountSys
	flags int32
	off   int64 // a directory's: the next entry's index
}

var procFiles [64]procFile

// procCwd is the working directory when it is on /proc or /sys (read
// without a lock, as the share's: a chdir racing a relative call on another
// thread may leave that call walking from the old directory).
var procCwd struct {
	on   bool
	m    int32
	node procfs.Node
}

// procChdir makes node n of mount m the working directory.
func procChdir(m int32, n procfs.Node, mode uint32) abi.Errno {
	if mode&^0o7777 != procfs.ModeDir {
		return abi.Errno(unix.ENOTDIR)
	}
	shares.LeaveCwd()
	procCwd.m, procCwd.node = m, n
	procCwd.on = true
	return 0
}

// procGetcwd is getcwd when the working directory is on /proc or /sys;
// false if it is not.
func procGetcwd(b []byte) (int, abi.Errno, bool) {
	if !procCwd.on {
		return 0, 0, false
	}
	procState.mu.Lock()
	defer procState.mu.Unlock()
	s := &procState.s
	procBegin(s)
	procFill(s, procfs.Needs(procCwd.node)|procfs.PartProc)
	n := procfs.Path(procCwd.node, s, b)
	if n+1 > len(b) {
		return 0, abi.Errno(unix.ERANGE), true
	}
	b[n] = 0
	return n + 1, 0, true
}

// procMagic is statfs's f_type of mount m.
func procMagic(m int32) int64 {
	if m == mountSys {
		return 0x62656572 // SYSFS_MAGIC
	}
	return 0x9fa0 // PROC_SUPER_MAGIC
}

// procDirFD is the mount and node of directory descriptor fd if it is
// one of /proc's or /sys's.
func procDirFD(fd int) (int32, procfs.Node, bool) {
	if fd < 0 || fd >= len(files) {
		return 0, 0, false
	}
	fileLock.Lock()
	defer fileLock.Unlock()
	if files[fd].kind != fileProc {
		return 0, 0, false
	}
	f := &procFiles[files[fd].h]
	return f.m, f.node, f.mode&^0o7777 == procfs.ModeDir
}

// procPath walks pl's path in procfs's tree and runs op on the node it
// names; a path that leaves the tree (".." at its root, a link to an
// absolute path) is the next place (errLinkOut), its path written into
// b.
func procPath(op int, pl *place, a *pathArgs, b []byte) (next place, r uintptr, e abi.Errno) {
	procState.mu.Lock()
	next, r, e = procPathLocked(op, pl, a, b)
	procState.mu.Unlock()
	if op == opOpen && e == 0 {
		r, e = procOpen(pl.m, procfs.Node(r), uint32(a.st.Mode), a.flags)
	}
	return next, r, e
}

// procPathLocked is procPath under procState.mu; open's node is r, its
// mode in a.st.
func procPathLocked(op int, pl *place, a *pathArgs, b []byte) (next place, r uintptr, e abi.Errno) {
	s := &procState.s
	procBegin(s)
	n, k, out, e := procWalk(s, pl.node, pl.path, follows(op, a.flags), b)
	switch {
	case e != 0:
		return next, 0, e
	case out == procUp:
		return memPlace(fs.AtIno(mountParent[pl.m]), b[:k]), 0, errLinkOut
	case out == procLink:
		return memPlace(fs.AtCWD, b[:k]), 0, errLinkOut
	}
	procFill(s, procfs.Needs(n))
	mode := procfs.Mode(n, s)
	switch op {
	case opOpen:
		a.st.Mode = mode
		return next, uintptr(n), 0 // procOpen, without the lock
	case opStat:
		procStat(pl.m, n, mode, &a.st)
	case opStatfs:
		a.sfs = unix.Statfs_t{Type: procMagic(pl.m), Bsize: fs.PageSize, Namelen: fs.NameMax, Frsize: fs.PageSize, Flags: 0x20 | 0x1000 | unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC}
	case opReadlink:
		if mode&^0o7777 != procfs.ModeLink {
			return next, 0, abi.EINVAL
		}
		k, ok := procfs.Readlink(n, s, a.out)
		if !ok {
			return next, 0, abi.ENOENT // exe without a path
		}
		return next, uintptr(min(k, len(a.out))), 0
	case opMkdir, opMknod, opSymlink:
		return next, 0, abi.Errno(unix.EEXIST)
	case opUnlink:
		if n == procfs.ProcRoot || n == procfs.SysRoot {
			return next, 0, abi.Errno(unix.EBUSY) // the mount point
		}
		return next, 0, abi.EPERM
	case opTruncate:
	case opChdir:
		return next, 0, procChdir(pl.m, n, mode)
	default:
		return next, 0, abi.EPERM // chmod, chown, utimes
	}
	return next, 0, 0
}

// procOpen opens node n of mount m, of the given mode.
func procOpen(m int32, n procfs.Node, perm uint32, flags int) (uintptr, abi.Errno) {
	mode := perm &^ 0o7777
	acc := flags & unix.O_ACCMODE
	switch {
	case flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL:
		return 0, abi.Errno(unix.EEXIST)
	case mode == procfs.ModeLink:
		return 0, abi.Errno(unix.ELOOP) // O_NOFOLLOW on a link
	case flags&unix.O_DIRECTORY != 0 && mode != procfs.ModeDir:
		return 0, abi.Errno(unix.ENOTDIR)
	case mode == procfs.ModeDir && acc != unix.O_RDONLY:
		return 0, abi.Errno(unix.EISDIR)
	}
	fileLock.Lock()
	h := -1
	for i := range procFiles {
		if procFiles[i].refs == 0 {
			h = i
			procFiles[i] = procFile{refs: 1, node: n, mode: perm, m: m, flags: int32(flags &^ unix.O_CLOEXEC)}
			break
		}
	}
	fileLock.Unlock()
	if h < 0 {
		return 0, abi.Errno(unix.ENFILE)
	}
	return installHandle(fileProc, h)
}

// What procWalk found: the node, or a path out of the tree.
const (
	procIn = iota
	procUp
	procLink
)

// procWalk walks path from directory n, filling what each directory's
// entries need; symbolic links inside the tree are followed (self,
// thread-self, net; the last name's only if follow). ".." at a root
// (procUp: the rest of the path) and a link to an absolute path
// (procLink: the target and the rest) leave the tree: what is left is
// written into b, its length returned.
func procWalk(s *procfs.Snapshot, n procfs.Node, path []byte, follow bool, b []byte) (procfs.Node, int, int, abi.Errno) {
	var bufs [2][256]byte // a link's target and the rest of the path, alternately
	rest := path
	for links := 0; ; {
		var name []byte
		name, rest = procSplit(rest)
		if len(name) == 0 {
			return n, 0, procIn, 0
		}
		if string(name) == ".." {
			if n == procfs.ProcRoot || n == procfs.SysRoot {
				for len(rest) > 0 && rest[0] == '/' {
					rest = rest[1:]
				}
				return n, copy(b, rest), procUp, 0
			}
			n = procfs.Parent(n)
			continue
		}
		procFill(s, procfs.Needs(n))
		if procfs.Mode(n, s)&^0o7777 != procfs.ModeDir {
			return 0, 0, procIn, abi.Errno(unix.ENOTDIR)
		}
		c, ok := procfs.Lookup(n, name, s)
		if !ok {
			return 0, 0, procIn, abi.ENOENT
		}
		if next, _ := procSplit(rest); procfs.Mode(c, s)&^0o7777 != procfs.ModeLink || len(next) == 0 && !follow {
			n = c
			continue
		}
		if links++; links > fs.MaxSymlinks {
			return 0, 0, procIn, abi.Errno(unix.ELOOP)
		}
		procFill(s, procfs.Needs(c))
		t := &bufs[links%2]
		k, ok := procfs.Readlink(c, s, t[:])
		if !ok || k == 0 {
			return 0, 0, procIn, abi.ENOENT // exe without a path
		}
		if t[0] == '/' {
			if k+len(rest) > len(b) {
				return 0, 0, procIn, abi.ENAMETOOLONG
			}
			copy(b, t[:k])
			return n, k + copy(b[k:], rest), procLink, 0
		}
		if k+1+len(rest) > len(t) {
			return 0, 0, procIn, abi.ENAMETOOLONG
		}
		t[k] = '/'
		rest = t[:k+1+copy(t[k+1:], rest)]
		n = procfs.Parent(c)
	}
}

// procStat fills st for node n of mount m.
func procStat(m int32, n procfs.Node, mode uint32, st *unix.Stat_t) {
	now := walltime()
	*st = unix.Stat_t{Dev: uint64(fs.Dev + 1 + m - mountProc), Ino: procfs.Ino(n), Nlink: 1, Mode: mode, Blksize: 1024}
	if mode&^0o7777 == procfs.ModeDir {
		st.Nlink = 2
	}
	setInt(&st.Atim.Sec, now/1e9)
	setInt(&st.Atim.Nsec, now%1e9)
	st.Mtim, st.Ctim = st.Atim, st.Atim
}

// procGet is open file h of /proc after fdGet.
func procGet(o ofile) *procFile { return &procFiles[o.h] }

// procRender renders f's node into procState.out; procState.mu is held.
func procRender(f *procFile) ([]byte, abi.Errno) {
	s := &procState.s
	procBegin(s)
	if !procfs.Valid(f.node, s) {
		procFill(s, procfs.Needs(f.node))
		if !procfs.Valid(f.node, s) {
			return nil, abi.Errno(unix.ESRCH) // its thread went
		}
	}
	procFill(s, procfs.Needs(f.node))
	k, ok := procfs.Render(f.node, s, procState.out[:])
	if !ok {
		return nil, abi.ENOENT
	}
	return procState.out[:min(k, len(procState.out))], 0
}

func procRead(o ofile, u *uio) (uintptr, abi.Errno) {
	f := procGet(o)
	n, e := procPread(o, u, f.off, false)
	if e == 0 {
		f.off += int64(n) // not atomic: concurrent reads of one open file are racy on Linux too
	}
	return n, e
}

func procPread(o ofile, u *uio, off int64, write bool) (uintptr, abi.Errno) {
	f := procGet(o)
	switch {
	case write:
		return 0, abi.EINVAL // no file here takes a write
	case f.flags&unix.O_ACCMODE == unix.O_WRONLY:
		return 0, abi.EBADF
	case f.mode&^0o7777 == procfs.ModeDir:
		return 0, abi.Errno(unix.EISDIR)
	}
	if e := u.check(true); e != 0 {
		return 0, e
	}
	procState.mu.Lock()
	defer procState.mu.Unlock()
	text, e := procRender(f)
	if e != 0 {
		return 0, e
	}
	if off >= int64(len(text)) {
		return 0, 0
	}
	k := u.move(text[off:], true)
	if k == 0 && u.left > 0 {
		return 0, abi.EFAULT
	}
	return uintptr(k), 0
}

func procSeek(o ofile, off int64, whence int) (uintptr, abi.Errno) {
	f := procGet(o)
	switch whence {
	case unix.SEEK_CUR:
		off += f.off
	case unix.SEEK_SET:
	default:
		return 0, abi.EINVAL
	}
	if off < 0 {
		return 0, abi.EINVAL
	}
	f.off = off
	return uintptr(off), 0
}

// procGetdents lists a directory from entry f.off on, as linux_dirent64
// records.
func procGetdents(o ofile, b []byte) (uintptr, abi.Errno) {
	f := procGet(o)
	if f.mode&^0o7777 != procfs.ModeDir {
		return 0, abi.Errno(unix.ENOTDIR)
	}
	procState.mu.Lock()
	defer procState.mu.Unlock()
	s := &procState.s
	procBegin(s)
	procFill(s, procfs.Needs(f.node))
	var name [256]byte
	n := 0
	for {
		c, k, ok := procfs.ReadDir(f.node, s, int(f.off), name[:])
		if !ok {
			return uintptr(n), 0
		}
		reclen := (19 + k + 1 + 7) &^ 7
		if len(b)-n < reclen {
			if n == 0 {
				return 0, abi.EINVAL
			}
			return uintptr(n), 0
		}
		rec := b[n : n+reclen]
		binary.LittleEndian.PutUint64(rec[0:], procfs.Ino(c))
		binary.LittleEndian.PutUint64(rec[8:], uint64(f.off+1))
		binary.LittleEndian.PutUint16(rec[16:], uint16(reclen))
		rec[18] = unix.DT_REG
		switch procfs.Mode(c, s) &^ 0o7777 {
		case procfs.ModeDir:
			rec[18] = unix.DT_DIR
		case procfs.ModeLink:
			rec[18] = unix.DT_LNK
		}
		clear(rec[19+copy(rec[19:], name[:k]):])
		n += reclen
		f.off++
	}
}

var procOps = fileOps{
	read:  procRead,
	write: func(o ofile, u *uio) (uintptr, abi.Errno) { return procPread(o, u, 0, true) },
	chdir: func(o ofile) abi.Errno {
		f := procGet(o)
		return procChdir(f.m, f.node, f.mode)
	},
	pread:    procPread,
	seek:     procSeek,
	getdents: procGetdents,
	stat: func(o ofile, st *unix.Stat_t) abi.Errno {
		f := procGet(o)
		procStat(f.m, f.node, f.mode, st)
		return 0
	},
	statfs: func(o ofile, st *unix.Statfs_t) abi.Errno {
		*st = unix.Statfs_t{Type: procMagic(procGet(o).m), Bsize: fs.PageSize, Namelen: fs.NameMax, Frsize: fs.PageSize, Flags: 0x20 | 0x1000 | unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC}
		return 0
	},
	getfl: procGetfl,
}

func procGetfl(o ofile) (uintptr, abi.Errno) { return uintptr(procGet(o).flags) &^ unix.O_CREAT, 0 }

// procProcFD is what /proc/self/fd shows of a file of /proc or /sys.
func procProcFD(o ofile, s *procfs.Snapshot, d *procfs.FD) {
	f := procGet(o)
	var b [256]byte
	n := min(procfs.Path(f.node, s, b[:]), len(b))
	d.Kind, d.MntID, d.Ino, d.Pos, d.Path = procfs.FDFile, procMntProc+f.m-mountProc, procfs.Ino(f.node), f.off, s.Put(b[:n])
}
