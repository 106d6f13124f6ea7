package socket

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/kernel/net"
)

// The socket calls, each as Linux's: its arguments checked in Linux's
// order, the socket held for the call (Env.Get, put).

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
	switch domain {
	case unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK:
	default:
		return 0, false, abi.Errno(unix.EAFNOSUPPORT)
	}
	return t, typ&unix.SOCK_NONBLOCK != 0, 0
}

func (k Calls[E]) Socket(domain, typ, proto int) (uintptr, abi.Errno) {
	socks := k.socks()
	t, nb, e := sockType(domain, typ)
	if e != 0 {
		return 0, e
	}
	s, ne := socks.Socket(domain, t, proto, nb)
	if ne != 0 {
		return 0, abi.Errno(ne)
	}
	return k.env().Install(s)
}

func (k Calls[E]) Socketpair(domain, typ, proto int, sv uintptr) abi.Errno {
	socks := k.socks()
	t, nb, e := sockType(domain, typ)
	if e != 0 {
		return e
	}
	if domain != unix.AF_UNIX {
		return abi.Errno(unix.EOPNOTSUPP) // as Linux's inet sockets
	}
	if !mm.UserW(sv, 8) {
		return abi.EFAULT
	}
	a, b, ne := socks.Pair(t, proto, nb)
	if ne != 0 {
		return abi.Errno(ne)
	}
	return k.env().InstallPair(a, b, sv, typ&unix.SOCK_CLOEXEC != 0)
}

// getAddr is Env.Get(fd) and the program's sockaddr (sockaddr), as
// bind and connect take them; on error it holds no reference.
func (k Calls[E]) getAddr(fd int, p, n uintptr) (int, sockaddrBuf, abi.Errno) {
	s, e := k.env().Get(fd)
	if e != 0 {
		return -1, sockaddrBuf{}, e
	}
	sa, e := sockaddr(p, n)
	if e != 0 {
		k.put(s)
		return -1, sa, e
	}
	return s, sa, 0
}

func (k Calls[E]) Bind(fd int, p, n uintptr) abi.Errno {
	socks := k.socks()
	s, sa, e := k.getAddr(fd, p, n)
	if e != 0 {
		return e
	}
	defer k.put(s)
	switch socks.Family(s) {
	case unix.AF_NETLINK:
		return abi.Errno(socks.BindNL(s, sa.bytes()))
	case unix.AF_INET, unix.AF_INET6:
		return abi.Errno(socks.BindInet(s, sa.bytes()))
	}
	kind, name, ne := net.ParseAddr(sa.bytes())
	switch {
	case ne != 0:
	case kind == net.AddrAuto:
		ne = socks.Autobind(s)
	case kind == net.AddrAbstract:
		ne = socks.BindAbstract(s, name)
	default:
		// As Linux: the node first (EADDRINUSE if the path exists),
		// then the socket's name; a socket already named takes the
		// node away again.
		if ne = k.env().BindPath(net.NoEscape(name), socks.ID(s)); ne == 0 {
			if ne = socks.BindPath(s, name); ne != 0 {
				k.env().UnbindPath(net.NoEscape(name))
			}
		}
	}
	return abi.Errno(ne)
}

func (k Calls[E]) Listen(fd, backlog int) abi.Errno {
	socks := k.socks()
	s, e := k.env().Get(fd)
	if e != 0 {
		return e
	}
	if uint32(backlog) > net.SomaxConn {
		backlog = net.SomaxConn
	}
	e = abi.Errno(socks.Listen(s, backlog))
	if e == 0 {
		// Until the service has taken the listen (net.ListenWait), for
		// at most listenWait: a service that does not poll leaves the
		// listener as it was before the wait was made.
		for end := k.env().Now() + listenWait; ; {
			w, ok := socks.ListenWait(s)
			if !ok || k.env().Block(w, end) != 0 {
				break
			}
		}
	}
	k.put(s)
	return e
}

// listenWait bounds listen's wait for the network service, in ns.
const listenWait = 1_000_000_000

