package procfs

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// The tree served as files, what the kernel's /proc and /sys mounts do
// with it: the walk of a path within the tree (Walk), opening a node
// (Open), its stat and statfs (Stat, Statfs), a read of its rendering at
// an offset (Read), a directory's entries as getdents64 records
// (Getdents) and seeking (Seek). The kernel keeps the open files, the
// lock and the snapshot; these are given them.

// Filler fills the parts of s a node needs (Needs) that are not yet
// there: the kernel's fill. A walk fills as it goes, as each directory's
// entries need their part (/proc/<pid>: the threads; fd/: the
// descriptors).
type Filler interface {
	Fill(s *Snapshot, parts Part)
}

// MaxSymlinks bounds the symbolic links one walk follows (Linux's 40,
// kernel/fs's MaxSymlinks).
const MaxSymlinks = 40

// Where a walk ended (Walk).
const (
	WalkIn   = iota // at a node of the tree
	WalkUp          // ".." at a root: the rest of the path goes on from the mount point's parent
	WalkLink        // a link to an absolute path: its target and the rest
)

// Split splits path's first name (none: empty) from the rest, skipping
// slashes and ".".
func Split(path []byte) (name, rest []byte) {
	for {
		for len(path) > 0 && path[0] == '/' {
			path = path[1:]
		}
		i := 0
		for i < len(path) && path[i] != '/' {
			i++
		}
		name, path = path[:i], path[i:]
		if len(name) != 1 || name[0] != '.' {
			return name, path
		}
	}
}

// Walk walks path from directory n, filling (f) what each directory's
// entries need; symbolic links inside the tree are followed (self,
// thread-self, net; the last name's only if follow). ".." at a root
// (WalkUp: the rest of the path) and a link to an absolute path
// (WalkLink: the target and the rest) leave the tree: what is left is
// written into b, its length returned.
func Walk[F Filler](f F, s *Snapshot, n Node, path []byte, follow bool, b []byte) (Node, int, int, abi.Errno) {
	var bufs [2][256]byte // a link's target and the rest of the path, alternately
	rest := path
	for links := 0; ; {
		var name []byte
		name, rest = Split(rest)
		if len(name) == 0 {
			return n, 0, WalkIn, 0
		}
		if string(name) == ".." {
			if n == ProcRoot || n == SysRoot {
				for len(rest) > 0 && rest[0] == '/' {
					rest = rest[1:]
				}
				return n, copy(b, rest), WalkUp, 0
			}
			n = Parent(n)
			continue
		}
		f.Fill(s, Needs(n))
		if Mode(n, s)&^0o7777 != ModeDir {
			return 0, 0, WalkIn, abi.Errno(unix.ENOTDIR)
		}
		c, ok := Lookup(n, name, s)
		if !ok {
			return 0, 0, WalkIn, abi.ENOENT
		}
		if next, _ := Split(rest); Mode(c, s)&^0o7777 != ModeLink || len(next) == 0 && !follow {
			n = c
			continue
		}
		if links++; links > MaxSymlinks {
			return 0, 0, WalkIn, abi.Errno(unix.ELOOP)
		}
		f.Fill(s, Needs(c))
		t := &bufs[links%2]
		k, ok := Readlink(c, s, t[:])
		if !ok || k == 0 {
			return 0, 0, WalkIn, abi.ENOENT // exe without a path
		}
		if t[0] == '/' {
			if k+len(rest) > len(b) {
				return 0, 0, WalkIn, abi.ENAMETOOLONG
			}
			copy(b, t[:k])
			return n, k + copy(b[k:], rest), WalkLink, 0
		}
		if k+1+len(rest) > len(t) {
			return 0, 0, WalkIn, abi.ENAMETOOLONG
		}
		t[k] = '/'
		rest = t[:k+1+copy(t[k+1:], rest)]
		n = Parent(c)
	}
}

// Open says whether a node of mode perm (Mode's) opens with flags:
// EEXIST for O_CREAT|O_EXCL, ELOOP for a link (O_NOFOLLOW), ENOTDIR for
// O_DIRECTORY on a file, EISDIR for a directory opened for writing.
// Files open for writing; a write is EINVAL.
func Open(perm uint32, flags int) abi.Errno {
	mode := perm &^ 0o7777
	acc := flags & unix.O_ACCMODE
	switch {
	case flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL:
		return abi.Errno(unix.EEXIST)
	case mode == ModeLink:
		return abi.Errno(unix.ELOOP) // O_NOFOLLOW on a link
	case flags&unix.O_DIRECTORY != 0 && mode != ModeDir:
		return abi.Errno(unix.ENOTDIR)
	case mode == ModeDir && acc != unix.O_RDONLY:
		return abi.Errno(unix.EISDIR)
	}
	return 0
}

