package disk

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/ext4"
	"yolk/kernel/namei"
)

// The working directory on a disk: its mount, inode and how many names
// it is below the mount's root (paths from it climb that far before
// namei takes them to the mount point's parent). getcwd finds its path
// by going up through ".." entries, as Linux's d_path goes up the
// dentries: a rename of a directory above it shows.

type cwd struct {
	on    bool
	m     int
	ino   uint32
	depth int
}

// Cwd is the working directory when it is on a disk (on): where paths
// relative to it start.
func (d *Disks[E]) Cwd() (mt int32, ino uint32, depth int, on bool) {
	c := d.cwd
	return namei.MountDisk + int32(c.m), c.ino, c.depth, c.on
}

// LeaveCwd forgets the working directory on a disk, if it is one.
func (d *Disks[E]) LeaveCwd() { d.cwd.on = false }

// chdir makes directory ino of mount i, depth names below its root, the
// working directory.
func (d *Disks[E]) chdir(i int, ino uint32, depth int) {
	env[E]().CwdEntered()
	d.cwd = cwd{on: true, m: i, ino: ino, depth: depth}
}

// finder is a Filler looking for the entry of one inode.
type finder struct {
	ino  uint64
	name [ext4.NameMax]byte
	n    int
}

func (f *finder) Fill(ino, next uint64, typ uint8, name []byte) bool {
	if ino != f.ino || len(name) == 1 && name[0] == '.' || len(name) == 2 && name[0] == '.' && name[1] == '.' {
		return true
	}
	f.n = copy(f.name[:], name)
	return false
}

// Getcwd is getcwd when the working directory is on a disk (false if it
// is not): the mount point's path and the names up from the root, with a
// NUL; ERANGE if b is too short, ENOENT if the directory was removed.
func (d *Disks[E]) Getcwd(b []byte) (int, abi.Errno, bool) {
	c := d.cwd
	if !c.on {
		return 0, 0, false
	}
	m := &d.m[c.m]
	m.lock()
	defer m.mu.Unlock()
	end := len(b) // the names are written backward from here
	ino := c.ino
	if st, e := m.fs.Stat(ino); e != 0 || st.Nlink == 0 {
		return 0, abi.ENOENT, true
	}
	var f finder
	for k := 0; k < c.depth && ino != namei.DiskRoot; k++ {
		up, e := m.fs.Lookup(ino, dotdot[:])
		if e != 0 {
			return 0, e, true
		}
		f = finder{ino: uint64(ino)}
		if _, e := ext4.Readdir(&m.fs, up, 0, noEscapeP(&f)); e != 0 || f.n == 0 {
			return 0, abi.ENOENT, true
		}
		if end < f.n+1 {
			return 0, abi.Errno(unix.ERANGE), true
		}
		end -= f.n
		copy(b[end:], f.name[:f.n])
		end--
		b[end] = '/'
		ino = up
	}
	point := env[E]().Point(c.m)
	if len(point) == 1 {
		point = nil // "/": the disk is the root
	}
	n := len(point) + len(b) - end
	if n+1 > len(b) {
		return 0, abi.Errno(unix.ERANGE), true
	}
	k := copy(b, b[end:]) // the names to the front, then the mount point before them
	copy(b[len(point):], b[:k])
	copy(b, point)
	if n == 0 {
		b[0], n = '/', 1
	}
	b[n] = 0
	return n + 1, 0, true
}

var dotdot = [...]byte{'.', '.'}
