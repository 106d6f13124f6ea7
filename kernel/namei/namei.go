// Package namei is the path half of the file layer (docs/vfs.md), after
// Linux's name for it: path names walk one tree of mounts — the in-memory
// file system at the root, the host shares, /proc and /sys mounted on its
// directories — and Walk is the one loop that crosses them. Each file
// system walks as far as it can and says why it stopped: at a mount point
// (the in-memory file system's fs.ECross: the walk goes on at the mounted
// root with the rest), at ".." above a mounted root (it goes on from the
// mount point's parent), or at a symbolic link whose target is absolute
// (it starts again at the root with the target and the rest). The
// operation itself is the kind's, which the kernel supplies (Env), as a
// descriptor's operations are its kind's (the kernel's fileOps).
//
// It holds the mount IDs and kinds, where a path call stands (Place),
// the operations' codes and arguments (Op*, Args), Walk and Where (the
// place rename and link need). It knows no file system's insides.
//
// Kernel context: nothing here allocates or stores a Go pointer in memory
// the kernel writes: a Place is written only as a local of Walk and
// Where (a slice stored through a pointer would need a write barrier);
// the paths in flight live in two PATH_MAX buffers on Walk's stack,
// alternately. What is passed by pointer to the Env's methods is hidden
// from escape analysis (noEscape): they never keep it.
package namei

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/procfs"
	"yolk/kernel/share"
)

// Mount IDs, as fs.Mount is given them: 0 is the in-memory file system,
// 1 to share.MaxShares the shares (the share's mount index + 1), then
// /proc and /sys, then the disks' file systems (MountDisk + the disk
// mount's index), then the in-memory file system's /dev and /tmp where
// a disk is the root (MountDev, MountTmp: SetRoot).
const (
	MountProc = share.MaxShares + 1 + iota
	MountSys
	MountDisk
	MountDev  = MountDisk + MaxDisks
	MountTmp  = MountDev + 1
	NumMounts = MountTmp + 1
)

// MaxDisks is how many disk file systems may be mounted.
const MaxDisks = 8

// DiskRoot is the root directory's inode number on a disk's file system
// (ext4's).
const DiskRoot = 2

// Kinds of file system.
const (
	Mem = iota
	Share
	Proc
	Disk
)

// Kind is mount m's kind.
func Kind(m int32) int {
	switch {
	case m == 0 || m >= MountDev:
		return Mem
	case m <= share.MaxShares:
		return Share
	case m >= MountDisk:
		return Disk
	}
	return Proc
}

// The root: the in-memory file system's (0), or a disk's (yolk.root=,
// SetRoot). Set at boot, before tasks run.
var root int32

// SetRoot makes disk mount m the root; binds[MountDev-MountDev] and
// binds[MountTmp-MountDev] are the in-memory file system's /dev and /tmp,
// which SetRoot's caller mounts on the disk (MountDev, MountTmp).
func SetRoot(m int32, dev, tmp int32) {
	root = m
	binds = [2]int32{dev, tmp}
}

// RootOnDisk reports whether a disk is the root, and which mount.
func RootOnDisk() (int32, bool) { return root, root != 0 }

var binds [2]int32 // in-memory directories: MountDev's, MountTmp's

// parents are the directories holding each mount point: where ".." at
// the mounted root goes (SetParent, SetDiskParent, at boot).
var parents [NumMounts]struct {
	ino   int32
	depth int32
	disk  bool // a directory of the root disk, depth names below its root
}

// SetParent records that mount m's mount point is in in-memory
// directory ino.
func SetParent(m, ino int32) { parents[m].ino, parents[m].disk = ino, false }

// SetDiskParent records that mount m's mount point is in directory ino
// of the root disk, depth names below its root.
func SetDiskParent(m int32, ino uint32, depth int) {
	parents[m].ino, parents[m].depth, parents[m].disk = int32(ino), int32(depth), true
}

// Place is where a path call stands: a mount and where on it the rest of
// the path goes from.
type Place struct {
	M     int32       // the mount
	D     int         // in memory: a handle (with a reference), fs.AtCWD or fs.AtIno
	R     share.Ref   // on a share: the device, the fid to walk from (H's reference) and the path
	Depth int         // on a share: how many names R.From is below the share's root; -1 unknown
	Node  procfs.Node // on /proc or /sys: the directory to walk from
	Ino   uint32      // on a disk: the directory to walk from (Depth names below the root)
	Path  []byte      // in memory, /proc or /sys: the path
}

// Path operations, the kinds' entries.
const (
	OpOpen     = iota // a.Flags, a.Mode; the new descriptor
	OpStat            // a.St; a.Flags: AT_SYMLINK_NOFOLLOW
	OpStatfs          // a.Sfs
	OpMkdir           // a.Mode
	OpUnlink          // a.Flags: AT_REMOVEDIR
	OpMknod           // a.Mode, a.Dev
	OpSymlink         // a.Target
	OpReadlink        // a.Out; its length
	OpTruncate        // a.Size
	OpChdir           //
	OpChmod           // a.Mode; a.Flags: AT_SYMLINK_NOFOLLOW
	OpChown           // a.UID, a.GID; a.Flags
	OpUtimes          // a.Times; a.Flags
)

