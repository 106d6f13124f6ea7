// Package socket is the system-call side of the socket layer: the socket
// calls (socket, bind, connect, accept4, sendmsg, recvmsg, ...), read and
// write on a socket, control messages (SCM_RIGHTS, SCM_CREDENTIALS) as
// the program's cmsghdr chains carry them, and the TCP/IP service's
// private call (abi.SysNet). It turns the program's arguments — read and
// written through kernel/mm's checked copies — into calls on package
// net's sockets (kernel/net), and blocks where net says a call would
// have to wait.
//
// What is the kernel's it reaches through its type parameter (Env, an
// empty struct in kernel/): the socket layer's value itself, the
// descriptor table (a socket's descriptor, descriptors in flight),
// blocking on a socket's wait queue, the clock, path names in the file
// system, and the checked views of the program's buffers the file calls
// share (userbuf.go).
//
// Kernel-context Go, as package kernel: nothing here allocates on the Go
// heap, stores a Go pointer into memory or calls the runtime's
// scheduler; it has no state of its own. Env's methods are called
// through the type parameter's dictionary, so a slice of a local buffer
// passed to one goes through net.NoEscape. kernel/kcontext_test.go
// checks this on a built image.
package socket

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/kernel/net"
)

// Env is what the kernel supplies. It must be a value type without
// pointers (in the kernel an empty struct), and the Env of the socket
// layer it names (E is itself).
type Env[E net.Env] interface {
	net.Env
	// Net is the kernel's socket layer.
	Net() *net.Net[E]

	// Get is the socket behind descriptor fd with a reference of the
	// caller's own (Net().Close drops it): ENOTSOCK for a descriptor of
	// another kind, EBADF for none.
	Get(fd int) (int, abi.Errno)
	// Install gives socket s a descriptor (closing s if none is free).
	Install(s int) (uintptr, abi.Errno)
	// ReserveFD takes the lowest free descriptor for a socket to come
	// (EMFILE if none is free), InstallAt gives it socket s, and
	// Unreserve gives it back unused: accept4 takes its descriptor
	// before the connection, as Linux's, so that a full table leaves the
	// connection queued.
	ReserveFD() (int, abi.Errno)
	InstallAt(fd, s int)
	Unreserve(fd int)
	// InstallPair gives sockets a and b descriptors (FD_CLOEXEC if
	// cloexec) and stores them at p, which the caller has checked is
	// writable; on failure neither stays open.
	InstallPair(a, b int, p uintptr, cloexec bool) abi.Errno
	// CloseFD closes descriptor fd, as close(2).
	CloseFD(fd int)

	// FDRef is the object behind descriptor fd as a descriptor in
	// flight (its kind: net.KindSocket or the kernel's own), with a
	// reference of its own; EBADF for no descriptor, EINVAL for one
	// that may not be sent.
	FDRef(fd int) (kind, h int, e abi.Errno)
	// InstallRef gives the object of a descriptor in flight a
	// descriptor (FD_CLOEXEC if cloexec); CloseRef drops its reference.
	InstallRef(kind, h int, cloexec bool) (uintptr, abi.Errno)
	CloseRef(kind, h int)

	// Block waits for w (until deadline, 0 for none): 0 when woken (try
	// again), EAGAIN if the deadline passed or there is nothing to wait
	// for, and, interrupted by a signal, Linux's sock_intr_errno: EINTR
	// for a call with a timeout (SO_RCVTIMEO, SO_SNDTIMEO), else
	// ERESTARTSYS (made again under SA_RESTART).
	Block(w net.Wait, deadline int64) abi.Errno
	// Now is the monotonic clock in nanoseconds.
	Now() int64

	// BindPath makes a socket node for the socket of identity id at
	// path name, relative to the working directory; UnbindPath removes
	// it again. SocketAt is the identity of the socket whose node is at
	// name (ECONNREFUSED for a node that is no socket).
	BindPath(name []byte, id uint64) net.Errno
	UnbindPath(name []byte)
	SocketAt(name []byte) (uint64, net.Errno)

	// UserRange reports whether the program's n bytes at p may be read
	// or, if write, written (any p for n 0, as Linux's access_ok);
	// UserIov checks the program's iovec array of cnt entries at p and
	// every buffer in it, as Linux's import_iovec.
	UserRange(p, n uintptr, write bool) bool
	UserIov(p, cnt uintptr, write bool) (net.Iov, abi.Errno)

	// ServiceUp starts the TCP/IP service's traffic (abi.NetUp): its
	// eventfd and the NIC's address.
	ServiceUp(c abi.NetCall) abi.Errno
}

// Calls are the socket calls on the kernel's socket layer. It holds
// nothing: the kernel's value is a zero-size variable.
type Calls[E Env[E]] struct{}

func (Calls[E]) env() E { var e E; return e }

// socks is the kernel's socket layer.
func (k Calls[E]) socks() *net.Net[E] { return k.env().Net() }

const (
	afMax = 46 // Linux's NPROTO: families from here on are EAFNOSUPPORT before the type is looked at
	// EPIPEQuiet is EPIPE without SIGPIPE (a datagram socket's, or
	// MSG_NOSIGNAL): the dispatch reports it as EPIPE and raises
	// nothing.
	EPIPEQuiet = abi.EPIPE | 1<<16
)

// put drops a call's reference to socket s.
func (k Calls[E]) put(s int) { k.socks().Close(s) }

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
func (k Calls[E]) peerAddr(sa []byte) (net.Addr, abi.Errno) {
	kind, name, e := net.ParseAddr(sa)
	if e != 0 || kind == net.AddrAuto {
		return net.Addr{}, abi.EINVAL
	}
	if kind == net.AddrAbstract {
		return net.Addr{Name: name}, 0
	}
	id, e := k.env().SocketAt(net.NoEscape(name))
	return net.Addr{Path: true, ID: id}, abi.Errno(e)
}

