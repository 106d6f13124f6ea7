package net

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Iov is the buffers of one transfer: One (kernel memory), or User (the
// program's Len bytes at User), or (Vec != 0) N struct iovec at Vec, in
// the program's memory. The program's memory is reached only through
// Env.CopyIn and Env.CopyOut, which check it as they copy: another thread
// may change the vector or unmap a buffer meanwhile. Len is their total
// length as the kernel counted it.
type Iov struct {
	One  []byte
	User uintptr
	Vec  uintptr
	N    int
	Len  int
}

// Msg is what a receive returns beside the data.
type Msg struct {
	N       int // bytes received (with MSG_TRUNC, a datagram's whole length)
	Flags   int // MSG_TRUNC: a datagram was cut to fit
	AddrLen int // the sender's address in Addr: its length, 0 if none
	Addr    [AddrMax]byte

	// AF_UNIX control data (scm.go): descriptors received (a list whose
	// references are the caller's: TakeFD them all), and credentials
	// (On when the receiver has SO_PASSCRED).
	FDs  int32
	NFD  int
	Cred Cred
	// Stop: a stream read ended at a control boundary (MSG_WAITALL
	// does not go on past it).
	Stop bool
}

// maxMsg is the largest datagram a ring holds with its header.
const maxMsg = RingSize - msgHdr - (AddrMax - 2) - credLen

// seg is one buffer of an Iov: kernel memory k, or the program's l
// bytes at u.
type seg struct {
	k    []byte
	u    uintptr
	l    int
	user bool
}

// seg is buffer i of v; false if its iovec cannot be read.
func (n *Net[E]) seg(v *Iov, i int) (seg, bool) {
	switch {
	case v.Vec == 0 && v.User == 0:
		return seg{k: v.One, l: len(v.One)}, true
	case v.Vec == 0:
		return seg{u: v.User, l: v.Len, user: true}, true
	}
	var e [16]byte
	if n.env.CopyIn(NoEscape(e[:]), v.Vec+uintptr(i)*16) != len(e) {
		return seg{}, false
	}
	l := binary.LittleEndian.Uint64(e[8:])
	if l > uint64(v.Len) {
		l = uint64(v.Len) // changed since it was counted: no more than Len
	}
	return seg{u: uintptr(binary.LittleEndian.Uint64(e[:8])), l: int(l), user: true}, true
}

func (n *Net[E]) segs(v *Iov) int {
	if v.Vec == 0 {
		return 1
	}
	return v.N
}

// NoEscape is b, hidden from escape analysis: Env's methods are called
// through the type parameter's dictionary, so the compiler cannot see
// that they do not keep b, and would move a local array to the heap
// (kernel/socket's Env too).
func NoEscape(b []byte) []byte {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), len(b))
}

// segIn copies from b, from byte off on, into dst (kernel memory) as
// many bytes as both hold, and returns how many it copied (fewer if the
// program's memory went bad).
func (n *Net[E]) segIn(b seg, off int, dst []byte) int {
	k := min(len(dst), b.l-off)
	if !b.user {
		return copy(dst[:k], b.k[off:])
	}
	return n.env.CopyIn(dst[:k], b.u+uintptr(off))
}

// segOut is segIn's reverse: src into b from byte off on.
func (n *Net[E]) segOut(b seg, off int, src []byte) int {
	k := min(len(src), b.l-off)
	if !b.user {
		return copy(b.k[off:off+k], src)
	}
	return n.env.CopyOut(b.u+uintptr(off), src[:k])
}

// fromIov appends c bytes of v, from byte off on, to p's receive ring;
// it returns how many it appended (fewer if a buffer went bad).
func (n *Net[E]) fromIov(v *Iov, off, c int, p *sock) (int, bool) {
	return n.iovIn(v, off, c, p, &p.pages, p.r, &p.n)
}

// toIov copies c bytes of p's receive ring, from ring offset skip on,
// into v.
func (n *Net[E]) toIov(v *Iov, c int, p *sock, skip int) (int, bool) {
	return n.iovOut(v, c, p, &p.pages, p.r+skip)
}

