package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
)

// The calls on host shares (share.go): open files of kind fileShare and
// the path calls' share halves, which the handlers in sys_file.go and
// sys_path.go call when shareAt or shareGet says the file is on a share.

// The open files on shares: a descriptor of kind fileShare holds an
// index here. refs counts descriptors and calls in progress (fileLock);
// the last reference clunks the fid.
type shareFile struct {
	used  bool
	refs  int32
	dev   int32
	fid   virtio9p.Fid
	flags int32 // open flags: access mode, O_APPEND, O_NONBLOCK
	dir   bool
	off   int64  // file offset; a directory's: the next entry's cookie
	qpath uint64 // the host file's qid path: which open files are one file (shareResized)
	// size is the file's size its mappings' faults are judged by (a
	// page wholly past it is SIGBUS, sys_mm.go's FileFault): read at
	// mmap, kept by the program's changes of the size (shareResized).
	size int64
}

var (
	shareFiles [len(files)]shareFile
	// shareClosing counts files whose last descriptor went under
	// fileLock, to be clunked outside it (shareReap).
	shareClosing int32
	shareDead    [len(files)]bool
)

// shareGet is the share file behind fd, with a reference (sharePut); -1
// if fd is not one.
func shareGet(fd int) int {
	if fd < 0 || fd >= len(files) || files[fd].kind != fileShare {
		return -1 // a hint, read without fileLock: handleRef checks again under it
	}
	return handleRef(fd, fileShare)
}

// sharePut drops a reference taken outside fileLock.
func sharePut(h int) {
	fileLock.Lock()
	shareUnref(h)
	fileLock.Unlock()
	shareReap()
}

// shareUnref drops a reference; fileLock is held. The last marks the
// file for shareReap.
func shareUnref(h int) {
	if shareFiles[h].refs--; shareFiles[h].refs == 0 {
		shareDead[h] = true
		atomic.AddInt32(&shareClosing, 1)
	}
}

// shareReap clunks the fids of files whose last reference is gone.
func shareReap() {
	for atomic.LoadInt32(&shareClosing) > 0 {
		fileLock.Lock()
		h := -1
		if atomic.LoadInt32(&shareClosing) > 0 {
			for i := range shareDead {
				if shareDead[i] {
					h = i
					break
				}
			}
		}
		var dev int32
		var fid virtio9p.Fid
		if h >= 0 {
			shareDead[h] = false
			atomic.AddInt32(&shareClosing, -1)
			dev, fid = shareFiles[h].dev, shareFiles[h].fid
			shareFiles[h].fid = virtio9p.NoFid
		}
		fileLock.Unlock()
		if h < 0 {
			return
		}
		shares[dev].c.Clunk(fid)
		shareDirForget(h)
		fileLock.Lock()
		shareFiles[h].used = false
		fileLock.Unlock()
	}
}

// shareOpen is openat on a share.
func shareOpen(r *shareRef, flags int, mode uint32) (uintptr, abi.Errno) {
	c := r.c()
	acc := flags & unix.O_ACCMODE
	lflags := uint32(acc | flags&(unix.O_TRUNC|unix.O_APPEND))
	follow := flags&unix.O_NOFOLLOW == 0
	excl := flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL
	var f virtio9p.Fid
	var q virtio9p.Qid
	e := abi.Errno(unix.ENOENT)
	if !excl {
		f, q, e = shareWalk(r, follow)
	}
	if e == abi.Errno(unix.ENOENT) && flags&unix.O_CREAT != 0 {
		dir, name, pe := walkParent(r, true)
		if pe != 0 {
			if pe == abi.Errno(unix.EBUSY) {
				pe = abi.Errno(unix.EISDIR)
			}
			return 0, pe
		}
		cq, ce := c.Lcreate(dir, name, lflags|unix.O_EXCL, mode&^atomic.LoadUint32(&shareUmask)&0o7777)
		if ce == 0 {
			return shareInstall(r.dev, dir, flags, false, cq.Path)
		}
		c.Clunk(dir)
		e = abi.Errno(ce)
		if ce == virtio9p.Errno(unix.EEXIST) && !excl {
			f, q, e = shareWalk(r, follow) // created by another since the walk above
		}
	}
	if e != 0 {
		return 0, e
	}
	isDir := q.Type&virtio9p.QTDir != 0
	var ve virtio9p.Errno
	if len(r.rel) == 0 || q == (virtio9p.Qid{}) {
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
		_, ve = c.Lopen(f, lflags)
	}
	if ve != 0 {
		c.Clunk(f)
		return 0, abi.Errno(ve)
	}
	if flags&unix.O_TRUNC != 0 && !isDir {
		shareResized(int32(r.dev), q.Path, 0, true)
	}
	return shareInstall(r.dev, f, flags, isDir, q.Path)
}

