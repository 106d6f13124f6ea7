package kernel

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/kernel/net"
	"yolk/sched"
)

func sysClose(fd int) abi.Errno {
	fileLock.Lock()
	e := closeLocked(fd)
	fileLock.Unlock()
	shareReap()
	return e
}

func sysFcntl(fd, cmd, arg int) (uintptr, abi.Errno) {
	if fd < 0 || fd >= len(files) || files[fd].kind == fileFree {
		return 0, abi.EBADF
	}
	if cmd == unix.F_DUPFD || cmd == unix.F_DUPFD_CLOEXEC {
		if arg < 0 || arg >= len(files) {
			return 0, abi.EINVAL
		}
		return dupFD(fd, -1, arg)
	}
	switch cmd {
	case unix.F_GETFD:
		return uintptr(atomic.LoadUint32(&files[fd].fdfl)), 0
	case unix.F_SETFD:
		atomic.StoreUint32(&files[fd].fdfl, uint32(arg)&unix.FD_CLOEXEC)
		return 0, 0
	}
	if s, e := sockGet(fd); e == 0 {
		var r uintptr
		switch cmd {
		case unix.F_GETFL:
			r = unix.O_RDWR
			if sockets.Nonblocking(s) {
				r |= unix.O_NONBLOCK
			}
		case unix.F_SETFL:
			sockets.SetNonblocking(s, arg&unix.O_NONBLOCK != 0)
		case unix.F_GETFD, unix.F_SETFD:
		default:
			e = abi.EINVAL
		}
		sockPut(s)
		return r, e
	}
	if h := shareGet(fd); h >= 0 {
		var r uintptr
		var e abi.Errno
		switch cmd {
		case unix.F_GETFL:
			r = uintptr(shareFiles[h].flags) &^ (unix.O_CREAT | unix.O_EXCL | unix.O_TRUNC | unix.O_NOCTTY | unix.O_CLOEXEC)
		case unix.F_SETFL:
			const settable = unix.O_APPEND | unix.O_NONBLOCK
			atomic.StoreInt32(&shareFiles[h].flags, shareFiles[h].flags&^settable|int32(arg&settable))
		default:
			e = abi.EINVAL
		}
		sharePut(h)
		return r, e
	}
	if h := fsGet(fd); h >= 0 {
		var r uintptr
		var e abi.Errno
		switch cmd {
		case unix.F_GETFL:
			fl, fe := vfs.Flags(h)
			r, e = uintptr(fl), abi.Errno(fe)
		case unix.F_SETFL:
			e = abi.Errno(vfs.SetFlags(h, arg))
		case unix.F_GETLK, unix.F_SETLK, unix.F_SETLKW, unix.F_OFD_GETLK, unix.F_OFD_SETLK, unix.F_OFD_SETLKW:
			e = fcntlLock(h, cmd, uintptr(arg))
		case unix.F_GETFD, unix.F_SETFD:
		default:
			e = abi.EINVAL
		}
		fsPut(h)
		return r, e
	}
	switch cmd {
	case unix.F_GETFL:
		if files[fd].kind == fileConsole {
			return unix.O_RDWR, 0
		}
		return unix.O_RDWR | unix.O_NONBLOCK, 0
	case unix.F_SETFL, unix.F_GETFD, unix.F_SETFD:
		return 0, 0
	}
	return 0, abi.EINVAL
}

func sysRead(fd int, p, n uintptr) (uintptr, abi.Errno) {
	if fd >= 0 && fd < len(files) && files[fd].kind == fileConsole {
		return consoleRead(p, n, true)
	}
	if h := fsGet(fd); h >= 0 {
		return fsTransfer(h, p, n, false)
	}
	if h := shareGet(fd); h >= 0 {
		return shareTransfer(h, p, n, -1, false)
	}
	if isSocket(fd) {
		if !userRange(p, n, true) {
			return 0, abi.EFAULT
		}
		v := net.Iov{User: p, Len: int(min(n, maxRW))}
		return sockRW(fd, &v, false)
	}
	f, e := eventfdArg(fd, n)
	if e != 0 {
		return 0, e
	}
	if !mm.UserW(p, 8) {
		return 0, abi.EFAULT
	}
	v := atomic.SwapUint64(&f.count, 0)
	if v == 0 {
		return 0, abi.EAGAIN
	}
	if mm.Put(p, v) != 0 {
		atomic.AddUint64(&f.count, v) // not read: the count stays
		return 0, abi.EFAULT
	}
	atomic.AddUint32(&f.seq, 1)
	epollNotify()
	return 8, 0
}

