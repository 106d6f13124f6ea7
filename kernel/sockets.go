package kernel

import (
	"unsafe"
	"yolk/kernel/procfs"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/kernel/net"
	"yolk/sched"
)

// Sockets: AF_UNIX sockets of package net behind descriptors of kind
// fileSocket (the descriptor's h is the socket). A call holds a reference
// to its socket for its duration (sockGet, sockPut), as fsGet does for
// files. Blocking calls block here, on a wait queue per socket, with the
// change counter net names (net.Wait) as the condition; non-blocking ones
// return EAGAIN. Path names are socket nodes of the file system
// (vfs.BindSocket, vfs.SocketAt). Other families are EAFNOSUPPORT until
// TCP/IP comes (docs/net.md).

type netenv struct{ pageSupplier }

func (netenv) Lock() { sockLock.Lock() }

func (netenv) Unlock() { sockLock.Unlock() }

func (netenv) Wake(s int) {
	sockWQ[s].Wake(0, len(files))
	epollNotify()
}

func (netenv) NotifyService() { netSignal() }

func (netenv) CopyIn(b []byte, p uintptr) int  { return mm.CopyInPart(b, p) }
func (netenv) CopyOut(p uintptr, b []byte) int { return mm.CopyOutPart(p, b) }

// sockGet is the socket behind fd with a reference of the caller's own
// (sockPut); for another descriptor ENOTSOCK, for none EBADF.
func sockGet(fd int) (int, abi.Errno) {
	s := handleRef(fd, fileSocket)
	if s < 0 {
		return -1, badFD(fd, abi.Errno(unix.ENOTSOCK))
	}
	return s, 0
}

func sockPut(s int) { sockets.Close(s) }

// installSocket gives socket s a descriptor (closing s if none is free).
func installSocket(s int) (uintptr, abi.Errno) { return installHandle(fileSocket, s) }

// sockaddr is a copy of the program's sockaddr of n bytes at p: EINVAL
// beyond sockaddr_storage's 128, EFAULT if unreadable (Linux's
// move_addr_to_kernel).
func sockaddr(p, n uintptr) (sa sockaddrBuf, e abi.Errno) {
	if int(n) < 0 || n > uintptr(len(sa.b)) {
		return sa, abi.EINVAL
	}
	if e := mm.CopyIn(sa.b[:n], p); e != 0 {
		return sa, e
	}
	sa.n = int(n)
	return sa, 0
}

// sockaddrBuf holds a sockaddr the program passed.
type sockaddrBuf struct {
	b [128]byte
	n int
}

func (sa *sockaddrBuf) bytes() []byte { return sa.b[:sa.n] }

// peerAddr resolves a sockaddr to connect or send to: a path through the
// file system (ENOENT and the other lookup errors, ECONNREFUSED for a
// node that is no socket), an abstract name as it is.
func peerAddr(sa []byte) (net.Addr, abi.Errno) {
	kind, name, e := net.ParseAddr(sa)
	if e != 0 || kind == net.AddrAuto {
		return net.Addr{}, abi.EINVAL
	}
	if kind == net.AddrAbstract {
		return net.Addr{Name: name}, 0
	}
	id, e := vfs.SocketAt(fs.AtCWD, name)
	return net.Addr{Path: true, ID: id}, abi.Errno(e)
}

// sockBlock waits for w (until deadline, 0 for none): 0 when woken (try
// again), EAGAIN if the deadline passed or there is nothing to wait for,
// and, interrupted by a signal, Linux's sock_intr_errno: EINTR for a call
// with a timeout (SO_RCVTIMEO, SO_SNDTIMEO), else errRestartSys (made
// again under SA_RESTART).
func sockBlock(w net.Wait, deadline int64) abi.Errno {
	if w.Addr == 0 {
		return abi.EAGAIN
	}
	switch blockIntr(&sockWQ[w.Sock], 0, w.Addr, w.Val, deadline) {
	case sched.WakeTimeout:
		return abi.EAGAIN
	case sched.WakeSignal:
		if deadline != 0 {
			return abi.EINTR
		}
		return errRestartSys
	}
	return 0
}

