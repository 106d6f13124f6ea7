package share

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/kernel/fs"
)

// The working directory when it is on a share, and the guest paths of
// open share directories (fchdir, getcwd and /proc's paths want a path;
// the server knows fids).

// cwd is the working directory when it is on a share: the device, a fid
// for it, its depth below the share's root and its guest path (getcwd).
// Read without a lock: a chdir racing a relative call on another thread
// may leave that call walking from the old directory.
type cwd struct {
	on    bool
	dev   int
	fid   virtio9p.Fid
	depth int
	path  [fs.PathMax]byte
	plen  int
}

// dirPath is the guest path of an open share directory, for fchdir,
// while slots last (a directory opened when all are taken has none).
// owner is the open file's index + 1, 0 when free, -1 while being
// written (atomic).
type dirPath struct {
	owner int32
	n     int
	p     [fs.PathMax]byte
}

// CwdOn reports whether the working directory is on a share.
func (s *Shares[E]) CwdOn() bool { return s.cwd.on }

// Cwd is the working directory when it is on a share (on): its device,
// its fid and how many names it is below the share's root.
func (s *Shares[E]) Cwd() (dev int, fid virtio9p.Fid, depth int, on bool) {
	return s.cwd.dev, s.cwd.fid, s.cwd.depth, s.cwd.on
}

// CwdPath is the working directory's guest path when it is on a share
// (read without its lock: a chdir meanwhile may leave a stale or mixed
// path, never a fault).
func (s *Shares[E]) CwdPath() []byte {
	return s.cwd.path[:min(max(s.cwd.plen, 0), len(s.cwd.path))]
}

// LeaveCwd forgets the share's working directory, if it is one: the
// in-memory file system's is the working directory again.
func (s *Shares[E]) LeaveCwd() {
	if !s.cwd.on {
		return
	}
	old := s.cwd.fid
	s.cwd.on = false
	s.c(s.cwd.dev).Clunk(old)
}

// Getcwd is getcwd when the working directory is on a share; false if
// it is not.
func (s *Shares[E]) Getcwd(b []byte) (int, abi.Errno, bool) {
	if !s.cwd.on {
		return 0, 0, false
	}
	n := s.cwd.plen
	if len(b) < n+1 {
		return 0, abi.Errno(unix.ERANGE), true
	}
	copy(b, s.cwd.path[:n])
	b[n] = 0
	return n + 1, 0, true
}

// dirRemember keeps the guest path of fd, just opened on a share by r's
// walk, if it is a directory whose path is known.
func (s *Shares[E]) dirRemember(fd int, r *Ref) {
	h := env[E]().Get(fd)
	if h < 0 {
		return
	}
	var np [fs.PathMax]byte
	if base := s.base(r, np[:]); s.files[h].Dir && base != nil {
		n := cleanJoin(np[:], len(base), r.Rel)
		for i := range s.dirPaths {
			d := &s.dirPaths[i]
			if n > 0 && atomic.CompareAndSwapInt32(&d.owner, 0, -1) {
				d.n = copy(d.p[:], np[:n])
				atomic.StoreInt32(&d.owner, int32(h)+1)
				break
			}
		}
	}
	s.Put(h)
}

// base is the guest path of the fid r's walk starts from (nil: not
// known), into b.
func (s *Shares[E]) base(r *Ref, b []byte) []byte {
	switch {
	case r.H >= 0:
		if n := s.DirPath(r.H, b); n >= 0 {
			return b[:n]
		}
		return nil
	case s.cwd.on && r.From == s.cwd.fid:
		return b[:copy(b, s.cwd.path[:s.cwd.plen])]
	}
	return b[:copy(b, s.mounts[s.MountIndex(r.Dev)].Path())]
}

// DirPath copies open file h's kept path into b and returns its length,
// -1 if it has none.
func (s *Shares[E]) DirPath(h int, b []byte) int {
	for i := range s.dirPaths {
		d := &s.dirPaths[i]
		if atomic.LoadInt32(&d.owner) == int32(h)+1 {
			return copy(b, d.p[:d.n])
		}
	}
	return -1
}

// dirForget frees open file h's path slot, if it has one.
func (s *Shares[E]) dirForget(h int) {
	for i := range s.dirPaths {
		atomic.CompareAndSwapInt32(&s.dirPaths[i].owner, int32(h)+1, 0)
	}
}

// Chdir makes r's file the working directory.
func (s *Shares[E]) Chdir(r *Ref) abi.Errno {
	c := s.c(r.Dev)
	f, _, we := s.walk(r, true)
	if we != 0 {
		return we
	}
	var a virtio9p.Attr
	fe := c.Getattr(f, &a)
	if fe == 0 && a.Mode&unix.S_IFMT != unix.S_IFDIR {
		fe = virtio9p.Errno(unix.ENOTDIR)
	}
	if fe != 0 {
		c.Clunk(f)
		return abi.Errno(fe)
	}
	// The new guest path: r's joined with its base's, cleaned.
	var np [fs.PathMax]byte
	base := s.base(r, np[:])
	if base == nil {
		c.Clunk(f)
		return abi.EINVAL // not done: a directory whose path is not kept
	}
	n := cleanJoin(np[:], len(base), r.Rel)
	if n < 0 {
		c.Clunk(f)
		return abi.Errno(unix.ENAMETOOLONG)
	}
	m := s.MountOf(np[:n])
	if m < 0 {
		c.Clunk(f)
		return abi.Errno(unix.EXDEV)
	}
	env[E]().CwdEntered()
	w := &s.cwd
	old, oldOn, oldDev := w.fid, w.on, w.dev
	w.on, w.dev, w.fid = true, r.Dev, f
	w.plen = copy(w.path[:], np[:n])
	w.depth = 0
	for i := s.mounts[m].plen; i < n; i++ {
		if np[i] == '/' {
			w.depth++
		}
	}
	if oldOn {
		s.c(oldDev).Clunk(old)
	}
	return 0
}

// cleanJoin appends path to the absolute path b[:n], resolving "." and
// ".." names lexically; the new length, -1 if it does not fit.
func cleanJoin(b []byte, n int, path []byte) int {
	if len(path) > 0 && path[0] == '/' {
		n = 0
	}
	if n > 0 && b[n-1] == '/' {
		n-- // b is "/"
	}
	for i := 0; i < len(path); {
		j := i
		for j < len(path) && path[j] != '/' {
			j++
		}
		name := path[i:j]
		i = j + 1
		switch {
		case len(name) == 0 || len(name) == 1 && name[0] == '.':
		case len(name) == 2 && name[0] == '.' && name[1] == '.':
			for n > 0 && b[n-1] != '/' {
				n--
			}
			if n > 0 {
				n--
			}
		default:
			if n+1+len(name) > len(b) {
				return -1
			}
			b[n] = '/'
			copy(b[n+1:], name)
			n += 1 + len(name)
		}
	}
	if n == 0 {
		b[0] = '/'
		n = 1
	}
	return n
}
