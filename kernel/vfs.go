package kernel

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/sched"
)

// The in-memory file system and pipes (package fs) behind file
// descriptors of kind fileFS: the descriptor table maps them to fs
// handles (open file descriptions, shared by dup). Pipes block here, on a
// wait queue per pipe, with the pipe's change counter as the condition;
// so do blocking opens of FIFOs. A call on a descriptor holds a reference
// to its open file for its duration (fsGet, fsPut), as Linux's fdget: a
// close on another CPU cannot free the handle under it, and a read blocked
// on a pipe keeps that end open until it returns.

type kenv struct{}

func (kenv) AllocPage() uintptr {
	if f := allocFrame(); f != 0 {
		return phys(f)
	}
	return 0
}
func (kenv) FreePage(a uintptr) { freeFrame(a - physOff) }
func (kenv) Now() int64         { return walltime() }
func (kenv) Lock()              { fsLock.Lock() }
func (kenv) Unlock()            { fsLock.Unlock() }
func (kenv) Wake(p int) {
	pipeWQ[p].Wake(0, len(files))
	epollNotify() // its readiness may have changed
}

var (
	fsLock sched.TWALock
	pipeWQ [fs.NumPipes]sched.WaitQueue
	vfs    fs.FS[kenv]
	tmpDir = [...]byte{'/', 't', 'm', 'p'}
)

// vfsInit makes the root, /tmp (mode 1777) and /dev with the memory
// devices null, zero and full (mode 0666). File data may take half of
// the free memory.
func vfsInit() {
	vfs.Init(kenv{}, framesFree/2)
	vfs.Mkdir(fs.AtCWD, tmpDir[:], 0o777)
	vfs.Chmod(fs.AtCWD, tmpDir[:], 0o1777, 0)
	vfs.Mkdir(fs.AtCWD, devDir[:4], 0o755)
	for _, d := range [...]struct {
		name [4]byte
		dev  uint64
	}{{[4]byte{'n', 'u', 'l', 'l'}, fs.DevNull}, {[4]byte{'z', 'e', 'r', 'o'}, fs.DevZero}, {[4]byte{'f', 'u', 'l', 'l'}, fs.DevFull}} {
		copy(devDir[5:], d.name[:])
		vfs.Mknod(fs.AtCWD, devDir[:], unix.S_IFCHR|0o666, d.dev)
		vfs.Chmod(fs.AtCWD, devDir[:], 0o666, 0)
	}
}

var devDir = [...]byte{'/', 'd', 'e', 'v', '/', 0, 0, 0, 0}

// userPath is the NUL-terminated path at p.
func userPath(p uintptr) ([]byte, abi.Errno) {
	for n := uintptr(0); n < fs.PathMax; n++ {
		if (p+n)%pageSize == 0 || n == 0 {
			if !userOK(p+n, 1) {
				return nil, abi.EFAULT
			}
		}
		if *at[byte](p + n) == 0 {
			return bytesAt(p, int(n)), 0
		}
	}
	return nil, abi.Errno(unix.ENAMETOOLONG)
}

// userBuf is the n bytes at p, checked.
func userBuf(p, n uintptr) ([]byte, abi.Errno) { return userBufNeed(p, n, protRead) }

// userBufW is userBuf for a buffer the kernel writes.
func userBufW(p, n uintptr) ([]byte, abi.Errno) { return userBufNeed(p, n, protWrite) }

func userBufNeed(p, n uintptr, need uint32) ([]byte, abi.Errno) {
	if n == 0 {
		return nil, 0
	}
	if int(n) < 0 || !userRange(p, n, need) {
		return nil, abi.EFAULT
	}
	return bytesAt(p, int(n)), 0
}

// fsGet is the fs handle behind fd, -1 if fd is not an fs file, with a
// reference of the caller's own that fsPut drops.
func fsGet(fd int) int {
	if fd < 0 || fd >= len(files) {
		return -1
	}
	h := -1
	fileLock.Lock()
	if files[fd].kind == fileFS {
		h = int(files[fd].h)
		vfs.Ref(h)
	}
	fileLock.Unlock()
	return h
}

// fsPut drops the reference fsGet (or dirHandle, pathArgs) took; the
// last one closes the open file. It ignores -1 and fs.AtCWD.
func fsPut(h int) {
	if h >= 0 {
		vfs.Close(h)
	}
}

