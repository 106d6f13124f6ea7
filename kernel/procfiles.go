package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/namei"
	"yolk/kernel/procfs"
	"yolk/kernel/procsnap"
	"yolk/kernel/share"
)

// /proc and /sys, mounted (pathwalk.go): paths walk kernel/procfs's tree
// (procPath, procfs.Walk), and an open file of kind fileProc is a node
// of it whose text is rendered anew from a fresh snapshot (procState,
// procenv.go) at every read from its offset, as Linux's seq_file
// generates a file for each read. Nothing here is writable: the answers
// are Linux's to root (a file opens for writing, and a write is EINVAL;
// unlink, chmod and the like are EPERM, truncate does nothing). The
// working directory may be a directory of /proc or /sys (procCwd).

// procFile is an open file of /proc or /sys. refs counts descriptors and
// calls (fileLock).
type procFile struct {
	refs  int32
	node  procfs.Node
	mode  uint32
	m     int32 // namei.MountProc or namei.MountSys
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
	dsk.LeaveCwd()
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
	n, e := procState.Getcwd(procCwd.node, b)
	return n, e, true
}

// procAt: a path relative to a directory of /proc or /sys walks from
// its node; the open file holds no reference the place needs.
func procAt(o ofile, path []byte) (namei.Place, abi.Errno) {
	f := procGet(o)
	m, n, dir := f.m, f.node, f.mode&^0o7777 == procfs.ModeDir
	fdPut(o)
	switch {
	case !dir:
		return nowhere(), abi.Errno(unix.ENOTDIR)
	case len(path) == 0:
		return nowhere(), abi.ENOENT
	}
	return namei.Place{M: m, Node: n, D: fs.AtCWD, R: share.Ref{H: -1}, Depth: -1, Path: path}, 0
}

// procPath walks pl's path in procfs's tree and runs op on the node it
// names; a path that leaves the tree (".." at its root, a link to an
// absolute path) is the next namei.Place (namei.ErrMoved), its path written into
// b.
func procPath(op int, pl *namei.Place, a *namei.Args, b []byte) (next namei.Place, r uintptr, e abi.Errno) {
	procState.Lock()
	next, r, e = procPathLocked(op, pl, a, b)
	procState.Unlock()
	if op == namei.OpOpen && e == 0 {
		r, e = procOpen(pl.M, procfs.Node(r), uint32(a.St.Mode), a.Flags)
	}
	return next, r, e
}

// procPathLocked is procPath under procState's lock; open's node is r,
// its mode in a.St.
func procPathLocked(op int, pl *namei.Place, a *namei.Args, b []byte) (next namei.Place, r uintptr, e abi.Errno) {
	s := procState.Begin()
	n, k, out, e := procfs.Walk(&procState, s, pl.Node, pl.Path, namei.Follows(op, a.Flags), b)
	switch {
	case e != 0:
		return next, 0, e
	case out == procfs.WalkUp:
		return namei.Up(pl.M, b[:k]), 0, namei.ErrMoved
	case out == procfs.WalkLink:
		return namei.Abs(b[:k]), 0, namei.ErrMoved
	}
	procState.Fill(s, procfs.Needs(n))
	mode := procfs.Mode(n, s)
	switch op {
	case namei.OpOpen:
		a.St.Mode = mode
		return next, uintptr(n), 0 // procOpen, without the lock
	case namei.OpStat:
		procStat(n, mode, &a.St)
	case namei.OpStatfs:
		procfs.Statfs(n, &a.Sfs)
	case namei.OpReadlink:
		if mode&^0o7777 != procfs.ModeLink {
			return next, 0, abi.EINVAL
		}
		k, ok := procfs.Readlink(n, s, a.Out)
		if !ok {
			return next, 0, abi.ENOENT // exe without a path
		}
		return next, uintptr(min(k, len(a.Out))), 0
	case namei.OpMkdir, namei.OpMknod, namei.OpSymlink:
		return next, 0, abi.Errno(unix.EEXIST)
	case namei.OpUnlink:
		if n == procfs.ProcRoot || n == procfs.SysRoot {
			return next, 0, abi.Errno(unix.EBUSY) // the mount point
		}
		return next, 0, abi.EPERM
	case namei.OpTruncate:
	case namei.OpChdir:
		return next, 0, procChdir(pl.M, n, mode)
	default:
		return next, 0, abi.EPERM // chmod, chown, utimes
	}
	return next, 0, 0
}

// procOpen opens node n of mount m, of the given mode.
func procOpen(m int32, n procfs.Node, perm uint32, flags int) (uintptr, abi.Errno) {
	if e := procfs.Open(perm, flags); e != 0 {
		return 0, e
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

// procStat fills st for node n (its st_dev its file system's, as /proc/self/mountinfo lists them).
func procStat(n procfs.Node, mode uint32, st *unix.Stat_t) {
	procfs.Stat(n, mode, uint64(fs.Dev+1+procfs.FSOf(n)), walltime(), st)
}

// procGet is open file h of /proc after fdGet.
func procGet(o ofile) *procFile { return &procFiles[o.h] }

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
	if e := procfs.ReadCheck(f.mode, int(f.flags), write); e != 0 {
		return 0, e
	}
	if e := u.check(true); e != 0 {
		return 0, e
	}
	procState.Lock()
	defer procState.Unlock()
	text, e := procState.Text(f.node, off)
	if e != 0 || len(text) == 0 {
		return 0, e
	}
	k := u.move(text, true)
	if k == 0 && u.left > 0 {
		return 0, abi.EFAULT
	}
	return uintptr(k), 0
}

func procSeek(o ofile, off int64, whence int) (uintptr, abi.Errno) {
	f := procGet(o)
	off, e := procfs.Seek(f.off, off, whence)
	if e != 0 {
		return 0, e
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
	procState.Lock()
	defer procState.Unlock()
	n, next, e := procState.Getdents(f.node, f.off, b)
	f.off = next
	return uintptr(n), e
}

var procOps = fileOps{
	at:    procAt,
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
		procStat(f.node, f.mode, st)
		return 0
	},
	statfs: func(o ofile, st *unix.Statfs_t) abi.Errno {
		procfs.Statfs(procGet(o).node, st)
		return 0
	},
	getfl: procGetfl,
}

func procGetfl(o ofile) (uintptr, abi.Errno) { return uintptr(procGet(o).flags) &^ unix.O_CREAT, 0 }

// procProcFD is what /proc/self/fd shows of a file of /proc or /sys.
func procProcFD(o ofile, s *procfs.Snapshot, d *procfs.FD) {
	f := procGet(o)
	procfs.NodeFD(s, d, f.node, procsnap.MntProc+f.m-namei.MountProc, f.off)
}
