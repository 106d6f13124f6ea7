package disk

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/ext4"
	"yolk/kernel/namei"
)

// The root on a disk (yolk.root=, docs/disks.md): the other file
// systems are mounted on directories of that disk — /proc, /sys, the
// in-memory file system's /dev and /tmp, the shares, the other disks. A
// walk that reaches one of them by name goes on at the mounted root
// (namei.Mounted); ".." at the mounted root comes back (namei.Up).

// maxPoints bounds the mount points on the root disk: /proc, /sys,
// /dev, /tmp, the shares and the other disks.
const maxPoints = 32

type points struct {
	on bool // a disk is the root
	m  int  // its mount index
	n  int  // entries in use
	at [maxPoints]struct {
		ino    uint32
		target int32
	}
}

// SetRoot makes disk mount i (mounted) the root: the working directory
// is its root now. At boot, before tasks run.
func (d *Disks[E]) SetRoot(i int) {
	d.points.on, d.points.m = true, i
	d.chdir(i, namei.DiskRoot, 0)
}

// pointAt is the mount whose mount point is directory ino of disk mount
// i, reached by name; 0 if none.
func (d *Disks[E]) pointAt(i int, ino uint32, name []byte) int32 {
	p := &d.points
	if !p.on || i != p.m || len(name) == 0 || isDot(name) || isDotDot(name) {
		return 0
	}
	for k := 0; k < p.n; k++ {
		if p.at[k].ino == ino {
			return p.at[k].target
		}
	}
	return 0
}

// pointNamed reports whether name in directory dir of mount mt (file
// system f, its lock held) is a mount point.
func (d *Disks[E]) pointNamed(mt int32, f *ext4.FS[E], dir uint32, name []byte) bool {
	if !d.points.on {
		return false
	}
	ino, e := lookup(f, dir, name)
	return e == 0 && d.pointAt(index(mt), ino, name) != 0
}

// MountPoint makes directory path (absolute) of the root disk the mount
// point of mount target, making the directories missing on the way (mode
// 0755) if the disk is writable. It returns the directory holding it and
// how many names that is below the root (where ".." at the mounted root
// goes). At boot, before tasks run: no lock is taken.
func (d *Disks[E]) MountPoint(path []byte, target int32) (parent uint32, depth int, e abi.Errno) {
	p := &d.points
	if !p.on {
		return 0, 0, abi.EINVAL
	}
	if p.n == maxPoints {
		return 0, 0, abi.Errno(unix.ENOSPC)
	}
	f := &d.m[p.m].fs
	dir := uint32(namei.DiskRoot)
	full := path
	for {
		name, rest := nextName(path)
		if len(name) == 0 {
			return 0, 0, abi.Errno(unix.EBUSY) // the root itself
		}
		if isDot(name) || isDotDot(name) || len(name) > ext4.NameMax {
			return 0, 0, abi.EINVAL
		}
		ino, le := f.Lookup(dir, name)
		if le == abi.ENOENT && !f.ReadOnly() {
			ino, le = f.Mkdir(dir, name, 0o755, 0, 0)
			if le == 0 {
				e0 := env[E]()
				e0.Print("yolk: root: made directory ")
				e0.PrintBytes(full[:len(full)-len(rest)])
				e0.Print(" (a mount point)\n")
			}
		}
		if le != 0 {
			return 0, 0, le
		}
		if st, se := f.Stat(ino); se != 0 || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return 0, 0, abi.Errno(unix.ENOTDIR)
		}
		if t := d.pointAt(p.m, ino, name); t != 0 {
			return 0, 0, abi.Errno(unix.EBUSY) // on another mount's point
		}
		if next, _ := nextName(rest); len(next) == 0 {
			p.at[p.n].ino, p.at[p.n].target = ino, target
			p.n++
			return dir, depth, 0
		}
		dir, path = ino, rest
		depth++
	}
}

// DiskPoint is, for namei.Where, where pl's path goes on before its
// last name: at a mount point on the way (namei.Mounted), or at a
// symbolic link's target (written into b with the rest of the path:
// namei.Abs for an absolute one, else from the link's directory), and
// true; false if the last name's directory is on this disk (or the
// lookup failed: the operation's own walk says why).
func (d *Disks[E]) DiskPoint(pl *namei.Place, b []byte) (namei.Place, bool) {
	i := index(pl.M)
	m := &d.m[i]
	if !m.on {
		return namei.Place{}, false
	}
	m.lock()
	defer m.mu.Unlock()
	return d.wherePath(pl, i, b)
}

// wherePath is DiskPoint under the mount's lock. (When the path stays,
// the operation walks it again, parent: pl's path, a slice, may not be
// stored through the pointer in kernel context — a write barrier.)
func (d *Disks[E]) wherePath(pl *namei.Place, i int, b []byte) (namei.Place, bool) {
	f := &d.m[i].fs
	dir, depth, path := pl.Ino, pl.Depth, pl.Path
	for len(path) > 0 && path[len(path)-1] == '/' {
		path = path[:len(path)-1]
	}
	for {
		name, rest := nextName(path)
		if len(rest) == 0 {
			return namei.Place{}, false
		}
		ino, e := lookup(f, dir, name)
		if e != 0 {
			return namei.Place{}, false // the operation's own walk says why
		}
		if t := d.pointAt(i, ino, name); t != 0 {
			return namei.Mounted(t, rest), true
		}
		st, e := f.Stat(ino)
		if e != 0 {
			return namei.Place{}, false
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			next, _, e := d.moved(pl.M, i, ino, dir, depth, rest, b)
			return next, e == namei.ErrMoved
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