// badFD is the errno for a descriptor that is not an fs file: err if it
// is open (the console, epoll, eventfd), EBADF if not.
func badFD(fd int, err abi.Errno) abi.Errno {
	if fd >= 0 && fd < len(files) && files[fd].kind != fileFree {
		return err
	}
	return abi.EBADF
}

// dirHandle is the fs directory for a *at call's dirfd and path, with a
// reference (fsPut).
func dirHandle(dirfd int, path []byte) (int, abi.Errno) {
	if int32(dirfd) == unix.AT_FDCWD || len(path) > 0 && path[0] == '/' {
		return fs.AtCWD, 0
	}
	if h := fsGet(dirfd); h >= 0 {
		return h, 0
	}
	return fs.AtCWD, badFD(dirfd, abi.Errno(unix.ENOTDIR))
}

// pathArgs reads a *at call's path and resolves its dirfd, with a
// reference (fsPut).
func pathArgs(dirfd int, p uintptr) (int, []byte, abi.Errno) {
	path, e := userPath(p)
	if e != 0 {
		return fs.AtCWD, nil, e
	}
	d, e := dirHandle(dirfd, path)
	return d, path, e
}

// installFS gives fs handle h a descriptor (closing h if none is free).
func installFS(h int) (uintptr, abi.Errno) {
	fd, e := newFile(fileFS, 0)
	if e != 0 {
		vfs.Close(h)
		return 0, e
	}
	files[fd].h = int32(h)
	return fd, 0
}

func sysOpenat(dirfd int, p uintptr, flags int, mode uint32) (uintptr, abi.Errno) {
	d, path, e := pathArgs(dirfd, p)
	if e != 0 {
		return 0, e
	}
	h, fe := vfs.Open(d, path, flags&^unix.O_CLOEXEC, mode)
	fsPut(d)
	if fe != 0 {
		return 0, abi.Errno(fe)
	}
	// A FIFO opened blocking waits for its other end, as Linux.
	for {
		pipe, addr, val, wait := vfs.OpenWait(h)
		if !wait {
			break
		}
		sched.Block(&pipeWQ[pipe], 0, addr, val, 0)
	}
	return installFS(h)
}

func sysPipe2(p uintptr, flags int) abi.Errno {
	if !userW(p, 8) {
		return abi.EFAULT
	}
	r, w, e := vfs.Pipe(flags)
	if e != 0 {
		return abi.Errno(e)
	}
	rfd, err := installFS(r)
	if err != 0 {
		vfs.Close(w)
		return err
	}
	wfd, err := installFS(w)
	if err != 0 {
		sysClose(int(rfd))
		return err
	}
	*at[[2]int32](p) = [2]int32{int32(rfd), int32(wfd)}
	return 0
}

// fsRead reads fs handle h; a pipe blocks until data or end of file.
func fsRead(h int, b []byte) (uintptr, abi.Errno) {
	for {
		pipe, addr, val, ok := vfs.Wait(h)
		n, e := vfs.Read(h, b)
		if e != unix.EAGAIN || !ok || vfs.Nonblocking(h) {
			return uintptr(n), abi.Errno(e)
		}
		sched.Block(&pipeWQ[pipe], 0, addr, val, 0)
	}
}

// fsWrite writes to fs handle h; a pipe blocks until all is written, or
// returns what was written before it would block (O_NONBLOCK) or broke.
func fsWrite(h int, b []byte) (uintptr, abi.Errno) {
	done := 0
	for {
		pipe, addr, val, ok := vfs.Wait(h)
		n, e := vfs.Write(h, b[done:])
		done += n
		if !ok || done == len(b) || e != unix.EAGAIN && e != 0 || e == unix.EAGAIN && vfs.Nonblocking(h) {
			if done > 0 {
				return uintptr(done), 0
			}
			return 0, abi.Errno(e)
		}
		if e == unix.EAGAIN {
			sched.Block(&pipeWQ[pipe], 0, addr, val, 0)
		}
	}
}

