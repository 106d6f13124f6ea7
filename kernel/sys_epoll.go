package kernel

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
)

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

type watch struct {
	ep      int32   // 1 + the epoll descriptor holding it; 0: free
	next    int32   // 1 + the next watch of that epoll, 0 at the end
	fd      int32   // the descriptor watched
	h       int32   // fileFS: its open file, fileSocket: its socket, -1 for other kinds
	id      uint64  // fileFS, fileSocket: the open file's or socket's identity (Pollable)
	kind    uint32  // the descriptor's kind when added: whose poll
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

// epollNotify wakes the epoll waits: a watched file's state changed.
func epollNotify() {
	atomic.AddUint32(&epollSeq, 1)
	epollWQ.Wake(0, len(files))
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
	var evb [epollEventSize]byte
	if (op == unix.EPOLL_CTL_ADD || op == unix.EPOLL_CTL_MOD) && mm.CopyIn(evb[:], ev) != 0 {
		return abi.EFAULT
	}
	fileLock.Lock()
	defer fileLock.Unlock()
	if epfd < 0 || epfd >= len(files) || files[epfd].kind == fileFree || fd < 0 || fd >= len(files) || files[fd].kind == fileFree {
		return abi.EBADF
	}
	// What fd is, as its kind says: for a pipe, its open file (h);
	// regular files and directories cannot be watched.
	o := ofile{fd: fd, kind: files[fd].kind, h: int(files[fd].h)}
	h, id, seqAddr := int32(-1), uint64(0), uintptr(0)
	if f := o.ops().pollable; f != nil {
		var e abi.Errno
		if h, id, seqAddr, e = f(o); e != 0 {
			return e
		}
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
			*w = watch{ep: int32(epfd) + 1, next: ep.whead, fd: int32(fd), h: h, id: id, seqAddr: seqAddr,
				kind: o.kind}
			ep.whead = watchID(w)
		}
		w.events = binary.LittleEndian.Uint32(evb[:]) | unix.EPOLLHUP | unix.EPOLLERR
		w.data = binary.LittleEndian.Uint64(evb[epollDataOff:])
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
			if w := &watches[i]; w.ep != 0 && w.h >= 0 && !watchPoll(w) {
				unwatch(w)
			}
		}
	}
	return nil
}

// watchPoll reports whether the open file or socket w watches is still
// there.
func watchPoll(w *watch) bool {
	_, _, ok := kinds[w.kind].poll(w)
	return ok
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
	if p := kinds[w.kind].poll; p != nil {
		var ok bool
		if ready, seq, ok = p(w); !ok {
			return 0, false
		}
	}
	w.seen, w.fresh = seq, false
	ev := ready & w.events & epollUser
	if ev != 0 && w.events&unix.EPOLLONESHOT != 0 {
		w.events &^= epollUser // until EPOLL_CTL_MOD
	}
	return ev, true
}

// epollBatch is the most events one epoll_wait returns.
const epollBatch = 128

// sysEpollPwait is epoll_pwait: epoll_wait with the signal mask at
// sigmask (if not 0) while it waits, as one atomic step.
func sysEpollPwait(epfd int, events uintptr, max, timeoutMS int, sigmask, size uintptr) (uintptr, abi.Errno) {
	if sigmask != 0 {
		if size != 8 {
			return 0, abi.EINVAL
		}
		m, e := mm.Get[uint64](sigmask)
		if e != 0 {
			return 0, e
		}
		setTempMask(m)
	}
	return sysEpollWait(epfd, events, max, timeoutMS)
}