func sysWrite(fd int, p, n uintptr) (uintptr, abi.Errno) {
	if !userRange(p, n, false) {
		return 0, abi.EFAULT
	}
	if fd >= 0 && fd < len(files) && files[fd].kind == fileConsole {
		return consoleWriteUser(p, n)
	}
	if h := fsGet(fd); h >= 0 {
		return fsTransfer(h, p, n, true)
	}
	if h := shareGet(fd); h >= 0 {
		return shareTransfer(h, p, n, -1, true)
	}
	if isSocket(fd) {
		v := net.Iov{User: p, Len: int(min(n, maxRW))}
		return sockRW(fd, &v, true)
	}
	f, e := eventfdArg(fd, n)
	if e != 0 {
		return 0, e
	}
	v, e := mm.Get[uint64](p)
	if e != 0 {
		return 0, e
	}
	atomic.AddUint64(&f.count, v)
	atomic.AddUint32(&f.seq, 1)
	epollNotify()
	return 8, 0
}

// consoleWriteUser writes the program's n bytes at p to the console,
// through a bounce buffer: the console lock is never held across the
// program's memory.
func consoleWriteUser(p, n uintptr) (uintptr, abi.Errno) {
	var buf [512]byte
	done := uintptr(0)
	for done < n {
		c := min(n-done, uintptr(len(buf)))
		if mm.CopyIn(buf[:c], p+done) != 0 {
			return partial(done, abi.EFAULT)
		}
		consoleWrite(buf[:c])
		done += c
	}
	return n, 0
}

func sysPread(fd int, p, n uintptr, off int64, write bool) (uintptr, abi.Errno) {
	if !userRange(p, n, !write) {
		return 0, abi.EFAULT
	}
	h := fsGet(fd)
	if h < 0 {
		if off < 0 {
			return 0, abi.EINVAL
		}
		if h := shareGet(fd); h >= 0 {
			return shareTransfer(h, p, n, off, write)
		}
		return 0, badFD(fd, abi.Errno(unix.ESPIPE))
	}
	if off < 0 {
		fsPut(h)
		return 0, abi.EINVAL
	}
	c, e := fsTransferAt(h, p, n, off, write)
	fsPut(h)
	return c, e
}

func sysLseek(fd int, off int64, whence int) (uintptr, abi.Errno) {
	if h := shareGet(fd); h >= 0 {
		pos, e := shareSeek(h, off, whence)
		sharePut(h)
		return pos, e
	}
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
	if !mm.UserW(p, statSize) {
		return abi.EFAULT
	}
	if h := shareGet(fd); h >= 0 {
		var st unix.Stat_t
		e := shareStat(int(shareFiles[h].dev), shareFiles[h].fid, &st)
		sharePut(h)
		if e != 0 {
			return e
		}
		return mm.Put(p, st)
	}
	var st unix.Stat_t
	switch {
	case isSocket(fd):
		st = unix.Stat_t{Mode: unix.S_IFSOCK | 0o777, Blksize: mm.PageSize}
	case fd >= 0 && fd < len(files) && files[fd].kind != fileFree && files[fd].kind != fileFS:
		// The console and the kernel's own files: a character device.
		st = unix.Stat_t{Mode: unix.S_IFCHR | 0o620, Blksize: mm.PageSize}
	default:
		if e := onFS(fd, 0, func(h int) fs.Errno { return vfs.Fstat(h, &st) }); e != 0 {
			return e
		}
	}
	return mm.Put(p, st)
}

func sysGetdents64(fd int, p, n uintptr) (uintptr, abi.Errno) {
	if !userRange(p, n, true) {
		return 0, abi.EFAULT
	}
	// At most a bounce buffer's worth a call (Linux, too, returns what
	// fits in the buffer; the caller calls again).
	var buf [ioChunk]byte
	if h := shareGet(fd); h >= 0 {
		c, e := shareGetdents(h, buf[:min(n, ioChunk)])
		sharePut(h)
		if e == 0 && mm.CopyOut(p, buf[:c]) != 0 {
			return 0, abi.EFAULT
		}
		return c, e
	}
	h := fsGet(fd)
	if h < 0 {
		return 0, badFD(fd, abi.Errno(unix.ENOTDIR))
	}
	c, fe := vfs.Getdents(h, buf[:min(n, ioChunk)])
	fsPut(h)
	if fe == 0 && mm.CopyOut(p, buf[:c]) != 0 {
		return 0, abi.EFAULT
	}
	return uintptr(c), abi.Errno(fe)
}