func sysPread(fd int, p, n uintptr, off int64, write bool) (uintptr, abi.Errno) {
	need := uint32(protWrite) // pread fills the buffer
	if write {
		need = protRead
	}
	b, e := userBufNeed(p, n, need)
	if e != 0 {
		return 0, e
	}
	h := fsGet(fd)
	if h < 0 {
		if off < 0 {
			return 0, abi.EINVAL
		}
		return 0, badFD(fd, abi.Errno(unix.ESPIPE))
	}
	var c int
	var fe fs.Errno
	if write {
		c, fe = vfs.Pwrite(h, b, off)
	} else {
		c, fe = vfs.Pread(h, b, off)
	}
	fsPut(h)
	return uintptr(c), abi.Errno(fe)
}

func sysLseek(fd int, off int64, whence int) (uintptr, abi.Errno) {
	h := fsGet(fd)
	if h < 0 {
		return 0, badFD(fd, abi.Errno(unix.ESPIPE))
	}
	pos, e := vfs.Seek(h, off, whence)
	fsPut(h)
	return uintptr(pos), abi.Errno(e)
}

const statSize = unsafe.Sizeof(unix.Stat_t{})

func sysFstat(fd int, p uintptr) abi.Errno {
	if !userW(p, statSize) {
		return abi.EFAULT
	}
	st := at[unix.Stat_t](p)
	if h := fsGet(fd); h >= 0 {
		e := vfs.Fstat(h, st)
		fsPut(h)
		return abi.Errno(e)
	}
	if fd >= 0 && fd < len(files) && files[fd].kind != fileFree {
		// The console and the kernel's own files: a character device.
		*st = unix.Stat_t{Mode: unix.S_IFCHR | 0o620, Blksize: pageSize}
		return 0
	}
	return abi.EBADF
}

func sysNewfstatat(dirfd int, p, sp uintptr, flags int) abi.Errno {
	path, e := userPath(p)
	if e != 0 {
		return e
	}
	if len(path) == 0 && flags&unix.AT_EMPTY_PATH != 0 && int32(dirfd) != unix.AT_FDCWD {
		return sysFstat(dirfd, sp)
	}
	d, e := dirHandle(dirfd, path)
	if e == 0 && !userW(sp, statSize) {
		e = abi.EFAULT
	}
	if e == 0 {
		e = abi.Errno(vfs.Stat(d, path, flags, at[unix.Stat_t](sp)))
	}
	fsPut(d)
	return e
}

func sysGetdents64(fd int, p, n uintptr) (uintptr, abi.Errno) {
	b, e := userBufW(p, n)
	if e != 0 {
		return 0, e
	}
	h := fsGet(fd)
	if h < 0 {
		return 0, badFD(fd, abi.Errno(unix.ENOTDIR))
	}
	c, fe := vfs.Getdents(h, b)
	fsPut(h)
	return uintptr(c), abi.Errno(fe)
}

func sysMkdirat(dirfd int, p uintptr, mode uint32) abi.Errno {
	d, path, e := pathArgs(dirfd, p)
	if e == 0 {
		e = abi.Errno(vfs.Mkdir(d, path, mode))
	}
	fsPut(d)
	return e
}

func sysUnlinkat(dirfd int, p uintptr, flags int) abi.Errno {
	d, path, e := pathArgs(dirfd, p)
	if e == 0 {
		e = abi.Errno(vfs.Unlink(d, path, flags))
	}
	fsPut(d)
	return e
}

func sysRenameat2(odirfd int, op uintptr, ndirfd int, np uintptr, flags int) abi.Errno {
	od, opath, e := pathArgs(odirfd, op)
	if e != 0 {
		return e
	}
	nd, npath, e := pathArgs(ndirfd, np)
	if e == 0 {
		e = abi.Errno(vfs.Rename(od, opath, nd, npath, flags))
	}
	fsPut(nd)
	fsPut(od)
	return e
}

func sysLinkat(odirfd int, op uintptr, ndirfd int, np uintptr, flags int) abi.Errno {
	opath, e := userPath(op)
	if e != 0 {
		return e
	}
	// AT_EMPTY_PATH links the open file odirfd itself.
	od := fs.AtCWD
	if len(opath) > 0 || flags&unix.AT_EMPTY_PATH == 0 {
		od, e = dirHandle(odirfd, opath)
	} else if int32(odirfd) != unix.AT_FDCWD {
		if od = fsGet(odirfd); od < 0 {
			od, e = fs.AtCWD, badFD(odirfd, abi.Errno(unix.EPERM)) // the console, epoll, eventfd: no inode to name
		}
	}
	if e != 0 {
		return e
	}
	nd, npath, e := pathArgs(ndirfd, np)
	if e == 0 {
		e = abi.Errno(vfs.Link(od, opath, nd, npath, flags))
	}
	fsPut(nd)
	fsPut(od)
	return e
}

