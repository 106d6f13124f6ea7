package fs

import "golang.org/x/sys/unix"

// Path resolution, as Linux's namei: components separated by one or more
// slashes, "." and "..", symbolic links followed with at most MaxSymlinks
// in one resolution (ELOOP), components up to NameMax bytes and paths
// shorter than PathMax (ENAMETOOLONG), a component looked up in a
// non-directory is ENOTDIR.

// What the last component of a path is.
const (
	lastNorm = iota
	lastDot
	lastDotDot
	lastRoot // the path is "/" (or slashes)
)

// How the last component is treated if it is a symbolic link.
const (
	noFollow    = iota // never followed (unlink, rmdir, rename, mkdir, symlink)
	follow             // always followed (open, stat, chdir, truncate)
	slashFollow        // followed only with a trailing slash (lstat, O_NOFOLLOW)

	slashOK = 8 // with one of those: a trailing slash after a last component is the caller's to refuse
)

type walkResult struct {
	dir   int32  // the directory holding the last component
	ino   int32  // the inode the path names, -1 if the last component does not exist
	ent   int32  // its directory entry: ino, or a hard link to it
	name  []byte // the last component (nil for lastRoot)
	kind  int
	slash bool // a slash followed the last component
}

// start is the directory a path is resolved from.
func (f *FS[E]) start(dir int, path []byte) (int32, Errno) {
	if len(path) > 0 && path[0] == '/' {
		return f.root, 0
	}
	if dir == AtCWD {
		return f.cwd, 0
	}
	if dir <= atIno {
		ino := int32(atIno - dir)
		if ino < 0 || ino >= NumInodes || !isDir(f.inodes[ino].mode) {
			return -1, unix.ENOTDIR
		}
		return ino, 0
	}
	fl := f.file(dir)
	if fl == nil {
		return -1, unix.EBADF
	}
	if fl.kind != kindInode || !isDir(f.inodes[fl.obj].mode) {
		return -1, unix.ENOTDIR
	}
	return fl.obj, 0
}

// lookup finds name in directory dir, -1 if absent.
func (f *FS[E]) lookup(dir int32, name []byte) int32 {
	for c := f.inodes[dir].head; c >= 0; c = f.inodes[c].next {
		if string(f.inodes[c].nameBytes()) == string(name) {
			return c
		}
	}
	return -1
}

// linkTarget is the target of symbolic link ip.
func (f *FS[E]) linkTarget(ip *inode) []byte {
	if ip.direct[0] == 0 {
		return nil
	}
	return mem(ip.direct[0], int(ip.size))
}

// walk resolves path from dir (a handle or AtCWD).
//
// The result is returned by value: storing its slice through a pointer
// would need a write barrier.
func (f *FS[E]) walk(dir int, path []byte, mode int) (r walkResult, err Errno) {
	r, _, _, err = f.walkTo(dir, path, mode, nil)
	return r, err
}

