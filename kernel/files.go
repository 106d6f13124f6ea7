package kernel

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/sched"
)

// File descriptors: 0, 1, 2 are the serial console; the rest are the epoll
// instances and eventfds the runtime's netpoller uses for timer wake-ups,
// and files, directories and pipes of the in-memory file system (vfs.go).

const (
	fileFree = iota
	fileConsole
	fileEpoll
	fileEventfd
	fileFS
)

type watch struct {
	fd     int32
	events uint32
	data   uint64
}

type file struct {
	kind  uint32
	count uint64 // eventfd: counter (atomic)
	epfd  int32  // eventfd: the epoll instance watching it, -1 if none
	seq   uint32 // epoll: bumped on every event (atomic)
	wq    sched.WaitQueue
	watch [8]watch
	nw    int
	h     int32 // fileFS: the fs handle
}

var (
	fileLock sched.TWALock
	files    [256]file
)

func filesInit() {
	for i := 0; i < 3; i++ {
		files[i].kind = fileConsole
	}
	vfsInit()
	unpackInitrd(bootInfo.Module, bootInfo.ModuleSize)
}

func getFile(fd int, kind uint32) *file {
	if fd < 0 || fd >= len(files) || files[fd].kind != kind {
		return nil
	}
	return &files[fd]
}

func newFile(kind uint32, init uint64) (uintptr, Errno) {
	fileLock.Lock()
	defer fileLock.Unlock()
	for i := 3; i < len(files); i++ {
		if f := &files[i]; f.kind == fileFree {
			f.kind, f.count, f.epfd, f.seq, f.nw = kind, init, -1, 0, 0
			return uintptr(i), 0
		}
	}
	return 0, EMFILE
}

func sysClose(fd int) Errno {
	fileLock.Lock()
	defer fileLock.Unlock()
	if fd < 3 || fd >= len(files) || files[fd].kind == fileFree {
		return EBADF
	}
	if files[fd].kind == fileFS {
		vfs.Close(int(files[fd].h))
	}
	files[fd].kind = fileFree
	return 0
}

func sysFcntl(fd, cmd, arg int) (uintptr, Errno) {
	if fd < 0 || fd >= len(files) || files[fd].kind == fileFree {
		return 0, EBADF
	}
	if cmd == unix.F_DUPFD || cmd == unix.F_DUPFD_CLOEXEC {
		if arg < 0 || arg >= len(files) {
			return 0, EINVAL
		}
		return sysDup3(fd, -1, arg)
	}
	if h := fsHandle(fd); h >= 0 {
		switch cmd {
		case unix.F_GETFL:
			fl, e := vfs.Flags(h)
			return uintptr(fl), Errno(e)
		case unix.F_SETFL:
			return 0, Errno(vfs.SetFlags(h, arg))
		}
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
	return 0, EINVAL
}

func sysRead(fd int, p, n uintptr) (uintptr, Errno) {
	if fd >= 0 && fd < len(files) && files[fd].kind == fileConsole {
		return 0, 0 // the console has no input: end of file
	}
	if h := fsHandle(fd); h >= 0 {
		b, e := userBuf(p, n)
		if e != 0 {
			return 0, e
		}
		return fsRead(h, b)
	}
	f := getFile(fd, fileEventfd)
	if f == nil {
		return 0, EBADF
	}
	if n < 8 {
		return 0, EINVAL
	}
	if !userOK(p, 8) {
		return 0, EFAULT
	}
	v := atomic.SwapUint64(&f.count, 0)
	if v == 0 {
		return 0, EAGAIN
	}
	*at[uint64](p) = v
	return 8, 0
}

func sysWrite(fd int, p, n uintptr) (uintptr, Errno) {
	if !userOK(p, n) {
		return 0, EFAULT
	}
	if fd >= 0 && fd < len(files) && files[fd].kind == fileConsole {
		consoleWrite(bytesAt(p, int(n)))
		return n, 0
	}
	if h := fsHandle(fd); h >= 0 {
		b, e := userBuf(p, n)
		if e != 0 {
			return 0, e
		}
		return fsWrite(h, b)
	}
	f := getFile(fd, fileEventfd)
	if f == nil {
		return 0, EBADF
	}
	if n < 8 {
		return 0, EINVAL
	}
	atomic.AddUint64(&f.count, *at[uint64](p))
	if ep := getFile(int(atomic.LoadInt32(&f.epfd)), fileEpoll); ep != nil {
		atomic.AddUint32(&ep.seq, 1)
		ep.wq.Wake(0, len(files))
	}
	return 8, 0
}

func sysEpollCtl(epfd, op, fd int, ev uintptr) Errno {
	ep := getFile(epfd, fileEpoll)
	if ep == nil || fd < 0 || fd >= len(files) || files[fd].kind == fileFree {
		return EBADF
	}
	if files[fd].kind == fileFS {
		// As Linux for regular files; pipes too, which then do blocking
		// I/O (the runtime falls back to it) instead of waiting on
		// readiness events this epoll does not produce.
		return EPERM
	}
	fileLock.Lock()
	defer fileLock.Unlock()
	i := 0
	for i < ep.nw && ep.watch[i].fd != int32(fd) {
		i++
	}
	switch op {
	case unix.EPOLL_CTL_ADD, unix.EPOLL_CTL_MOD:
		if !userOK(ev, 12) {
			return EFAULT
		}
		if op == unix.EPOLL_CTL_ADD && i < ep.nw {
			return EEXIST
		}
		if i == ep.nw {
			if op == unix.EPOLL_CTL_MOD {
				return ENOENT
			}
			if i == len(ep.watch) {
				return ENOMEM
			}
			ep.nw++
		}
		ep.watch[i] = watch{int32(fd), *at[uint32](ev), *at[uint64](ev + 4)}
		if files[fd].kind == fileEventfd {
			atomic.StoreInt32(&files[fd].epfd, int32(epfd))
		}
	case unix.EPOLL_CTL_DEL:
		if i == ep.nw {
			return ENOENT
		}
		ep.nw--
		ep.watch[i] = ep.watch[ep.nw]
	default:
		return EINVAL
	}
	return 0
}

// epollEvent is the packed 12-byte struct epoll_event of amd64.
const epollEventSize = 12

func sysEpollWait(epfd int, events uintptr, max, timeoutMS int) (uintptr, Errno) {
	ep := getFile(epfd, fileEpoll)
	if ep == nil {
		return 0, EBADF
	}
	if max <= 0 {
		return 0, EINVAL
	}
	if !userOK(events, uintptr(max)*epollEventSize) {
		return 0, EFAULT
	}
	var deadline int64
	if timeoutMS > 0 {
		deadline = nanotime() + int64(timeoutMS)*1e6
	}
	for {
		seq := atomic.LoadUint32(&ep.seq)
		n := 0
		fileLock.Lock()
		for i := 0; i < ep.nw && n < max; i++ {
			w := ep.watch[i]
			if files[w.fd].kind == fileEventfd && w.events&unix.EPOLLIN != 0 && atomic.LoadUint64(&files[w.fd].count) != 0 {
				e := events + uintptr(n)*epollEventSize
				*at[uint32](e) = unix.EPOLLIN
				*at[uint64](e + 4) = w.data
				n++
			}
		}
		fileLock.Unlock()
		if n > 0 || timeoutMS == 0 || (deadline != 0 && nanotime() >= deadline) {
			return uintptr(n), 0
		}
		sched.Block(&ep.wq, 0, uintptr(unsafe.Pointer(&ep.seq)), seq, deadline)
	}
}