func (k Calls[E]) Accept4(fd int, p, lp uintptr, flags int) (uintptr, abi.Errno) {
	socks := k.socks()
	if flags&^(unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC) != 0 {
		return 0, abi.EINVAL
	}
	s, e := k.env().Get(fd)
	if e != 0 {
		return 0, e
	}
	defer k.put(s)
	// The address's memory is checked first: a connection taken off
	// the queue is not lost to a bad pointer or a negative length
	// (Linux's move_addr_to_user, which says EINVAL for that, after the
	// accept). Linux writes min(*addrlen, the address's length), which
	// is not known yet: what the shortest address would take must be
	// there (a unix socket's unnamed peer is the family alone).
	if p != 0 {
		l, e := mm.Get[int32](lp)
		if e != 0 || !mm.UserW(lp, 4) {
			return 0, abi.EFAULT
		}
		if l < 0 {
			return 0, abi.EINVAL
		}
		least := int32(2)
		switch socks.Family(s) {
		case unix.AF_INET:
			least = unix.SizeofSockaddrInet4
		case unix.AF_INET6:
			least = unix.SizeofSockaddrInet6
		}
		if !mm.UserW(p, uintptr(min(l, least))) {
			return 0, abi.EFAULT
		}
	}
	// The descriptor first, as Linux's do_accept: with the table full
	// the call is EMFILE and the connection stays queued.
	fd1, e := k.env().ReserveFD()
	if e != 0 {
		return 0, e
	}
	nb := socks.Nonblocking(s)
	deadline := k.deadline(s, false)
	for {
		c, w, ne := socks.Accept(s)
		if ne == unix.EAGAIN && !nb {
			if be := k.env().Block(w, deadline); be == 0 {
				continue
			} else if be != abi.EAGAIN {
				k.env().Unreserve(fd1)
				return 0, be
			}
		}
		if ne != 0 {
			k.env().Unreserve(fd1)
			return 0, abi.Errno(ne)
		}
		socks.SetNonblocking(c, flags&unix.SOCK_NONBLOCK != 0)
		k.env().InstallAt(fd1, c)
		nfd, e := uintptr(fd1), abi.Errno(0)
		if p != 0 {
			var sa [net.AddrMax]byte
			l, ne := socks.AcceptedName(c, &sa)
			if e = abi.Errno(ne); e == 0 {
				e = copySockaddr(sa[:l], p, lp)
			}
			if e != 0 {
				// Unmapped (or the length made negative) while it
				// waited: the connection is dropped, as Linux's
				// accept4 drops it when the copy fails.
				k.env().CloseFD(int(nfd))
				return 0, e
			}
		}
		return nfd, e
	}
}

func (k Calls[E]) Getsockname(fd int, p, lp uintptr, peer bool) abi.Errno {
	s, e := k.env().Get(fd)
	if e != 0 {
		return e
	}
	e = k.putSockaddr(s, peer, p, lp)
	k.put(s)
	return e
}

func (k Calls[E]) Connect(fd int, p, n uintptr) abi.Errno {
	socks := k.socks()
	s, sa, e := k.getAddr(fd, p, n)
	if e != 0 {
		return e
	}
	defer k.put(s)
	if socks.Family(s) == unix.AF_NETLINK {
		return abi.Errno(socks.ConnectNL(s, sa.bytes()))
	}
	var a net.Addr
	ap := &a
	if socks.Family(s) != unix.AF_UNIX {
		a.Raw = sa.bytes()
	} else if socks.Type(s) == unix.SOCK_DGRAM && sa.n >= 2 && sa.b[0] == unix.AF_UNSPEC && sa.b[1] == 0 {
		ap = nil // disconnect
	} else if a, e = k.peerAddr(sa.bytes()); e != 0 {
		return e
	}
	nb := socks.Nonblocking(s)
	deadline := k.deadline(s, true)
	for {
		w, ne := socks.Connect(s, ap)
		if ne == unix.EAGAIN && !nb {
			be := k.env().Block(w, deadline)
			switch {
			case be == 0:
				continue
			case be != abi.EAGAIN:
				return be
			case deadline != 0:
				return abi.Errno(unix.EINPROGRESS) // SO_SNDTIMEO ran out, as Linux says it
			}
		}
		return abi.Errno(ne)
	}
}

func (k Calls[E]) Shutdown(fd, how int) abi.Errno {
	socks := k.socks()
	s, e := k.env().Get(fd)
	if e != 0 {
		return e
	}
	e = abi.Errno(socks.Shutdown(s, how))
	k.put(s)
	return e
}

func (k Calls[E]) Setsockopt(fd, level, name int, p, n uintptr) abi.Errno {
	socks := k.socks()
	s, e := k.env().Get(fd)
	if e != 0 {
		return e
	}
	defer k.put(s)
	if int32(n) < 0 {
		return abi.EINVAL
	}
	if level != unix.SOL_SOCKET && socks.Family(s) == unix.AF_UNIX {
		return abi.Errno(unix.EOPNOTSUPP)
	}
	if n < 4 {
		return abi.EINVAL
	}
	var v [16]byte
	if e := mm.CopyIn(v[:min(n, 16)], p); e != 0 {
		return e
	}
	return abi.Errno(socks.Setsockopt(s, level, name, v[:min(n, 16)]))
}

func (k Calls[E]) Getsockopt(fd, level, name int, p, lp uintptr) abi.Errno {
	socks := k.socks()
	s, e := k.env().Get(fd)
	if e != 0 {
		return e
	}
	defer k.put(s)
	l, e := userLen(lp)
	if e != 0 {
		return e
	}
	var v [16]byte
	c, ne := socks.Getsockopt(s, level, name, &v)
	if ne != 0 {
		return abi.Errno(ne)
	}
	c = min(c, l)
	return copyLen(v[:c], p, lp, c)
}

// getBuf is the program's buffer of n bytes at p, cut at mm.MaxRW
// (write: the kernel fills it), as an Iov, and Env.Get(fd), checked in
// that order as sendto and recvfrom do; on error it holds no reference.
func (k Calls[E]) getBuf(fd int, p, n uintptr, write bool) (int, net.Iov, abi.Errno) {
	if !k.env().UserRange(p, n, write) {
		return -1, net.Iov{}, abi.EFAULT
	}
	s, e := k.env().Get(fd)
	return s, net.Iov{User: p, Len: int(min(n, mm.MaxRW))}, e
}