// iovIn appends c bytes of v, from byte off on, to p's ring r, whose
// bytes start at ring offset head and number *count; it returns how many
// it appended (fewer if a buffer went bad).
func (n *Net[E]) iovIn(v *Iov, off, c int, p *sock, r *[maxRingPages]uintptr, head int, count *int) (int, bool) {
	done := 0
	for i := 0; i < n.segs(v) && done < c; i++ {
		b, ok := n.seg(v, i)
		if !ok {
			return done, false
		}
		if off >= b.l {
			off -= b.l
			continue
		}
		for end := off + min(b.l-off, c-done); off < end; {
			a, room := p.ringAt(r, head+*count)
			w := min(room, end-off)
			got := n.segIn(b, off, mem(a, w))
			*count += got
			done += got
			off += got
			if got < w {
				return done, false
			}
		}
		off = 0
	}
	return done, true
}

// iovOut copies c bytes of p's ring r, from ring offset pos on, into v.
func (n *Net[E]) iovOut(v *Iov, c int, p *sock, r *[maxRingPages]uintptr, pos int) (int, bool) {
	done := 0
	for i := 0; i < n.segs(v) && done < c; i++ {
		b, ok := n.seg(v, i)
		if !ok {
			return done, false
		}
		for off, end := 0, min(b.l, c-done); off < end; {
			a, room := p.ringAt(r, pos+done)
			w := min(room, end-off)
			got := n.segOut(b, off, mem(a, w))
			done += got
			off += got
			if got < w {
				return done, false
			}
		}
	}
	return done, true
}

// Send sends v's bytes from off on (a stream write that blocked comes back
// with what it has sent) on socket s, to a (nil: the peer). flags are
// send's; the kernel adds MSG_DONTWAIT for a non-blocking socket and
// raises SIGPIPE for a stream's EPIPE unless MSG_NOSIGNAL. EAGAIN comes
// with what to wait for.
func (n *Net[E]) Send(s int, v *Iov, off, flags int, a *Addr) (int, Wait, Errno) {
	n.env.Lock()
	c, w, e := n.send(s, v, off, flags, a, nil)
	n.env.Unlock()
	return c, w, e
}

// SendMsg is Send with control data (c not nil) on an AF_UNIX socket:
// what the message takes of it (its descriptors go with the first bytes
// a stream queues; its credentials with every part) leaves c; the rest
// stays the caller's (CtlDrop).
func (n *Net[E]) SendMsg(s int, v *Iov, off, flags int, a *Addr, c *Ctl) (int, Wait, Errno) {
	n.env.Lock()
	k, w, e := n.send(s, v, off, flags, a, c)
	n.env.Unlock()
	return k, w, e
}

