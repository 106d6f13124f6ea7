package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/namei"
	"yolk/kernel/share"
)

// Path names walk one tree of mounts (kernel/namei, docs/vfs.md): the
// in-memory file system is the root, and the host shares, /proc and /sys
// are mounted on its directories (fs.Mount). nameienv is what the kernel
// gives namei's walk: where a call starts (pathStart) and each kind's
// operations — memPathOp (sys_path.go), sharePathOp (share.go), procPath
// (procfiles.go).

type nameienv struct{}

func (nameienv) Start(dirfd int, path []byte) (namei.Place, abi.Errno) { return pathStart(dirfd, path) }
func (nameienv) Mem(op int, pl *namei.Place, a *namei.Args) (uintptr, abi.Errno) {
	return memPathOp(op, pl, a)
}
func (nameienv) Share(op int, pl *namei.Place, a *namei.Args) (uintptr, abi.Errno) {
	return sharePathOp(op, pl, a)
}
func (nameienv) Proc(op int, pl *namei.Place, a *namei.Args, b []byte) (namei.Place, uintptr, abi.Errno) {
	return procPath(op, pl, a, b)
}
func (nameienv) Disk(op int, pl *namei.Place, a *namei.Args, b []byte) (namei.Place, uintptr, abi.Errno) {
	return dsk.Walk(op, pl, a, b)
}
func (nameienv) DiskPoint(pl *namei.Place, b []byte) (namei.Place, bool) {
	return dsk.DiskPoint(pl, b)
}
func (nameienv) Cross(d int, path []byte, flags int, rest []byte) (int32, int, fs.Errno) {
	return vfs.Cross(d, path, flags, rest)
}
func (nameienv) ShareDev(m int32) int { return shares.Mount(int(m - 1)).Dev }
func (nameienv) Done(pl *namei.Place) { placeDone(pl) }
func onPath(dirfd int, path []byte, op int, a *namei.Args) (uintptr, abi.Errno) {
	return namei.Walk[nameienv](dirfd, path, op, a)
}

// mountAt makes directory path of the root file system the mount point
// of mount m: the in-memory file system's, or with a disk as the root
// (yolk.root), that disk's (made if missing and the disk is writable) —
// except below the in-memory /dev and /tmp mounted on it (memPath).
func mountAt(path []byte, m int32) abi.Errno {
	if !memPath(path) {
		p, depth, e := dsk.MountPoint(path, m)
		if e == 0 {
			namei.SetDiskParent(m, p, depth)
		}
		return e
	}
	p, e := vfs.Mount(path, m)
	if e == 0 {
		namei.SetParent(m, p)
	}
	return abi.Errno(e)
}

// memPath reports whether absolute path p is the in-memory file
// system's: always while it is the root; with a disk as the root, below
// its /dev and /tmp.
func memPath(p []byte) bool {
	if _, on := namei.RootOnDisk(); !on {
		return true
	}
	for _, d := range [...][]byte{devDir[:4], tmpDir[:]} {
		if len(p) > len(d) && string(p[:len(d)]) == string(d) && p[len(d)] == '/' {
			return true
		}
	}
	return false
}

// pathStart is where a path call on dirfd and path starts: the root, the
// working directory (in memory, on a share or on /proc), or a directory
// descriptor of any kind.
func pathStart(dirfd int, path []byte) (pl namei.Place, e abi.Errno) {
	pl = namei.Place{R: share.Ref{H: -1}, Depth: -1, Path: path, D: fs.AtCWD}
	if len(path) > 0 && path[0] == '/' {
		return namei.Abs(path), 0
	}
	if int32(dirfd) == unix.AT_FDCWD {
		if procCwd.on {
			pl.M, pl.Node = procCwd.m, procCwd.node
			if len(path) == 0 {
				return pl, abi.ENOENT
			}
			return pl, 0
		}
		if dev, fid, depth, on := shares.Cwd(); on {
			if len(path) == 0 {
				return pl, abi.ENOENT // as every path: "" names nothing
			}
			pl.M, pl.Depth = shareMount(dev), depth
			pl.R = share.Ref{Dev: dev, From: fid, Rel: path, H: -1}
		} else if m, ino, depth, on := dsk.Cwd(); on {
			if len(path) == 0 {
				return pl, abi.ENOENT
			}
			return namei.DiskAt(m, ino, depth, path), 0
		}
		return pl, 0
	}
	return dirAt(dirfd, path) // the descriptor's kind says (fileOps.at)
}

// nowhere is a place that holds nothing: what a failed start returns (a
// caller may drop it).
func nowhere() namei.Place { return namei.Place{D: fs.AtCWD, R: share.Ref{H: -1}, Depth: -1} }

// placeDone drops pl's references.
func placeDone(pl *namei.Place) {
	fsPut(pl.D)
	pl.D = fs.AtCWD
	shares.Done(&pl.R)
	pl.R.H = -1
}

// shareMount is the mount ID of share device dev.
func shareMount(dev int) int32 { return int32(shares.MountIndex(dev) + 1) }
