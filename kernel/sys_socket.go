package kernel

import (
	"unsafe"

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
// TCP/IP comes (issue 18).

type netenv struct{ pageSupplier }

func (netenv) Lock()   { sockLock.Lock() }
func (netenv) Unlock() { sockLock.Unlock() }
func (netenv) Wake(s int) {
	sockWQ[s].Wake(0, len(files))
	epollNotify()
}
func (netenv) UserBuf(p, n uintptr, write bool) ([]byte, bool) {
	b, e := userBuf(p, n, write)
	return b, e == 0
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

// isSocket reports whether fd is a socket descriptor.
func isSocket(fd int) bool { return fd >= 0 && fd < len(files) && files[fd].kind == fileSocket }

// installSocket gives socket s a descriptor (closing s if none is free).
func installSocket(s int) (uintptr, abi.Errno) { return installHandle(fileSocket, s) }

// sockType splits socket's type argument into the type and its flags:
// EINVAL for flags other than SOCK_NONBLOCK and SOCK_CLOEXEC.
func sockType(domain, typ int) (int, bool, abi.Errno) {
	t := typ &^ (unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC)
	if t&^0xf != 0 {
		return 0, false, abi.EINVAL
	}
	if domain < 0 || domain >= afMax {
		return 0, false, abi.Errno(unix.EAFNOSUPPORT)
	}
	if t >= net.SockMax {
		return 0, false, abi.EINVAL
	}
	if domain != unix.AF_UNIX {
		// AF_INET, AF_INET6 and AF_NETLINK come with TCP/IP (issue 18).
		return 0, false, abi.Errno(unix.EAFNOSUPPORT)
	}
	return t, typ&unix.SOCK_NONBLOCK != 0, 0
}

func sysSocket(domain, typ, proto int) (uintptr, abi.Errno) {
	t, nb, e := sockType(domain, typ)
	if e != 0 {
		return 0, e
	}
	s, ne := sockets.Socket(t, proto, nb)
	if ne != 0 {
		return 0, abi.Errno(ne)
	}
	return installSocket(s)
}

func sysSocketpair(domain, typ, proto int, sv uintptr) abi.Errno {
	t, nb, e := sockType(domain, typ)
	if e != 0 {
		return e
	}
	if !mm.UserW(sv, 8) {
		return abi.EFAULT
	}
	a, b, ne := sockets.Pair(t, proto, nb)
	if ne != 0 {
		return abi.Errno(ne)
	}
	return installPair(fileSocket, a, b, sv)
}

// sockaddr is a copy of the program's sockaddr of n bytes at p: EINVAL
// beyond sockaddr_storage's 128, EFAULT if unreadable (Linux's
// move_addr_to_kernel).
func sockaddr(p, n uintptr) (sa sockaddrBuf, e abi.Errno) {
	if int(n) < 0 || n > uintptr(len(sa.b)) {
		return sa, abi.EINVAL
	}
	b, e := mm.UserBuf(p, n)
	if e != 0 {
		return sa, e
	}
	sa.n = copy(sa.b[:], b)
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

// sockGetAddr is sockGet(fd) and the program's sockaddr (sockaddr), as
// bind and connect take them; on error it holds no reference.
func sockGetAddr(fd int, p, n uintptr) (int, sockaddrBuf, abi.Errno) {
	s, e := sockGet(fd)
	if e != 0 {
		return -1, sockaddrBuf{}, e
	}
	sa, e := sockaddr(p, n)
	if e != 0 {
		sockPut(s)
		return -1, sa, e
	}
	return s, sa, 0
}

func sysBind(fd int, p, n uintptr) abi.Errno {
	s, sa, e := sockGetAddr(fd, p, n)
	if e != 0 {
		return e
	}
	defer sockPut(s)
	kind, name, ne := net.ParseAddr(sa.bytes())
	switch {
	case ne != 0:
	case kind == net.AddrAuto:
		ne = sockets.Autobind(s)
	case kind == net.AddrAbstract:
		ne = sockets.BindAbstract(s, name)
	default:
		// As Linux: the node first (EADDRINUSE if the path exists),
		// then the socket's name; a socket already named takes the
		// node away again.
		if ne = vfs.BindSocket(fs.AtCWD, name, 0o777, sockets.ID(s)); ne == 0 {
			if ne = sockets.BindPath(s, name); ne != 0 {
				vfs.Unlink(fs.AtCWD, name, 0)
			}
		}
	}
	return abi.Errno(ne)
}

func sysListen(fd, backlog int) abi.Errno {
	s, e := sockGet(fd)
	if e != 0 {
		return e
	}
	if uint32(backlog) > net.SomaxConn {
		backlog = net.SomaxConn
	}
	e = abi.Errno(sockets.Listen(s, backlog))
	sockPut(s)
	return e
}

// sockBlock waits for w (until deadline, 0 for none); false if the
// deadline passed or there is nothing to wait for.
func sockBlock(w net.Wait, deadline int64) bool {
	if w.Addr == 0 {
		return false
	}
	return !sched.Block(&sockWQ[w.Sock], 0, w.Addr, w.Val, deadline)
}

// sockDeadline is when a blocking call on s gives up (SO_RCVTIMEO,
// SO_SNDTIMEO), 0 for never.
func sockDeadline(s int, send bool) int64 {
	if t := sockets.Timeout(s, send); t != 0 {
		return nanotime() + t
	}
	return 0
}

func sysAccept4(fd int, p, lp uintptr, flags int) (uintptr, abi.Errno) {
	if flags&^(unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC) != 0 {
		return 0, abi.EINVAL
	}
	s, e := sockGet(fd)
	if e != 0 {
		return 0, e
	}
	defer sockPut(s)
	// The address's memory is checked first: a connection taken off
	// the queue is not lost to a bad pointer.
	if p != 0 && (!mm.UserW(lp, 4) || !mm.UserW(p, uintptr(*at[uint32](lp)))) {
		return 0, abi.EFAULT
	}
	nb := sockets.Nonblocking(s)
	deadline := sockDeadline(s, false)
	for {
		c, w, ne := sockets.Accept(s)
		if ne == unix.EAGAIN && !nb && sockBlock(w, deadline) {
			continue
		}
		if ne != 0 {
			return 0, abi.Errno(ne)
		}
		sockets.SetNonblocking(c, flags&unix.SOCK_NONBLOCK != 0)
		nfd, e := installSocket(c)
		if e == 0 && p != 0 {
			putSockaddr(c, true, p, lp)
		}
		return nfd, e
	}
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

// userLen is the program's socklen_t at lp, which the call writes back:
// EFAULT if it may not, EINVAL if it is negative.
func userLen(lp uintptr) (int, abi.Errno) {
	if !mm.UserW(lp, 4) {
		return 0, abi.EFAULT
	}
	l := int32(*at[uint32](lp))
	if l < 0 {
		return 0, abi.EINVAL
	}
	return int(l), 0
}

// copyLen copies b to the program's buffer p and stores n at lp (checked
// by userLen).
func copyLen(b []byte, p, lp uintptr, n int) abi.Errno {
	u, e := mm.UserBufW(p, uintptr(len(b)))
	if e != 0 {
		return e
	}
	copy(u, b)
	*at[uint32](lp) = uint32(n)
	return 0
}

func sysGetsockname(fd int, p, lp uintptr, peer bool) abi.Errno {
	s, e := sockGet(fd)
	if e != 0 {
		return e
	}
	e = putSockaddr(s, peer, p, lp)
	sockPut(s)
	return e
}

func sysConnect(fd int, p, n uintptr) abi.Errno {
	s, sa, e := sockGetAddr(fd, p, n)
	if e != 0 {
		return e
	}
	defer sockPut(s)
	var a net.Addr
	ap := &a
	if sockets.Type(s) == unix.SOCK_DGRAM && sa.n >= 2 && sa.b[0] == unix.AF_UNSPEC && sa.b[1] == 0 {
		ap = nil // disconnect
	} else if a, e = peerAddr(sa.bytes()); e != 0 {
		return e
	}
	nb := sockets.Nonblocking(s)
	deadline := sockDeadline(s, true)
	for {
		w, ne := sockets.Connect(s, ap)
		if ne == unix.EAGAIN && !nb {
			if sockBlock(w, deadline) {
				continue
			}
			if deadline != 0 {
				return abi.Errno(unix.EINPROGRESS) // SO_SNDTIMEO ran out, as Linux says it
			}
		}
		return abi.Errno(ne)
	}
}

func sysShutdown(fd, how int) abi.Errno {
	s, e := sockGet(fd)
	if e != 0 {
		return e
	}
	e = abi.Errno(sockets.Shutdown(s, how))
	sockPut(s)
	return e
}

func sysSetsockopt(fd, level, name int, p, n uintptr) abi.Errno {
	s, e := sockGet(fd)
	if e != 0 {
		return e
	}
	defer sockPut(s)
	if int32(n) < 0 {
		return abi.EINVAL
	}
	if level != unix.SOL_SOCKET {
		return abi.Errno(unix.EOPNOTSUPP)
	}
	if n < 4 {
		return abi.EINVAL
	}
	b, e := mm.UserBuf(p, min(n, 16))
	if e != 0 {
		return e
	}
	var v [16]byte
	return abi.Errno(sockets.Setsockopt(s, level, name, v[:copy(v[:], b)]))
}

func sysGetsockopt(fd, level, name int, p, lp uintptr) abi.Errno {
	s, e := sockGet(fd)
	if e != 0 {
		return e
	}
	defer sockPut(s)
	l, e := userLen(lp)
	if e != 0 {
		return e
	}
	var v [16]byte
	c, ne := sockets.Getsockopt(s, level, name, &v)
	if ne != 0 {
		return abi.Errno(ne)
	}
	c = min(c, l)
	return copyLen(v[:c], p, lp, c)
}

// userIov checks the program's iovec array of cnt entries at p and every
// buffer in it (write: the kernel fills them), as Linux's import_iovec:
// EINVAL for more than 1024 entries or a negative length, EFAULT for bad
// memory; the total is cut at maxRW.
func userIov(p, cnt uintptr, write bool) (net.Iov, abi.Errno) {
	if cnt > uioMaxIov {
		return net.Iov{}, abi.EINVAL
	}
	if cnt == 0 {
		return net.Iov{}, 0
	}
	if !mm.UserOK(p, cnt*16) {
		return net.Iov{}, abi.EFAULT
	}
	total := 0
	for i := uintptr(0); i < cnt; i++ {
		base, l := *at[uintptr](p + i*16), *at[uintptr](p + i*16 + 8)
		if int64(l) < 0 {
			return net.Iov{}, abi.EINVAL
		}
		if _, e := userBuf(base, l, write); e != 0 {
			return net.Iov{}, e
		}
		total += int(min(l, uintptr(maxRW-total)))
	}
	return net.Iov{Vec: p, N: int(cnt), Len: total}, 0
}

// sockSend sends v on s (to: nil for the peer): a blocking stream send
// waits until all is sent, a message send until it is queued.
func sockSend(s int, v *net.Iov, flags int, to *net.Addr) (uintptr, abi.Errno) {
	nb := flags&unix.MSG_DONTWAIT != 0 || sockets.Nonblocking(s)
	if nb {
		flags |= unix.MSG_DONTWAIT
	}
	stream := sockets.Type(s) == unix.SOCK_STREAM
	deadline := sockDeadline(s, true)
	done := 0
	for {
		c, w, e := sockets.Send(s, v, done, flags, to)
		done += c
		if e == 0 && (!stream || done >= v.Len) {
			return uintptr(done), 0
		}
		if e == 0 || e == unix.EAGAIN && !nb && sockBlock(w, deadline) {
			continue
		}
		if done > 0 {
			return uintptr(done), 0
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
	for {
		part := *v
		if done > 0 {
			part = skipIov(v, done)
		}
		w, e := sockets.Recv(s, &part, flags, m)
		if e == 0 && m.N > 0 && waitAll && done+m.N < v.Len {
			done += m.N
			continue
		}
		if e == unix.EAGAIN && !nb && sockBlock(w, deadline) {
			continue
		}
		if done > 0 {
			m.N += done
			return 0
		}
		return abi.Errno(e)
	}
}

// skipIov is v without its first k bytes (one buffer: MSG_WAITALL's
// continuation; a vector goes on as one buffer of its first segment
// that has room, which is enough for what remains to be waited for).
func skipIov(v *net.Iov, k int) net.Iov {
	if v.Vec == 0 {
		return net.Iov{One: v.One[k:], Len: v.Len - k}
	}
	for i := 0; i < v.N; i++ {
		a := v.Vec + uintptr(i)*16
		base, l := *at[uintptr](a), int(*at[uintptr](a + 8))
		if k < l {
			b, e := mm.UserBufW(base+uintptr(k), uintptr(l-k))
			if e != 0 {
				break
			}
			return net.Iov{One: b, Len: len(b)}
		}
		k -= l
	}
	return net.Iov{}
}

// sockRW is read and write (and readv, writev) on socket fd.
func sockRW(fd int, v *net.Iov, write bool) (uintptr, abi.Errno) {
	s, e := sockGet(fd)
	if e != 0 {
		return 0, e
	}
	defer sockPut(s)
	if write {
		return sockSend(s, v, 0, nil)
	}
	if v.Len == 0 {
		return 0, 0 // as Linux's sock_read_iter
	}
	var m net.Msg
	e = sockRecv(s, v, 0, &m)
	return uintptr(m.N), e
}

// sockGetBuf is the program's buffer of n bytes at p, cut at maxRW
// (write: the kernel fills it), as an Iov, and sockGet(fd), checked in
// that order as sendto and recvfrom do; on error it holds no reference.
func sockGetBuf(fd int, p, n uintptr, write bool) (int, net.Iov, abi.Errno) {
	b, e := userBuf(p, min(n, maxRW), write)
	if e != 0 {
		return -1, net.Iov{}, e
	}
	s, e := sockGet(fd)
	return s, net.Iov{One: b, Len: len(b)}, e
}

func sysSendto(fd int, p, n uintptr, flags int, ap, an uintptr) (uintptr, abi.Errno) {
	s, v, e := sockGetBuf(fd, p, n, false)
	if e != 0 {
		return 0, e
	}
	defer sockPut(s)
	return sendTo(s, &v, flags, ap, an)
}

// sendTo sends with an address, if ap is not 0: a stream socket refuses
// any (net), a seqpacket socket ignores it, a datagram socket resolves it.
func sendTo(s int, v *net.Iov, flags int, ap, an uintptr) (uintptr, abi.Errno) {
	var a net.Addr
	var to *net.Addr
	if ap != 0 && an != 0 {
		sa, e := sockaddr(ap, an)
		if e != 0 {
			return 0, e
		}
		to = &a
		if sockets.Type(s) == unix.SOCK_DGRAM {
			if a, e = peerAddr(sa.bytes()); e != 0 {
				return 0, e
			}
		}
	}
	return sockSend(s, v, flags, to)
}

func sysRecvfrom(fd int, p, n uintptr, flags int, ap, lp uintptr) (uintptr, abi.Errno) {
	s, v, e := sockGetBuf(fd, p, n, true)
	if e != 0 {
		return 0, e
	}
	defer sockPut(s)
	if ap != 0 && !mm.UserW(lp, 4) {
		return 0, abi.EFAULT
	}
	var m net.Msg
	if e = sockRecv(s, &v, flags, &m); e != 0 {
		return 0, e
	}
	if ap != 0 {
		if e = copySockaddr(m.Addr[:m.AddrLen], ap, lp); e != 0 {
			return 0, e
		}
	}
	return uintptr(m.N), 0
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

// sockGetMsg is sockGet(fd), then the program's msghdr at p and its
// iovecs (write: recvmsg fills them and the header); on error it holds no
// reference.
func sockGetMsg(fd int, p uintptr, write bool) (int, *msghdr, net.Iov, abi.Errno) {
	s, e := sockGet(fd)
	if e != 0 {
		return -1, nil, net.Iov{}, e
	}
	h, v, e := userMsghdr(p, write)
	if e != 0 {
		sockPut(s)
		return -1, nil, net.Iov{}, e
	}
	return s, h, v, 0
}

// userMsghdr reads the program's msghdr at p and its iovecs.
func userMsghdr(p uintptr, write bool) (*msghdr, net.Iov, abi.Errno) {
	if !mm.UserOK(p, msghdrSize) || write && !mm.UserW(p, msghdrSize) {
		return nil, net.Iov{}, abi.EFAULT
	}
	h := at[msghdr](p)
	if h.iovlen > uioMaxIov {
		return nil, net.Iov{}, abi.Errno(unix.EMSGSIZE)
	}
	v, e := userIov(h.iov, h.iovlen, write)
	return h, v, e
}

func sysSendmsg(fd int, p uintptr, flags int) (uintptr, abi.Errno) {
	s, h, v, e := sockGetMsg(fd, p, false)
	if e != 0 {
		return 0, e
	}
	defer sockPut(s)
	if h.controllen != 0 {
		// SCM_RIGHTS and SCM_CREDENTIALS are not supported yet.
		return 0, abi.Errno(unix.EOPNOTSUPP)
	}
	an := uintptr(h.namelen)
	if h.name == 0 {
		an = 0
	}
	return sendTo(s, &v, flags, h.name, min(an, 128))
}

func sysRecvmsg(fd int, p uintptr, flags int) (uintptr, abi.Errno) {
	s, h, v, e := sockGetMsg(fd, p, true)
	if e != 0 {
		return 0, e
	}
	defer sockPut(s)
	var m net.Msg
	if e = sockRecv(s, &v, flags&^unix.MSG_CMSG_CLOEXEC, &m); e != 0 {
		return 0, e
	}
	if h.name != 0 {
		c := min(int(h.namelen), m.AddrLen)
		if int32(h.namelen) < 0 {
			c = 0
		}
		b, e := mm.UserBufW(h.name, uintptr(c))
		if e != 0 {
			return 0, e
		}
		copy(b, m.Addr[:c])
	}
	h.namelen = uint32(m.AddrLen)
	h.controllen = 0
	h.flags = int32(m.Flags)
	return uintptr(m.N), 0
}

// sysReadv and sysWritev: one transfer of the whole vector on a socket (a
// datagram is one message), a transfer per buffer on other descriptors,
// stopping at the first short one.
func sysReadv(fd int, p, cnt uintptr, write bool) (uintptr, abi.Errno) {
	v, e := userIov(p, cnt, !write)
	if e != 0 {
		return 0, e
	}
	if isSocket(fd) {
		return sockRW(fd, &v, write)
	}
	done := uintptr(0)
	for i := uintptr(0); i < cnt; i++ {
		base, l := *at[uintptr](p + i*16), *at[uintptr](p + i*16 + 8)
		if l == 0 {
			continue
		}
		var c uintptr
		if write {
			c, e = sysWrite(fd, base, l)
		} else {
			c, e = sysRead(fd, base, l)
		}
		if e != 0 {
			if done > 0 {
				return done, 0
			}
			return 0, e
		}
		done += c
		if c < l {
			break
		}
	}
	return done, 0
}