// shareSetattr sets attributes of r's file, following a symbolic link
// at its end with follow (or of open file h when r is nil).
func shareSetattr(r *shareRef, h int, a *virtio9p.SetAttr, follow bool) abi.Errno {
	if r == nil {
		f := &shareFiles[h]
		e := abi.Errno(shares[f.dev].c.Setattr(f.fid, a))
		if e == 0 && a.Valid&virtio9p.SetSize != 0 {
			shareResized(f.dev, f.qpath, int64(a.Size), true)
		}
		return e
	}
	c := r.c()
	fid, q, e := shareWalk(r, follow)
	if e == 0 {
		e = abi.Errno(c.Setattr(fid, a))
		c.Clunk(fid)
		if e == 0 && a.Valid&virtio9p.SetSize != 0 {
			shareResized(int32(r.dev), q.Path, int64(a.Size), true)
		}
	}
	return e
}

// shareMapRefs counts the areas' references on share files (FileRef;
// mmapFile counts the first): while it is 0 no file's size matters to a
// fault, and shareResized has nothing to do.
var shareMapRefs int32

// shareResized records that the program made the host file qpath on
// share dev size bytes long (exact: ftruncate, truncate, open with
// O_TRUNC) or at least size bytes long (a write or fallocate that grew
// it): the size every open file of it judges its mappings' faults by.
// When the file shrank, the pages past its new end are taken from those
// mappings, so that touching one raises SIGBUS, as Linux's truncation
// does; grown, they are reachable again (zeroes: a share has no page
// cache). The slot is held by a reference meanwhile: vm.UnbackFile
// blocks, and the slot must not become another file's.
func shareResized(dev int32, qpath uint64, size int64, exact bool) {
	if atomic.LoadInt32(&shareMapRefs) == 0 {
		return
	}
	for h := range shareFiles {
		f := &shareFiles[h]
		if !f.used || f.qpath != qpath {
			continue // a hint, read without fileLock: checked again under it
		}
		fileLock.Lock()
		match := f.used && f.refs > 0 && f.dev == dev && f.qpath == qpath && !f.dir
		old := int64(0)
		if match {
			f.refs++
			old = atomic.LoadInt64(&f.size)
			if exact || size > old {
				atomic.StoreInt64(&f.size, size)
			}
		}
		fileLock.Unlock()
		if !match {
			continue
		}
		if exact && size < old {
			vm.UnbackFile(shareArea(h), int64(mm.PageRound(uintptr(size))))
		}
		sharePut(h)
	}
}

// sharePathStat is newfstatat on a share.
func sharePathStat(r *shareRef, st *unix.Stat_t, follow bool) abi.Errno {
	c := r.c()
	fid, _, e := shareWalk(r, follow)
	if e != 0 {
		return e
	}
	se := shareStat(r.dev, fid, st)
	c.Clunk(fid)
	return se
}

// sharePathStatfs is statfs of r's path on a share.
func sharePathStatfs(r *shareRef, st *unix.Statfs_t) abi.Errno {
	fid, _, e := shareWalk(r, true)
	if e != 0 {
		return e
	}
	se := shareStatfs(r.dev, fid, st)
	r.c().Clunk(fid)
	return se
}