func sysFtruncate(fd int, size int64) abi.Errno {
	if size < 0 {
		return abi.EINVAL
	}
	if h := shareGet(fd); h >= 0 {
		e := abi.EINVAL
		if shareFiles[h].flags&unix.O_ACCMODE != unix.O_RDONLY && !shareFiles[h].dir {
			e = shareSetattr(nil, h, &virtio9p.SetAttr{Valid: virtio9p.SetSize, Size: uint64(size)}, false)
		}
		sharePut(h)
		return e
	}
	h := fsGet(fd)
	if h < 0 {
		return badFD(fd, abi.EINVAL)
	}
	e := vfs.Ftruncate(h, size)
	fsPut(h)
	fileCut()
	return abi.Errno(e)
}

// sysFchdir is fchdir: a share directory is entered again by the guest
// path it was opened by (shareDirRemember; EINVAL when it has none).
func sysFchdir(fd int) abi.Errno {
	if h := shareGet(fd); h >= 0 {
		var np [fs.PathMax]byte
		n := shareDirPath(h, np[:])
		dir := shareFiles[h].dir
		sharePut(h)
		switch {
		case !dir:
			return abi.Errno(unix.ENOTDIR)
		case n < 0:
			return abi.EINVAL // not done: opened when no path slot was free
		}
		return shareChdir(unix.AT_FDCWD, np[:n])
	}
	h := fsGet(fd)
	if h < 0 {
		return badFD(fd, abi.Errno(unix.ENOTDIR))
	}
	e := vfs.Fchdir(h)
	fsPut(h)
	if e == 0 && shareCwd.on {
		shareLeaveCwd()
	}
	return abi.Errno(e)
}

func sysFchown(fd int, uid, gid int) abi.Errno {
	if h := shareGet(fd); h >= 0 {
		e := shareSetattr(nil, h, shareOwner(uid, gid), false)
		sharePut(h)
		return e
	}
	return onFS(fd, 0, func(h int) fs.Errno { return vfs.Fchown(h, uid, gid) }) // the console: accepted
}

// sysFsync is fsync and fdatasync: the in-memory file system has nothing
// to write back (EINVAL for pipes and the console, as Linux); a share's
// file is synced on the host, after the shared mappings made through this
// open file are written back (sys_mm.go).
func sysFsync(fd int, datasync bool) abi.Errno {
	if h := shareGet(fd); h >= 0 {
		e := shareWriteBack(mm.UserMin, mm.UserMax, h)
		if se := abi.Errno(shares[shareFiles[h].dev].c.Fsync(shareFiles[h].fid, datasync)); se != 0 {
			e = se
		}
		sharePut(h)
		return e
	}
	return onFS(fd, abi.EINVAL, func(h int) fs.Errno { return vfs.Fsync(h) })
}

func sysFchmod(fd int, mode uint32) abi.Errno {
	if h := shareGet(fd); h >= 0 {
		e := shareSetattr(nil, h, &virtio9p.SetAttr{Valid: virtio9p.SetMode, Mode: mode & 0o7777}, false)
		sharePut(h)
		return e
	}
	return onFS(fd, 0, func(h int) fs.Errno { return vfs.Fchmod(h, mode) }) // the console: accepted
}

func sysDup(fd int) (uintptr, abi.Errno) { return dupFD(fd, -1, 0) }

func sysDup2(oldfd, newfd int) (uintptr, abi.Errno) {
	if newfd < 0 {
		return 0, abi.EBADF
	}
	return dupFD(oldfd, newfd, 0)
}

func sysDup3(oldfd, newfd, flags int) (uintptr, abi.Errno) {
	if oldfd == newfd || flags&^unix.O_CLOEXEC != 0 {
		return 0, abi.EINVAL
	}
	if newfd < 0 {
		return 0, abi.EBADF
	}
	return dupFD(oldfd, newfd, 0)
}

// sysSyncfs: nothing to write back; the descriptor must be open.
func sysSyncfs(fd int) abi.Errno {
	if fd < 0 || fd >= len(files) || files[fd].kind == fileFree {
		return abi.EBADF
	}
	return 0
}