func (n *Net[E]) send(s int, v *Iov, off, flags int, a *Addr, ctl *Ctl) (int, Wait, Errno) {
	p := &n.socks[s]
	if flags&unix.MSG_OOB != 0 {
		return 0, Wait{}, unix.EOPNOTSUPP
	}
	if p.family == unix.AF_NETLINK {
		var sa []byte
		if a != nil {
			sa = a.Raw
		}
		return n.sendNL(int32(s), v, off, sa)
	}
	if isInet(p.family) {
		if p.typ == unix.SOCK_STREAM {
			return n.sendTCP(int32(s), v, off) // an address is ignored, as TCP's
		}
		var sa []byte
		if a != nil {
			sa = a.Raw
		}
		return n.sendUDP(int32(s), v, off, sa)
	}
	if p.typ == unix.SOCK_STREAM {
		return n.sendStream(int32(s), v, off, a, ctl)
	}
	if p.typ == unix.SOCK_SEQPACKET {
		if e := p.err; e != 0 {
			p.err = 0
			return 0, Wait{}, e
		}
		if p.state != stConnected {
			return 0, Wait{}, unix.ENOTCONN
		}
		a = nil
	}
	if p.opts&optPassCred != 0 {
		n.autobind(p)
	}
	l := v.Len - off
	if l > int(p.sndbuf)-32 || l > maxMsg {
		return 0, Wait{}, unix.EMSGSIZE
	}
	if p.shut&shutSend != 0 {
		return 0, Wait{}, unix.EPIPE // Linux's sock_alloc_send_pskb
	}
	if a == nil && p.peer < 0 {
		return 0, Wait{}, unix.ENOTCONN
	}
	o := p.peer
	if a != nil {
		var e Errno
		if o, e = n.find(a, p.typ); e != 0 {
			return 0, Wait{}, e
		}
	}
	op := &n.socks[o]
	if op.dead {
		if p.typ == unix.SOCK_SEQPACKET {
			return 0, Wait{}, unix.EPIPE
		}
		// A datagram peer that closed: disconnected, as Linux.
		n.unpeer(p)
		p.state = stClose
		n.bump(int32(s))
		return 0, Wait{}, unix.ECONNREFUSED
	}
	if op.peer >= 0 && op.peer != int32(s) {
		return 0, Wait{}, unix.EPERM
	}
	if op.shut&shutRcv != 0 {
		return 0, Wait{}, unix.EPIPE
	}
	nameLen := 0
	if p.addrLen != 0 {
		nameLen = int(p.addrLen) - 2
	}
	cred := sendCred(p, op, ctl)
	need := msgHdr + nameLen + l
	if cred.On {
		need += credLen
	}
	if o != int32(s) && op.peer != int32(s) && n.full(op) || RingSize-op.n < need {
		return 0, n.wait(o), unix.EAGAIN
	}
	if !n.room(op, need) {
		return 0, Wait{}, unix.ENOBUFS
	}
	var ch *chunk
	var chID int32
	if ctl != nil && ctl.fds != 0 {
		if chID, ch = n.newChunk(); ch == nil {
			return 0, Wait{}, unix.ETOOMANYREFS
		}
	}
	mark := op.n
	var h [msgHdr]byte
	hl := uint32(l)
	if cred.On {
		hl |= hdrCred
	}
	if ch != nil {
		hl |= hdrFDs
	}
	binary.LittleEndian.PutUint32(h[:], hl)
	h[4] = p.addrLen
	op.put(h[:])
	op.put(p.name[:nameLen])
	if cred.On {
		var cb [credLen]byte
		binary.LittleEndian.PutUint32(cb[0:], cred.Pid)
		binary.LittleEndian.PutUint32(cb[4:], cred.Uid)
		binary.LittleEndian.PutUint32(cb[8:], cred.Gid)
		op.put(cb[:])
	}
	if c, ok := n.fromIov(v, off, l, op); !ok || c != l {
		op.n = mark
		if ch != nil {
			ch.next, n.scm.freeChunk = n.scm.freeChunk, chID
		}
		return 0, Wait{}, unix.EFAULT
	}
	if ch != nil {
		ch.fds, ch.nfd = ctl.fds, int32(ctl.NFD)
		ctl.fds, ctl.tail, ctl.NFD = 0, 0, 0
		n.appendChunk(op, chID)
	}
	op.msgs++
	n.bump(o)
	return l, Wait{}, 0
}

func (n *Net[E]) sendStream(s int32, v *Iov, off int, a *Addr, ctl *Ctl) (int, Wait, Errno) {
	p := &n.socks[s]
	if a != nil {
		if p.state == stConnected {
			return 0, Wait{}, unix.EISCONN
		}
		return 0, Wait{}, unix.EOPNOTSUPP
	}
	if p.peer < 0 {
		return 0, Wait{}, unix.ENOTCONN
	}
	q := &n.socks[p.peer]
	if p.shut&shutSend != 0 || q.dead || q.shut&shutRcv != 0 {
		return 0, Wait{}, unix.EPIPE
	}
	c := min(RingSize-q.n, v.Len-off)
	if c == 0 && v.Len > off {
		return 0, n.wait(s), unix.EAGAIN
	}
	if c == 0 {
		return 0, Wait{}, 0 // nothing sent: descriptors too stay behind, as Linux's
	}
	c, e := n.backStream(q, &q.pages, q.r+q.n, c)
	if e != 0 {
		return 0, Wait{}, e
	}
	cred := sendCred(p, q, ctl)
	pre := q.n
	c, ok := n.fromIov(v, off, c, q)
	if c > 0 {
		// The bytes are in; their control data goes with them.
		if !n.attachStream(q, c, cred, ctl) {
			q.n = pre
			return 0, Wait{}, unix.ETOOMANYREFS
		}
		n.bump(p.peer)
	}
	if !ok && c == 0 {
		return 0, Wait{}, unix.EFAULT
	}
	return c, Wait{}, 0
}