// sysEpollWait fills struct epoll_event records of epollEventSize bytes,
// the data at epollDataOff (amd64: packed, 12 and 4; arm64: 16 and 8).
func sysEpollWait(epfd int, events uintptr, max, timeoutMS int) (uintptr, abi.Errno) {
	// Linux's order: maxevents, the buffer, the descriptor.
	if max <= 0 || max > (1<<31-1)/epollEventSize {
		return 0, abi.EINVAL
	}
	if !mm.UserW(events, uintptr(max)*epollEventSize) {
		return 0, abi.EFAULT
	}
	if getFile(epfd, fileEpoll) == nil {
		return 0, badFD(epfd, abi.EINVAL)
	}
	var deadline int64
	if timeoutMS > 0 {
		deadline = nanotime() + int64(timeoutMS)*1e6
	}
	// The events are gathered here under fileLock and copied out after:
	// at most epollBatch a call (Linux, too, may return fewer than are
	// ready; the runtime asks for 128).
	var out [epollBatch * epollEventSize]byte
	for {
		seq := atomic.LoadUint32(&epollSeq)
		n := 0
		fileLock.Lock()
		ep := getFile(epfd, fileEpoll)
		if ep == nil {
			fileLock.Unlock()
			return 0, abi.EBADF // closed while it waited
		}
		for i := ep.whead; i != 0 && n < min(max, len(out)); {
			w := &watches[i-1]
			i = w.next
			ev, ok := pollWatch(w)
			if !ok {
				unwatch(w)
				continue
			}
			if ev != 0 {
				e := out[n*epollEventSize:]
				binary.LittleEndian.PutUint32(e, ev)
				binary.LittleEndian.PutUint64(e[epollDataOff:], w.data)
				n++
			}
		}
		fileLock.Unlock()
		if n > 0 || timeoutMS == 0 || (deadline != 0 && nanotime() >= deadline) {
			// Outside fileLock: the buffer was checked before the
			// wait, and another thread may have unmapped it since.
			if mm.CopyOut(events, out[:n*epollEventSize]) != 0 {
				return 0, abi.EFAULT
			}
			return uintptr(n), 0
		}
		if blockIntrSlack(&epollWQ, 0, uintptr(unsafe.Pointer(&epollSeq)), seq, deadline, pollSlack(int64(timeoutMS)*1e6)) == sched.WakeSignal {
			return 0, abi.EINTR // never made again, whatever SA_RESTART says (Linux's ep_poll)
		}
	}
}

// epollOps: epoll instances (the runtime's netpoller's). Closing one
// frees its watches; it is never readable itself.
var epollOps = fileOps{
	getfl: nonblockingFl,
	release: func(fd, h int) {
		for i := files[fd].whead; i != 0; {
			w := &watches[i-1]
			i = w.next
			*w = watch{}
		}
	},
}

// eventfdOps: eventfd counters, in the descriptor itself (count, seq).
var eventfdOps = fileOps{
	read:  eventfdRead,
	write: eventfdWrite,
	getfl: nonblockingFl,
	pollable: func(o ofile) (int32, uint64, uintptr, abi.Errno) {
		return -1, 0, uintptr(unsafe.Pointer(&files[o.fd].seq)), 0
	},
	poll: func(w *watch) (uint32, uint32, bool) {
		ready := uint32(unix.EPOLLOUT | unix.EPOLLWRNORM)
		if atomic.LoadUint64(&files[w.fd].count) != 0 {
			ready |= unix.EPOLLIN | unix.EPOLLRDNORM
		}
		return ready, atomic.LoadUint32(&files[w.fd].seq), true
	},
}

func nonblockingFl(o ofile) (uintptr, abi.Errno) { return unix.O_RDWR | unix.O_NONBLOCK, 0 }

// eventfdRead takes the count (8 bytes, which may be spread over
// readv's buffers): EAGAIN while it is 0.
func eventfdRead(o ofile, u *uio) (uintptr, abi.Errno) {
	f := &files[o.fd]
	if u.left < 8 {
		return 0, abi.EINVAL
	}
	if !u.checked && !mm.UserW(u.base, 8) {
		return 0, abi.EFAULT
	}
	v := atomic.SwapUint64(&f.count, 0)
	if v == 0 {
		return 0, abi.EAGAIN
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	if u.move(b[:], true) != 8 {
		atomic.AddUint64(&f.count, v) // not read: the count stays
		return 0, abi.EFAULT
	}
	atomic.AddUint32(&f.seq, 1)
	epollNotify()
	return 8, 0
}

// eventfdWrite adds 8 bytes' worth to the count.
func eventfdWrite(o ofile, u *uio) (uintptr, abi.Errno) {
	f := &files[o.fd]
	if u.left < 8 {
		return 0, abi.EINVAL
	}
	var b [8]byte
	if u.move(b[:], false) != 8 {
		return 0, abi.EFAULT
	}
	atomic.AddUint64(&f.count, binary.LittleEndian.Uint64(b[:]))
	atomic.AddUint32(&f.seq, 1)
	epollNotify()
	return 8, 0
}
