package net

import (
	"encoding/binary"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// AF_INET and AF_INET6 sockets on the machine's own addresses: TCP as a
// connected pair of byte rings (the unix stream's), UDP as datagrams in
// the receiver's ring, with TCP's and UDP's semantics as Linux's
// net/ipv4 and net/ipv6 give them on loopback — the port table and its
// reuse rules, ephemeral ports, dual-stack IPv6 sockets (v4-mapped
// addresses unless IPV6_V6ONLY), a non-blocking connect that says
// EINPROGRESS and completes at once, a full backlog that leaves connect
// waiting, RST on a close with unread data or SO_LINGER 0, the write into
// a closed peer that succeeds once and then fails with EPIPE, ICMP's port
// unreachable as ECONNREFUSED on a connected UDP socket. This is the
// loopback fast path of docs/net.md: traffic to other addresses goes to
// the TCP/IP service, and without it is ENETUNREACH.

// inetAddr is an IP address and port; an IPv4 address is kept v4-mapped
// (::ffff:a.b.c.d), whatever the socket's family.
type inetAddr struct {
	ip   [16]byte
	port uint16
}

var v4Prefix = [12]byte{10: 0xff, 11: 0xff}

func (a *inetAddr) v4() bool { return [12]byte(a.ip[:12]) == v4Prefix }

// any reports the wildcard address of a's kind (0.0.0.0 or ::).
func (a *inetAddr) any() bool {
	if a.v4() {
		return [4]byte(a.ip[12:]) == [4]byte{}
	}
	return a.ip == [16]byte{}
}

func (a *inetAddr) loopback() bool {
	if a.v4() {
		return a.ip[12] == 127
	}
	return a.ip == [16]byte{15: 1}
}

func v4Addr(b []byte) (a inetAddr) {
	copy(a.ip[:], v4Prefix[:])
	copy(a.ip[12:], b)
	return a
}

// Sizes of struct sockaddr_in and sockaddr_in6; Linux takes an IPv6
// address without its scope ID (RFC 2133's 24 bytes).
const (
	sinLen     = 16
	sin6Len    = 28
	sin6LenMin = 24
)

// The port range connect and bind with port 0 take from (Linux's
// net.ipv4.ip_local_port_range).
const (
	ephemeralLo = 32768
	ephemeralHi = 60999
)

// TCP's states beyond the unix socket's: a connect waiting for room in a
// full accept queue (SYN_SENT).
const stSynSent = stConnected + 1

// A TCP socket's state as the socket layer above TCP keeps it (Linux's
// socket_state, SS_*): connect's answers depend on it.
const (
	ssUnconnected = iota
	ssConnecting
	ssConnected
	ssDisconnecting
)

func isInet(family uint8) bool { return family == unix.AF_INET || family == unix.AF_INET6 }

// inetSocket checks socket's type and protocol for AF_INET and AF_INET6,
// as Linux's inet_create: TCP for streams, UDP for datagrams; ICMP echo
// sockets EACCES (ping_group_range's default admits nobody), raw sockets
// EPERM (there are none), other types ESOCKTNOSUPPORT.
func inetSocket(family, typ, proto int) Errno {
	switch typ {
	case unix.SOCK_STREAM:
		if proto != 0 && proto != unix.IPPROTO_TCP {
			return unix.EPROTONOSUPPORT
		}
	case unix.SOCK_DGRAM:
		switch proto {
		case 0, unix.IPPROTO_UDP:
		case unix.IPPROTO_ICMP, unix.IPPROTO_ICMPV6:
			return unix.EACCES
		default:
			return unix.EPROTONOSUPPORT
		}
	case unix.SOCK_RAW:
		return unix.EPERM
	default:
		return unix.ESOCKTNOSUPPORT
	}
	return 0
}

// SetLocal sets the addresses of the NIC beside loopback's (the kernel
// calls it when the interface is configured); up to four of each kind.
func (n *Net[E]) SetLocal(v4 [][4]byte, v6 [][16]byte) {
	n.env.Lock()
	defer n.env.Unlock()
	n.nV4 = copy(n.localV4[:], v4)
	n.nV6 = copy(n.localV6[:], v6)
}

// local reports whether a is one of the machine's own addresses.
func (n *Net[E]) local(a *inetAddr) bool {
	if a.loopback() {
		return true
	}
	if a.v4() {
		for _, l := range n.localV4[:n.nV4] {
			if [4]byte(a.ip[12:]) == l {
				return true
			}
		}
		return false
	}
	for _, l := range n.localV6[:n.nV6] {
		if a.ip == l {
			return true
		}
	}
	return false
}

// parseInet reads a sockaddr_in or sockaddr_in6 (by its own family field;
// the callers check lengths and families first, as Linux's do in their
// own orders).
func parseInet(sa []byte) inetAddr {
	var a inetAddr
	if binary.LittleEndian.Uint16(sa) == unix.AF_INET6 {
		copy(a.ip[:], sa[8:24])
	} else {
		a = v4Addr(sa[4:8])
	}
	a.port = binary.BigEndian.Uint16(sa[2:])
	return a
}

func family(sa []byte) int {
	if len(sa) < 2 {
		return -1
	}
	return int(binary.LittleEndian.Uint16(sa))
}

// putInet writes a as a sockaddr of family into sa and returns its
// length.
func putInet(family uint8, a *inetAddr, sa *[AddrMax]byte) int {
	*sa = [AddrMax]byte{}
	binary.LittleEndian.PutUint16(sa[:], uint16(family))
	binary.BigEndian.PutUint16(sa[2:], a.port)
	if family == unix.AF_INET {
		copy(sa[4:8], a.ip[12:])
		return sinLen
	}
	copy(sa[8:24], a.ip[:])
	return sin6Len
}

// overlap reports whether p's address and a (p's kind of socket, its
// v6only) name some destination in common.
func overlap(p *sock, a *inetAddr, family uint8, v6only bool) bool {
	pa := &p.local
	if pa.port != a.port {
		return false
	}
	if pa.ip == a.ip {
		return true
	}
	return wildTakes(pa, p.family, p.v6only, a) || wildTakes(a, family, v6only, pa)
}

// wildTakes reports whether a socket of family f (IPV6_V6ONLY: only)
// bound to w receives for destination x because w is a wildcard.
func wildTakes(w *inetAddr, f uint8, only bool, x *inetAddr) bool {
	if !w.any() {
		return false
	}
	if f == unix.AF_INET || w.v4() {
		return x.v4()
	}
	return !x.v4() || !only
}

// portFree reports whether socket p may take address a: no other socket
// of its type holds an overlapping address, unless both allow it
// (SO_REUSEPORT; SO_REUSEADDR for UDP, and for TCP while the other is not
// listening — Linux's inet_csk_bind_conflict without TIME_WAIT).
func (n *Net[E]) portFree(p *sock, a *inetAddr) bool {
	for i := range n.live() {
		q := &n.socks[i]
		if q == p || !q.used || q.dead || !isInet(q.family) || q.typ != p.typ || q.local.port == 0 || q.closed && !q.bindPort {
			continue
		}
		if !overlap(q, a, p.family, p.v6only) {
			continue
		}
		if p.opts&q.opts&optReusePort != 0 {
			continue
		}
		if p.opts&q.opts&optReuseAddr != 0 && (p.typ == unix.SOCK_DGRAM || q.state != stListen) {
			continue
		}
		return false
	}
	return true
}

// ephemeral gives p a free port at address a (a.port 0), as bind and
// connect do: EADDRINUSE if every port of the range is taken.
func (n *Net[E]) ephemeral(p *sock, a *inetAddr) Errno {
	const span = ephemeralHi - ephemeralLo + 1
	for try := 0; try < span; try++ {
		n.nextPort = (n.nextPort + 1) % span
		a.port = uint16(ephemeralLo + n.nextPort)
		if n.portFree(p, a) {
			return 0
		}
	}
	return unix.EADDRINUSE
}

// BindInet binds AF_INET or AF_INET6 socket s to the sockaddr sa, as
// Linux's inet_bind and inet6_bind.
func (n *Net[E]) BindInet(s int, sa []byte) Errno {
	n.env.Lock()
	defer n.env.Unlock()
	p := &n.socks[s]
	var a inetAddr
	if p.family == unix.AF_INET {
		if len(sa) < sinLen {
			return unix.EINVAL
		}
		a = v4Addr(sa[4:8])
		if f := family(sa); f != unix.AF_INET && !(f == unix.AF_UNSPEC && a.any()) {
			return unix.EAFNOSUPPORT
		}
	} else {
		if len(sa) < sin6LenMin {
			return unix.EINVAL
		}
		if family(sa) != unix.AF_INET6 {
			return unix.EAFNOSUPPORT
		}
		copy(a.ip[:], sa[8:24])
		if a.v4() && p.v6only {
			return unix.EINVAL
		}
	}
	a.port = binary.BigEndian.Uint16(sa[2:])
	if !a.any() && !n.local(&a) {
		return unix.EADDRNOTAVAIL
	}
	if p.local.port != 0 || p.state != stClose {
		return unix.EINVAL
	}
	if a.port == 0 {
		if e := n.ephemeral(p, &a); e != 0 {
			return e
		}
	} else if !n.portFree(p, &a) {
		return unix.EADDRINUSE
	}
	p.bindAddr, p.bindPort = !a.any(), binary.BigEndian.Uint16(sa[2:]) != 0
	p.local = a
	if p.typ == unix.SOCK_DGRAM && n.svcTakes(&a) {
		p.svc = true
		n.svcWant(p, abi.NetOpBind)
	}
	return 0
}

// wildcard is family's wildcard address (0.0.0.0 or ::).
func wildcard(family uint8) inetAddr {
	if family == unix.AF_INET {
		return v4Addr(nil)
	}
	return inetAddr{}
}

// autobindInet gives a socket without a port one (listen, connect, send),
// at its address (the wildcard of its family, unless bound).
func (n *Net[E]) autobindInet(p *sock) Errno {
	if p.local.port != 0 {
		return 0
	}
	a := p.local
	if e := n.ephemeral(p, &a); e != 0 {
		return e
	}
	p.local = a
	return 0
}

// dest reads the destination of a connect or send on p from sa (the
// length and family already checked to be p's, or AF_INET on a
// dual-stack socket): the wildcard means this machine, as Linux's
// routing says. An address not this machine's is remote, through the
// TCP/IP service, or without one ENETUNREACH.
func (n *Net[E]) dest(p *sock, sa []byte) (inetAddr, bool, Errno) {
	a := parseInet(sa)
	if a.any() {
		if a.v4() {
			a.ip[12] = 127
			a.ip[15] = 1
		} else {
			a.ip[15] = 1
		}
	}
	if a.v4() && p.family == unix.AF_INET6 && p.v6only {
		return a, false, unix.ENETUNREACH
	}
	if !n.local(&a) {
		if n.svcOn && !n.svcOffline {
			return a, true, 0 // through the TCP/IP service (svc.go)
		}
		return a, false, unix.ENETUNREACH
	}
	return a, false, 0
}

// source is the address p sends from to d: its bound address, or the
// destination itself when bound to the wildcard (on loopback the route's
// source is the destination).
func source(p *sock, d *inetAddr) inetAddr {
	a := p.local
	if a.any() {
		a.ip = d.ip
	}
	return a
}

// listener is the TCP socket listening for destination d: one bound to d
// itself before one on a wildcard, as Linux's lookup scores them.
func (n *Net[E]) listener(d *inetAddr) int32 {
	best := int32(-1)
	for i := range n.live() {
		q := &n.socks[i]
		if !q.used || q.dead || !isInet(q.family) || q.typ != unix.SOCK_STREAM || q.state != stListen || q.local.port != d.port {
			continue
		}
		if q.local.ip == d.ip {
			return int32(i)
		}
		if best < 0 && n.takes(q, d) {
			best = int32(i)
		}
	}
	return best
}

// takes reports whether q, bound to a wildcard, receives for d.
func (n *Net[E]) takes(q *sock, d *inetAddr) bool { return wildTakes(&q.local, q.family, q.v6only, d) }

// receiver is the UDP socket that receives a datagram from src to d,
// -1 if none: bound to d or a wildcard, and if connected, to src.
func (n *Net[E]) receiver(src, d *inetAddr) int32 {
	best := int32(-1)
	for i := range n.live() {
		q := &n.socks[i]
		if !q.used || q.dead || !isInet(q.family) || q.typ != unix.SOCK_DGRAM || q.local.port != d.port {
			continue
		}
		if q.state == stConnected && q.remote != *src {
			continue
		}
		if q.local.ip == d.ip {
			return int32(i)
		}
		if best < 0 && n.takes(q, d) {
			best = int32(i)
		}
	}
	return best
}

// connectInet is connect on an AF_INET or AF_INET6 socket: a TCP
// connection is made at once with a listener of this machine (its end
// queued for accept), or, the listener's queue full, waits (EAGAIN with
// what to wait for; non-blocking: EINPROGRESS, and accept completes it).
// A non-blocking connect says EINPROGRESS even when it completed, as
// Linux's; a refused one then has SO_ERROR ECONNREFUSED. A UDP connect
// sets the peer.
func (n *Net[E]) connectInet(s int32, sa []byte) (Wait, Errno) {
	p := &n.socks[s]
	if len(sa) < 2 {
		return Wait{}, unix.EINVAL
	}
	if p.typ == unix.SOCK_DGRAM {
		return Wait{}, n.connectUDP(p, sa)
	}
	if family(sa) == unix.AF_UNSPEC {
		return Wait{}, n.disconnectTCP(s)
	}
	// The socket's own state first, as Linux's __inet_stream_connect.
	err := unix.Errno(unix.EALREADY)
	first := false
	switch p.ss {
	case ssConnected:
		return Wait{}, unix.EISCONN
	case ssDisconnecting:
		return Wait{}, unix.EINVAL
	case ssUnconnected:
		if p.state != stClose || p.closed {
			return Wait{}, unix.EISCONN
		}
		if e := n.startConnect(s, sa); e != 0 {
			return Wait{}, e
		}
		p.ss, err, first = ssConnecting, unix.EINPROGRESS, true
	}
	if first && p.nonblock.Load() {
		return Wait{}, unix.EINPROGRESS
	}
	if p.state == stSynSent {
		if p.nonblock.Load() {
			return Wait{}, err
		}
		return n.wait(s), unix.EAGAIN
	}
	if p.state == stClose || p.closed {
		// Refused or reset: the error, and the socket unconnected
		// again (Linux's sock_error path and tcp_disconnect).
		e := p.err
		if e == 0 {
			e = unix.ECONNABORTED
		}
		p.err, p.ss, p.shut, p.closed, p.fin = 0, ssUnconnected, 0, false, false
		p.state = stClose
		n.bump(s)
		return Wait{}, e
	}
	p.ss = ssConnected
	return Wait{}, 0
}

// startConnect sends p's SYN to sa: the connection is made at once with a
// listener of this machine, or waits for room in its accept queue
// (stSynSent); no listener is a RST, ECONNREFUSED in SO_ERROR.
func (n *Net[E]) startConnect(s int32, sa []byte) Errno {
	p := &n.socks[s]
	if e := n.checkDest(p, sa, true); e != 0 {
		return e
	}
	d, remote, e := n.dest(p, sa)
	if e != 0 {
		return e
	}
	if e := n.autobindInet(p); e != 0 {
		return unix.EADDRNOTAVAIL
	}
	if remote {
		return n.connectSvc(s, &d)
	}
	n.svcLeave(p) // a socket that went through the service before
	src := source(p, &d)
	l := n.listener(&d)
	if l < 0 {
		p.err, p.shut, p.closed = unix.ECONNREFUSED, shutBoth, true
		n.bump(s)
		return 0
	}
	p.local = src
	p.remote = d
	lp := &n.socks[l]
	if lp.qlen > lp.backlog {
		p.state, p.synTo = stSynSent, l
		n.synWait++
		n.bump(s)
		return 0
	}
	return n.establish(s, l)
}

// checkDest checks a connect's or send's sockaddr against p's family, as
// Linux's tcp_v4_connect, tcp_v6_connect and ip6_datagram_connect do.
func (n *Net[E]) checkDest(p *sock, sa []byte, tcp bool) Errno {
	f := family(sa)
	if p.family == unix.AF_INET {
		if len(sa) < sinLen {
			return unix.EINVAL
		}
		if f != unix.AF_INET && (tcp || f != unix.AF_UNSPEC) {
			return unix.EAFNOSUPPORT
		}
		return 0
	}
	if !tcp && f == unix.AF_INET {
		if p.v6only {
			return unix.EAFNOSUPPORT
		}
		if len(sa) < sinLen {
			return unix.EINVAL
		}
		return 0
	}
	if len(sa) < sin6LenMin {
		return unix.EINVAL
	}
	if f != unix.AF_INET6 {
		return unix.EAFNOSUPPORT
	}
	return 0
}

// establish makes the connection of s to listener l: a new socket, the
// server's end, queued for accept.
func (n *Net[E]) establish(s, l int32) Errno {
	p, lp := &n.socks[s], &n.socks[l]
	c, e := n.newSock(unix.SOCK_STREAM)
	if e != 0 {
		return unix.ENOBUFS
	}
	cp := &n.socks[c]
	atomic.StoreInt32(&cp.refs, 0) // no descriptor until accepted
	cp.family, cp.v6only = lp.family, lp.v6only
	cp.opts = lp.opts &^ (optReuseAddr | optReusePort)
	cp.tcp = lp.tcp
	cp.local, cp.remote = p.remote, p.local
	cp.ss = ssConnected
	if e = n.connectPair(s, c); e != 0 {
		n.release(c, false)
		return e
	}
	cp.listener = l
	if lp.qtail >= 0 {
		n.socks[lp.qtail].qnext = c
	} else {
		lp.qhead = c
	}
	lp.qtail = c
	lp.qlen++
	p.synTo = -1
	n.bump(l)
	n.bump(s)
	return 0
}

// synComplete connects the sockets that wait in SYN_SENT for listener
// l, now that its queue has room. The scan over the pool happens only
// while some connect may wait (synWait bounds their number from above;
// a scan counts them again).
func (n *Net[E]) synComplete(l int32) {
	if n.synWait == 0 {
		return
	}
	lp := &n.socks[l]
	waiting := 0
	for i := range n.live() {
		q := &n.socks[i]
		if !q.used || q.dead || q.state != stSynSent || q.synTo < 0 {
			continue
		}
		if q.synTo == l && lp.qlen <= lp.backlog {
			q.state = stClose
			if n.establish(int32(i), l) != 0 {
				q.err, q.synTo = unix.ECONNREFUSED, -1
				n.bump(int32(i))
			}
			continue
		}
		waiting++
	}
	n.synWait = waiting
}

// synRefuse fails the connects waiting for listener l, which stopped
// listening.
func (n *Net[E]) synRefuse(l int32) {
	if n.synWait == 0 {
		return
	}
	waiting := 0
	for i := range n.live() {
		q := &n.socks[i]
		if !q.used || q.dead || q.state != stSynSent || q.synTo < 0 {
			continue
		}
		if q.synTo == l {
			q.state, q.synTo, q.err = stClose, -1, unix.ECONNREFUSED
			n.bump(int32(i))
			continue
		}
		waiting++
	}
	n.synWait = waiting
}

// disconnectTCP is connect with AF_UNSPEC on a TCP socket (Linux's
// tcp_disconnect): a connection is reset, a listener stops.
func (n *Net[E]) disconnectTCP(s int32) Errno {
	p := &n.socks[s]
	switch p.state {
	case stListen:
		n.stopListening(s)
	case stConnected:
		n.resetPeer(p)
		p.state = stClose
	case stSynSent:
		p.state, p.synTo = stClose, -1
	}
	n.svcLeave(p) // the wire's connection is reset too
	p.shut, p.ss, p.closed, p.fin = 0, ssUnconnected, false, false
	n.bump(s)
	return 0
}

// resetPeer sends p's peer a RST: ECONNRESET on its next call, both
// directions shut.
func (n *Net[E]) resetPeer(p *sock) {
	if q := p.peer; q >= 0 {
		qp := &n.socks[q]
		if !qp.dead {
			qp.err = unix.ECONNRESET
			qp.shut = shutBoth
			n.bump(q)
		}
		n.unpeer(p)
	}
}

// stopListening closes listener s's queue: its connections are reset,
// the connects waiting for room refused.
func (n *Net[E]) stopListening(s int32) {
	p := &n.socks[s]
	for e := p.qhead; e >= 0; {
		next := n.socks[e].qnext
		n.socks[e].listener = -1
		n.release(e, true)
		e = next
	}
	p.qhead, p.qtail, p.qlen = -1, -1, 0
	n.synRefuse(s)
	p.state = stClose
}

// connectUDP sets (AF_UNSPEC: clears) a UDP socket's peer, as Linux's
// ip4_datagram_connect and ip6_datagram_connect.
func (n *Net[E]) connectUDP(p *sock, sa []byte) Errno {
	s := n.index(p)
	if family(sa) == unix.AF_UNSPEC {
		// Linux's __udp_disconnect: the address and port go back to
		// what bind did not fix.
		p.state, p.remote = stClose, inetAddr{}
		if !p.bindAddr {
			p.local.ip = wildcard(p.family).ip
		}
		if !p.bindPort {
			p.local.port = 0
		}
		n.bump(s)
		return 0
	}
	if e := n.checkDest(p, sa, false); e != 0 {
		return e
	}
	if e := n.autobindInet(p); e != 0 {
		return e
	}
	d, remote, e := n.dest(p, sa)
	if e != 0 {
		return e
	}
	if remote {
		src, ok := n.nicSource(&d)
		if !ok {
			return unix.ENETUNREACH
		}
		if p.local.any() {
			p.local.ip = src
		}
		p.svc = true
		n.svcWant(p, abi.NetOpBind) // its replies come from the wire
	} else {
		p.local.ip = source(p, &d).ip
	}
	p.remote, p.state = d, stConnected
	n.bump(s)
	return 0
}

// sendUDP sends one datagram from p to sa (nil: its peer), as Linux's
// udp_sendmsg and udpv6_sendmsg: a receiver whose ring is full drops it
// (UDP does not wait); no receiver is ICMP's port unreachable, which a
// connected socket learns as ECONNREFUSED.
func (n *Net[E]) sendUDP(s int32, v *Iov, off int, sa []byte) (int, Wait, Errno) {
	p := &n.socks[s]
	if e := n.autobindInet(p); e != 0 {
		return 0, Wait{}, unix.EAGAIN // Linux's inet_send_prepare
	}
	if e := p.err; e != 0 {
		p.err = 0
		return 0, Wait{}, e
	}
	var d inetAddr
	remote := false
	if sa != nil && family(sa) == unix.AF_UNSPEC && p.family == unix.AF_INET6 {
		sa = nil
	}
	if sa == nil {
		if p.state != stConnected {
			return 0, Wait{}, unix.EDESTADDRREQ
		}
		d = p.remote
		remote = p.svc && !n.local(&d)
	} else {
		if e := n.checkDest(p, sa, false); e != 0 {
			return 0, Wait{}, e
		}
		var e Errno
		if d, remote, e = n.dest(p, sa); e != 0 {
			return 0, Wait{}, e
		}
	}
	l := v.Len - off
	if d.port == 0 {
		return 0, Wait{}, unix.EINVAL
	}
	max := maxUDP6
	if d.v4() {
		max = maxUDP4
	}
	if l > max {
		return 0, Wait{}, unix.EMSGSIZE
	}
	if p.shut&shutSend != 0 {
		return 0, Wait{}, unix.EPIPE
	}
	if remote {
		return n.sendDgramSvc(s, v, off, &d)
	}
	src := source(p, &d)
	r := n.receiver(&src, &d)
	if r < 0 {
		if p.state == stConnected {
			p.err = unix.ECONNREFUSED
			n.bump(s)
		}
		return l, Wait{}, 0
	}
	rp := &n.socks[r]
	if !n.room(rp, msgHdr+inetNameLen+l) {
		return l, Wait{}, 0 // dropped, as a full socket buffer drops
	}
	mark := rp.n
	var h [msgHdr + inetNameLen]byte
	binary.LittleEndian.PutUint32(h[:], uint32(l))
	h[4] = inetNameLen
	copy(h[msgHdr:], src.ip[:])
	binary.BigEndian.PutUint16(h[msgHdr+16:], src.port)
	rp.put(h[:])
	if c, ok := n.fromIov(v, off, l, rp); !ok || c != l {
		rp.n = mark
		return 0, Wait{}, unix.EFAULT
	}
	rp.msgs++
	n.bump(r)
	return l, Wait{}, 0
}

// inetNameLen is a queued datagram's sender: its IP (v4-mapped) and port.
const inetNameLen = 18

// The largest UDP payloads: an IPv4 packet's 65,535 bytes less its and
// UDP's headers; IPv6's payload length less UDP's header.
const (
	maxUDP4 = 65535 - 20 - 8
	maxUDP6 = 65535 - 8
)

// sendTCP appends to the peer's ring, as sendStream, with TCP's errors:
// a pending error first, EPIPE if never connected or shut for sending; a
// write into a peer that closed succeeds once and draws its RST (EPIPE
// next).
func (n *Net[E]) sendTCP(s int32, v *Iov, off int) (int, Wait, Errno) {
	p := &n.socks[s]
	if e := p.err; e != 0 {
		p.err = 0
		return 0, Wait{}, e
	}
	if p.state == stSynSent {
		return 0, n.wait(s), unix.EAGAIN
	}
	if p.shut&shutSend != 0 || p.state != stConnected {
		return 0, Wait{}, unix.EPIPE
	}
	if p.svc {
		return n.sendSvc(s, v, off)
	}
	q := p.peer
	if q < 0 || n.socks[q].dead {
		// The peer closed: this segment draws a RST (Linux: EPIPE in
		// CLOSE_WAIT), the connection is gone.
		p.err, p.shut, p.closed = unix.EPIPE, shutBoth, true
		n.unpeer(p)
		n.bump(s)
		return min(v.Len-off, RingSize), Wait{}, 0 // what a send buffer would have taken
	}
	qp := &n.socks[q]
	c := min(RingSize-qp.n, v.Len-off)
	if c == 0 && v.Len > off {
		return 0, n.wait(s), unix.EAGAIN
	}
	c, e := n.backStream(qp, &qp.pages, qp.r+qp.n, c)
	if e != 0 {
		return 0, Wait{}, e
	}
	c, ok := n.fromIov(v, off, c, qp)
	if c > 0 {
		n.bump(q)
	}
	if !ok && c == 0 {
		return 0, Wait{}, unix.EFAULT
	}
	return c, Wait{}, 0
}

// TCP's options that yolk keeps.
type tcpOpts struct {
	nodelay, cork, quickack bool
	keepIdle, keepIntvl     int32 // seconds
	keepCnt                 int32
	userTimeout             int32 // milliseconds
	maxSeg                  int32
	lingerOn                bool
	linger                  int32 // SO_LINGER's seconds
	tos, ttl                uint8
	hops                    int16 // IPV6_UNICAST_HOPS (-1: the route's)
	tclass                  uint8
}

var defaultTCP = tcpOpts{keepIdle: 7200, keepIntvl: 75, keepCnt: 9, ttl: 64, hops: -1}

// setInetOpt sets an option of IPPROTO_TCP, IPPROTO_IP or IPPROTO_IPV6,
// as Linux's do_tcp_setsockopt, do_ip_setsockopt and
// do_ipv6_setsockopt; the unknown ones are ENOPROTOOPT.
func (n *Net[E]) setInetOpt(p *sock, level, name int, v int32) Errno {
	o := &p.tcp
	switch level {
	case unix.IPPROTO_TCP:
		if p.typ != unix.SOCK_STREAM {
			return unix.ENOPROTOOPT
		}
		switch name {
		case unix.TCP_NODELAY:
			o.nodelay = v != 0
		case unix.TCP_CORK:
			o.cork = v != 0
		case unix.TCP_QUICKACK:
			o.quickack = v != 0
		case unix.TCP_KEEPIDLE, unix.TCP_KEEPINTVL:
			if v < 1 || v > 32767 {
				return unix.EINVAL
			}
			if name == unix.TCP_KEEPIDLE {
				o.keepIdle = v
			} else {
				o.keepIntvl = v
			}
		case unix.TCP_KEEPCNT:
			if v < 1 || v > 127 {
				return unix.EINVAL
			}
			o.keepCnt = v
		case unix.TCP_USER_TIMEOUT:
			if v < 0 {
				return unix.EINVAL
			}
			o.userTimeout = v
		case unix.TCP_MAXSEG:
			if v != 0 && (v < 88 || v > 65535-40) {
				return unix.EINVAL
			}
			o.maxSeg = v
		case unix.TCP_LINGER2, unix.TCP_DEFER_ACCEPT, unix.TCP_WINDOW_CLAMP, unix.TCP_FASTOPEN,
			unix.TCP_FASTOPEN_CONNECT, unix.TCP_NOTSENT_LOWAT, unix.TCP_SYNCNT, unix.TCP_THIN_LINEAR_TIMEOUTS:
			// Accepted; nothing here they would change.
		default:
			return unix.ENOPROTOOPT
		}
	case unix.IPPROTO_IP:
		switch name {
		case unix.IP_TOS:
			o.tos = uint8(v)
		case unix.IP_TTL:
			if v == -1 {
				v = 64
			}
			if v < 1 || v > 255 {
				return unix.EINVAL
			}
			o.ttl = uint8(v)
		case unix.IP_RECVERR, unix.IP_PKTINFO, unix.IP_RECVTOS, unix.IP_RECVTTL, unix.IP_FREEBIND, unix.IP_MTU_DISCOVER,
			unix.IP_MULTICAST_TTL, unix.IP_MULTICAST_LOOP, unix.IP_BIND_ADDRESS_NO_PORT, unix.IP_TRANSPARENT:
		default:
			return unix.ENOPROTOOPT
		}
	case unix.IPPROTO_IPV6:
		if p.family != unix.AF_INET6 {
			return unix.ENOPROTOOPT
		}
		switch name {
		case unix.IPV6_V6ONLY:
			if p.local.port != 0 {
				return unix.EINVAL
			}
			p.v6only = v != 0
		case unix.IPV6_UNICAST_HOPS:
			if v < -1 || v > 255 {
				return unix.EINVAL
			}
			o.hops = int16(v)
		case unix.IPV6_TCLASS:
			if v < -1 || v > 255 {
				return unix.EINVAL
			}
			o.tclass = uint8(max(v, 0))
		case unix.IPV6_RECVERR, unix.IPV6_RECVPKTINFO, unix.IPV6_MTU_DISCOVER, unix.IPV6_MULTICAST_HOPS,
			unix.IPV6_MULTICAST_LOOP, unix.IPV6_RECVTCLASS, unix.IPV6_RECVHOPLIMIT:
		default:
			return unix.ENOPROTOOPT
		}
	default:
		return unix.ENOPROTOOPT
	}
	return 0
}

// getInetOpt is getsockopt's side of setInetOpt.
func (n *Net[E]) getInetOpt(p *sock, level, name int) (int32, Errno) {
	o := &p.tcp
	switch level {
	case unix.IPPROTO_TCP:
		if p.typ != unix.SOCK_STREAM {
			return 0, unix.ENOPROTOOPT
		}
		switch name {
		case unix.TCP_NODELAY:
			return boolInt(o.nodelay), 0
		case unix.TCP_CORK:
			return boolInt(o.cork), 0
		case unix.TCP_QUICKACK:
			return boolInt(!o.quickack), 0
		case unix.TCP_KEEPIDLE:
			return o.keepIdle, 0
		case unix.TCP_KEEPINTVL:
			return o.keepIntvl, 0
		case unix.TCP_KEEPCNT:
			return o.keepCnt, 0
		case unix.TCP_USER_TIMEOUT:
			return o.userTimeout, 0
		case unix.TCP_MAXSEG:
			if o.maxSeg != 0 {
				return o.maxSeg, 0
			}
			return 536, 0 // TCP_MSS_DEFAULT before a connection
		}
	case unix.IPPROTO_IP:
		switch name {
		case unix.IP_TOS:
			return int32(o.tos), 0
		case unix.IP_TTL:
			return int32(o.ttl), 0
		}
	case unix.IPPROTO_IPV6:
		if p.family != unix.AF_INET6 {
			return 0, unix.ENOPROTOOPT
		}
		switch name {
		case unix.IPV6_V6ONLY:
			return boolInt(p.v6only), 0
		case unix.IPV6_UNICAST_HOPS:
			if o.hops < 0 {
				return 64, 0
			}
			return int32(o.hops), 0
		case unix.IPV6_TCLASS:
			return int32(o.tclass), 0
		}
	}
	return 0, unix.ENOPROTOOPT
}

// releaseInet closes inet socket s: a listener's queue is reset; a TCP
// connection's peer gets a FIN (end of file after what is queued), or a
// RST (rst: unread data, an embryo, SO_LINGER 0).
func (n *Net[E]) releaseInet(s int32, rst bool) {
	p := &n.socks[s]
	if p.svc {
		if p.state == stListen {
			n.stopListening(s)
		}
		switch {
		case p.typ == unix.SOCK_DGRAM && p.txn > 0:
			n.svcWant(p, abi.NetOpClose) // its datagrams still go out, as Linux's
		case rst || p.typ != unix.SOCK_STREAM:
			n.freeTx(p)
			n.svcWant(p, abi.NetOpAbort)
		default:
			n.svcWant(p, abi.NetOpClose)
		}
		return
	}
	switch {
	case p.state == stListen:
		n.stopListening(s)
	case p.typ == unix.SOCK_STREAM && p.peer >= 0:
		q := p.peer
		qp := &n.socks[q]
		if rst {
			qp.err, qp.shut, qp.closed = unix.ECONNRESET, shutBoth, true
		} else {
			qp.shut |= shutRcv
			qp.fin = true
			qp.closed = qp.shut&shutSend != 0 // its FIN was sent: TIME_WAIT, then CLOSE
		}
		n.bump(q)
		n.unpeer(p)
	}
}

// listenFree reports whether p may listen: no other listener holds an
// overlapping address (unless both have SO_REUSEPORT).
func (n *Net[E]) listenFree(p *sock) bool {
	for i := range n.live() {
		q := &n.socks[i]
		if q == p || !q.used || q.dead || !isInet(q.family) || q.state != stListen {
			continue
		}
		if overlap(q, &p.local, p.family, p.v6only) && p.opts&q.opts&optReusePort == 0 {
			return false
		}
	}
	return true
}

// listenInet is listen on a TCP socket, as Linux's inet_listen: an
// unbound socket takes an ephemeral port.
func (n *Net[E]) listenInet(s int32, backlog int) Errno {
	p := &n.socks[s]
	if p.typ != unix.SOCK_STREAM {
		return unix.EOPNOTSUPP
	}
	if p.state != stClose && p.state != stListen || p.closed {
		return unix.EINVAL
	}
	if p.state == stClose {
		if p.local.port != 0 && !n.listenFree(p) {
			return unix.EADDRINUSE
		}
		if n.autobindInet(p) != 0 {
			return unix.EADDRINUSE
		}
	}
	p.backlog = int32(backlog)
	p.state = stListen
	n.freeRing(p)
	if n.svcTakes(&p.local) {
		p.svc = true
		n.svcWant(p, abi.NetOpListen)
	}
	n.bump(s)
	return 0
}

// pollInet is an inet socket's readiness, as Linux's tcp_poll (a
// listener: inet_csk_listen_poll) and udp_poll.
func (n *Net[E]) pollInet(p *sock) uint32 {
	const (
		in  = unix.EPOLLIN | unix.EPOLLRDNORM
		out = unix.EPOLLOUT | unix.EPOLLWRNORM
	)
	var ev uint32
	if p.state == stListen {
		if p.qlen > 0 {
			ev |= in
		}
		return ev
	}
	if p.err != 0 {
		ev |= unix.EPOLLERR
	}
	if p.shut&shutRcv != 0 {
		ev |= in | unix.EPOLLRDHUP
	}
	if p.typ == unix.SOCK_DGRAM {
		if p.shut == shutBoth {
			ev |= unix.EPOLLHUP
		}
		if p.msgs > 0 {
			ev |= in
		}
		return ev | out | unix.EPOLLWRBAND
	}
	if p.shut == shutBoth || p.state == stClose {
		ev |= unix.EPOLLHUP
	}
	if p.state == stSynSent {
		return ev
	}
	if p.n > 0 {
		ev |= in
	}
	if p.svc {
		if p.shut&shutSend != 0 || p.txn*2 <= RingSize {
			ev |= out
		}
	} else if q := p.peer; p.shut&shutSend != 0 || q < 0 || n.socks[q].dead || n.socks[q].n*2 <= RingSize {
		ev |= out
	}
	return ev
}

// AcceptedName writes the peer address of connection s, which accept
// just took off a listener's queue, into sa and returns its length: as
// Name's, except that a connection reset while it waited in the queue
// still has its peer's address (Linux's inet_getname with peer 2, which
// accept asks for): accept returns it, and its first read says
// ECONNRESET. (getpeername on it says ENOTCONN.)
func (n *Net[E]) AcceptedName(s int, sa *[AddrMax]byte) (int, Errno) {
	n.env.Lock()
	p := &n.socks[s]
	if isInet(p.family) {
		defer n.env.Unlock()
		return putInet(p.family, &p.remote, sa), 0
	}
	n.env.Unlock()
	return n.Name(s, true, sa)
}

// nameInet is getsockname's and getpeername's answer for an inet socket:
// ENOTCONN for the peer of a socket not connected, or reset.
func (n *Net[E]) nameInet(p *sock, peer bool, sa *[AddrMax]byte) (int, Errno) {
	if !peer {
		return putInet(p.family, &p.local, sa), 0
	}
	if p.state != stConnected || p.closed {
		return 0, unix.ENOTCONN
	}
	return putInet(p.family, &p.remote, sa), 0
}

// shutdownInet is shutdown on an inet socket, as Linux's inet_shutdown:
// a listener shut for reading stops listening; an unconnected socket
// takes the bits and says ENOTCONN; a TCP connection shut for sending
// sends its FIN.
func (n *Net[E]) shutdownInet(s int32, mode uint8) Errno {
	p := &n.socks[s]
	defer n.bump(s)
	if p.ss == ssConnecting {
		if p.state != stConnected || p.closed {
			p.ss = ssDisconnecting
		} else {
			p.ss = ssConnected
		}
	}
	switch {
	case p.state == stListen:
		if mode&shutRcv != 0 {
			n.stopListening(s)
			n.svcLeave(p) // the wire's listener stops too
		}
		return 0
	case p.state == stSynSent:
		p.state, p.synTo = stClose, -1
		n.svcLeave(p)
		return 0
	case p.state == stClose || p.closed:
		p.shut |= mode
		return unix.ENOTCONN
	}
	p.shut |= mode
	if p.svc && p.typ == unix.SOCK_STREAM && mode&shutSend != 0 {
		n.svcWant(p, abi.NetOpShutWr)
	}
	if q := p.peer; p.typ == unix.SOCK_STREAM && mode&shutSend != 0 && q >= 0 && !n.socks[q].dead {
		qp := &n.socks[q]
		qp.shut |= shutRcv
		qp.fin = true
		qp.closed = qp.shut&shutSend != 0 && qp.fin
		p.closed = p.fin
		n.bump(q)
	}
	return 0
}

// recvTCP reads socket s's ring, as Linux's tcp_recvmsg: data first;
// then end of file once the peer's FIN came, a pending error (a RST),
// end of file if shut for reading, ENOTCONN if not connected.
func (n *Net[E]) recvTCP(s int32, v *Iov, flags int, m *Msg) (Wait, Errno) {
	p := &n.socks[s]
	if p.state == stListen {
		return Wait{}, unix.ENOTCONN
	}
	if flags&unix.MSG_OOB != 0 {
		return Wait{}, unix.EINVAL
	}
	if p.n == 0 {
		switch {
		case p.fin:
			return Wait{}, 0
		case p.err != 0:
			e := p.err
			p.err = 0
			return Wait{}, e
		case p.shut&shutRcv != 0:
			return Wait{}, 0
		case p.state == stClose:
			return Wait{}, unix.ENOTCONN
		}
		return n.wait(s), unix.EAGAIN
	}
	c, ok := n.toIov(v, min(p.n, v.Len), p, 0)
	if !ok && c == 0 {
		return Wait{}, unix.EFAULT
	}
	if flags&unix.MSG_PEEK == 0 {
		n.drop(p, c)
		n.bump(s)
		if q := p.peer; q >= 0 {
			n.bump(q)
		}
		if p.svcFull {
			p.svcFull = false
			n.svcWant(p, abi.NetOpRxRoom)
		}
	}
	m.N = c
	return Wait{}, 0
}

func boolInt(x bool) int32 {
	if x {
		return 1
	}
	return 0
}
