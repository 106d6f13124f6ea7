package kernel

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtio"
	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/sched"
)

// The host shares (yolk run -share, docs/share.md): each is a virtio-9p
// device (drivers/virtio9p) whose mount tag the command line maps to a
// guest path, yolk.share=TAG:PATH. Path calls whose path lies under a
// share's guest path (absolute, relative to a working directory inside or
// above it, or relative to a directory descriptor on it) go to the share
// instead of the in-memory file system: the seam is shareAt, called by
// the path handlers first; descriptors of files on a share are of kind
// fileShare, an index into shareFiles. Nothing is cached: every call is a
// round trip to the host, whose errno comes back as is.
//
// The mount point itself is an empty directory in the in-memory file
// system (listing "/" shows it). Not done: symbolic links on a share are
// not followed (open gives the server's ELOOP, stat describes the link),
// fchdir to a share directory, ".." above a share's root from a working
// directory inside it (EXDEV), mmap of share files (ENODEV as before),
// file locks.

const maxShares = 4

// shareEnv is the 9p client's environment: dev indexes shares.
type shareEnv struct{ dev int }

type shareDev struct {
	t   virtio9p.Transport
	c   virtio9p.Client[shareEnv]
	irq uint32
}

type mount struct {
	path [256]byte // absolute, no trailing '/'
	plen int
	tag  [virtio9p.MaxTag]byte
	tlen int
	dev  int // index in shares, -1 until its device is found
}

var (
	shares     [maxShares]shareDev
	nshares    int
	shareLocks [maxShares]sched.TWALock // the client's tables and the device's queue
	shareWQ    sched.WaitQueue          // requests waiting for their reply, a slot or descriptors
	shareBoot  = true                   // before the first task: requests poll
	mounts     [maxShares]mount
	nmounts    int
	shareUmask uint32 = 0o022 // the process's umask, as vfs has it (atomic)
)

func (e shareEnv) Lock()   { shareLocks[e.dev].Lock() }
func (e shareEnv) Unlock() { shareLocks[e.dev].Unlock() }

func (e shareEnv) Wait(addr *uint32, val uint32) {
	a := uintptr(unsafe.Pointer(addr))
	for atomic.LoadUint32(addr) == val {
		sched.Block(&shareWQ, a, a, val, 0)
	}
}

func (e shareEnv) Wake(addr *uint32) { shareWQ.Wake(uintptr(unsafe.Pointer(addr)), len(files)) }

// Exchange submits slot s's request and waits for the interrupt that
// completes it (at boot, before tasks run, it polls the device).
func (e shareEnv) Exchange(s, out, outData, inData int) (int, bool) {
	d := &shares[e.dev]
	req, rep, data := d.c.SlotPages(s)
	for {
		shareLocks[e.dev].Lock()
		seq := atomic.LoadUint32(&d.t.Freed)
		err := d.t.Submit(s, req, rep, data, out, outData, inData)
		shareLocks[e.dev].Unlock()
		if err == virtio.OK {
			break
		}
		if err != virtio.ErrFull {
			return 0, false
		}
		if shareBoot {
			sharePoll(e.dev)
			continue
		}
		e.Wait(&d.t.Freed, seq)
	}
	for atomic.LoadUint32(&d.t.Done[s]) == 0 {
		if shareBoot {
			sharePoll(e.dev)
			continue
		}
		a := uintptr(unsafe.Pointer(&d.t.Done[s]))
		sched.Block(&shareWQ, a, a, 0, 0)
	}
	l := int(atomic.LoadUint32(&d.t.Len[s]))
	return l, l > 0
}

// sharePoll harvests device dev's answers and wakes their waiters.
func sharePoll(dev int) {
	d := &shares[dev]
	shareLocks[dev].Lock()
	mask := d.t.Interrupt()
	shareLocks[dev].Unlock()
	if mask == 0 || shareBoot {
		return
	}
	for s := 0; s < virtio9p.Slots; s++ {
		if mask&(1<<s) != 0 {
			shareWQ.Wake(uintptr(unsafe.Pointer(&d.t.Done[s])), 1)
		}
	}
	shareWQ.Wake(uintptr(unsafe.Pointer(&d.t.Freed)), len(files))
}

// shareInterrupt is the shares' interrupt handler: every device is asked
// (a PCI line may be shared).
func shareInterrupt() {
	for i := 0; i < nshares; i++ {
		sharePoll(i)
	}
}

