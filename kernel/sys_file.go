package kernel

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/internal/bitmap"
	"yolk/kernel/mm"
)

// The descriptor calls: each looks the descriptor up and calls its kind
// (fileops.go). The path calls are in sys_path.go.

func sysClose(fd int) abi.Errno {
	fileLock.Lock()
	e := closeLocked(fd)
	fileLock.Unlock()
	shares.Reap()
	return e
}

// Linux's generic ioctl requests (asm-generic/ioctls.h: one number on
// amd64 and arm64), which x/sys/unix does not name.
const (
	ioFIONREAD = 0x541b
	ioFIONBIO  = 0x5421
	ioFIONCLEX = 0x5450
	ioFIOCLEX  = 0x5451
)

// sysIoctl is ioctl: FIOCLEX and FIONCLEX set and clear the descriptor's
// close-on-exec flag, FIONBIO the open file's O_NONBLOCK (through its
// kind's F_SETFL, as Linux's), and anything else is the kind's.
func sysIoctl(fd int, cmd uint, arg uintptr) (uintptr, abi.Errno) {
	if fd < 0 || fd >= len(files) || files[fd].kind == fileFree {
		return 0, abi.EBADF
	}
	switch cmd {
	case ioFIOCLEX:
		atomic.StoreUint32(&files[fd].fdfl, unix.FD_CLOEXEC)
		return 0, 0
	case ioFIONCLEX:
		atomic.StoreUint32(&files[fd].fdfl, 0)
		return 0, 0
	}
	o, e := fdGet(fd)
	if e != 0 {
		return 0, e
	}
	defer fdPut(o)
	if cmd == ioFIONBIO {
		on, e := mm.Get[int32](arg)
		if e != 0 {
			return 0, e
		}
		fl, _ := o.getfl()
		if fl &^= unix.O_NONBLOCK; on != 0 {
			fl |= unix.O_NONBLOCK
		}
		return 0, o.setfl(int(fl))
	}
	return o.ioctl(cmd, arg)
}

func sysFcntl(fd, cmd, arg int) (uintptr, abi.Errno) {
	if fd < 0 || fd >= len(files) || files[fd].kind == fileFree {
		return 0, abi.EBADF
	}
	switch cmd {
	case unix.F_DUPFD, unix.F_DUPFD_CLOEXEC:
		if arg < 0 || arg >= len(files) {
			return 0, abi.EINVAL
		}
		return dupFD(fd, -1, arg, cmd == unix.F_DUPFD_CLOEXEC)
	case unix.F_GETFD:
		return uintptr(atomic.LoadUint32(&files[fd].fdfl)), 0
	case unix.F_SETFD:
		atomic.StoreUint32(&files[fd].fdfl, uint32(arg)&unix.FD_CLOEXEC)
		return 0, 0
	}
	o, e := fdGet(fd)
	if e != 0 {
		return 0, e
	}
	defer fdPut(o)
	switch cmd {
	case unix.F_GETFL:
		return o.getfl()
	case unix.F_SETFL:
		return 0, o.setfl(arg)
	case unix.F_GETLK, unix.F_SETLK, unix.F_SETLKW, unix.F_OFD_GETLK, unix.F_OFD_SETLK, unix.F_OFD_SETLKW:
		return 0, o.lock(cmd, uintptr(arg))
	}
	return 0, abi.EINVAL
}

// transfer moves the program's buffers u to (write) or from descriptor
// fd's open file.
func transfer(fd int, u uio, write bool) (uintptr, abi.Errno) {
	o, e := fdGet(fd)
	if e != 0 {
		return 0, e
	}
	var c uintptr
	if write {
		c, e = o.write(&u)
	} else {
		c, e = o.read(&u)
	}
	fdPut(o)
	return c, e
}

// onFDn is onFD for a call that returns a count.
func onFDn(fd int, op func(o ofile) (uintptr, abi.Errno)) (uintptr, abi.Errno) {
	o, e := fdGet(fd)
	if e != 0 {
		return 0, e
	}
	c, e := op(o)
	fdPut(o)
	return c, e
}

func sysRead(fd int, p, n uintptr) (uintptr, abi.Errno) { return transfer(fd, oneBuf(p, n), false) }

func sysWrite(fd int, p, n uintptr) (uintptr, abi.Errno) {
	if !userRange(p, n, false) {
		return 0, abi.EFAULT
	}
	u := oneBuf(p, n)
	u.checked = true
	return transfer(fd, u, true)
}

// sysReadv and sysWritev: the iovecs are checked whole first (userIov),
// then the kind moves them as one transfer (a socket's datagram is one
// message; a pipe's read waits for its first bytes only).
func sysReadv(fd int, p, cnt uintptr, write bool) (uintptr, abi.Errno) {
	v, e := userIov(p, cnt, !write)
	if e != 0 {
		return 0, e
	}
	return transfer(fd, uio{vec: p, cnt: cnt, left: uintptr(v.Len), checked: true}, write)
}

func sysPread(fd int, p, n uintptr, off int64, write bool) (uintptr, abi.Errno) {
	if !userRange(p, n, !write) {
		return 0, abi.EFAULT
	}
	if off < 0 {
		return 0, abi.EINVAL // before the descriptor, as Linux's ksys_pread64
	}
	u := oneBuf(p, n)
	u.checked = true
	return onFDn(fd, func(o ofile) (uintptr, abi.Errno) { return o.pread(&u, off, write) })
}

