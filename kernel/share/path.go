package share

import (
	"golang.org/x/sys/unix"

	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/kernel/fs"
)

// The path operations on a share: the kernel's path walk (pathwalk.go)
// stands on a share with a Ref and calls these (its sharePathOp), and
// the working directory when it is on a share.

// Ref is where a path call's path lies on a share: the device, the fid
// to walk from and the path to walk; H is the open file whose fid From
// is, with a reference (-1: none), released by Done. A last symbolic
// link whose target is absolute leaves the share: the walk puts the
// target in Link (LinkLen bytes) and says ErrLinkOut.
type Ref struct {
	Dev     int
	From    virtio9p.Fid
	Rel     []byte
	H       int
	Link    []byte
	LinkLen int
}

// ErrLinkOut: the walk leaves the share (a last symbolic link with an
// absolute target, in the Ref's Link). Never returned to a program.
const ErrLinkOut = abi.Errno(0x10001)

// Done drops r's reference.
func (s *Shares[E]) Done(r *Ref) {
	if r.H >= 0 {
		s.Put(r.H)
	}
}

// splitName splits a path into its directory part and its last name
// (trailing slashes dropped).
func splitName(p []byte) (dir, name []byte) {
	for len(p) > 0 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	i := len(p)
	for i > 0 && p[i-1] != '/' {
		i--
	}
	return p[:i], p[i:]
}

// walkParent walks r to the directory holding its last name and returns
// its fid and the name. A single name's directory is r.From itself
// unless clone asks for a fid of the caller's own (Lcreate turns it into
// the new file); the caller clunks the fid if it is not r.From
// (dropParent).
func (s *Shares[E]) walkParent(r *Ref, clone bool) (virtio9p.Fid, []byte, abi.Errno) {
	dir, name := splitName(r.Rel)
	if len(name) == 0 || len(name) == 1 && name[0] == '.' || len(name) == 2 && name[0] == '.' && name[1] == '.' {
		return virtio9p.NoFid, nil, abi.Errno(unix.EBUSY) // the share's root, the working directory or its parent
	}
	if len(dir) == 0 && !clone {
		return r.From, name, 0
	}
	f, _, e := s.c(r.Dev).Walk(r.From, dir)
	return f, name, abi.Errno(e)
}

// dropParent clunks walkParent's fid unless it is r.From.
func (s *Shares[E]) dropParent(r *Ref, f virtio9p.Fid) {
	if f != r.From {
		s.c(r.Dev).Clunk(f)
	}
}

// maxFollow is how many symbolic links one lookup follows (Linux's
// MAXSYMLINKS is 40; 8 is what a path needs in practice).
const maxFollow = 8

// walk walks r's path to a new fid; with follow, a symbolic link at its
// end is followed (as stat and open do): a relative target from the
// link's directory, an absolute one by the kernel's walk, from the root
// of the tree (ErrLinkOut). Links inside the path are not followed (the
// server refuses them: ELOOP or ENOTDIR).
func (s *Shares[E]) walk(r *Ref, follow bool) (virtio9p.Fid, virtio9p.Qid, abi.Errno) {
	c := s.c(r.Dev)
	from, rel := r.From, r.Rel
	var bufs [2][1024]byte
	for i := 0; ; i++ {
		f, q, e := c.Walk(from, rel)
		if e != 0 || !follow || q.Type&virtio9p.QTSymlink == 0 {
			return f, q, abi.Errno(e)
		}
		if i == maxFollow {
			c.Clunk(f)
			return virtio9p.NoFid, q, abi.Errno(unix.ELOOP)
		}
		// The new path: the link's directory, then its target.
		b := &bufs[i%2]
		dir, _ := splitName(rel)
		k := copy(b[:], dir)
		if k == len(dir) && k < len(b) && k > 0 && b[k-1] != '/' {
			b[k] = '/'
			k++
		}
		n, le := c.Readlink(f, b[k:])
		c.Clunk(f)
		if le != 0 {
			return virtio9p.NoFid, q, abi.Errno(le)
		}
		if k+n >= len(b) {
			return virtio9p.NoFid, q, abi.Errno(unix.ENAMETOOLONG)
		}
		if n > 0 && b[k] == '/' {
			if n > len(r.Link) {
				return virtio9p.NoFid, q, abi.Errno(unix.ENAMETOOLONG)
			}
			r.LinkLen = copy(r.Link, b[k:k+n])
			return virtio9p.NoFid, q, ErrLinkOut // the kernel's walk goes on from the root
		}
		rel = b[:k+n]
	}
}

// Open is openat on a share: the new descriptor.
func (s *Shares[E]) Open(r *Ref, flags int, mode uint32) (uintptr, abi.Errno) {
	fd, e := s.open(r, flags, mode)
	if e == 0 {
		s.dirRemember(int(fd), r)
	}
	return fd, e
}