// ReadCheck says whether an open file of a node of mode perm, opened
// with flags, may be read (write: written): EINVAL for a write (no file
// here takes one), EBADF if opened O_WRONLY, EISDIR for a directory.
func ReadCheck(perm uint32, flags int, write bool) abi.Errno {
	switch {
	case write:
		return abi.EINVAL
	case flags&unix.O_ACCMODE == unix.O_WRONLY:
		return abi.EBADF
	case perm&^0o7777 == ModeDir:
		return abi.Errno(unix.EISDIR)
	}
	return 0
}

// Stat fills st for node n of mode (Mode's) on device dev, its times all
// now (Unix nanoseconds), as Linux's proc and sysfs inodes.
func Stat(n Node, mode uint32, dev uint64, now int64, st *unix.Stat_t) {
	*st = unix.Stat_t{Dev: dev, Ino: Ino(n), Nlink: 1, Mode: mode, Blksize: 1024}
	if mode&^0o7777 == ModeDir {
		st.Nlink = 2
	}
	st.Atim.Sec, st.Atim.Nsec = now/1e9, now%1e9
	st.Mtim, st.Ctim = st.Atim, st.Atim
}

// Which file system of the three a node is on (FSOf): /proc, /sys, or
// the cgroup2 file system Linux mounts at /sys/fs/cgroup.
const (
	FSProc = iota
	FSSys
	FSCgroup
)

// FSOf is the file system node n is on.
func FSOf(n Node) int {
	for {
		switch n.entry() {
		case eCgroup:
			return FSCgroup
		case eSys:
			return FSSys
		case eProc:
			return FSProc
		}
		p := Parent(n)
		if p == n {
			return FSProc
		}
		n = p
	}
}

// Statfs fills st as Linux's statfs of node n's file system: proc's,
// sysfs's or cgroup2's magic number.
func Statfs(n Node, st *unix.Statfs_t) {
	magic := [...]int64{FSProc: 0x9fa0, FSSys: 0x62656572, FSCgroup: 0x63677270}[FSOf(n)]
	*st = unix.Statfs_t{Type: magic, Bsize: PageSize, Namelen: 255, Frsize: PageSize, Flags: 0x20 | 0x1000 | unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC}
}

// Read renders node n into out (filling what it needs first) and returns
// the text from off on, empty past its end: ESRCH if n's thread has gone,
// ENOENT if n is no file. As Linux's seq_file, every read renders the
// file anew.
func Read[F Filler](f F, s *Snapshot, n Node, out []byte, off int64) ([]byte, abi.Errno) {
	if !Valid(n, s) {
		f.Fill(s, Needs(n))
		if !Valid(n, s) {
			return nil, abi.Errno(unix.ESRCH) // its thread went
		}
	}
	f.Fill(s, Needs(n))
	k, ok := Render(n, s, out)
	if !ok {
		return nil, abi.ENOENT
	}
	text := out[:min(k, len(out))]
	if off >= int64(len(text)) {
		return text[:0], 0
	}
	return text[off:], 0
}

// Getdents writes directory dir's entries from index pos on into b as
// linux_dirent64 records, as many as fit; it returns their length and
// the index after the last (EINVAL: not even the first fits). s has what
// dir needs.
func Getdents(dir Node, s *Snapshot, pos int64, b []byte) (int, int64, abi.Errno) {
	var name [256]byte
	n := 0
	for {
		c, k, ok := ReadDir(dir, s, int(pos), name[:])
		if !ok {
			return n, pos, 0
		}
		reclen := (19 + k + 1 + 7) &^ 7
		if len(b)-n < reclen {
			if n == 0 {
				return 0, pos, abi.EINVAL
			}
			return n, pos, 0
		}
		rec := b[n : n+reclen]
		binary.LittleEndian.PutUint64(rec[0:], Ino(c))
		binary.LittleEndian.PutUint64(rec[8:], uint64(pos+1))
		binary.LittleEndian.PutUint16(rec[16:], uint16(reclen))
		rec[18] = unix.DT_REG
		switch Mode(c, s) &^ 0o7777 {
		case ModeDir:
			rec[18] = unix.DT_DIR
		case ModeLink:
			rec[18] = unix.DT_LNK
		}
		clear(rec[19+copy(rec[19:], name[:k]):])
		n += reclen
		pos++
	}
}

// NodeFD fills d for an open file of node n (of mount ID mnt, at offset
// off), as /proc/self/fd and fdinfo show it.
func NodeFD(s *Snapshot, d *FD, n Node, mnt int32, off int64) {
	var b [256]byte
	k := min(Path(n, s, b[:]), len(b))
	d.Kind, d.MntID, d.Ino, d.Pos, d.Path = FDFile, mnt, Ino(n), off, s.Put(b[:k])
}

// Seek is lseek's new offset from cur: SEEK_SET and SEEK_CUR only (the
// files have no size before they are rendered), EINVAL else or before 0.
func Seek(cur, off int64, whence int) (int64, abi.Errno) {
	switch whence {
	case unix.SEEK_CUR:
		off += cur
	case unix.SEEK_SET:
	default:
		return 0, abi.EINVAL
	}
	if off < 0 {
		return 0, abi.EINVAL
	}
	return off, 0
}