// isShareIRQ reports whether id is a share's interrupt (arm64's GIC).
func isShareIRQ(id uint32) bool {
	for i := 0; i < nshares; i++ {
		if shares[i].irq == id {
			return true
		}
	}
	return false
}

// shareOption records yolk.share=TAG:PATH (PATH absolute, not "/").
func shareOption(v []byte) {
	i := 0
	for i < len(v) && v[i] != ':' {
		i++
	}
	tag, path := v[:i], v[min(i+1, len(v)):]
	for len(path) > 1 && path[len(path)-1] == '/' {
		path = path[:len(path)-1]
	}
	if nmounts == maxShares || i == len(v) || len(tag) == 0 || len(tag) > virtio9p.MaxTag ||
		len(path) < 2 || path[0] != '/' || len(path) >= len(mounts[0].path) {
		shareBad = true
		return
	}
	m := &mounts[nmounts]
	m.plen = copy(m.path[:], path)
	m.tlen = copy(m.tag[:], tag)
	m.dev = -1
	nmounts++
}

var shareBad bool // a malformed yolk.share option (reported once the console prints)

// shareAttach opens 9p device d and mounts it where its tag says; false
// if it is not used.
func shareAttach(d virtio.Device, where string, base uint64, irq uint32) bool {
	if shareBad {
		klog("share: yolk.share: want TAG:/ABSOLUTE/PATH (at most 4): ignored\n")
		shareBad = false
	}
	if nshares == maxShares {
		klog("share: more than 4 virtio-9p devices: the rest not used\n")
		return false
	}
	n := nshares
	sd := &shares[n]
	if e := virtio9p.OpenTransport(&sd.t, d, nicMem{}); e != virtio.OK {
		nicRefused(where, base, e)
		return false
	}
	tag := sd.t.Tag()
	m := -1
	for i := 0; i < nmounts; i++ {
		if string(mounts[i].tag[:mounts[i].tlen]) == string(tag) && mounts[i].dev < 0 {
			m = i
			break
		}
	}
	klog("share: virtio-9p \"")
	kprintBytes(tag)
	kprint("\" (")
	kprint(where)
	kprint(" ")
	kprintHex(base, 1)
	kprint(", irq ")
	kprintDec(int64(irq))
	kprint(")")
	if m < 0 {
		kprint(" not used: no yolk.share names its tag\n")
		d.Reset()
		return false
	}
	sd.irq = irq
	nshares++
	if e := virtio9p.Init(&sd.c, shareEnv{n}, nicMem{}); e != 0 {
		kprint(" not used: attach failed, errno ")
		kprintDec(int64(e))
		kprint("\n")
		nshares--
		d.Reset()
		return false
	}
	mounts[m].dev = n
	kprint(" at ")
	kprintBytes(mounts[m].path[:mounts[m].plen])
	kprint(", msize ")
	kprintDec(int64(sd.c.Msize()))
	kprint("\n")
	// The mount point, in the in-memory file system.
	p := mounts[m].path[:mounts[m].plen]
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			vfs.Mkdir(fs.AtCWD, p[:i], 0o755)
		}
	}
	return true
}

// shareStarted ends the boot's polling and enters yolk.cwd if it is on a
// share (unpackInitrd left it alone).
func shareStarted() {
	shareBoot = false
	if cwdLen == 0 || mountOf(cwdPath[:cwdLen]) < 0 {
		return
	}
	if e := shareChdir(unix.AT_FDCWD, cwdPath[:cwdLen]); e != 0 {
		klog("yolk.cwd: cannot change to ")
		kprintBytes(cwdPath[:cwdLen])
		kprint(": errno ")
		kprintDec(int64(e))
		kprint("\n")
	}
}

// mountOf is the mount whose guest path is path or an ancestor of it (the
// longest), -1 if none.
func mountOf(path []byte) int {
	best, bl := -1, 0
	for i := 0; i < nmounts; i++ {
		m := mounts[i].path[:mounts[i].plen]
		if len(m) > bl && hasDirPrefix(path, m) {
			best, bl = i, len(m)
		}
	}
	return best
}

// hasDirPrefix reports whether p is dir or a path under it.
func hasDirPrefix(p, dir []byte) bool {
	return len(p) >= len(dir) && string(p[:len(dir)]) == string(dir) && (len(p) == len(dir) || p[len(dir)] == '/')
}