func (s *Shares[E]) open(r *Ref, flags int, mode uint32) (uintptr, abi.Errno) {
	c := s.c(r.Dev)
	acc := flags & unix.O_ACCMODE
	lflags := uint32(acc | flags&(unix.O_TRUNC|unix.O_APPEND))
	follow := flags&unix.O_NOFOLLOW == 0
	excl := flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL
	var f virtio9p.Fid
	var q virtio9p.Qid
	e := abi.Errno(unix.ENOENT)
	if !excl {
		f, q, e = s.walk(r, follow)
	}
	if e == abi.Errno(unix.ENOENT) && flags&unix.O_CREAT != 0 {
		dir, name, pe := s.walkParent(r, true)
		if pe != 0 {
			if pe == abi.Errno(unix.EBUSY) {
				pe = abi.Errno(unix.EISDIR)
			}
			return 0, pe
		}
		cq, ce := c.Lcreate(dir, name, lflags|unix.O_EXCL, mode&^env[E]().Umask()&0o7777)
		if ce == 0 {
			return s.install(r.Dev, dir, flags, false, cq.Path)
		}
		c.Clunk(dir)
		e = abi.Errno(ce)
		if ce == virtio9p.Errno(unix.EEXIST) && !excl {
			f, q, e = s.walk(r, follow) // created by another since the walk above
		}
	}
	if e != 0 {
		return 0, e
	}
	isDir := q.Type&virtio9p.QTDir != 0
	var ve virtio9p.Errno
	if len(r.Rel) == 0 || q == (virtio9p.Qid{}) {
		var a virtio9p.Attr
		if ve = c.Getattr(f, &a); ve != 0 {
			c.Clunk(f)
			return 0, abi.Errno(ve)
		}
		isDir = a.Mode&unix.S_IFMT == unix.S_IFDIR
		q.Path = a.Qid.Path
	}
	switch {
	case flags&unix.O_DIRECTORY != 0 && !isDir:
		ve = virtio9p.Errno(unix.ENOTDIR)
	case isDir && (acc != unix.O_RDONLY || flags&unix.O_CREAT != 0):
		ve = virtio9p.Errno(unix.EISDIR)
	case q.Type&virtio9p.QTSymlink != 0:
		ve = virtio9p.Errno(unix.ELOOP) // O_NOFOLLOW on a link, as Linux
	default:
		if isDir {
			lflags = 0
		}
		if lflags&unix.O_TRUNC == 0 {
			_, ve = c.Lopen(f, lflags)
			break
		}
		// A truncation: under the sizes lock with its record (sizes.go).
		en := env[E]()
		en.LockSizes()
		_, ve = c.Lopen(f, lflags)
		cut := ve == 0 && s.resized(int32(r.Dev), q.Path, 0, true)
		en.UnlockSizes()
		if cut {
			s.cut(int32(r.Dev), q.Path, 0)
		}
	}
	if ve != 0 {
		c.Clunk(f)
		return 0, abi.Errno(ve)
	}
	return s.install(r.Dev, f, flags, isDir, q.Path)
}

// setattr sets attributes of r's file, following a symbolic link at its
// end with follow.
func (s *Shares[E]) setattr(r *Ref, a *virtio9p.SetAttr, follow bool) abi.Errno {
	c := s.c(r.Dev)
	fid, q, e := s.walk(r, follow)
	if e == 0 {
		if a.Valid&virtio9p.SetSize != 0 {
			e = s.setSize(int32(r.Dev), fid, q.Path, a)
		} else {
			e = abi.Errno(c.Setattr(fid, a))
		}
		c.Clunk(fid)
	}
	return e
}

// Truncate is truncate(2) of r's file.
func (s *Shares[E]) Truncate(r *Ref, size int64) abi.Errno {
	if size < 0 {
		return abi.EINVAL
	}
	return s.setattr(r, &virtio9p.SetAttr{Valid: virtio9p.SetSize, Size: uint64(size)}, true)
}

// Chmod, Chown and Utimes change r's file, following a last symbolic
// link with follow; Utimes's times are each fs.UtimeNow, fs.UtimeOmit or
// nanoseconds.
func (s *Shares[E]) Chmod(r *Ref, mode uint32, follow bool) abi.Errno {
	return s.setattr(r, &virtio9p.SetAttr{Valid: virtio9p.SetMode, Mode: mode & 0o7777}, follow)
}

func (s *Shares[E]) Chown(r *Ref, uid, gid int, follow bool) abi.Errno {
	return s.setattr(r, owner(uid, gid), follow)
}

func (s *Shares[E]) Utimes(r *Ref, times [2]int64, follow bool) abi.Errno {
	t := setTimes(times)
	return s.setattr(r, &t, follow)
}

// Stat is newfstatat on a share.
func (s *Shares[E]) Stat(r *Ref, st *unix.Stat_t, follow bool) abi.Errno {
	fid, _, e := s.walk(r, follow)
	if e != 0 {
		return e
	}
	se := s.stat(r.Dev, fid, st)
	s.c(r.Dev).Clunk(fid)
	return se
}

// Statfs is statfs of r's path on a share.
func (s *Shares[E]) Statfs(r *Ref, st *unix.Statfs_t) abi.Errno {
	fid, _, e := s.walk(r, true)
	if e != 0 {
		return e
	}
	se := s.statfs(r.Dev, fid, st)
	s.c(r.Dev).Clunk(fid)
	return se
}

