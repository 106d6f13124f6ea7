package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/procfs"
	"yolk/kernel/share"
)

// Path names walk one tree of mounts (docs/vfs.md): the in-memory file
// system is the root, and the host shares, /proc and /sys are mounted on
// its directories (fs.Mount). A path call starts where its dirfd says
// (pathStart), and each file system walks as far as it can and says why
// it stopped: at a mount point (the in-memory file system's fs.ECross:
// fs.Cross says which mount and what is left), at ".." above a mounted
// root (the walk goes on from the mount point's parent), or at a
// symbolic link whose target is absolute (the walk starts again at the
// root with the target and the rest). onPath is that loop, once; the
// operation itself is the kind's (memPathOp, sharePathOp, procPath), as
// a descriptor's is its kind's (fileOps).

// Mount IDs, as fs.Mount is given them: 1 to share.MaxShares are the
// shares (shares.Mount(id-1)); 0 is the root in-memory file system.
const (
	mountProc = share.MaxShares + 1 + iota
	mountSys
	nMounts
)

// Kinds of file system.
const (
	pathMem = iota
	pathShare
	pathProc
)

// mountParent is the in-memory directory holding each mount point: where
// ".." at the mounted root goes.
var mountParent [nMounts]int32

func mountKind(m int32) int {
	switch {
	case m == 0:
		return pathMem
	case m <= share.MaxShares:
		return pathShare
	}
	return pathProc
}

// mountAt makes directory path of the in-memory file system the mount
// point of mount m.
func mountAt(path []byte, m int32) fs.Errno {
	p, e := vfs.Mount(path, m)
	if e == 0 {
		mountParent[m] = p
	}
	return e
}

// place is where a path call stands: a mount and where on it the rest
// of the path goes from. Only onPath writes one (a local of its own: a
// slice stored through a pointer would need a write barrier).
type place struct {
	m     int32       // the mount
	d     int         // in memory: a handle (with a reference), fs.AtCWD or fs.AtIno
	r     share.Ref   // on a share: the device, the fid to walk from (h's reference) and the path
	depth int         // on a share: how many names r.from is below the share's root; -1 unknown
	node  procfs.Node // on /proc or /sys: the directory to walk from
	path  []byte      // in memory, /proc or /sys: the path
}

// Path operations, the kinds' entries.
const (
	opOpen     = iota // a.flags, a.mode; the new descriptor
	opStat            // a.st; a.flags: AT_SYMLINK_NOFOLLOW
	opStatfs          // a.sfs
	opMkdir           // a.mode
	opUnlink          // a.flags: AT_REMOVEDIR
	opMknod           // a.mode, a.dev
	opSymlink         // a.target
	opReadlink        // a.out; its length
	opTruncate        // a.size
	opChdir           //
	opChmod           // a.mode; a.flags: AT_SYMLINK_NOFOLLOW
	opChown           // a.uid, a.gid; a.flags
	opUtimes          // a.times; a.flags
	opWhere           // nothing: rename and link want the place itself (pathPlace)
)

// pathArgs are a path call's arguments and results besides its path.
type pathArgs struct {
	flags      int
	mode       uint32
	dev        uint64
	uid, gid   int
	size       int64
	times      [2]int64 // fs.UtimeNow, fs.UtimeOmit or nanoseconds
	target     []byte   // symlink's target
	out        []byte   // readlink's buffer
	st         unix.Stat_t
	sfs        unix.Statfs_t
	upOK, link bool // set by onPath for the kinds: see pathOps
}

// errLinkOut: the walk leaves the file system it is on (a last symbolic
// link with an absolute target: a share's walk puts the target in its
// share.Ref's Link). Never returned to a program.
const errLinkOut = share.ErrLinkOut

// follows reports whether op follows a last symbolic link under flags.
func follows(op, flags int) bool {
	switch op {
	case opOpen:
		return flags&unix.O_NOFOLLOW == 0 && flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
	case opStatfs, opTruncate, opChdir:
		return true
	case opStat, opChmod, opChown, opUtimes:
		return flags&unix.AT_SYMLINK_NOFOLLOW == 0
	}
	return false
}

// onPath runs op on the file dirfd and path name, crossing mounts as the
// walk reaches them.
func onPath(dirfd int, upath []byte, op int, args *pathArgs) (uintptr, abi.Errno) {
	// Nothing here keeps what it is given: the compiler cannot see that
	// through the share's func values, and would move both to the heap.
	a, path := noEscapeP(args), noEscape(upath)
	pl, e := pathStart(dirfd, path)
	if e != 0 {
		return 0, e
	}
	var bufs [2]userPath // what is left of the path, alternately
	flags := unix.AT_SYMLINK_NOFOLLOW
	if follows(op, a.flags) {
		flags = 0
	}
	for hops := 0; ; hops++ {
		b := bufs[hops%2][:]
		var r uintptr
		var next place
		switch mountKind(pl.m) {
		case pathMem:
			r, e = memPathOp(op, noEscapeP(&pl), a)
			if e != abi.Errno(fs.ECross) {
				break
			}
			m, n, ce := vfs.Cross(pl.d, pl.path, flags, b)
			if e = abi.Errno(ce); ce == 0 {
				if m == 0 {
					e = abi.ENOENT // the mount point went since the call (not done: unmounts)
				} else {
					next, e = mountRoot(m, b[:n]), errLinkOut
				}
			}
		case pathShare:
			if rest, up := climb(pl.r.Rel, pl.depth); up {
				next, e = memPlace(fs.AtIno(mountParent[pl.m]), rest), errLinkOut
				break
			}
			pl.r.Link = b
			r, e = sharePathOp(op, noEscapeP(&pl), a)
			if e == errLinkOut {
				next = memPlace(fs.AtCWD, b[:pl.r.LinkLen])
			}
		case pathProc:
			next, r, e = procPath(op, &pl, a, b)
		}
		placeDone(&pl)
		if e != errLinkOut {
			return r, e
		}
		if hops == fs.MaxSymlinks {
			placeDone(&next)
			return 0, abi.Errno(unix.ELOOP)
		}
		pl = next
	}
}