// Args are a path call's arguments and results besides its path.
type Args struct {
	Flags    int
	Mode     uint32
	Dev      uint64
	UID, GID int
	Size     int64
	Times    [2]int64 // fs.UtimeNow, fs.UtimeOmit or nanoseconds
	Target   []byte   // symlink's target
	Out      []byte   // readlink's buffer
	St       unix.Stat_t
	Sfs      unix.Statfs_t
}

// ErrMoved: the walk leaves the file system it is on (the kind gives the
// next place, or a share's walk puts a last link's absolute target in
// its Ref's Link). Never returned to a program.
const ErrMoved = share.ErrLinkOut

// Env is what the kernel supplies: where a call starts and each kind's
// operations.
type Env interface {
	// Start is where a path call on dirfd and path starts (a
	// descriptor's reference taken; Done drops it).
	Start(dirfd int, path []byte) (Place, abi.Errno)
	// Mem and Share run op on the file pl names; Mem says fs.ECross at
	// a mount point, Share ErrMoved with a last link's absolute target
	// in pl.R.Link. Proc walks pl's path in /proc's or /sys's tree and
	// runs op there, or says ErrMoved and the next place, its path
	// written into b.
	Mem(op int, pl *Place, a *Args) (uintptr, abi.Errno)
	Share(op int, pl *Place, a *Args) (uintptr, abi.Errno)
	Proc(op int, pl *Place, a *Args, b []byte) (Place, uintptr, abi.Errno)
	// Disk is Proc's for a disk's file system.
	Disk(op int, pl *Place, a *Args, b []byte) (Place, uintptr, abi.Errno)
	// DiskPoint is, for Where, where pl's path goes on before its last
	// name: a Mounted place at a mount point, or a symbolic link's
	// target (written into b), and true; false if it stays.
	DiskPoint(pl *Place, b []byte) (Place, bool)
	// Cross is the in-memory file system's fs.Cross.
	Cross(d int, path []byte, flags int, rest []byte) (int32, int, fs.Errno)
	// ShareDev is the device of share mount m.
	ShareDev(m int32) int
	// Done drops pl's references.
	Done(pl *Place)
}

// Follows reports whether op follows a last symbolic link under flags.
func Follows(op, flags int) bool {
	switch op {
	case OpOpen:
		return flags&unix.O_NOFOLLOW == 0 && flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
	case OpStatfs, OpTruncate, OpChdir:
		return true
	case OpStat, OpChmod, OpChown, OpUtimes:
		return flags&unix.AT_SYMLINK_NOFOLLOW == 0
	}
	return false
}

var dot = [...]byte{'.'}

// At is the in-memory file system's directory d and path; an empty path
// is the directory itself.
func At(d int, path []byte) Place {
	if len(path) == 0 {
		path = dot[:]
	}
	return Place{D: d, R: share.Ref{H: -1}, Depth: -1, Path: path}
}

// Up is path from the directory holding mount m's mount point: where
// ".." at m's root goes.
func Up(m int32, path []byte) Place {
	if parents[m].disk {
		return DiskAt(root, uint32(parents[m].ino), int(parents[m].depth), path)
	}
	return At(fs.AtIno(parents[m].ino), path)
}

// Abs is absolute path (or path from the root): from the in-memory
// file system's root, or the root disk's.
func Abs(path []byte) Place {
	if root != 0 {
		return DiskAt(root, DiskRoot, 0, path)
	}
	return At(fs.AtCWD, path)
}

// Mounted is the place a walk goes on at when it reaches mount m's
// mount point on a disk with rest still to walk: namei.Walk makes it
// Root(m, rest). A disk's walk returns it with ErrMoved.
func Mounted(m int32, rest []byte) Place {
	for len(rest) > 0 && rest[0] == '/' {
		rest = rest[1:]
	}
	return Place{M: m, D: fs.AtCWD, R: share.Ref{H: -1}, Depth: crossing, Path: rest}
}

// crossing marks a Mounted place.
const crossing = -2

// DiskAt is path from directory ino of disk mount m, depth names below
// its root.
func DiskAt(m int32, ino uint32, depth int, path []byte) Place {
	return Place{M: m, D: fs.AtCWD, R: share.Ref{H: -1}, Ino: ino, Depth: depth, Path: path}
}

// Root is path from mount m's root.
func Root[E Env](m int32, path []byte) Place {
	pl := Place{M: m, D: fs.AtCWD, R: share.Ref{H: -1}, Depth: -1, Path: path}
	switch {
	case Kind(m) == Mem:
		d := fs.AtCWD
		if m >= MountDev {
			d = fs.AtIno(binds[m-MountDev])
		}
		return At(d, path)
	case m == MountProc:
		pl.Node = procfs.ProcRoot
	case m == MountSys:
		pl.Node = procfs.SysRoot
	case Kind(m) == Disk:
		pl.Ino, pl.Depth = DiskRoot, 0
	default:
		var env E
		pl.R = share.Ref{Dev: env.ShareDev(m), From: virtio9p.Root, Rel: path, H: -1}
		pl.Depth = 0
	}
	return pl
}