// parentOp runs op on r's parent directory and last name.
func (s *Shares[E]) parentOp(r *Ref, op func(c *virtio9p.Client[E], dir virtio9p.Fid, name []byte) virtio9p.Errno) abi.Errno {
	dir, name, e := s.walkParent(r, false)
	if e != 0 {
		return e
	}
	ce := op(s.c(r.Dev), dir, name)
	s.dropParent(r, dir)
	return abi.Errno(ce)
}

// Mkdir is mkdirat on a share.
func (s *Shares[E]) Mkdir(r *Ref, mode uint32) abi.Errno {
	mode = mode &^ env[E]().Umask() & 0o7777
	e := s.parentOp(r, func(c *virtio9p.Client[E], dir virtio9p.Fid, name []byte) virtio9p.Errno {
		return c.Mkdir(dir, name, mode)
	})
	if e == abi.Errno(unix.EBUSY) {
		e = abi.Errno(unix.EEXIST)
	}
	return e
}

// Unlink is unlinkat on a share (flags: AT_REMOVEDIR).
func (s *Shares[E]) Unlink(r *Ref, flags int) abi.Errno {
	if flags&^unix.AT_REMOVEDIR != 0 {
		return abi.EINVAL
	}
	if len(r.Rel) == 0 && r.From == virtio9p.Root {
		return abi.Errno(unix.EBUSY) // the mount point
	}
	if _, name := splitName(r.Rel); flags&unix.AT_REMOVEDIR == 0 && len(name) < len(r.Rel) && r.Rel[len(r.Rel)-1] == '/' {
		return abi.Errno(unix.ENOTDIR) // unlink("file/"), as Linux: EISDIR for a directory comes from the host
	}
	e := s.parentOp(r, func(c *virtio9p.Client[E], dir virtio9p.Fid, name []byte) virtio9p.Errno {
		return c.Unlinkat(dir, name, uint32(flags&unix.AT_REMOVEDIR))
	})
	if e == abi.Errno(unix.EBUSY) && flags&unix.AT_REMOVEDIR != 0 {
		e = abi.EINVAL // rmdir(".")
	}
	return e
}

// Symlink is symlinkat on a share: r's name becomes a link to target.
func (s *Shares[E]) Symlink(r *Ref, target []byte) abi.Errno {
	e := s.parentOp(r, func(c *virtio9p.Client[E], dir virtio9p.Fid, name []byte) virtio9p.Errno {
		return c.Symlink(dir, name, target)
	})
	if e == abi.Errno(unix.EBUSY) {
		e = abi.Errno(unix.EEXIST)
	}
	return e
}

// Rename is renameat2 with both names on one share.
func (s *Shares[E]) Rename(o, n *Ref, flags int) abi.Errno {
	if flags != 0 {
		return abi.EINVAL
	}
	od, oname, e := s.walkParent(o, false)
	if e != 0 {
		return e
	}
	nd, nname, e := s.walkParent(n, false)
	if e == 0 {
		e = abi.Errno(s.c(o.Dev).Renameat(od, oname, nd, nname))
		s.dropParent(n, nd)
	}
	s.dropParent(o, od)
	return e
}

// Link is linkat with both names on one share.
func (s *Shares[E]) Link(o, n *Ref) abi.Errno {
	c := s.c(o.Dev)
	f, _, fe := c.Walk(o.From, o.Rel)
	if fe != 0 {
		return abi.Errno(fe)
	}
	e := s.parentOp(n, func(c *virtio9p.Client[E], dir virtio9p.Fid, name []byte) virtio9p.Errno {
		return c.Link(dir, f, name)
	})
	c.Clunk(f)
	return e
}

// Readlink is readlinkat on a share: the target's length in b.
func (s *Shares[E]) Readlink(r *Ref, b []byte) (uintptr, abi.Errno) {
	c := s.c(r.Dev)
	f, q, e := c.Walk(r.From, r.Rel)
	if e != 0 {
		return 0, abi.Errno(e)
	}
	n := 0
	if q.Type&virtio9p.QTSymlink == 0 {
		e = virtio9p.Errno(unix.EINVAL)
	} else {
		n, e = c.Readlink(f, b)
	}
	c.Clunk(f)
	return uintptr(n), abi.Errno(e)
}

// setTimes is utimensat's change: each time fs.UtimeNow, fs.UtimeOmit
// or nanoseconds.
func setTimes(t [2]int64) virtio9p.SetAttr {
	a := virtio9p.SetAttr{}
	for i, v := range t {
		if v == fs.UtimeOmit {
			continue
		}
		sec, nsec, valid := &a.Atime, &a.AtimeNs, uint32(virtio9p.SetAtime)
		if i == 1 {
			sec, nsec, valid = &a.Mtime, &a.MtimeNs, virtio9p.SetMtime
		}
		a.Valid |= valid
		if v != fs.UtimeNow {
			a.Valid |= valid << 3 // SetAtimeSet, SetMtimeSet
			*sec, *nsec = uint64(v/1e9), uint64(v%1e9)
		}
	}
	return a
}