func (k Calls[E]) Sendto(fd int, p, n uintptr, flags int, ap, an uintptr) (uintptr, abi.Errno) {
	s, v, e := k.getBuf(fd, p, n, false)
	if e != 0 {
		return 0, e
	}
	defer k.put(s)
	return k.sendTo(s, &v, flags, ap, an, nil)
}

// sendTo sends with an address, if ap is not 0: a stream socket refuses
// any (net), a seqpacket socket ignores it, a datagram socket resolves it.
func (k Calls[E]) sendTo(s int, v *net.Iov, flags int, ap, an uintptr, c *net.Ctl) (uintptr, abi.Errno) {
	socks := k.socks()
	var a net.Addr
	var to *net.Addr
	if ap != 0 && an != 0 {
		sa, e := sockaddr(ap, an)
		if e != 0 {
			return 0, e
		}
		to = &a
		if socks.Family(s) != unix.AF_UNIX {
			a.Raw = sa.bytes()
		} else if socks.Type(s) == unix.SOCK_DGRAM {
			if a, e = k.peerAddr(sa.bytes()); e != 0 {
				return 0, e
			}
		}
	}
	return k.send(s, v, flags, to, c)
}

func (k Calls[E]) Recvfrom(fd int, p, n uintptr, flags int, ap, lp uintptr) (uintptr, abi.Errno) {
	s, v, e := k.getBuf(fd, p, n, true)
	if e != 0 {
		return 0, e
	}
	defer k.put(s)
	if ap != 0 && !mm.UserW(lp, 4) {
		return 0, abi.EFAULT
	}
	var m net.Msg
	e = k.recv(s, &v, flags, &m)
	k.discard(&m) // no control buffer: descriptors received are closed, as Linux's scm_recv
	if e != 0 {
		return 0, e
	}
	if ap != 0 {
		if e = copySockaddr(m.Addr[:m.AddrLen], ap, lp); e != 0 {
			return 0, e
		}
	}
	return uintptr(m.N), 0
}

// getMsg is Env.Get(fd), then the program's msghdr at p and its
// iovecs (write: recvmsg fills them and the header); on error it holds no
// reference.
func (k Calls[E]) getMsg(fd int, p uintptr, write bool) (int, msghdr, net.Iov, abi.Errno) {
	s, e := k.env().Get(fd)
	if e != 0 {
		return -1, msghdr{}, net.Iov{}, e
	}
	h, v, e := k.userMsghdr(p, write)
	if e != 0 {
		k.put(s)
		return -1, msghdr{}, net.Iov{}, e
	}
	return s, h, v, 0
}

func (k Calls[E]) Sendmsg(fd int, p uintptr, flags int) (uintptr, abi.Errno) {
	socks := k.socks()
	s, h, v, e := k.getMsg(fd, p, false)
	if e != 0 {
		return 0, e
	}
	defer k.put(s)
	var c net.Ctl
	if h.controllen != 0 {
		if socks.Family(s) != unix.AF_UNIX {
			return 0, abi.Errno(unix.EOPNOTSUPP) // not yet for other families
		}
		if e = k.scmSend(&h, &c); e != 0 {
			socks.CtlDrop(&c)
			return 0, e
		}
	}
	an := uintptr(h.namelen)
	if h.name == 0 {
		an = 0
	}
	r, e := k.sendTo(s, &v, flags, h.name, min(an, 128), &c)
	socks.CtlDrop(&c) // what the message did not take
	return r, e
}

func (k Calls[E]) Recvmsg(fd int, p uintptr, flags int) (uintptr, abi.Errno) {
	s, h, v, e := k.getMsg(fd, p, true)
	if e != 0 {
		return 0, e
	}
	defer k.put(s)
	var m net.Msg
	if e = k.recv(s, &v, flags&^unix.MSG_CMSG_CLOEXEC, &m); e != 0 {
		k.discard(&m)
		return 0, e
	}
	if h.name != 0 {
		c := min(int(h.namelen), m.AddrLen)
		if int32(h.namelen) < 0 {
			c = 0
		}
		if e := mm.CopyOut(h.name, m.Addr[:c]); e != 0 {
			k.discard(&m)
			return 0, e
		}
	}
	cf := k.scmRecv(&h, &m, flags&unix.MSG_CMSG_CLOEXEC != 0)
	// The header goes back as Linux's ___sys_recvmsg writes it: the
	// name's and the control data's lengths and the flags.
	e1 := mm.Put(p+unsafe.Offsetof(h.namelen), uint32(m.AddrLen))
	e2 := mm.Put(p+unsafe.Offsetof(h.controllen), h.controllen)
	e3 := mm.Put(p+unsafe.Offsetof(h.flags), int32(m.Flags)|cf|int32(flags&unix.MSG_CMSG_CLOEXEC))
	if e1|e2|e3 != 0 {
		return 0, abi.EFAULT
	}
	return uintptr(m.N), 0
}
