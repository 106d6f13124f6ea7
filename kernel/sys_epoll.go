package kernel

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/epoll"
	"yolk/kernel/mm"
	"yolk/sched"
)

// epoll: the instances' watches and ready lists are kernel/epoll's (an
// instance's list head in its descriptor: whead); here are the calls, the
// kinds' readiness (epenv.Poll) and the blocking: a change marks its
// counter (epolls.Changed) and bumps epollSeq, which all waits block on.
// Regular files and directories cannot be watched (EPERM), as on Linux;
// the console and epoll instances can be but never report anything.

// epolls are the watches, under fileLock: as many as descriptors.
var epolls epoll.Table[epenv]

const _ = uint(epoll.NumWatches-len(files)) + uint(len(files)-epoll.NumWatches) // equal

// epenv is kernel/epoll's environment (epoll.Env).
type epenv struct{}

func (epenv) Head(ep int32) *int32 { return &files[ep].whead }
func (epenv) Notify()              { epollNotify(0) }

// Poll is the readiness of w's file by its kind's poll; a kind without
// one is never ready.
func (epenv) Poll(w *epoll.Watch, seq uint32) (uint32, uint32, bool) {
	if p := kinds[w.Kind].poll; p != nil {
		return p(w)
	}
	return 0, seq, true
}

// epollQuiet in an epoll descriptor's count (an eventfd's field, unused
// by epoll) marks the epollSeq in its low half as one its last scan
// found nothing ready at.
const epollQuiet = 1 << 32

// epollNotify wakes the epoll waits: the change counter at seqAddr moved
// (0: Ctl queued a watch), marked before epollSeq moves.
func epollNotify(seqAddr uintptr) {
	epolls.Changed(seqAddr)
	atomic.AddUint32(&epollSeq, 1)
	epollWQ.Wake(0, len(files))
}

// seqAddr is the address of eventfd f's change counter.
func (f *file) seqAddr() uintptr { return uintptr(unsafe.Pointer(&f.seq)) }

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
	if getFile(epfd, fileEpoll) == nil || fd == epfd {
		return abi.EINVAL
	}
	return epolls.Ctl(int32(epfd), op, epoll.Target{FD: int32(fd), H: h, ID: id, Kind: o.kind, Seq: seqAddr},
		binary.LittleEndian.Uint32(evb[:]), binary.LittleEndian.Uint64(evb[epollDataOff:]))
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
		fileLock.Lock()
		if getFile(epfd, fileEpoll) == nil {
			fileLock.Unlock()
			return 0, abi.EBADF // closed while it waited
		}
		// A scan is a poll of every watch: skipped when nothing any
		// watch may see changed (epollSeq) since one that found none
		// ready (idle descriptors cost nothing between events: the
		// runtime polls without waiting often).
		n := 0
		if f := &files[epfd]; f.count != uint64(seq)|epollQuiet {
			n = epolls.Scan(int32(epfd), out[:], min(max, len(out)/epollEventSize), epollEventSize, epollDataOff)
			f.count = 0
			if n == 0 {
				f.count = uint64(seq) | epollQuiet
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
	getfl:   nonblockingFl,
	release: func(fd, h int) { epolls.Release(int32(fd)) },
}

// eventfdOps: eventfd counters, in the descriptor itself (count, seq).
var eventfdOps = fileOps{
	read:  eventfdRead,
	write: eventfdWrite,
	getfl: nonblockingFl,
	pollable: func(o ofile) (int32, uint64, uintptr, abi.Errno) {
		return -1, 0, uintptr(unsafe.Pointer(&files[o.fd].seq)), 0
	},
	poll: func(w *epoll.Watch) (uint32, uint32, bool) {
		ready := uint32(unix.EPOLLOUT | unix.EPOLLWRNORM)
		if atomic.LoadUint64(&files[w.FD].count) != 0 {
			ready |= unix.EPOLLIN | unix.EPOLLRDNORM
		}
		return ready, atomic.LoadUint32(&files[w.FD].seq), true
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
	epollNotify(f.seqAddr())
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
	epollNotify(f.seqAddr())
	return 8, 0
}