// Walk runs op on the file dirfd and path name, crossing mounts as the
// walk reaches them.
func Walk[E Env](dirfd int, upath []byte, op int, args *Args) (uintptr, abi.Errno) {
	var env E
	a, path := noEscapeP(args), noEscape(upath)
	pl, e := env.Start(dirfd, path)
	if e != 0 {
		return 0, e
	}
	var bufs [2][fs.PathMax]byte // what is left of the path, alternately
	flags := unix.AT_SYMLINK_NOFOLLOW
	if Follows(op, a.Flags) {
		flags = 0
	}
	for hops := 0; ; hops++ {
		b := noEscape(bufs[hops%2][:])
		var r uintptr
		var next Place
		switch Kind(pl.M) {
		case Mem:
			r, e = env.Mem(op, noEscapeP(&pl), a)
			if e != abi.Errno(fs.ECross) {
				break
			}
			m, n, ce := env.Cross(pl.D, pl.Path, flags, b)
			if e = abi.Errno(ce); ce == 0 {
				switch m {
				case 0:
					e = abi.ENOENT // the mount point went since the call (not done: unmounts)
				case fs.MountUp:
					next, e = Abs(b[:n]), ErrMoved
				default:
					next, e = Root[E](m, b[:n]), ErrMoved
				}
			}
		case Share:
			if rest, up := Climb(pl.R.Rel, pl.Depth); up {
				next, e = Up(pl.M, rest), ErrMoved
				break
			}
			pl.R.Link = b
			r, e = env.Share(op, noEscapeP(&pl), a)
			if e == ErrMoved {
				next = Abs(b[:pl.R.LinkLen])
			}
		case Proc:
			next, r, e = env.Proc(op, noEscapeP(&pl), a, b)
		case Disk:
			if rest, up := Climb(pl.Path, pl.Depth); up && pl.M != root {
				next, e = Up(pl.M, rest), ErrMoved
				break
			}
			next, r, e = env.Disk(op, noEscapeP(&pl), a, b)
		}
		env.Done(noEscapeP(&pl))
		if e != ErrMoved {
			return r, e
		}
		if hops == fs.MaxSymlinks {
			env.Done(noEscapeP(&next))
			return 0, abi.Errno(unix.ELOOP)
		}
		pl = resolve[E](next)
	}
}

// resolve is pl, or where a Mounted place goes on.
func resolve[E Env](pl Place) Place {
	if pl.Depth == crossing {
		return Root[E](pl.M, pl.Path)
	}
	return pl
}

// Where resolves dirfd and path to the place of the file system that
// holds its last name (rename, link: both must be on one mount), without
// following a last link; the place has references Done drops, and its
// path may lie in bufs.
func Where[E Env](dirfd int, upath []byte, bufs *[2][fs.PathMax]byte) (Place, abi.Errno) {
	var env E
	pl, e := env.Start(dirfd, noEscape(upath))
	for hops := 0; e == 0; hops++ {
		b := noEscape(bufs[hops%2][:])
		var next Place
		switch Kind(pl.M) {
		case Mem:
			m, n, ce := env.Cross(pl.D, pl.Path, unix.AT_SYMLINK_NOFOLLOW, b)
			if ce != 0 || m == 0 {
				return pl, abi.Errno(ce) // pl stays: here
			}
			if m == fs.MountUp {
				next = Abs(b[:n])
			} else {
				next = Root[E](m, b[:n])
			}
		case Share:
			rest, up := Climb(pl.R.Rel, pl.Depth)
			if !up {
				return pl, 0
			}
			next = Up(pl.M, rest)
		case Proc:
			return pl, 0
		case Disk:
			if rest, up := Climb(pl.Path, pl.Depth); up && pl.M != root {
				next = Up(pl.M, rest)
				break
			}
			n, ok := env.DiskPoint(noEscapeP(&pl), b)
			if !ok {
				return pl, 0
			}
			next = resolve[E](n) // a mount point or a link on the way
		}
		env.Done(noEscapeP(&pl))
		if hops == fs.MaxSymlinks {
			env.Done(noEscapeP(&next))
			return next, abi.Errno(unix.ELOOP)
		}
		pl = next
	}
	return pl, e
}

// Climb says whether path, walked from depth names below a mounted root
// (-1: unknown, never), climbs above it with "..", and what is left after
// the ".." that does.
func Climb(path []byte, depth int) ([]byte, bool) {
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

// noEscape is b, hidden from escape analysis: the Env's methods, called
// through the type parameter's dictionary, never keep what they are
// given, which the compiler cannot see.
func noEscape(b []byte) []byte {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), len(b))
}

// noEscapeP is noEscape for a pointer.
func noEscapeP[T any](p *T) *T {
	x := uintptr(unsafe.Pointer(p))
	return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&x)))
}