// shareParentOp runs op on r's parent directory and last name.
func shareParentOp(r *shareRef, op func(c *virtio9p.Client[shareEnv], dir virtio9p.Fid, name []byte) virtio9p.Errno) abi.Errno {
	dir, name, e := walkParent(r, false)
	if e != 0 {
		return e
	}
	ce := op(r.c(), dir, name)
	dropParent(r, dir)
	return abi.Errno(ce)
}

// shareTwo resolves the two paths of rename and link: both on the same
// share (EXDEV if only one is, or they are on different ones).
func shareTwo(odirfd int, opath []byte, ndirfd int, npath []byte) (o, n shareRef, on bool, e abi.Errno) {
	o, oon, e := shareAt(odirfd, opath)
	if e != 0 {
		return o, n, true, e
	}
	n, non, e := shareAt(ndirfd, npath)
	if e == 0 && (oon != non || oon && o.dev != n.dev) {
		e = abi.Errno(unix.EXDEV)
	}
	if e != 0 {
		shareDone(&o)
		return o, n, true, e
	}
	if !oon {
		return o, n, false, 0
	}
	return o, n, true, 0
}

func shareRename(o, n *shareRef, flags int) abi.Errno {
	if flags != 0 {
		return abi.EINVAL
	}
	od, oname, e := walkParent(o, false)
	if e != 0 {
		return e
	}
	nd, nname, e := walkParent(n, false)
	if e == 0 {
		e = abi.Errno(o.c().Renameat(od, oname, nd, nname))
		dropParent(n, nd)
	}
	dropParent(o, od)
	return e
}

func shareLink(o, n *shareRef) abi.Errno {
	c := o.c()
	f, _, fe := c.Walk(o.from, o.rel)
	if fe != 0 {
		return abi.Errno(fe)
	}
	e := shareParentOp(n, func(c *virtio9p.Client[shareEnv], dir virtio9p.Fid, name []byte) virtio9p.Errno {
		return c.Link(dir, f, name)
	})
	c.Clunk(f)
	return e
}