func sysMknodat(dirfd int, p uintptr, mode uint32, dev uint64) abi.Errno {
	d, path, e := pathArgs(dirfd, p)
	if e == 0 {
		e = abi.Errno(vfs.Mknod(d, path, mode, dev))
	}
	fsPut(d)
	return e
}

func sysSymlinkat(tp uintptr, dirfd int, p uintptr) abi.Errno {
	target, e := userPath(tp)
	if e != 0 {
		return e
	}
	d, path, e := pathArgs(dirfd, p)
	if e == 0 {
		e = abi.Errno(vfs.Symlink(target, d, path))
	}
	fsPut(d)
	return e
}

func sysReadlinkat(dirfd int, p, bp, n uintptr) (uintptr, abi.Errno) {
	if int(n) <= 0 {
		return 0, abi.EINVAL
	}
	d, path, e := pathArgs(dirfd, p)
	var b []byte
	if e == 0 {
		b, e = userBufW(bp, n)
	}
	var c int
	if e == 0 {
		var fe fs.Errno
		c, fe = vfs.Readlink(d, path, b)
		e = abi.Errno(fe)
	}
	fsPut(d)
	return uintptr(c), e
}

func sysFtruncate(fd int, size int64) abi.Errno {
	if size < 0 {
		return abi.EINVAL
	}
	h := fsGet(fd)
	if h < 0 {
		return badFD(fd, abi.EINVAL)
	}
	e := vfs.Ftruncate(h, size)
	fsPut(h)
	return abi.Errno(e)
}

func sysTruncate(p uintptr, size int64) abi.Errno {
	path, e := userPath(p)
	if e != 0 {
		return e
	}
	return abi.Errno(vfs.Truncate(fs.AtCWD, path, size))
}

func sysGetcwd(p, n uintptr) (uintptr, abi.Errno) {
	b, e := userBufW(p, n)
	if e != 0 {
		return 0, e
	}
	c, fe := vfs.Getcwd(b)
	return uintptr(c), abi.Errno(fe)
}

func sysChdir(p uintptr) abi.Errno {
	path, e := userPath(p)
	if e != 0 {
		return e
	}
	return abi.Errno(vfs.Chdir(fs.AtCWD, path))
}

func sysFchdir(fd int) abi.Errno {
	h := fsGet(fd)
	if h < 0 {
		return badFD(fd, abi.Errno(unix.ENOTDIR))
	}
	e := vfs.Fchdir(h)
	fsPut(h)
	return abi.Errno(e)
}

// sysFchmodat is fchmodat, and fchmodat2 with its flags
// (AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH).
func sysFchmodat(dirfd int, p uintptr, mode uint32, flags int) abi.Errno {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return abi.EINVAL
	}
	d, path, e := pathArgs(dirfd, p)
	if e == 0 {
		if len(path) == 0 && flags&unix.AT_EMPTY_PATH != 0 {
			if d == fs.AtCWD {
				e = abi.Errno(vfs.Chmod(fs.AtCWD, dotPath[:], mode, 0))
			} else {
				e = abi.Errno(vfs.Fchmod(d, mode))
			}
		} else {
			e = abi.Errno(vfs.Chmod(d, path, mode, flags&^unix.AT_EMPTY_PATH))
		}
	}
	fsPut(d)
	return e
}

var dotPath = [...]byte{'.'}