func sysLseek(fd int, off int64, whence int) (uintptr, abi.Errno) {
	return onFDn(fd, func(o ofile) (uintptr, abi.Errno) { return o.seek(off, whence) })
}

const statSize = unsafe.Sizeof(unix.Stat_t{})

func sysFstat(fd int, p uintptr) abi.Errno {
	if !mm.UserW(p, statSize) {
		return abi.EFAULT
	}
	var st unix.Stat_t
	if e := onFD(fd, func(o ofile) abi.Errno { return o.stat(&st) }); e != 0 {
		return e
	}
	return mm.Put(p, st)
}

// sysFstatfs is fstatfs: the figures of the file system fd's file is on,
// as its kind says (Linux's f_type magic numbers).
func sysFstatfs(fd int, p uintptr) abi.Errno {
	var st unix.Statfs_t
	if e := onFD(fd, func(o ofile) abi.Errno { return o.statfs(&st) }); e != 0 {
		return e
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
	c, e := onFDn(fd, func(o ofile) (uintptr, abi.Errno) { return o.getdents(buf[:min(n, ioChunk)]) })
	if e == 0 && mm.CopyOut(p, buf[:c]) != 0 {
		return 0, abi.EFAULT
	}
	return c, e
}

func sysFtruncate(fd int, size int64) abi.Errno {
	if size < 0 {
		return abi.EINVAL
	}
	return onFD(fd, func(o ofile) abi.Errno { return o.truncate(size) })
}

func sysFchdir(fd int) abi.Errno {
	return onFD(fd, func(o ofile) abi.Errno { return o.chdir() })
}

func sysFchown(fd int, uid, gid int) abi.Errno {
	return onFD(fd, func(o ofile) abi.Errno { return o.chown(uid, gid) })
}

// sysFsync is fsync and fdatasync.
func sysFsync(fd int, datasync bool) abi.Errno {
	return onFD(fd, func(o ofile) abi.Errno { return o.sync(datasync) })
}

func sysFchmod(fd int, mode uint32) abi.Errno {
	return onFD(fd, func(o ofile) abi.Errno { return o.chmod(mode) })
}

func sysDup(fd int) (uintptr, abi.Errno) { return dupFD(fd, -1, 0, false) }

func sysDup2(oldfd, newfd int) (uintptr, abi.Errno) {
	if newfd < 0 {
		return 0, abi.EBADF
	}
	return dupFD(oldfd, newfd, 0, false)
}

func sysDup3(oldfd, newfd, flags int) (uintptr, abi.Errno) {
	if oldfd == newfd || flags&^unix.O_CLOEXEC != 0 {
		return 0, abi.EINVAL
	}
	if newfd < 0 {
		return 0, abi.EBADF
	}
	return dupFD(oldfd, newfd, 0, flags&unix.O_CLOEXEC != 0)
}

// sysSyncfs writes back the file system fd is on (its kind's syncfs).
func sysSyncfs(fd int) abi.Errno {
	return onFD(fd, func(o ofile) abi.Errno { return o.syncfs() })
}

// dupFD makes newfd (-1: the lowest free one from lowest on) a copy of
// oldfd, closing what newfd was, all under fileLock: a close racing it
// cannot leave newfd naming a freed open file. The new descriptor's
// FD_CLOEXEC is cloexec (Linux's dup clears it, F_DUPFD_CLOEXEC and dup3
// with O_CLOEXEC set it).
func dupFD(oldfd, newfd int, lowest int, cloexec bool) (uintptr, abi.Errno) {
	fileLock.Lock()
	defer fileLock.Unlock()
	if oldfd < 0 || oldfd >= len(files) || files[oldfd].kind == fileFree {
		return 0, abi.EBADF
	}
	if newfd == oldfd {
		return uintptr(newfd), 0
	}
	k := files[oldfd].kind
	if !kinds[k].dupOK {
		return 0, abi.EINVAL // epoll and eventfd descriptors are the runtime's own
	}
	if newfd >= len(files) {
		return 0, abi.EBADF
	}
	if newfd >= 0 && files[newfd].kind != fileFree {
		closeLocked(newfd)
		bitmap.Set(fdTaken[:], fdTakenSum[:], newfd)
	} else if newfd >= 0 {
		if bitmap.Has(fdTaken[:], newfd) {
			return 0, abi.Errno(unix.EBUSY) // reserved by an accept4 in progress: Linux's dup2 says EBUSY
		}
		bitmap.Set(fdTaken[:], fdTakenSum[:], newfd)
	} else if newfd = takeFD(lowest); newfd < 0 {
		return 0, abi.EMFILE
	}
	refHandle(k, int(files[oldfd].h))
	files[newfd].kind, files[newfd].h, files[newfd].fdfl = k, files[oldfd].h, 0
	if cloexec {
		files[newfd].fdfl = unix.FD_CLOEXEC
	}
	return uintptr(newfd), 0
}

func sysPipe2(p uintptr, flags int) abi.Errno {
	if !mm.UserW(p, 8) {
		return abi.EFAULT
	}
	r, w, e := vfs.Pipe(flags)
	if e != 0 {
		return abi.Errno(e)
	}
	return installPair(fileFS, r, w, p, flags&unix.O_CLOEXEC != 0)
}