// Recv receives into v on socket s (flags: MSG_PEEK, MSG_TRUNC, and
// MSG_DONTWAIT, which the kernel adds for a non-blocking socket). EAGAIN
// comes with what to wait for.
func (n *Net[E]) Recv(s int, v *Iov, flags int, m *Msg) (Wait, Errno) {
	n.env.Lock()
	w, e := n.recv(s, v, flags, m)
	n.env.Unlock()
	return w, e
}

func (n *Net[E]) recv(s int, v *Iov, flags int, m *Msg) (Wait, Errno) {
	p := &n.socks[s]
	m.N, m.Flags, m.AddrLen = 0, 0, 0
	m.FDs, m.NFD, m.Cred, m.Stop = 0, 0, Cred{}, false
	if isInet(p.family) && p.typ == unix.SOCK_STREAM {
		return n.recvTCP(int32(s), v, flags, m)
	}
	if p.typ == unix.SOCK_STREAM {
		if p.state != stConnected {
			return Wait{}, unix.EINVAL
		}
		if flags&unix.MSG_OOB != 0 {
			return Wait{}, unix.EOPNOTSUPP
		}
		if p.n == 0 {
			if e := p.err; e != 0 {
				p.err = 0
				return Wait{}, e
			}
			if p.shut&shutRcv != 0 {
				return Wait{}, 0
			}
			return n.wait(int32(s)), unix.EAGAIN
		}
		want := min(p.n, v.Len)
		var fds int32
		at := 0
		if p.chead != 0 || p.opts&optPassCred != 0 {
			want, m.Stop, fds, at = n.streamLimit(p, want, m)
		}
		c, ok := n.toIov(v, want, p, 0)
		if fds != 0 {
			if ok && c > at {
				n.streamFDs(fds, flags&unix.MSG_PEEK != 0, m)
			} else {
				// Linux copies the bytes that came with descriptors
				// whole or not at all: on a fault they stay, and so
				// do their descriptors.
				c, m.Stop = min(c, at), false
			}
		}
		if !ok && c == 0 {
			return Wait{}, unix.EFAULT
		}
		if flags&unix.MSG_PEEK == 0 {
			n.consumeStream(p, c)
			n.drop(p, c)
			n.bump(int32(s))
			n.bump(p.peer)
		}
		m.N = c
		if q := &n.socks[p.peer]; q.addrLen != 0 {
			m.AddrLen = putName(q, &m.Addr)
		}
		return Wait{}, 0
	}
	if flags&unix.MSG_OOB != 0 {
		return Wait{}, unix.EOPNOTSUPP
	}
	if p.typ == unix.SOCK_SEQPACKET && p.state != stConnected {
		return Wait{}, unix.ENOTCONN
	}
	if p.family == unix.AF_NETLINK {
		n.refillNL(p)
	}
	if p.msgs == 0 {
		if e := p.err; e != 0 {
			p.err = 0
			return Wait{}, e
		}
		if p.shut&shutRcv != 0 && (p.typ == unix.SOCK_SEQPACKET || flags&unix.MSG_DONTWAIT == 0) {
			return Wait{}, 0 // end of file; a non-blocking datagram socket says EAGAIN, as Linux
		}
		if flags&unix.MSG_DONTWAIT != 0 {
			return Wait{}, unix.EAGAIN
		}
		return n.wait(int32(s)), unix.EAGAIN
	}
	var h [msgHdr]byte
	p.get(h[:], 0)
	hl := binary.LittleEndian.Uint32(h[:])
	l := int(hl &^ (hdrCred | hdrFDs))
	al := int(h[4])
	skip := msgHdr
	if p.family == unix.AF_NETLINK {
		m.AddrLen = NLKernelAddr(m.Addr[:])
	} else if isInet(p.family) {
		var a inetAddr
		var b [inetNameLen]byte
		p.get(b[:], skip)
		copy(a.ip[:], b[:16])
		a.port = binary.BigEndian.Uint16(b[16:])
		m.AddrLen = putInet(p.family, &a, &m.Addr)
		skip += inetNameLen
	} else if al != 0 {
		m.Addr[0], m.Addr[1] = unix.AF_UNIX, 0
		p.get(m.Addr[2:al], skip)
		m.AddrLen = al
		skip += al - 2
	}
	if p.family == unix.AF_UNIX {
		skip = n.recvCtl(p, hl, skip, flags, m)
	}
	c, ok := n.toIov(v, min(l, v.Len), p, skip)
	if !ok {
		// Linux took the message off the queue before the copy: it is
		// gone (its descriptors, taken above, the caller's to close).
		if flags&unix.MSG_PEEK == 0 {
			n.dropMsg(int32(s), skip+l)
		}
		return Wait{}, unix.EFAULT
	}
	if c < l {
		m.Flags |= unix.MSG_TRUNC
	}
	m.N = c
	if flags&unix.MSG_TRUNC != 0 {
		m.N = l
	}
	if flags&unix.MSG_PEEK == 0 {
		n.dropMsg(int32(s), skip+l)
	}
	return Wait{}, 0
}

