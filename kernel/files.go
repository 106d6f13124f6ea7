package kernel

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/sched"
)

// File descriptors: 0, 1, 2 are the serial console; the rest are the epoll
// instances and eventfds the runtime's netpoller uses, and files,
// directories and pipes of the in-memory file system (vfs.go).
//
// epoll: an instance's watches are a list in a fixed pool. A watch names
// the descriptor and, for a pipe, the open file behind it (its fs handle
// and identity: the watch dies with the open file, as Linux's); its
// readiness comes from a change counter (a pipe's, an eventfd's) and a
// poll of the current state. Edge-triggered watches (EPOLLET) report when
// the counter moved since they last did, level-triggered ones whenever the
// state is ready. Every change bumps one counter all epoll waits block on
// (epollSeq): the runtime has one epoll instance, so a wake-up meant for
// another is rare and only costs a rescan. Regular files and directories
// cannot be watched (EPERM), as on Linux; the console and epoll instances
// can be but never report anything.

const (
	fileFree = iota
	fileConsole
	fileEpoll
	fileEventfd
	fileFS
)

type file struct {
	kind  uint32
	count uint64 // eventfd: counter (atomic)
	seq   uint32 // eventfd: bumped on every change of count (atomic)
	whead int32  // epoll: 1 + its first watch, 0 if none
	h     int32  // fileFS: the fs handle
}

type watch struct {
	ep      int32   // 1 + the epoll descriptor holding it; 0: free
	next    int32   // 1 + the next watch of that epoll, 0 at the end
	fd      int32   // the descriptor watched
	h       int32   // fileFS: its open file, -1 for other kinds
	id      uint64  // fileFS: the open file's identity (fs.Pollable)
	seqAddr uintptr // the counter that changes with its readiness; 0: never ready
	seen    uint32  // *seqAddr when last polled
	fresh   bool    // not polled since added or modified
	events  uint32  // the events asked for, EPOLLHUP and EPOLLERR included
	data    uint64
}

// epollUser are the event bits a watch reports; a one-shot watch that
// fired keeps only the others.
const epollUser = unix.EPOLLIN | unix.EPOLLPRI | unix.EPOLLOUT | unix.EPOLLERR | unix.EPOLLHUP |
	unix.EPOLLRDNORM | unix.EPOLLRDBAND | unix.EPOLLWRNORM | unix.EPOLLWRBAND | unix.EPOLLMSG | unix.EPOLLRDHUP

var (
	fileLock sched.TWALock // the descriptor table and the watches
	files    [1024]file    // RLIMIT_NOFILE, Linux's default soft limit: os's tests keep hundreds open
	watches  [len(files)]watch
	epollSeq uint32 // bumped by every change any watch may see (atomic)
	epollWQ  sched.WaitQueue
)

// epollNotify wakes the epoll waits: a watched file's state changed.
func epollNotify() {
	atomic.AddUint32(&epollSeq, 1)
	epollWQ.Wake(0, len(files))
}

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

func newFile(kind uint32, init uint64) (uintptr, abi.Errno) {
	fileLock.Lock()
	defer fileLock.Unlock()
	for i := 3; i < len(files); i++ {
		if f := &files[i]; f.kind == fileFree {
			f.kind, f.count, f.seq, f.whead = kind, init, 0, 0
			return uintptr(i), 0
		}
	}
	return 0, abi.EMFILE
}

func sysClose(fd int) abi.Errno {
	fileLock.Lock()
	defer fileLock.Unlock()
	return closeLocked(fd)
}

// closeLocked closes fd; fileLock is held.
func closeLocked(fd int) abi.Errno {
	if fd < 3 || fd >= len(files) || files[fd].kind == fileFree {
		return abi.EBADF
	}
	switch files[fd].kind {
	case fileFS:
		// Its watches go when the open file does (Poll notices).
		vfs.Close(int(files[fd].h))
	case fileEpoll:
		for i := files[fd].whead; i != 0; {
			w := &watches[i-1]
			i = w.next
			*w = watch{}
		}
	}
	if files[fd].kind != fileFS {
		// Not shared by dup: the watches on it end with it.
		for i := range watches {
			if w := &watches[i]; w.ep != 0 && w.fd == int32(fd) && w.h < 0 {
				unwatch(w)
			}
		}
	}
	files[fd].kind = fileFree
	return 0
}