// escapes reports whether path, walked from depth names below a share's
// root, climbs above it with "..".
func escapes(path []byte, depth int) bool {
	for i := 0; i < len(path); {
		j := i
		for j < len(path) && path[j] != '/' {
			j++
		}
		switch n := path[i:j]; {
		case len(n) == 2 && n[0] == '.' && n[1] == '.':
			if depth--; depth < 0 {
				return true
			}
		case len(n) == 0 || len(n) == 1 && n[0] == '.':
		default:
			depth++
		}
		i = j + 1
	}
	return false
}

// The working directory when it is on a share: the device, a fid for it,
// its depth below the share's root and its guest path (getcwd).
var shareCwd struct {
	on    bool
	dev   int
	fid   virtio9p.Fid
	depth int
	path  [fs.PathMax]byte
	plen  int
}

// shareRef is where a path call's path lies on a share: the device, the
// fid to walk from and the path to walk; h is the share file whose fid
// from is, with a reference (-1: none), released by shareDone.
type shareRef struct {
	dev  int
	from virtio9p.Fid
	rel  []byte
	h    int
}

func (r *shareRef) c() *virtio9p.Client[shareEnv] { return &shares[r.dev].c }

func shareDone(r *shareRef) {
	if r.h >= 0 {
		sharePut(r.h)
	}
}

// shareAt says whether a path call's dirfd and path name a file on a
// share; e != 0 ends the call with it.
func shareAt(dirfd int, path []byte) (r shareRef, on bool, e abi.Errno) {
	r.h = -1
	if nshares == 0 {
		return r, false, 0
	}
	switch {
	case len(path) > 0 && path[0] == '/':
		m := mountOf(path)
		if m < 0 || mounts[m].dev < 0 {
			return r, false, 0
		}
		r.dev, r.from, r.rel = mounts[m].dev, virtio9p.Root, path[mounts[m].plen:]
		if escapes(r.rel, 0) {
			return r, false, 0 // the in-memory file system resolves ".." out of the mount point
		}
		return r, true, 0
	case int32(dirfd) == unix.AT_FDCWD:
		if shareCwd.on {
			if escapes(path, shareCwd.depth) {
				return r, true, abi.Errno(unix.EXDEV)
			}
			r.dev, r.from, r.rel = shareCwd.dev, shareCwd.fid, path
			return r, true, 0
		}
		// A working directory above a mount point: the path may lead
		// into it.
		var cwd [256]byte
		n, fe := vfs.Getcwd(cwd[:])
		if fe != 0 || n < 2 {
			return r, false, 0
		}
		wd := cwd[:n-1] // without its NUL
		for i := 0; i < nmounts; i++ {
			m := &mounts[i]
			mp := m.path[:m.plen]
			if m.dev < 0 || !(len(wd) == 1 || hasDirPrefix(mp, wd) && len(mp) > len(wd)) {
				continue
			}
			below := mp[len(wd):] // the names from wd down to the mount point
			if len(wd) > 1 {
				below = below[1:]
			} else {
				below = mp[1:]
			}
			p := path
			for len(p) >= 2 && p[0] == '.' && p[1] == '/' {
				p = p[2:]
			}
			if hasDirPrefix(p, below) {
				r.dev, r.from, r.rel = m.dev, virtio9p.Root, p[len(below):]
				if escapes(r.rel, 0) {
					return r, false, 0
				}
				return r, true, 0
			}
		}
		return r, false, 0
	}
	h := shareGet(dirfd)
	if h < 0 {
		return r, false, 0
	}
	if len(path) == 0 {
		sharePut(h)
		return r, true, abi.Errno(unix.ENOENT)
	}
	f := &shareFiles[h]
	r.dev, r.from, r.rel, r.h = int(f.dev), f.fid, path, h
	return r, true, 0
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

// walkParent walks r to the directory holding its last name: a new fid
// (the caller clunks it) and the name.
func walkParent(r *shareRef) (virtio9p.Fid, []byte, abi.Errno) {
	dir, name := splitName(r.rel)
	if len(name) == 0 || len(name) == 1 && name[0] == '.' || len(name) == 2 && name[0] == '.' && name[1] == '.' {
		return virtio9p.NoFid, nil, abi.Errno(unix.EBUSY) // the share's root, the working directory or its parent
	}
	f, _, e := r.c().Walk(r.from, dir)
	return f, name, abi.Errno(e)
}

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
	off   int64 // file offset; a directory's: the next entry's cookie
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
func shareGet(fd int) int { return handleRef(fd, fileShare) }

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
		shareClosing++
	}
}