// pathStart is where a path call on dirfd and path starts.
func pathStart(dirfd int, path []byte) (pl place, e abi.Errno) {
	pl = place{r: share.Ref{H: -1}, depth: -1, path: path, d: fs.AtCWD}
	if len(path) > 0 && path[0] == '/' {
		return pl, 0
	}
	if int32(dirfd) == unix.AT_FDCWD {
		if procCwd.on {
			pl.m, pl.node = procCwd.m, procCwd.node
			if len(path) == 0 {
				return pl, abi.ENOENT
			}
			return pl, 0
		}
		if dev, fid, depth, on := shares.Cwd(); on {
			if len(path) == 0 {
				return pl, abi.ENOENT // as every path: "" names nothing
			}
			pl.m, pl.depth = shareMount(dev), depth
			pl.r = share.Ref{Dev: dev, From: fid, Rel: path, H: -1}
		}
		return pl, 0
	}
	if h := shareGet(dirfd); h >= 0 {
		f := shares.File(h)
		pl.m = shareMount(int(f.Dev))
		pl.r = share.Ref{Dev: int(f.Dev), From: f.Fid, Rel: path, H: h}
		if len(path) == 0 {
			placeDone(&pl)
			return pl, abi.ENOENT
		}
		return pl, 0
	}
	if m, n, ok := procDirFD(dirfd); ok {
		pl.m, pl.node = m, n
		if len(path) == 0 {
			return pl, abi.ENOENT
		}
		return pl, 0
	}
	pl.d, e = dirHandle(dirfd, path)
	return pl, e
}

// memPlace is the in-memory file system's directory d and path; an empty
// path is the directory itself.
func memPlace(d int, path []byte) place {
	if len(path) == 0 {
		path = dotPath[:]
	}
	return place{d: d, r: share.Ref{H: -1}, depth: -1, path: path}
}

// mountRoot is path from mount m's root.
func mountRoot(m int32, path []byte) place {
	pl := place{m: m, d: fs.AtCWD, r: share.Ref{H: -1}, depth: -1, path: path}
	switch {
	case m == mountProc:
		pl.node = procfs.ProcRoot
	case m == mountSys:
		pl.node = procfs.SysRoot
	default:
		pl.r = share.Ref{Dev: shares.Mount(int(m - 1)).Dev, From: virtio9p.Root, Rel: path, H: -1}
		pl.depth = 0
	}
	return pl
}

// placeDone drops pl's references.
func placeDone(pl *place) {
	fsPut(pl.d)
	pl.d = fs.AtCWD
	shares.Done(&pl.r)
	pl.r.H = -1
}

// shareMount is the mount ID of share device dev.
func shareMount(dev int) int32 { return int32(shares.MountIndex(dev) + 1) }

// climb says whether path, walked from depth names below a mounted
// root (-1: unknown, never), climbs above it with "..", and what is left
// after the ".." that does.
func climb(path []byte, depth int) ([]byte, bool) {
	if depth < 0 {
		return nil, false
	}
	for i := 0; i < len(path); {
		j := i
		for j < len(path) && path[j] != '/' {
			j++
		}
		switch n := path[i:j]; {
		case len(n) == 2 && n[0] == '.' && n[1] == '.':
			if depth--; depth < 0 {
				for j < len(path) && path[j] == '/' {
					j++
				}
				return path[j:], true
			}
		case len(n) == 0 || len(n) == 1 && n[0] == '.':
		default:
			depth++
		}
		i = j + 1
	}
	return nil, false
}

// pathPlace resolves dirfd and path to the place of the file system
// that holds its last name (rename, link: both must be on one mount),
// without following a last link; pl has references placeDone drops, and
// its path may lie in bufs.
func pathPlace(dirfd int, path []byte, bufs *[2]userPath) (pl place, e abi.Errno) {
	pl, e = pathStart(dirfd, path)
	for hops := 0; e == 0; hops++ {
		b := bufs[hops%2][:]
		var next place
		switch mountKind(pl.m) {
		case pathMem:
			m, n, ce := vfs.Cross(pl.d, pl.path, unix.AT_SYMLINK_NOFOLLOW, b)
			if ce != 0 || m == 0 {
				return pl, abi.Errno(ce) // pl stays: here
			}
			next = mountRoot(m, b[:n])
		case pathShare:
			rest, up := climb(pl.r.Rel, pl.depth)
			if !up {
				return pl, 0
			}
			next = memPlace(fs.AtIno(mountParent[pl.m]), rest)
		case pathProc:
			return pl, 0
		}
		placeDone(&pl)
		if hops == fs.MaxSymlinks {
			placeDone(&next)
			return next, abi.Errno(unix.ELOOP)
		}
		pl = next
	}
	return pl, e
}