// sockDeadline is when a blocking call on s gives up (SO_RCVTIMEO,
// SO_SNDTIMEO), 0 for never.
func sockDeadline(s int, send bool) int64 {
	if t := sockets.Timeout(s, send); t != 0 {
		return nanotime() + t
	}
	return 0
}

// putSockaddr writes socket s's address (peer: its peer's) to the
// program's buffer p of *lp bytes, truncated to fit, and its whole length
// to *lp, as Linux's move_addr_to_user.
func putSockaddr(s int, peer bool, p, lp uintptr) abi.Errno {
	var sa [net.AddrMax]byte
	n, e := sockets.Name(s, peer, &sa)
	if e != 0 {
		return abi.Errno(e)
	}
	return copySockaddr(sa[:n], p, lp)
}

func copySockaddr(sa []byte, p, lp uintptr) abi.Errno {
	l, e := userLen(lp)
	if e != 0 {
		return e
	}
	return copyLen(sa[:min(l, len(sa))], p, lp, len(sa))
}

// sockSend sends v on s (to: nil for the peer): a blocking stream send
// waits until all is sent, a message send until it is queued.
func sockSend(s int, v *net.Iov, flags int, to *net.Addr, ctl *net.Ctl) (uintptr, abi.Errno) {
	nb := flags&unix.MSG_DONTWAIT != 0 || sockets.Nonblocking(s)
	if nb {
		flags |= unix.MSG_DONTWAIT
	}
	stream := sockets.Type(s) == unix.SOCK_STREAM
	deadline := sockDeadline(s, true)
	done := 0
	for {
		c, w, e := sockets.SendMsg(s, v, done, flags, to, ctl)
		done += c
		if e == 0 && (!stream || done >= v.Len) {
			return uintptr(done), 0
		}
		if e == 0 {
			continue
		}
		var be abi.Errno
		if e == unix.EAGAIN && !nb {
			if be = sockBlock(w, deadline); be == 0 {
				continue
			}
		}
		if done > 0 {
			return uintptr(done), 0 // a signal too: what was sent
		}
		if be != 0 && be != abi.EAGAIN {
			return 0, be
		}
		if e == unix.EPIPE && (!stream || flags&unix.MSG_NOSIGNAL != 0) {
			return 0, epipeQuiet
		}
		return 0, abi.Errno(e) // a stream's EPIPE: syscall raises SIGPIPE
	}
}

// sockRecv receives into v on s; a blocking receive waits for data, end
// of file or an error (MSG_WAITALL on a stream: until v is full).
func sockRecv(s int, v *net.Iov, flags int, m *net.Msg) abi.Errno {
	nb := flags&unix.MSG_DONTWAIT != 0 || sockets.Nonblocking(s)
	if nb {
		flags |= unix.MSG_DONTWAIT
	}
	waitAll := flags&unix.MSG_WAITALL != 0 && flags&unix.MSG_PEEK == 0 && sockets.Type(s) == unix.SOCK_STREAM
	deadline := sockDeadline(s, false)
	done := 0
	var cred net.Cred
	for {
		part := *v
		if done > 0 {
			part = skipIov(v, done)
		}
		w, e := sockets.Recv(s, &part, flags, m)
		if e == 0 && m.N > 0 && waitAll && done+m.N < v.Len && !m.Stop && m.FDs == 0 {
			// Not past a control boundary (descriptors, other
			// credentials), as Linux's unix_stream_read_generic; the
			// first part's credentials are the message's.
			if done == 0 {
				cred = m.Cred
			}
			done += m.N
			continue
		}
		var be abi.Errno
		if e == unix.EAGAIN && !nb {
			if be = sockBlock(w, deadline); be == 0 {
				continue
			}
		}
		if done > 0 {
			m.N += done
			if m.Cred.On {
				m.Cred = cred
			}
			return 0
		}
		if be != 0 && be != abi.EAGAIN {
			return be
		}
		return abi.Errno(e)
	}
}