// shareReap clunks the fids of files whose last reference is gone.
func shareReap() {
	for {
		fileLock.Lock()
		h := -1
		if shareClosing > 0 {
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
			shareClosing--
			dev, fid = shareFiles[h].dev, shareFiles[h].fid
			shareFiles[h].fid = virtio9p.NoFid
		}
		fileLock.Unlock()
		if h < 0 {
			return
		}
		shares[dev].c.Clunk(fid)
		fileLock.Lock()
		shareFiles[h].used = false
		fileLock.Unlock()
	}
}

// shareInstall gives fid, open with flags, a share file and a
// descriptor; on failure the fid is clunked.
func shareInstall(dev int, fid virtio9p.Fid, flags int, dir bool) (uintptr, abi.Errno) {
	shareReap()
	fileLock.Lock()
	h := -1
	for i := range shareFiles {
		if !shareFiles[i].used {
			h = i
			break
		}
	}
	if h >= 0 {
		shareFiles[h] = shareFile{used: true, refs: 1, dev: int32(dev), fid: fid, flags: int32(flags), dir: dir}
	}
	fileLock.Unlock()
	if h < 0 {
		shares[dev].c.Clunk(fid)
		return 0, abi.Errno(unix.ENFILE)
	}
	fd, e := allocFD(fileShare, 0, int32(h))
	if e != 0 {
		sharePut(h)
	}
	return fd, e
}

// shareOpen is openat on a share.
func shareOpen(r *shareRef, flags int, mode uint32) (uintptr, abi.Errno) {
	c := r.c()
	acc := flags & unix.O_ACCMODE
	lflags := uint32(acc | flags&(unix.O_TRUNC|unix.O_APPEND))
	var f virtio9p.Fid
	var q virtio9p.Qid
	var e virtio9p.Errno
	if flags&unix.O_CREAT != 0 {
		dir, name, pe := walkParent(r)
		if pe != 0 {
			if pe == abi.Errno(unix.EBUSY) {
				pe = abi.Errno(unix.EISDIR)
			}
			return 0, pe
		}
		if flags&unix.O_EXCL == 0 {
			f, q, e = c.Walk(dir, name)
		} else {
			e = virtio9p.ENOENT
		}
		if e == virtio9p.ENOENT {
			q, e = c.Lcreate(dir, name, lflags|unix.O_EXCL, mode&^atomic.LoadUint32(&shareUmask)&0o7777)
			if e != 0 {
				c.Clunk(dir)
				return 0, abi.Errno(e)
			}
			return shareInstall(r.dev, dir, flags, false)
		}
		c.Clunk(dir)
		if e != 0 {
			return 0, abi.Errno(e)
		}
	} else if f, q, e = c.Walk(r.from, r.rel); e != 0 {
		return 0, abi.Errno(e)
	}
	isDir := q.Type&virtio9p.QTDir != 0
	if len(r.rel) == 0 || q == (virtio9p.Qid{}) {
		var a virtio9p.Attr
		if e = c.Getattr(f, &a); e != 0 {
			c.Clunk(f)
			return 0, abi.Errno(e)
		}
		isDir = a.Mode&unix.S_IFMT == unix.S_IFDIR
	}
	switch {
	case flags&unix.O_DIRECTORY != 0 && !isDir:
		e = virtio9p.Errno(unix.ENOTDIR)
	case isDir && acc != unix.O_RDONLY:
		e = virtio9p.Errno(unix.EISDIR)
	case q.Type&virtio9p.QTSymlink != 0:
		e = virtio9p.Errno(unix.ELOOP) // not followed (see above)
	default:
		if isDir {
			lflags = 0
		}
		_, e = c.Lopen(f, lflags)
	}
	if e != 0 {
		c.Clunk(f)
		return 0, abi.Errno(e)
	}
	return shareInstall(r.dev, f, flags, isDir)
}