// walkTo is walk; at a mount point it stops with ECross, the mount, and
// the path still to resolve written into rest (see Cross) and its length.
func (f *FS[E]) walkTo(dir int, path []byte, mode int, rest []byte) (r walkResult, mount int32, rn int, err Errno) {
	if len(path) == 0 {
		return r, 0, 0, unix.ENOENT
	}
	if len(path) >= PathMax {
		return r, 0, 0, unix.ENAMETOOLONG
	}
	noSlashCheck := mode&slashOK != 0
	mode &^= slashOK
	cur, e := f.start(dir, path)
	if e != 0 {
		return r, 0, 0, e
	}
	// The path still to resolve: pieces, the top one first (a link's
	// target is pushed over the rest of the path that named it).
	var stack [MaxSymlinks + 1][]byte
	stack[0] = path
	n, links := 1, 0
	r = walkResult{dir: cur, ino: cur, ent: cur, kind: lastRoot}
	for {
		var comp []byte
		for n > 0 {
			p := stack[n-1]
			i := 0
			for i < len(p) && p[i] == '/' {
				i++
			}
			if i == len(p) {
				n--
				continue
			}
			j := i
			for j < len(p) && p[j] != '/' {
				j++
			}
			comp, stack[n-1] = p[i:j], p[j:]
			break
		}
		if comp == nil {
			// Only slashes were left: the path names cur itself
			// ("/", or a link to "/").
			r.dir, r.ino, r.ent, r.name, r.kind = cur, cur, cur, nil, lastRoot
			if cur != f.root {
				r.kind = lastDot
			}
			return r, 0, 0, 0
		}
		last, slash := true, false
		for k := 0; k < n; k++ {
			for _, c := range stack[k] {
				if c != '/' {
					last = false
					break
				}
			}
			if len(stack[k]) > 0 {
				slash = true
			}
		}
		if len(comp) > NameMax {
			return r, 0, 0, unix.ENAMETOOLONG
		}
		d := &f.inodes[cur]
		if !isDir(d.mode) {
			return r, 0, 0, unix.ENOTDIR
		}
		next, kind := int32(-1), lastNorm
		switch string(comp) {
		case ".":
			next, kind = cur, lastDot
		case "..":
			kind = lastDotDot
			next = d.parent
			if cur == f.root {
				next = cur
			}
			if next < 0 {
				return r, 0, 0, unix.ENOENT // a removed directory
			}
		}
		ent := next
		if kind == lastNorm {
			if ent = f.lookup(cur, comp); ent >= 0 {
				next = f.inodeOf(ent)
			}
		}
		// leave: the walk goes on elsewhere (mount) with what is left.
		leave := func(mount int32) (walkResult, int32, int, Errno) {
			for k := n - 1; k >= 0 && rest != nil; k-- {
				p := stack[k]
				if rn == 0 {
					for len(p) > 0 && p[0] == '/' {
						p = p[1:]
					}
				}
				if rn+len(p) > len(rest) {
					return r, 0, 0, unix.ENAMETOOLONG
				}
				rn += copy(rest[rn:], p)
			}
			return r, mount, rn, ECross
		}
		if next >= 0 && f.inodes[next].mount != 0 && kind == lastNorm {
			// Another file system is mounted here: the caller goes on
			// there with what is left (the mounted root stands for
			// next, so a last link is the mounted root's business).
			return leave(f.inodes[next].mount)
		}
		if kind == lastDotDot && next == f.root && f.hidden {
			return leave(MountUp) // "..": back on the disk that is the root
		}
		if last {
			r.slash = r.slash || slash
			r.dir, r.name, r.kind, r.ino, r.ent = cur, comp, kind, next, ent
			if noSlashCheck && r.slash && kind == lastNorm {
				return r, 0, 0, 0 // open(O_CREAT) fails with EISDIR without looking further
			}
			if next < 0 {
				if d.nlink == 0 {
					return r, 0, 0, unix.ENOENT // a removed directory
				}
				return r, 0, 0, 0
			}
			followLink := isLink(f.inodes[next].mode) && (mode == follow || mode == slashFollow && r.slash)
			if !followLink {
				if r.slash && mode != noFollow && !noSlashCheck && !isDir(f.inodes[next].mode) {
					return r, 0, 0, unix.ENOTDIR
				}
				return r, 0, 0, 0
			}
		} else if next < 0 {
			return r, 0, 0, unix.ENOENT
		} else if !isLink(f.inodes[next].mode) {
			cur = next
			continue
		}
		// next is a symbolic link to follow: its target goes on top of
		// the rest of the path.
		if links++; links > MaxSymlinks || n == len(stack) {
			return r, 0, 0, unix.ELOOP
		}
		t := f.linkTarget(&f.inodes[next])
		stack[n] = t
		n++
		if len(t) > 0 && t[0] == '/' {
			if f.hidden {
				return leave(MountUp) // from the root, which is a disk's
			}
			cur = f.root
		}
	}
}