// sysFchownat is chown, lchown and fchownat (flags: AT_SYMLINK_NOFOLLOW,
// AT_EMPTY_PATH). Owners are kept, never enforced (see package fs).
func sysFchownat(dirfd int, p uintptr, uid, gid int, flags int) abi.Errno {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return abi.EINVAL
	}
	d, path, e := pathArgs(dirfd, p)
	if e == 0 {
		if len(path) == 0 && flags&unix.AT_EMPTY_PATH != 0 {
			if d == fs.AtCWD {
				e = abi.Errno(vfs.Chown(fs.AtCWD, dotPath[:], uid, gid, 0))
			} else {
				e = abi.Errno(vfs.Fchown(d, uid, gid))
			}
		} else {
			e = abi.Errno(vfs.Chown(d, path, uid, gid, flags&^unix.AT_EMPTY_PATH))
		}
	}
	fsPut(d)
	return e
}

func sysFchown(fd int, uid, gid int) abi.Errno {
	if h := fsGet(fd); h >= 0 {
		e := vfs.Fchown(h, uid, gid)
		fsPut(h)
		return abi.Errno(e)
	}
	return badFD(fd, 0) // the console: accepted
}

// sysFsync is fsync and fdatasync: the file system is memory, nothing to
// write back; EINVAL for pipes and the console, as Linux.
func sysFsync(fd int) abi.Errno {
	if h := fsGet(fd); h >= 0 {
		e := vfs.Fsync(h)
		fsPut(h)
		return abi.Errno(e)
	}
	return badFD(fd, abi.EINVAL)
}

func sysFchmod(fd int, mode uint32) abi.Errno {
	if h := fsGet(fd); h >= 0 {
		e := vfs.Fchmod(h, mode)
		fsPut(h)
		return abi.Errno(e)
	}
	if fd >= 0 && fd < len(files) && files[fd].kind != fileFree {
		return 0
	}
	return abi.EBADF
}

// sysDup3 makes newfd (-1: the lowest free one from lowest on) a copy of
// oldfd, closing what newfd was, all under fileLock: a close racing it
// cannot leave newfd naming a freed open file.
func sysDup3(oldfd, newfd int, lowest int) (uintptr, abi.Errno) {
	fileLock.Lock()
	defer fileLock.Unlock()
	if oldfd < 0 || oldfd >= len(files) || files[oldfd].kind == fileFree {
		return 0, abi.EBADF
	}
	if newfd == oldfd {
		return uintptr(newfd), 0
	}
	k := files[oldfd].kind
	if k != fileFS && k != fileConsole {
		return 0, abi.EINVAL // epoll and eventfd descriptors are the runtime's own
	}
	if newfd >= len(files) {
		return 0, abi.EBADF
	}
	if newfd >= 3 && files[newfd].kind != fileFree {
		closeLocked(newfd)
	} else if newfd >= 0 && files[newfd].kind == fileFS {
		vfs.Close(int(files[newfd].h)) // 0, 1 or 2, dup'ed to before
	} else if newfd < 0 {
		for i := lowest; i < len(files); i++ {
			if files[i].kind == fileFree {
				newfd = i
				break
			}
		}
		if newfd < 0 {
			return 0, abi.EMFILE
		}
	}
	if k == fileFS {
		vfs.Ref(int(files[oldfd].h))
	}
	files[newfd].kind, files[newfd].h = k, files[oldfd].h
	return uintptr(newfd), 0
}

// sysUtimensat sets the access and modification times of a path (times:
// two timespecs, 0 for now; UTIME_NOW and UTIME_OMIT as Linux). A NULL
// path (futimens) is not supported: EINVAL.
func sysUtimensat(dirfd int, p, times uintptr, flags int) abi.Errno {
	if p == 0 || flags&^unix.AT_SYMLINK_NOFOLLOW != 0 {
		return abi.EINVAL
	}
	var t [2]int64
	for i := range t {
		t[i] = fs.UtimeNow
		if times == 0 {
			continue
		}
		if !userOK(times+uintptr(i)*16, 16) {
			return abi.EFAULT
		}
		ts := at[timespec](times + uintptr(i)*16)
		switch {
		case ts.nsec == unix.UTIME_NOW:
		case ts.nsec == unix.UTIME_OMIT:
			t[i] = fs.UtimeOmit
		case ts.nsec < 0 || ts.nsec >= 1e9:
			return abi.EINVAL
		default:
			t[i] = ts.sec*1e9 + ts.nsec
		}
	}
	d, path, e := pathArgs(dirfd, p)
	if e == 0 {
		e = abi.Errno(vfs.Utimes(d, path, t[0], t[1], flags))
	}
	fsPut(d)
	return e
}