// dropMsg takes the message at the front of s's queue, k bytes of its
// ring, off the queue.
func (n *Net[E]) dropMsg(s int32, k int) {
	p := &n.socks[s]
	wasFull := n.full(p)
	n.drop(p, k)
	p.msgs--
	n.bump(s)
	if wasFull || p.typ == unix.SOCK_SEQPACKET {
		n.wakeSenders(s)
	}
}

// wakeSenders bumps the sockets connected to s: their EPOLLOUT may have
// come back.
func (n *Net[E]) wakeSenders(s int32) {
	for i := range n.live() {
		if q := &n.socks[i]; q.used && !q.dead && q.peer == s {
			n.bump(int32(i))
		}
	}
}

// Setsockopt sets option name of level (SOL_SOCKET only: other levels are
// EOPNOTSUPP for unix sockets, as Linux) from val, which holds at least 4
// bytes (the kernel answered EINVAL for fewer).
func (n *Net[E]) Setsockopt(s, level, name int, val []byte) Errno {
	n.env.Lock()
	defer n.env.Unlock()
	p := &n.socks[s]
	v := int32(binary.LittleEndian.Uint32(val))
	if level != unix.SOL_SOCKET {
		if isInet(p.family) {
			return n.setInetOpt(p, level, name, v)
		}
		return unix.EOPNOTSUPP
	}
	if bit := boolOpt(name); bit != 0 {
		if v != 0 {
			p.opts |= bit
		} else {
			p.opts &^= bit
		}
		return 0
	}
	switch name {
	case unix.SO_SNDBUF, unix.SO_SNDBUFFORCE:
		u := min(uint32(v), maxBuf)
		p.sndbuf = max(int32(u*2), minSndBuf)
	case unix.SO_RCVBUF, unix.SO_RCVBUFFORCE:
		u := min(uint32(v), maxBuf)
		p.rcvbuf = max(int32(u*2), minRcvBuf)
	case unix.SO_RCVTIMEO, unix.SO_SNDTIMEO:
		if len(val) < 16 {
			return unix.EINVAL
		}
		sec := int64(binary.LittleEndian.Uint64(val))
		usec := int64(binary.LittleEndian.Uint64(val[8:]))
		if usec < 0 || usec >= 1e6 {
			return unix.EDOM
		}
		t := int64(0)
		if sec < 0 {
			t = 1 // Linux: a negative time is no wait at all
		} else if sec < 1<<32 {
			t = sec*1e9 + usec*1e3
		}
		if name == unix.SO_RCVTIMEO {
			p.rcvtimeo.Store(t)
		} else {
			p.sndtimeo.Store(t)
		}
	case unix.SO_LINGER:
		if len(val) < 8 {
			return unix.EINVAL
		}
		p.tcp.lingerOn = v != 0
		p.tcp.linger = max(int32(binary.LittleEndian.Uint32(val[4:])), 0)
	case unix.SO_RCVLOWAT, unix.SO_PRIORITY, unix.SO_MARK:
		// Accepted; yolk has nothing they would change.
	default:
		return unix.ENOPROTOOPT
	}
	return 0
}

