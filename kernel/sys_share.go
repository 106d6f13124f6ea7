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
// the path operations on a share (sharePathOp).

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

// shareDirRemember keeps the guest path of fd, just opened on a share
// by pl's walk, if it is a directory whose path is known.
func shareDirRemember(fd int, pl *place) {
	h := shareGet(fd)
	if h < 0 {
		return
	}
	var np [fs.PathMax]byte
	if base := shareBase(pl, np[:]); shareFiles[h].dir && base != nil {
		n := cleanJoin(np[:], len(base), pl.r.rel)
		for i := range shareDirPaths {
			s := &shareDirPaths[i]
			if n > 0 && atomic.CompareAndSwapInt32(&s.owner, 0, -1) {
				s.n = copy(s.p[:], np[:n])
				atomic.StoreInt32(&s.owner, int32(h)+1)
				break
			}
		}
	}
	sharePut(h)
}

// shareBase is the guest path of the fid pl's walk on a share starts
// from (nil: not known), into b.
func shareBase(pl *place, b []byte) []byte {
	switch {
	case pl.r.h >= 0:
		if n := shareDirPath(pl.r.h, b); n >= 0 {
			return b[:n]
		}
		return nil
	case shareCwd.on && pl.r.from == shareCwd.fid:
		return b[:copy(b, shareCwd.path[:shareCwd.plen])]
	}
	m := &mounts[pl.m-1]
	return b[:copy(b, m.path[:m.plen])]
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

// shareEnter makes pl's file on a share the working directory.
func shareEnter(pl *place) abi.Errno {
	r := &pl.r
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
	// The new guest path: r's joined with its base's, cleaned.
	var np [fs.PathMax]byte
	base := shareBase(pl, np[:])
	if base == nil {
		c.Clunk(f)
		return abi.EINVAL // not done: a directory whose path is not kept
	}
	n := cleanJoin(np[:], len(base), r.rel)
	if n < 0 {
		c.Clunk(f)
		return abi.Errno(unix.ENAMETOOLONG)
	}
	m := mountOf(np[:n])
	if m < 0 {
		c.Clunk(f)
		return abi.Errno(unix.EXDEV)
	}
	procCwd.on = false
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

// sharePathOp is path operation op on a share (pathKinds).
func sharePathOp(op int, pl *place, a *pathArgs) (uintptr, abi.Errno) {
	r := &pl.r
	switch op {
	case opOpen:
		fd, e := shareOpen(r, a.flags, a.mode)
		if e == 0 {
			shareDirRemember(int(fd), pl)
		}
		return fd, e
	case opStat:
		return 0, sharePathStat(r, &a.st, a.flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	case opStatfs:
		return 0, sharePathStatfs(r, &a.sfs)
	case opMkdir:
		mode := a.mode &^ atomic.LoadUint32(&shareUmask) & 0o7777
		e := shareParentOp(r, func(c *virtio9p.Client[shareEnv], dir virtio9p.Fid, name []byte) virtio9p.Errno {
			return c.Mkdir(dir, name, mode)
		})
		if e == abi.Errno(unix.EBUSY) {
			e = abi.Errno(unix.EEXIST)
		}
		return 0, e
	case opUnlink:
		flags := a.flags
		if flags&^unix.AT_REMOVEDIR != 0 {
			return 0, abi.EINVAL
		}
		if len(r.rel) == 0 && r.from == virtio9p.Root {
			return 0, abi.Errno(unix.EBUSY) // the mount point
		}
		if _, name := splitName(r.rel); flags&unix.AT_REMOVEDIR == 0 && len(name) < len(r.rel) && r.rel[len(r.rel)-1] == '/' {
			return 0, abi.Errno(unix.ENOTDIR) // unlink("file/"), as Linux: EISDIR for a directory comes from the host
		}
		e := shareParentOp(r, func(c *virtio9p.Client[shareEnv], dir virtio9p.Fid, name []byte) virtio9p.Errno {
			return c.Unlinkat(dir, name, uint32(flags&unix.AT_REMOVEDIR))
		})
		if e == abi.Errno(unix.EBUSY) && flags&unix.AT_REMOVEDIR != 0 {
			e = abi.EINVAL // rmdir(".")
		}
		return 0, e
	case opMknod:
		return 0, abi.EPERM // not done: device nodes, FIFOs and sockets on a share
	case opSymlink:
		target := a.target
		e := shareParentOp(r, func(c *virtio9p.Client[shareEnv], dir virtio9p.Fid, name []byte) virtio9p.Errno {
			return c.Symlink(dir, name, target)
		})
		if e == abi.Errno(unix.EBUSY) {
			e = abi.Errno(unix.EEXIST)
		}
		return 0, e
	case opReadlink:
		return shareReadlink(r, a.out)
	case opTruncate:
		if a.size < 0 {
			return 0, abi.EINVAL
		}
		return 0, shareSetattr(r, -1, &virtio9p.SetAttr{Valid: virtio9p.SetSize, Size: uint64(a.size)}, true)
	case opChdir:
		return 0, shareEnter(pl)
	case opChmod:
		return 0, shareSetattr(r, -1, &virtio9p.SetAttr{Valid: virtio9p.SetMode, Mode: a.mode & 0o7777}, a.flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	case opChown:
		return 0, shareSetattr(r, -1, shareOwner(a.uid, a.gid), a.flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	case opUtimes:
		t := shareTimes(a.times)
		return 0, shareSetattr(r, -1, &t, a.flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	}
	return 0, abi.EINVAL
}

// shareTimes is utimensat's change: each time fs.UtimeNow, fs.UtimeOmit
// or nanoseconds.
func shareTimes(t [2]int64) virtio9p.SetAttr {
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