// deadline is when a blocking call on s gives up (SO_RCVTIMEO,
// SO_SNDTIMEO), 0 for never.
func (k Calls[E]) deadline(s int, send bool) int64 {
	return k.deadlineIn(k.socks().Timeout(s, send))
}

// deadlineIn is the deadline of a call that started now with timeout t
// (0: none).
func (k Calls[E]) deadlineIn(t int64) int64 {
	if t != 0 {
		return k.env().Now() + t
	}
	return 0
}

// putSockaddr writes socket s's address (peer: its peer's) to the
// program's buffer p of *lp bytes, truncated to fit, and its whole length
// to *lp, as Linux's move_addr_to_user.
func (k Calls[E]) putSockaddr(s int, peer bool, p, lp uintptr) abi.Errno {
	var sa [net.AddrMax]byte
	n, e := k.socks().Name(s, peer, &sa)
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
	l, e := mm.Get[int32](lp)
	if e != 0 {
		return 0, e
	}
	if l < 0 {
		return 0, abi.EINVAL
	}
	return int(l), 0
}

// copyLen copies b to the program's buffer p and stores n at lp (checked
// by userLen).
func copyLen(b []byte, p, lp uintptr, n int) abi.Errno {
	if e := mm.CopyOut(p, b); e != 0 {
		return e
	}
	return mm.Put(lp, uint32(n))
}

// send sends v on s (to: nil for the peer): a blocking stream send waits
// until all is sent, a message send until it is queued.
func (k Calls[E]) send(s int, v *net.Iov, flags int, to *net.Addr, ctl *net.Ctl) (uintptr, abi.Errno) {
	socks := k.socks()
	nb, typ, timeout := socks.Mode(s, true)
	nb = nb || flags&unix.MSG_DONTWAIT != 0
	if nb {
		flags |= unix.MSG_DONTWAIT
	}
	stream := typ == unix.SOCK_STREAM
	deadline := k.deadlineIn(timeout)
	done := 0
	for {
		n, w, e := socks.SendMsg(s, v, done, flags, to, ctl)
		done += n
		if e == 0 && (!stream || done >= v.Len) {
			return uintptr(done), 0
		}
		if e == 0 {
			continue
		}
		var be abi.Errno
		if e == unix.EAGAIN && !nb {
			if be = k.env().Block(w, deadline); be == 0 {
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
			return 0, EPIPEQuiet
		}
		return 0, abi.Errno(e) // a stream's EPIPE: the dispatch raises SIGPIPE
	}
}

// recv receives into v on s; a blocking receive waits for data, end of
// file or an error (MSG_WAITALL on a stream: until v is full).
func (k Calls[E]) recv(s int, v *net.Iov, flags int, m *net.Msg) abi.Errno {
	socks := k.socks()
	nb, typ, timeout := socks.Mode(s, false)
	nb = nb || flags&unix.MSG_DONTWAIT != 0
	if nb {
		flags |= unix.MSG_DONTWAIT
	}
	waitAll := flags&unix.MSG_WAITALL != 0 && flags&unix.MSG_PEEK == 0 && typ == unix.SOCK_STREAM
	deadline := k.deadlineIn(timeout)
	done := 0
	var cred net.Cred
	for {
		part := *v
		if done > 0 {
			part = skipIov(v, done)
		}
		w, e := socks.Recv(s, &part, flags, m)
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
			if be = k.env().Block(w, deadline); be == 0 {
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
		base, l := iov[0], int(min(iov[1], uintptr(mm.MaxRW)))
		if k < l {
			return net.Iov{User: base + uintptr(k), Len: l - k}
		}
		k -= l
	}
	return net.Iov{}
}

// Read and Write are read and write (and readv, writev) on socket s,
// v the program's buffers (Read: checked writable).
func (k Calls[E]) Read(s int, v *net.Iov) (uintptr, abi.Errno) {
	if v.Len == 0 {
		return 0, 0 // as Linux's sock_read_iter
	}
	var m net.Msg
	e := k.recv(s, v, 0, &m)
	k.discard(&m) // no control buffer: descriptors received are closed, as Linux's scm_recv
	return uintptr(m.N), e
}

func (k Calls[E]) Write(s int, v *net.Iov) (uintptr, abi.Errno) {
	return k.send(s, v, 0, nil, nil)
}

// Getfl is F_GETFL on socket s.
func (k Calls[E]) Getfl(s int) uintptr {
	r := uintptr(unix.O_RDWR)
	if k.socks().Nonblocking(s) {
		r |= unix.O_NONBLOCK
	}
	return r
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

const msghdrSize = unsafe.Sizeof(msghdr{})

// userMsghdr copies in the program's msghdr at p and checks its iovecs
// (write: recvmsg, which fills them and writes the header back).
func (k Calls[E]) userMsghdr(p uintptr, write bool) (msghdr, net.Iov, abi.Errno) {
	if !mm.UserOK(p, msghdrSize) || write && !mm.UserW(p, msghdrSize) {
		return msghdr{}, net.Iov{}, abi.EFAULT
	}
	h, e := mm.Get[msghdr](p)
	if e != 0 {
		return msghdr{}, net.Iov{}, e
	}
	if h.iovlen > mm.MaxIov {
		return msghdr{}, net.Iov{}, abi.Errno(unix.EMSGSIZE)
	}
	v, e := k.env().UserIov(h.iov, h.iovlen, write)
	return h, v, e
}