func boolOpt(name int) uint16 {
	switch name {
	case unix.SO_REUSEADDR:
		return optReuseAddr
	case unix.SO_KEEPALIVE:
		return optKeepAlive
	case unix.SO_BROADCAST:
		return optBroadcast
	case unix.SO_PASSCRED:
		return optPassCred
	case unix.SO_REUSEPORT:
		return optReusePort
	case unix.SO_DONTROUTE:
		return optDontRoute
	case unix.SO_OOBINLINE:
		return optOOBInline
	case unix.SO_PASSSEC:
		return optPassSec
	}
	return 0
}

// Getsockopt writes option name of level into out and returns its
// length: an int for most, struct ucred (12 bytes) for SO_PEERCRED, a
// timeval (16) for the timeouts, struct linger (8) for SO_LINGER.
func (n *Net[E]) Getsockopt(s, level, name int, out *[16]byte) (int, Errno) {
	n.env.Lock()
	defer n.env.Unlock()
	p := &n.socks[s]
	*out = [16]byte{}
	v := int32(0)
	if level != unix.SOL_SOCKET {
		if !isInet(p.family) {
			return 0, unix.EOPNOTSUPP
		}
		v, e := n.getInetOpt(p, level, name)
		if e == unix.ENOPROTOOPT && (level != unix.IPPROTO_TCP && level != unix.IPPROTO_IP && level != unix.IPPROTO_IPV6 ||
			level == unix.IPPROTO_IPV6 && p.family == unix.AF_INET || level == unix.IPPROTO_TCP && p.typ != unix.SOCK_STREAM) {
			e = unix.EOPNOTSUPP // getsockopt's fallthrough in Linux (ip_getsockopt, udp_getsockopt)
		}
		binary.LittleEndian.PutUint32(out[:], uint32(v))
		return 4, e
	}
	if bit := boolOpt(name); bit != 0 {
		if p.opts&bit != 0 {
			v = 1
		}
		binary.LittleEndian.PutUint32(out[:], uint32(v))
		return 4, 0
	}
	switch name {
	case unix.SO_TYPE:
		v = int32(p.typ)
	case unix.SO_DOMAIN:
		v = int32(p.family)
	case unix.SO_PROTOCOL:
		if isInet(p.family) {
			v = unix.IPPROTO_UDP
			if p.typ == unix.SOCK_STREAM {
				v = unix.IPPROTO_TCP
			}
		}
	case unix.SO_ERROR:
		v = int32(p.err)
		p.err = 0
	case unix.SO_SNDBUF:
		v = p.sndbuf
	case unix.SO_RCVBUF:
		v = p.rcvbuf
	case unix.SO_ACCEPTCONN:
		if p.state == stListen {
			v = 1
		}
	case unix.SO_RCVLOWAT, unix.SO_SNDLOWAT:
		v = 1
	case unix.SO_PRIORITY, unix.SO_MARK:
	case unix.SO_PEERCRED:
		// The one process: pid 1, root. Linux gives an unconnected
		// socket no credentials: pid 0 and the overflow ids.
		pid, id := uint32(1), uint32(0)
		if p.peer < 0 && p.state != stListen || isInet(p.family) {
			pid, id = 0, 65534
		}
		binary.LittleEndian.PutUint32(out[0:], pid)
		binary.LittleEndian.PutUint32(out[4:], id)
		binary.LittleEndian.PutUint32(out[8:], id)
		return 12, 0
	case unix.SO_RCVTIMEO, unix.SO_SNDTIMEO:
		t := p.rcvtimeo.Load()
		if name == unix.SO_SNDTIMEO {
			t = p.sndtimeo.Load()
		}
		binary.LittleEndian.PutUint64(out[0:], uint64(t/1e9))
		binary.LittleEndian.PutUint64(out[8:], uint64(t%1e9/1e3))
		return 16, 0
	case unix.SO_LINGER:
		binary.LittleEndian.PutUint32(out[0:], uint32(boolInt(p.tcp.lingerOn)))
		binary.LittleEndian.PutUint32(out[4:], uint32(p.tcp.linger))
		return 8, 0
	default:
		return 0, unix.ENOPROTOOPT
	}
	binary.LittleEndian.PutUint32(out[:], uint32(v))
	return 4, 0
}