// skipIov is v without its first k bytes (one buffer: MSG_WAITALL's
// continuation; a vector goes on as one buffer of its first segment
// that has room, which is enough for what remains to be waited for).
func skipIov(v *net.Iov, k int) net.Iov {
	if v.Vec == 0 {
		return net.Iov{User: v.User + uintptr(k), Len: v.Len - k}
	}
	for i := 0; i < v.N; i++ {
		iov, e := mm.Get[[2]uintptr](v.Vec + uintptr(i)*16)
		if e != 0 {
			break
		}
		base, l := iov[0], int(min(iov[1], uintptr(maxRW)))
		if k < l {
			return net.Iov{User: base + uintptr(k), Len: l - k}
		}
		k -= l
	}
	return net.Iov{}
}

// socketOps: sockets (package net).
var socketOps = fileOps{
	dupOK: true,
	read:  sockRead,
	write: sockWrite,
	stat:  sockStat,
	statfs: func(o ofile, st *unix.Statfs_t) abi.Errno {
		*st = unix.Statfs_t{Type: sockfsMagic, Bsize: mm.PageSize, Namelen: 255, Frsize: mm.PageSize, Flags: stValid}
		return 0
	},
	getfl:    sockGetfl,
	setfl:    func(o ofile, flags int) abi.Errno { sockets.SetNonblocking(o.h, flags&unix.O_NONBLOCK != 0); return 0 },
	pollable: sockPollable,
	poll:     func(w *watch) (uint32, uint32, bool) { return sockets.Poll(int(w.h), w.id) },
}

// sockRead and sockWrite are read and write (and readv, writev) on a
// socket.
func sockRead(o ofile, u *uio) (uintptr, abi.Errno) {
	if e := u.check(true); e != 0 {
		return 0, e
	}
	v := u.iov()
	if v.Len == 0 {
		return 0, 0 // as Linux's sock_read_iter
	}
	var m net.Msg
	e := sockRecv(o.h, &v, 0, &m)
	scmDiscard(&m) // no control buffer: descriptors received are closed, as Linux's scm_recv
	return uintptr(m.N), e
}

func sockWrite(o ofile, u *uio) (uintptr, abi.Errno) {
	v := u.iov()
	return sockSend(o.h, &v, 0, nil, nil)
}

// sockfsMagic is the f_type of Linux's sockfs, which fstatfs reports for
// a socket.
const sockfsMagic = 0x534f434b

func sockStat(o ofile, st *unix.Stat_t) abi.Errno {
	*st = unix.Stat_t{Mode: unix.S_IFSOCK | 0o777, Blksize: mm.PageSize}
	return 0
}

func sockGetfl(o ofile) (uintptr, abi.Errno) {
	r := uintptr(unix.O_RDWR)
	if sockets.Nonblocking(o.h) {
		r |= unix.O_NONBLOCK
	}
	return r, 0
}

func sockPollable(o ofile) (int32, uint64, uintptr, abi.Errno) {
	id, seq := sockets.Pollable(o.h)
	return int32(o.h), id, seq, 0
}

// struct msghdr's fields (64-bit Linux).
type msghdr struct {
	name       uintptr
	namelen    uint32
	_          uint32
	iov        uintptr
	iovlen     uintptr
	control    uintptr
	controllen uintptr
	flags      int32
	_          int32
}

var (
	sockLock sched.TWALock
	sockWQ   [net.NumSockets]sched.WaitQueue
	sockets  net.Net[netenv]
)

const (
	afMax     = 46   // Linux's NPROTO: families from here on are EAFNOSUPPORT before the type is looked at
	uioMaxIov = 1024 // iovecs in one call
	// maxRW is Linux's MAX_RW_COUNT: one call transfers at most this.
	maxRW = 1<<31 - 1 - (mm.PageSize - 1)
	// epipeQuiet is EPIPE without SIGPIPE (a datagram socket's, or
	// MSG_NOSIGNAL): syscall reports it as EPIPE and raises nothing.
	epipeQuiet = abi.EPIPE | 1<<16
	msghdrSize = unsafe.Sizeof(msghdr{})
)

func sockProcFD(o ofile, s *procfs.Snapshot, d *procfs.FD) {
	d.Kind, d.MntID = procfs.FDSocket, procMntSock
	d.Ino, _ = sockets.Pollable(o.h)
}