// shareRW reads or writes b at the share file h: at off, or at and
// advancing its offset when off < 0 (read, write).
func shareRW(h int, b []byte, off int64, write bool) (uintptr, abi.Errno) {
	f := &shareFiles[h]
	c := &shares[f.dev].c
	if f.dir {
		return 0, abi.Errno(unix.EISDIR)
	}
	acc := int(f.flags) & unix.O_ACCMODE
	if write && acc == unix.O_RDONLY || !write && acc == unix.O_WRONLY {
		return 0, abi.EBADF
	}
	pos := off
	if off < 0 {
		pos = atomic.LoadInt64(&f.off)
		if write && f.flags&unix.O_APPEND != 0 {
			var a virtio9p.Attr
			if e := c.Getattr(f.fid, &a); e != 0 {
				return 0, abi.Errno(e)
			}
			pos = int64(a.Size)
		}
	}
	var n int
	var e virtio9p.Errno
	if write {
		n, e = c.Write(f.fid, uint64(pos), b)
	} else {
		n, e = c.Read(f.fid, uint64(pos), b)
	}
	if off < 0 && n > 0 {
		atomic.StoreInt64(&f.off, pos+int64(n))
	}
	return uintptr(n), abi.Errno(e)
}

// shareSeek is lseek on share file h.
func shareSeek(h int, off int64, whence int) (uintptr, abi.Errno) {
	f := &shareFiles[h]
	var pos int64
	switch whence {
	case unix.SEEK_SET:
		pos = off
	case unix.SEEK_CUR:
		if f.dir {
			return 0, abi.EINVAL
		}
		pos = atomic.LoadInt64(&f.off) + off
	case unix.SEEK_END:
		if f.dir {
			return 0, abi.EINVAL
		}
		var a virtio9p.Attr
		if e := shares[f.dev].c.Getattr(f.fid, &a); e != 0 {
			return 0, abi.Errno(e)
		}
		pos = int64(a.Size) + off
	default:
		return 0, abi.EINVAL
	}
	if pos < 0 {
		return 0, abi.EINVAL
	}
	atomic.StoreInt64(&f.off, pos)
	return uintptr(pos), 0
}

// shareStat fills st from fid's attributes.
func shareStat(dev int, fid virtio9p.Fid, st *unix.Stat_t) abi.Errno {
	var a virtio9p.Attr
	if e := shares[dev].c.Getattr(fid, &a); e != 0 {
		return abi.Errno(e)
	}
	*st = unix.Stat_t{
		Dev:    uint64(0x9000 + dev), // one device per share
		Ino:    a.Qid.Path,
		Mode:   a.Mode,
		Uid:    a.UID,
		Gid:    a.GID,
		Rdev:   a.Rdev,
		Size:   int64(a.Size),
		Blocks: int64(a.Blocks),
		Atim:   unix.Timespec{Sec: int64(a.Atime), Nsec: int64(a.AtimeNs)},
		Mtim:   unix.Timespec{Sec: int64(a.Mtime), Nsec: int64(a.MtimeNs)},
		Ctim:   unix.Timespec{Sec: int64(a.Ctime), Nsec: int64(a.CtimeNs)},
	}
	setInt(&st.Nlink, int64(a.Nlink))
	setInt(&st.Blksize, int64(a.Blksize))
	return 0
}

func setInt[T ~int32 | ~int64 | ~uint32 | ~uint64](p *T, v int64) { *p = T(v) }

// shareGetdents is getdents64 on share file h: Rreaddir's entries are
// read into the second half of b and rewritten as linux_dirent64 from its
// start (an entry grows by at most 3 bytes, never past the next one).
func shareGetdents(h int, b []byte) (uintptr, abi.Errno) {
	f := &shareFiles[h]
	if !f.dir {
		return 0, abi.Errno(unix.ENOTDIR)
	}
	in := b[len(b)/2:]
	n, e := shares[f.dev].c.Readdir(f.fid, uint64(atomic.LoadInt64(&f.off)), in)
	if e != 0 {
		return 0, abi.Errno(e)
	}
	out := 0
	p := in[:n]
	var name [256]byte
	for len(p) > 0 {
		de, k := virtio9p.NextDirEntry(p)
		if k == 0 {
			break
		}
		nl := copy(name[:], de.Name)
		rec := (19 + nl + 1 + 7) &^ 7
		if out+rec > len(b)/2+(n-len(p)+k) || out+rec > len(b) {
			break
		}
		p = p[k:]
		d := b[out : out+rec]
		*(*uint64)(unsafe.Pointer(&d[0])) = de.Qid.Path
		*(*int64)(unsafe.Pointer(&d[8])) = int64(de.Offset)
		*(*uint16)(unsafe.Pointer(&d[16])) = uint16(rec)
		d[18] = de.Type
		copy(d[19:], name[:nl])
		clear(d[19+nl:])
		out += rec
		atomic.StoreInt64(&f.off, int64(de.Offset))
	}
	if out == 0 && n > 0 {
		return 0, abi.EINVAL // the buffer cannot hold the next entry
	}
	return uintptr(out), 0
}