// walkExisting is walk for a path that must name something: ENOENT if its
// last component does not exist.
func (f *FS[E]) walkExisting(dir int, path []byte, mode int) (walkResult, Errno) {
	r, e := f.walk(dir, path, mode)
	if e == 0 && r.ino < 0 {
		e = unix.ENOENT
	}
	return r, e
}

// walkAt is walkExisting for the calls whose one flag is
// AT_SYMLINK_NOFOLLOW (chmod, chown, utimensat); any other flag is EINVAL.
func (f *FS[E]) walkAt(dir int, path []byte, flags int) (walkResult, Errno) {
	if flags&^unix.AT_SYMLINK_NOFOLLOW != 0 {
		return walkResult{}, unix.EINVAL
	}
	return f.walkExisting(dir, path, followMode(flags))
}

// followMode is the walk mode for *at flags: a symbolic link as the last
// component is followed unless AT_SYMLINK_NOFOLLOW is set (then only with
// a trailing slash).
func followMode(flags int) int {
	if flags&unix.AT_SYMLINK_NOFOLLOW != 0 {
		return slashFollow
	}
	return follow
}

// walkNew is walk for a path that names a new directory entry: EEXIST if
// it exists (or is ".", ".." or "/"), ENOENT if a slash follows its last
// component unless dirOK (mkdir), EROFS if its directory is read-only.
func (f *FS[E]) walkNew(dir int, path []byte, dirOK bool) (walkResult, Errno) {
	r, e := f.walk(dir, path, noFollow)
	switch {
	case e != 0:
	case r.kind != lastNorm || r.ino >= 0:
		e = unix.EEXIST
	case r.slash && !dirOK:
		e = unix.ENOENT
	case f.inodes[r.dir].ro:
		e = unix.EROFS
	}
	return r, e
}

// ECross is what a call on a path returns when the path leads onto
// another file system, mounted on one of this one's directories (Mount):
// the kernel's file layer asks Cross where to go on. It never reaches a
// program.
const ECross = Errno(0x10000)

// MountUp is the mount Cross gives when the walk leaves a hidden root
// (Hide): by ".." into it, or by a link's absolute target; the path
// still to resolve goes from the real root.
const MountUp = -1

// Hide makes the root directory one that paths walked by programs never
// reach (a disk is the root, and this file system's /dev and /tmp are
// mounted on it): ".." into it and absolute link targets leave with
// ECross and MountUp. Paths the kernel walks from it itself still work.
func (f *FS[E]) Hide() {
	f.env.Lock()
	f.hidden = true
	f.env.Unlock()
}

// AtIno names directory ino in place of a directory handle.
func AtIno(ino int32) int { return atIno - int(ino) }

// Cross resolves path from dir as a call with the given AT_ flags would
// (AT_SYMLINK_NOFOLLOW: a last symbolic link is not followed), and says
// where it leaves this file system: the mount (as Mount was given it) and
// the path still to resolve there from its root (no leading slash; empty
// for the root itself), written into rest; mount 0 if the path stays
// here.
func (f *FS[E]) Cross(dir int, path []byte, flags int, rest []byte) (mount int32, n int, e Errno) {
	f.env.Lock()
	_, mount, n, e = f.walkTo(dir, path, followMode(flags&unix.AT_SYMLINK_NOFOLLOW), rest)
	f.env.Unlock()
	if e != ECross {
		return 0, 0, e
	}
	return mount, n, 0
}

// Mount makes directory path a mount point of mount m (not 0): walks that
// reach it stop with ECross. It returns the directory holding it (AtIno
// names it), where ".." at the mounted root leads.
func (f *FS[E]) Mount(path []byte, m int32) (parent int32, e Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	r, e := f.walkExisting(AtCWD, path, noFollow)
	switch {
	case e != 0:
		return -1, e
	case r.kind != lastNorm || !isDir(f.inodes[r.ino].mode):
		return -1, unix.ENOTDIR
	}
	f.inodes[r.ino].mount = m
	return r.dir, 0
}