func sysFcntl(fd, cmd, arg int) (uintptr, abi.Errno) {
	if fd < 0 || fd >= len(files) || files[fd].kind == fileFree {
		return 0, abi.EBADF
	}
	if cmd == unix.F_DUPFD || cmd == unix.F_DUPFD_CLOEXEC {
		if arg < 0 || arg >= len(files) {
			return 0, abi.EINVAL
		}
		return sysDup3(fd, -1, arg)
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
		return consoleRead(p, n)
	}
	if h := fsGet(fd); h >= 0 {
		b, e := userBufW(p, n)
		var c uintptr
		if e == 0 {
			c, e = fsRead(h, b)
		}
		fsPut(h)
		return c, e
	}
	f := getFile(fd, fileEventfd)
	if f == nil {
		return 0, abi.EBADF
	}
	if n < 8 {
		return 0, abi.EINVAL
	}
	if !userW(p, 8) {
		return 0, abi.EFAULT
	}
	v := atomic.SwapUint64(&f.count, 0)
	if v == 0 {
		return 0, abi.EAGAIN
	}
	*at[uint64](p) = v
	atomic.AddUint32(&f.seq, 1)
	epollNotify()
	return 8, 0
}

func sysWrite(fd int, p, n uintptr) (uintptr, abi.Errno) {
	if !userOK(p, n) {
		return 0, abi.EFAULT
	}
	if fd >= 0 && fd < len(files) && files[fd].kind == fileConsole {
		consoleWrite(bytesAt(p, int(n)))
		return n, 0
	}
	if h := fsGet(fd); h >= 0 {
		b, e := userBuf(p, n)
		var c uintptr
		if e == 0 {
			c, e = fsWrite(h, b)
		}
		fsPut(h)
		return c, e
	}
	f := getFile(fd, fileEventfd)
	if f == nil {
		return 0, abi.EBADF
	}
	if n < 8 {
		return 0, abi.EINVAL
	}
	atomic.AddUint64(&f.count, *at[uint64](p))
	atomic.AddUint32(&f.seq, 1)
	epollNotify()
	return 8, 0
}

// watchID is 1 + w's index in watches, as lists name it.
func watchID(w *watch) int32 {
	return int32(1 + (uintptr(unsafe.Pointer(w))-uintptr(unsafe.Pointer(&watches[0])))/unsafe.Sizeof(watch{}))
}

// unwatch takes w off its epoll's list and frees it; fileLock is held.
func unwatch(w *watch) {
	i := watchID(w)
	for p := &files[w.ep-1].whead; *p != 0; p = &watches[*p-1].next {
		if *p == i {
			*p = w.next
			break
		}
	}
	*w = watch{}
}

// sysEpollCtl checks in Linux's order: the event's memory, both
// descriptors, whether fd can be polled, whether epfd is another epoll
// instance, then the op.
func sysEpollCtl(epfd, op, fd int, ev uintptr) abi.Errno {
	if (op == unix.EPOLL_CTL_ADD || op == unix.EPOLL_CTL_MOD) && !userOK(ev, epollEventSize) {
		return abi.EFAULT
	}
	fileLock.Lock()
	defer fileLock.Unlock()
	if epfd < 0 || epfd >= len(files) || files[epfd].kind == fileFree || fd < 0 || fd >= len(files) || files[fd].kind == fileFree {
		return abi.EBADF
	}
	// What fd is: for a pipe, its open file; regular files and
	// directories cannot be watched.
	h, id, seqAddr := int32(-1), uint64(0), uintptr(0)
	switch files[fd].kind {
	case fileFS:
		h = files[fd].h
		var e fs.Errno
		if id, seqAddr, e = vfs.Pollable(int(h)); e != 0 {
			return abi.Errno(e)
		}
	case fileEventfd:
		seqAddr = uintptr(unsafe.Pointer(&files[fd].seq))
	}
	ep := getFile(epfd, fileEpoll)
	if ep == nil || fd == epfd {
		return abi.EINVAL
	}
	var w *watch
	for i := ep.whead; i != 0; i = watches[i-1].next {
		if x := &watches[i-1]; x.fd == int32(fd) && x.h == h && x.id == id {
			w = x
			break
		}
	}
	switch op {
	case unix.EPOLL_CTL_ADD, unix.EPOLL_CTL_MOD:
		if op == unix.EPOLL_CTL_ADD && w != nil {
			return abi.EEXIST
		}
		if w == nil {
			if op == unix.EPOLL_CTL_MOD {
				return abi.ENOENT
			}
			if w = newWatch(); w == nil {
				return abi.ENOMEM
			}
			*w = watch{ep: int32(epfd) + 1, next: ep.whead, fd: int32(fd), h: h, id: id, seqAddr: seqAddr}
			ep.whead = watchID(w)
		}
		w.events = *at[uint32](ev) | unix.EPOLLHUP | unix.EPOLLERR
		w.data = *at[uint64](ev + epollDataOff)
		w.fresh = true
		epollNotify() // it may be ready now: a waiter should look
	case unix.EPOLL_CTL_DEL:
		if w == nil {
			return abi.ENOENT
		}
		unwatch(w)
	default:
		return abi.EINVAL
	}
	return 0
}