// dupFD makes newfd (-1: the lowest free one from lowest on) a copy of
// oldfd, closing what newfd was, all under fileLock: a close racing it
// cannot leave newfd naming a freed open file.
func dupFD(oldfd, newfd int, lowest int) (uintptr, abi.Errno) {
	fileLock.Lock()
	defer fileLock.Unlock()
	if oldfd < 0 || oldfd >= len(files) || files[oldfd].kind == fileFree {
		return 0, abi.EBADF
	}
	if newfd == oldfd {
		return uintptr(newfd), 0
	}
	k := files[oldfd].kind
	if k != fileFS && k != fileConsole && k != fileSocket && k != fileShare {
		return 0, abi.EINVAL // epoll and eventfd descriptors are the runtime's own
	}
	if newfd >= len(files) {
		return 0, abi.EBADF
	}
	if newfd >= 0 && files[newfd].kind != fileFree {
		closeLocked(newfd)
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
	} else if k == fileShare {
		shareFiles[files[oldfd].h].refs++
	} else if k == fileSocket {
		sockets.Ref(int(files[oldfd].h))
	}
	files[newfd].kind, files[newfd].h = k, files[oldfd].h
	return uintptr(newfd), 0
}

// ioChunk is the bounce buffer of file and pipe transfers: the file
// system copies to and from it under its lock, the kernel between it and
// the program's memory outside (mm.CopyOut, mm.CopyIn), so a fault on a
// buffer another thread unmapped is EFAULT, never a fault under fsLock.
// fs.PipeBuf, so that a pipe write of at most PIPE_BUF bytes stays one
// atomic write.
const ioChunk = fs.PipeBuf

// ioBufs are the bounce buffers, one a task slot: in the BSS, not on the
// kernel stack (which Go would clear at every call), and paged in the
// first time a task uses its own.
var ioBufs [sched.MaxTasks][ioChunk]byte

// fsTransfer reads (write false) or writes the user buffer [p, p+n) at
// the open file h, a chunk at a time, and drops the call's reference to
// h. A read blocks for its first chunk only (a pipe: until data or end of
// file); a write blocks for each, as it would for the whole.
func fsTransfer(h int, p, n uintptr, write bool) (uintptr, abi.Errno) {
	c, e := fsTransferAt(h, p, n, -1, write)
	fsPut(h)
	return c, e
}

// fsTransferAt is fsTransfer at offset off (-1: the file's position; for
// pread and pwrite, which neither move nor block).
func fsTransferAt(h int, p, n uintptr, off int64, write bool) (uintptr, abi.Errno) {
	if !userRange(p, n, !write) {
		return 0, abi.EFAULT
	}
	n = min(n, maxRW)
	u := uio{base: p, n: n, left: n}
	return fsTransferUio(h, &u, off, write)
}

// fsTransferUio is the transfer of fsTransferAt between h and the
// program's buffers u, all of them one read or write as Linux's
// read_iter and write_iter make readv and writev: a read blocks for its
// first bytes only, whichever buffer the rest would go to; a write
// gathers its chunks across buffers, so a writev of at most PIPE_BUF
// bytes to a pipe is one atomic write.
func fsTransferUio(h int, u *uio, off int64, write bool) (uintptr, abi.Errno) {
	buf := &ioBufs[sched.Current().Index()]
	done := uintptr(0)
	for {
		k := min(u.left, ioChunk)
		b := buf[:k]
		var c int
		var e abi.Errno
		switch {
		case write:
			if u.move(b, false) != int(k) {
				return partial(done, abi.EFAULT)
			}
			if off >= 0 {
				var fe fs.Errno
				c, fe = vfs.Pwrite(h, b, off+int64(done))
				e = abi.Errno(fe)
			} else {
				var cu uintptr
				cu, e = fsWrite(h, b)
				c = int(cu)
			}
		case off >= 0:
			var fe fs.Errno
			c, fe = vfs.Pread(h, b, off+int64(done))
			e = abi.Errno(fe)
		case done == 0:
			var cu uintptr
			cu, e = fsRead(h, b)
			c = int(cu)
		default:
			var fe fs.Errno
			c, fe = vfs.Read(h, b) // what is there: a later chunk does not wait
			if fe == unix.EAGAIN {
				return done, 0
			}
			e = abi.Errno(fe)
		}
		if !write && c > 0 && u.move(b[:c], true) != c {
			return partial(done, abi.EFAULT)
		}
		done += uintptr(c)
		if e != 0 {
			return partial(done, e)
		}
		if c < int(k) || u.left == 0 {
			return done, 0
		}
	}
}