func shareReadlink(r *shareRef, b []byte) (uintptr, abi.Errno) {
	c := r.c()
	f, q, e := c.Walk(r.from, r.rel)
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

// shareChdir enters directory path (relative to dirfd) on a share, or
// leaves the share's working directory when path is not on one (the
// caller then changes the in-memory file system's). It returns ENOTDIR
// (the caller's business) for a path not on a share with on false.
func shareChdir(dirfd int, path []byte) abi.Errno {
	r, on, e := shareAt(dirfd, path)
	if e != 0 || !on {
		if e == 0 && shareCwd.on {
			shareLeaveCwd()
		}
		return e
	}
	e = shareEnter(&r, path)
	shareDone(&r)
	return e
}

// shareLeaveCwd forgets the share's working directory: the in-memory
// file system's is the working directory again.
func shareLeaveCwd() {
	old := shareCwd.fid
	shareCwd.on = false
	shares[shareCwd.dev].c.Clunk(old)
}

// shareDirPaths are the guest paths of open share directories, for
// fchdir, while slots last (a directory opened when all are taken has
// none). owner is the share file's index + 1, 0 when free, -1 while
// being written (atomic).
var shareDirPaths [32]struct {
	owner int32
	n     int
	p     [fs.PathMax]byte
}

// shareDirRemember keeps the guest path of fd, just opened on a share by
// dirfd and path, if it is a directory whose path is known: path is
// absolute, or relative to the working directory or to a share
// directory whose path is kept.
func shareDirRemember(fd, dirfd int, path []byte) {
	h := shareGet(fd)
	if h < 0 {
		return
	}
	if !shareFiles[h].dir || len(path) == 0 {
		sharePut(h)
		return
	}
	var np [fs.PathMax]byte
	n := 0
	if path[0] != '/' {
		switch {
		case int32(dirfd) == unix.AT_FDCWD && shareCwd.on:
			n = copy(np[:], shareCwd.path[:shareCwd.plen])
		case int32(dirfd) == unix.AT_FDCWD:
			k, ge := vfs.Getcwd(np[:])
			n = k - 1
			if ge != 0 {
				n = -1
			}
		default:
			n = -1
			if d := shareGet(dirfd); d >= 0 {
				n = shareDirPath(d, np[:])
				sharePut(d)
			}
		}
	}
	if n >= 0 {
		n = cleanJoin(np[:], n, path)
	}
	if n > 0 && mountOf(np[:n]) >= 0 {
		for i := range shareDirPaths {
			s := &shareDirPaths[i]
			if atomic.CompareAndSwapInt32(&s.owner, 0, -1) {
				s.n = copy(s.p[:], np[:n])
				atomic.StoreInt32(&s.owner, int32(h)+1)
				break
			}
		}
	}
	sharePut(h)
}

// shareDirPath copies share file h's kept path into b and returns its
// length, -1 if it has none.
func shareDirPath(h int, b []byte) int {
	for i := range shareDirPaths {
		s := &shareDirPaths[i]
		if atomic.LoadInt32(&s.owner) == int32(h)+1 {
			return copy(b, s.p[:s.n])
		}
	}
	return -1
}

// shareDirForget frees share file h's path slot, if it has one.
func shareDirForget(h int) {
	for i := range shareDirPaths {
		atomic.CompareAndSwapInt32(&shareDirPaths[i].owner, int32(h)+1, 0)
	}
}

// shareEnter makes r, reached by path, the working directory.
func shareEnter(r *shareRef, path []byte) abi.Errno {
	c := r.c()
	f, _, we := shareWalk(r, true)
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
	// The new guest path: path itself if absolute, else the old working
	// directory's joined with it, cleaned.
	var np [fs.PathMax]byte
	n := 0
	if path[0] != '/' {
		if shareCwd.on {
			n = copy(np[:], shareCwd.path[:shareCwd.plen])
		} else if k, ge := vfs.Getcwd(np[:]); ge == 0 {
			n = k - 1
		}
	}
	n = cleanJoin(np[:], n, path)
	if n < 0 {
		c.Clunk(f)
		return abi.Errno(unix.ENAMETOOLONG)
	}
	m := mountOf(np[:n])
	if m < 0 {
		c.Clunk(f)
		return abi.Errno(unix.EXDEV)
	}
	old, oldOn, oldDev := shareCwd.fid, shareCwd.on, shareCwd.dev
	shareCwd.on, shareCwd.dev, shareCwd.fid = true, r.dev, f
	shareCwd.plen = copy(shareCwd.path[:], np[:n])
	shareCwd.depth = 0
	for i := mounts[m].plen; i < n; i++ {
		if np[i] == '/' {
			shareCwd.depth++
		}
	}
	if oldOn {
		shares[oldDev].c.Clunk(old)
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

// shareGetcwd is getcwd when the working directory is on a share; false
// if it is not.
func shareGetcwd(b []byte) (int, abi.Errno, bool) {
	if !shareCwd.on {
		return 0, 0, false
	}
	n := shareCwd.plen
	if len(b) < n+1 {
		return 0, abi.Errno(unix.ERANGE), true
	}
	copy(b, shareCwd.path[:n])
	b[n] = 0
	return n + 1, 0, true
}

// sharePathArgs reads a path call's path into buf and says whether it names a file
// on a share (shareAt); a bad path is left to the in-memory file system's
// handling.
func sharePathArgs(dirfd int, p uintptr, buf *userPath) (shareRef, []byte, bool, abi.Errno) {
	if nshares == 0 {
		return shareRef{h: -1}, nil, false, 0
	}
	b, e := mm.UserPath(p, buf)
	if e != 0 {
		return shareRef{h: -1}, nil, false, 0
	}
	// buf is the caller's stack; the reference keeps path only for the
	// call (noEscape: the func values of shareParentOp hide that).
	path := noEscape(b)
	r, on, e := shareAt(dirfd, path)
	return r, path, on, e
}