// newWatch is a free watch, nil if none is left even after dropping the
// watches of closed files; fileLock is held.
func newWatch() *watch {
	for pass := 0; pass < 2; pass++ {
		for i := range watches {
			if watches[i].ep == 0 {
				return &watches[i]
			}
		}
		for i := range watches {
			if w := &watches[i]; w.ep != 0 && w.h >= 0 {
				if _, _, ok := vfs.Poll(int(w.h), w.id); !ok {
					unwatch(w)
				}
			}
		}
	}
	return nil
}

// pollWatch is the events w reports now (0: none), and false if the
// open file it watches is gone; fileLock is held.
func pollWatch(w *watch) (uint32, bool) {
	if w.seqAddr == 0 || w.events&epollUser == 0 {
		return 0, true
	}
	seq := atomic.LoadUint32((*uint32)(*(*unsafe.Pointer)(unsafe.Pointer(&w.seqAddr))))
	if w.events&unix.EPOLLET != 0 && !w.fresh && seq == w.seen {
		return 0, true // edge-triggered: nothing happened since it last looked
	}
	var ready uint32
	if w.h >= 0 {
		var ok bool
		if ready, seq, ok = vfs.Poll(int(w.h), w.id); !ok {
			return 0, false
		}
	} else if files[w.fd].kind == fileEventfd {
		ready = unix.EPOLLOUT | unix.EPOLLWRNORM
		if atomic.LoadUint64(&files[w.fd].count) != 0 {
			ready |= unix.EPOLLIN | unix.EPOLLRDNORM
		}
	}
	w.seen, w.fresh = seq, false
	ev := ready & w.events & epollUser
	if ev != 0 && w.events&unix.EPOLLONESHOT != 0 {
		w.events &^= epollUser // until EPOLL_CTL_MOD
	}
	return ev, true
}

// sysEpollWait fills struct epoll_event records of epollEventSize bytes,
// the data at epollDataOff (amd64: packed, 12 and 4; arm64: 16 and 8).
func sysEpollWait(epfd int, events uintptr, max, timeoutMS int) (uintptr, abi.Errno) {
	// Linux's order: maxevents, the buffer, the descriptor.
	if max <= 0 || max > (1<<31-1)/epollEventSize {
		return 0, abi.EINVAL
	}
	if !userW(events, uintptr(max)*epollEventSize) {
		return 0, abi.EFAULT
	}
	if getFile(epfd, fileEpoll) == nil {
		return 0, badFD(epfd, abi.EINVAL)
	}
	var deadline int64
	if timeoutMS > 0 {
		deadline = nanotime() + int64(timeoutMS)*1e6
	}
	for {
		seq := atomic.LoadUint32(&epollSeq)
		n := 0
		fileLock.Lock()
		ep := getFile(epfd, fileEpoll)
		if ep == nil {
			fileLock.Unlock()
			return 0, abi.EBADF // closed while it waited
		}
		for i := ep.whead; i != 0 && n < max; {
			w := &watches[i-1]
			i = w.next
			ev, ok := pollWatch(w)
			if !ok {
				unwatch(w)
				continue
			}
			if ev != 0 {
				e := events + uintptr(n)*epollEventSize
				*at[uint32](e) = ev
				*at[uint64](e + epollDataOff) = w.data
				n++
			}
		}
		fileLock.Unlock()
		if n > 0 || timeoutMS == 0 || (deadline != 0 && nanotime() >= deadline) {
			return uintptr(n), 0
		}
		sched.Block(&epollWQ, 0, uintptr(unsafe.Pointer(&epollSeq)), seq, deadline)
	}
}