// shareSetattr sets attributes of r's file (or of open file h when r is
// nil).
func shareSetattr(r *shareRef, h int, a *virtio9p.SetAttr) abi.Errno {
	if r == nil {
		f := &shareFiles[h]
		return abi.Errno(shares[f.dev].c.Setattr(f.fid, a))
	}
	c := r.c()
	fid, _, e := c.Walk(r.from, r.rel)
	if e == 0 {
		e = c.Setattr(fid, a)
		c.Clunk(fid)
	}
	return abi.Errno(e)
}

// sharePathStat is newfstatat on a share (symbolic links are not
// followed).
func sharePathStat(r *shareRef, st *unix.Stat_t) abi.Errno {
	c := r.c()
	fid, _, e := c.Walk(r.from, r.rel)
	if e != 0 {
		return abi.Errno(e)
	}
	se := shareStat(r.dev, fid, st)
	c.Clunk(fid)
	return se
}

// shareParentOp runs op on r's parent directory and last name.
func shareParentOp(r *shareRef, op func(c *virtio9p.Client[shareEnv], dir virtio9p.Fid, name []byte) virtio9p.Errno) abi.Errno {
	dir, name, e := walkParent(r)
	if e != 0 {
		return e
	}
	c := r.c()
	ce := op(c, dir, name)
	c.Clunk(dir)
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
	od, oname, e := walkParent(o)
	if e != 0 {
		return e
	}
	c := o.c()
	nd, nname, e := walkParent(n)
	if e == 0 {
		e = abi.Errno(c.Renameat(od, oname, nd, nname))
		c.Clunk(nd)
	}
	c.Clunk(od)
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
			old := shareCwd.fid
			shareCwd.on = false
			shares[shareCwd.dev].c.Clunk(old)
		}
		return e
	}
	e = shareEnter(&r, path)
	shareDone(&r)
	return e
}

// shareEnter makes r, reached by path, the working directory.
func shareEnter(r *shareRef, path []byte) abi.Errno {
	c := r.c()
	f, _, fe := c.Walk(r.from, r.rel)
	if fe != 0 {
		return abi.Errno(fe)
	}
	var a virtio9p.Attr
	if fe = c.Getattr(f, &a); fe == 0 && a.Mode&unix.S_IFMT != unix.S_IFDIR {
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

// sharePathArgs reads a path call's path and says whether it names a file
// on a share (shareAt); a bad path is left to the in-memory file system's
// handling.
func sharePathArgs(dirfd int, p uintptr) (shareRef, []byte, bool, abi.Errno) {
	if nshares == 0 {
		return shareRef{h: -1}, nil, false, 0
	}
	path, e := mm.UserPath(p)
	if e != 0 {
		return shareRef{h: -1}, nil, false, 0
	}
	r, on, e := shareAt(dirfd, path)
	return r, path, on, e
}

// shareTransfer is read, write (off < 0), pread and pwrite on share file
// h; it drops the call's reference.
func shareTransfer(h int, p, n uintptr, off int64, write bool) (uintptr, abi.Errno) {
	var b []byte
	var e abi.Errno
	if write {
		b, e = mm.UserBuf(p, n)
	} else {
		b, e = mm.UserBufW(p, n)
	}
	var c uintptr
	if e == 0 {
		c, e = shareRW(h, b, off, write)
	}
	sharePut(h)
	return c, e
}

// shareOwner is chown's change: -1 leaves an ID as it is.
func shareOwner(uid, gid int) *virtio9p.SetAttr {
	a := virtio9p.SetAttr{UID: uint32(uid), GID: uint32(gid)}
	if uid != -1 {
		a.Valid |= virtio9p.SetUID
	}
	if gid != -1 {
		a.Valid |= virtio9p.SetGID
	}
	return &a
}