// uio is the program's buffers of one transfer, in order: one buffer
// (read, write, pread, pwrite), or readv's and writev's iovec array,
// whose entries are read again as the transfer reaches them (userIov
// checked them and counted left; the copies check each range again).
type uio struct {
	vec, cnt uintptr // the iovec entries not reached yet
	base, n  uintptr // the rest of the current buffer
	left     uintptr // the bytes still to move, at most maxRW
}

// move copies b into the buffers (out) or fills b from them, as far as
// left goes, and returns the bytes moved: fewer at a fault.
func (u *uio) move(b []byte, out bool) int {
	done := 0
	for done < len(b) && u.left > 0 {
		if u.n == 0 {
			if u.cnt == 0 {
				break
			}
			iov, e := mm.Get[[2]uintptr](u.vec)
			if e != 0 {
				break
			}
			u.vec, u.cnt = u.vec+16, u.cnt-1
			u.base, u.n = iov[0], min(iov[1], u.left)
			continue
		}
		k := int(min(uintptr(len(b)-done), u.n))
		var c int
		if out {
			c = mm.CopyOutPart(u.base, b[done:done+k])
		} else {
			c = mm.CopyInPart(b[done:done+k], u.base)
		}
		done += c
		u.base, u.n, u.left = u.base+uintptr(c), u.n-uintptr(c), u.left-uintptr(c)
		if c < k {
			break
		}
	}
	return done
}

// partial is a transfer's result after done bytes and then error e: the
// bytes, or the error if there are none.
func partial(done uintptr, e abi.Errno) (uintptr, abi.Errno) {
	if done > 0 {
		return done, 0
	}
	return 0, e
}

// eventfdArg is fd's eventfd for a read or write of n bytes.
func eventfdArg(fd int, n uintptr) (*file, abi.Errno) {
	f := getFile(fd, fileEventfd)
	if f == nil {
		return nil, abi.EBADF
	}
	if n < 8 {
		return nil, abi.EINVAL
	}
	return f, 0
}

// onFS runs op on fd's open file when fd names one of the file system,
// holding the call's reference while it runs; for an open descriptor of
// another kind it returns notFS, for a closed one EBADF (badFD). op does
// not escape: the closures the handlers pass live on their stacks.
func onFS(fd int, notFS abi.Errno, op func(h int) fs.Errno) abi.Errno {
	if h := fsGet(fd); h >= 0 {
		e := op(h)
		fsPut(h)
		return abi.Errno(e)
	}
	return badFD(fd, notFS)
}

// sysReadv and sysWritev: one transfer of the whole vector on a socket (a
// datagram is one message) and on a file or pipe (fsTransferUio: a read
// waits only for its first bytes, a pipe write of at most PIPE_BUF bytes
// is atomic); on other descriptors a transfer per buffer, stopping at the
// first short one, of which only the first may wait.
func sysReadv(fd int, p, cnt uintptr, write bool) (uintptr, abi.Errno) {
	v, e := userIov(p, cnt, !write)
	if e != 0 {
		return 0, e
	}
	if isSocket(fd) {
		return sockRW(fd, &v, write)
	}
	if h := fsGet(fd); h >= 0 {
		u := uio{vec: p, cnt: cnt, left: uintptr(v.Len)}
		c, e := fsTransferUio(h, &u, -1, write)
		fsPut(h)
		return c, e
	}
	if v.Len == 0 {
		return 0, badFD(fd, 0) // nothing to move, as Linux's vfs_readv
	}
	done := uintptr(0)
	for i := uintptr(0); i < cnt; i++ {
		iov, e := mm.Get[[2]uintptr](p + i*16)
		if e != 0 {
			return partial(done, e)
		}
		base, l := iov[0], iov[1]
		if l == 0 {
			continue
		}
		var c uintptr
		switch {
		case write:
			c, e = sysWrite(fd, base, l)
		case done > 0 && fd >= 0 && fd < len(files) && files[fd].kind == fileConsole:
			c, e = consoleRead(base, l, false) // what is there: data was read
		default:
			c, e = sysRead(fd, base, l)
		}
		if e != 0 {
			return partial(done, e)
		}
		done += c
		if c < l {
			break
		}
	}
	return done, 0
}

func sysPipe2(p uintptr, flags int) abi.Errno {
	if !mm.UserW(p, 8) {
		return abi.EFAULT
	}
	r, w, e := vfs.Pipe(flags)
	if e != 0 {
		return abi.Errno(e)
	}
	return installPair(fileFS, r, w, p)
}
