package net

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/internal/bitmap"
)

// The TCP/IP service's side of inet sockets (abi.SysNet): sockets whose
// traffic leaves the machine. Once a service is up (ServiceUp), a connect
// or datagram to an address not this machine's, a listener and a UDP
// socket on the wildcard or the NIC's address, are the service's too
// (sock.svc): the kernel keeps their state and rings as for loopback, and
// records what the service has to do in sock.ops, which ServicePoll hands
// over; the service reports the wire's events back (connected, a new
// connection, bytes in, FIN, RST, datagrams). A stream socket of the
// service has a transmit ring beside its receive ring: write appends to
// it and returns, the service drains it. Nothing here waits for the
// service but listen, until the service has polled it (ListenWait).
//
// Lifetime: the service holds a socket it was told of (a link, as a peer
// holds one) until it says NetRelease, so a closed socket's unsent bytes
// stay for it to send and its identity is not reused meanwhile.

// ServiceUp records that the TCP/IP service runs, with the NIC's IPv4
// address: from now on other addresses are reachable through it.
func (n *Net[E]) ServiceUp(addr [4]byte, prefix int) {
	n.env.Lock()
	defer n.env.Unlock()
	n.svcOn = true
	n.nV4 = 1
	n.localV4[0] = addr
	n.svcPrefix = prefix
}

// svcWant records ops for the service on socket p and wakes it. It does
// not make p's traffic the service's: its callers set p.svc where it is.
func (n *Net[E]) svcWant(p *sock, ops uint32) {
	if !p.svcHeld {
		p.svcHeld = true
		p.links++ // the service's hold, until NetRelease
	}
	p.ops |= ops
	bitmap.SetBit(n.work[:], int(n.index(p)))
	n.env.NotifyService()
}

// noWork clears p's work for the service.
func (n *Net[E]) noWork(p *sock) {
	p.ops = 0
	bitmap.ClearBit(n.work[:], int(n.index(p)))
}

// svcLeave takes stream socket p's traffic from the service (a reset
// connection, a listener that stops, a connect over loopback after one
// through the wire): what the service was told and has not done is
// void, it aborts its endpoint and releases p; the unsent bytes go.
// From here on p is the kernel's alone, as a loopback socket is.
func (n *Net[E]) svcLeave(p *sock) {
	if p.svcHeld {
		n.noWork(p)
		n.svcWant(p, abi.NetOpAbort)
	}
	p.svc = false
	p.svcFull, p.svcFullQ = false, false
	n.freeTx(p)
}

// nicSource is the NIC's address of d's kind, the source of traffic to
// d through the service; false if it has none. To an IPv6 link-local
// address the source is the NIC's own link-local one, which the service's
// netstack has and the kernel is not told: the wildcard, for the service
// to fill (Linux's fe80::/64 route on the interface).
func (n *Net[E]) nicSource(d *inetAddr) ([16]byte, bool) {
	if d.v4() {
		return v4Addr(n.localV4[0][:]).ip, n.nV4 > 0
	}
	if d.ip[0] == 0xfe && d.ip[1]&0xc0 == 0x80 {
		return [16]byte{}, true
	}
	return n.localV6[0], n.nV6 > 0
}

// svcTakes reports whether a listener or UDP socket bound to a should
// also take traffic from the wire: the service is up and a is a wildcard
// or the NIC's address.
func (n *Net[E]) svcTakes(a *inetAddr) bool {
	if !n.svcOn || n.svcOffline {
		return false
	}
	if a.any() {
		return true
	}
	return !a.loopback() && n.local(a)
}

// txRing gives p its transmit side: the pages come as bytes do
// (net.go); true.
func (n *Net[E]) txRing(p *sock) bool { return true }

func (n *Net[E]) freeTx(p *sock) {
	n.freePages(&p.tx)
	p.txr, p.txn = 0, 0
}

// The transmit ring's helpers, as the receive ring's.
func (p *sock) txAt(pos int) (uintptr, int) { return p.ringAt(&p.tx, pos) }

func (p *sock) txPut(b []byte) {
	for len(b) > 0 {
		a, c := p.txAt(p.txr + p.txn)
		c = copy(mem(a, c), b)
		b = b[c:]
		p.txn += c
	}
}

// txFromIov appends c bytes of v, from byte off on, to p's transmit
// ring (fromIov's twin); it returns how many it appended.
func (n *Net[E]) txFromIov(v *Iov, off, c int, p *sock) (int, bool) {
	return n.iovIn(v, off, c, p, &p.tx, p.txr, &p.txn)
}

func (p *sock) txGet(b []byte) {
	pos := p.txr
	for len(b) > 0 {
		a, c := p.txAt(pos)
		c = copy(b, mem(a, c))
		b = b[c:]
		pos += c
	}
}

// txDrop consumes k bytes of p's transmit ring.
func (n *Net[E]) txDrop(p *sock, k int) {
	from := p.txr
	p.txr = (p.txr + k) % p.ringSize()
	p.txn -= k
	if p.txn == 0 {
		p.txr = 0
	}
	n.consumed(p, &p.tx, from, k, p.txr, p.txn)
}

// connectSvc starts a TCP connect through the service: the socket waits
// in stSynSent until NetConnected.
func (n *Net[E]) connectSvc(s int32, d *inetAddr) Errno {
	p := &n.socks[s]
	src, ok := n.nicSource(d)
	if !ok {
		return unix.ENETUNREACH // the NIC has no address of d's kind (yet)
	}
	if p.local.any() {
		p.local.ip = src
	}
	if !n.ring(p) || !n.txRing(p) {
		return unix.ENOBUFS
	}
	p.remote = *d
	p.state, p.synTo = stSynSent, -1
	p.svc = true
	// A connect replaces the endpoint the service holds for p, if any
	// (netsvc aborts it): an abort still pending would abort the new one.
	p.ops &^= abi.NetOpAbort
	n.svcWant(p, abi.NetOpConnect)
	n.bump(s)
	return 0
}

// sendSvc appends to p's transmit ring for the service.
func (n *Net[E]) sendSvc(s int32, v *Iov, off int) (int, Wait, Errno) {
	p := &n.socks[s]
	c := min(RingSize-p.txn, v.Len-off)
	if c == 0 && v.Len > off {
		return 0, n.wait(s), unix.EAGAIN
	}
	c, e := n.backStream(p, &p.tx, p.txr+p.txn, c)
	if e != 0 {
		return 0, Wait{}, e
	}
	done, ok := n.txFromIov(v, off, c, p)
	if !ok && done == 0 {
		return 0, Wait{}, unix.EFAULT
	}
	if done > 0 {
		n.svcWant(p, abi.NetOpTx)
	}
	return done, Wait{}, 0
}

// sendDgramSvc queues a datagram to d for the service: length, the
// destination, the data, in the transmit ring.
func (n *Net[E]) sendDgramSvc(s int32, v *Iov, off int, d *inetAddr) (int, Wait, Errno) {
	p := &n.socks[s]
	l := v.Len - off
	if _, ok := n.nicSource(d); !ok {
		return 0, Wait{}, unix.ENETUNREACH
	}
	if !n.txRing(p) {
		return 0, Wait{}, unix.ENOBUFS
	}
	need := msgHdr + inetNameLen + l
	if p.ringSize()-p.txn < need {
		return 0, n.wait(s), unix.EAGAIN
	}
	if n.back(p, &p.tx, p.txr+p.txn, need) != need {
		return 0, Wait{}, unix.ENOBUFS
	}
	if p.local.any() && !p.svc {
		p.svc = true
		n.svcWant(p, abi.NetOpBind) // replies come to its port
	}
	mark := p.txn
	var h [msgHdr + inetNameLen]byte
	binary.LittleEndian.PutUint32(h[:], uint32(l))
	h[4] = inetNameLen
	copy(h[msgHdr:], d.ip[:])
	binary.BigEndian.PutUint16(h[msgHdr+16:], d.port)
	p.txPut(h[:])
	if c, ok := n.txFromIov(v, off, l, p); !ok || c != l {
		p.txn = mark
		return 0, Wait{}, unix.EFAULT
	}
	n.svcWant(p, abi.NetOpDgram)
	return l, Wait{}, 0
}

// v6Index is the NIC's IPv6 address a's slot in localV6, -1 if none.
func (n *Net[E]) v6Index(a [16]byte) int {
	for i := range n.localV6[:n.nV6] {
		if n.localV6[i] == a {
			return i
		}
	}
	return -1
}

// svcSock is the socket id names if it is the service's: alive, or closed
// and still held (dead true).
func (n *Net[E]) svcSock(id uint64) (*sock, bool) {
	s := int(id & 0xffffffff)
	if s >= NumSockets {
		return nil, false
	}
	p := &n.socks[s]
	if !p.used || uint64(p.gen) != id>>32 || !p.svcHeld {
		return nil, false
	}
	return p, true
}

// Service answers one NetCall from the service (the kernel has copied it
// in, and copies it back out); v is the program's buffer the call names
// (c.Buf, c.Len), which is reached only through Env's copies, as every
// socket call's: a bad buffer is EFAULT, never a fault in the kernel.
func (n *Net[E]) Service(c *abi.NetCall, v *Iov) Errno {
	n.env.Lock()
	defer n.env.Unlock()
	if !n.svcOn {
		return unix.ENODEV
	}
	if c.Op == abi.NetPoll {
		k, ok := n.poll(v)
		c.N = uintptr(k)
		if !ok {
			return unix.EFAULT
		}
		return 0
	}
	if c.Op == abi.NetOffline {
		n.svcOffline = c.Len != 0
		return 0
	}
	if e, ok := n.linkConf(c, v); ok {
		return e
	}
	if c.Op == abi.NetAddr6 {
		// Linux's max_addresses bounds autoconfigured addresses too:
		// more than the slots are refused, not put in place of others.
		if n.nV6 < len(n.localV6) && n.v6Index(c.Local) < 0 {
			n.localV6[n.nV6] = c.Local
			n.nV6++
			if i := n.ifaces.byName("eth0"); i > 0 {
				n.ifaces.AddAddr6(i, c.Local, int(c.Len))
			}
		}
		return 0
	}
	if c.Op == abi.NetDelAddr6 {
		k := n.v6Index(c.Local)
		if k < 0 {
			return unix.ENOENT
		}
		copy(n.localV6[k:n.nV6-1], n.localV6[k+1:n.nV6])
		n.nV6--
		n.localV6[n.nV6] = [16]byte{}
		if i := n.ifaces.byName("eth0"); i > 0 {
			n.ifaces.DelAddr6(i, c.Local)
		}
		return 0
	}
	if c.Op == abi.NetAccepted {
		return n.accepted(c)
	}
	p, ok := n.svcSock(c.Sock)
	if !ok {
		return unix.EBADF
	}
	s := n.index(p)
	return n.serve(s, p, c, v)
}

func (n *Net[E]) serve(s int32, p *sock, c *abi.NetCall, v *Iov) Errno {
	// Each operation on the kind of socket it is for: a call that names
	// another (a confused or hostile caller) changes nothing.
	// (A closed stream has no receive ring any more, but still its
	// transmit ring for the service to drain.)
	stream := p.typ == unix.SOCK_STREAM && p.state != stListen && (p.rxOn || p.dead)
	switch c.Op {
	case abi.NetConnected, abi.NetRx, abi.NetTx, abi.NetFin:
		if !stream {
			return unix.EINVAL
		}
	case abi.NetDgramIn, abi.NetDgramOut:
		if p.typ != unix.SOCK_DGRAM {
			return unix.EINVAL
		}
	}
	switch c.Op {
	case abi.NetConnected:
		if p.dead || p.state != stSynSent {
			return 0
		}
		if c.Errno == 0 {
			p.state = stConnected
		} else {
			p.state, p.err, p.shut, p.closed = stClose, Errno(c.Errno), shutBoth, true
		}
		n.bump(s)
	case abi.NetRx:
		if p.dead {
			c.N = uintptr(v.Len) // nobody reads: taken and dropped
			return 0
		}
		k := n.back(p, &p.pages, p.r+p.n, min(RingSize-p.n, v.Len)) // short if memory is out
		got, ok := n.fromIov(v, 0, k, p)
		c.N = uintptr(got)
		if got > 0 {
			n.bump(s)
		}
		if !ok {
			return unix.EFAULT
		}
		if k < v.Len {
			if p.n == 0 {
				// No page for an empty ring's first bytes: no reader will
				// make room and say so (NetOpRxRoom); the service tries
				// again later.
				return unix.ENOBUFS
			}
			p.svcFull = true // NetOpRxRoom when a read makes room
		}
	case abi.NetTx:
		got, ok := n.iovOut(v, min(p.txn, v.Len), p, &p.tx, p.txr)
		n.txDrop(p, got)
		c.N, c.Left = uintptr(got), uintptr(p.txn)
		if got > 0 {
			n.bump(s)
		}
		if !ok {
			return unix.EFAULT
		}
	case abi.NetFin:
		p.shut |= shutRcv
		p.fin = true
		p.closed = p.shut&shutSend != 0
		n.bump(s)
	case abi.NetReset:
		p.err, p.shut, p.closed = Errno(c.Errno), shutBoth, true
		if p.state == stSynSent {
			p.state = stClose
		}
		n.bump(s)
	case abi.NetDgramIn:
		return n.dgramIn(s, p, c, v)
	case abi.NetDgramOut:
		return n.dgramOut(s, p, c, v)
	case abi.NetRelease:
		if !p.dead && p.ops&(abi.NetOpConnect|abi.NetOpListen|abi.NetOpBind|abi.NetOpDgram) != 0 {
			// p started anew after the service took its last work
			// and before it let go: the service holds the new one.
			n.env.NotifyService()
			return 0
		}
		p.svcHeld, p.svc = false, false
		n.noWork(p)
		n.freeTx(p)
		p.links--
		n.maybeFree(p)
	default:
		return unix.EINVAL
	}
	return 0
}

// poll copies the sockets' pending work as NetEvents into v and clears
// it: the number copied, and false if v went bad (the events not copied
// stay pending).
func (n *Net[E]) poll(v *Iov) (int, bool) {
	const size = int(unsafe.Sizeof(abi.NetEvent{}))
	k := 0
	for i := bitmap.Next(n.work[:], 0, n.top); i >= 0; i = bitmap.Next(n.work[:], i+1, n.top) {
		p := &n.socks[i]
		if !p.used || p.ops == 0 {
			continue
		}
		if (k+1)*size > v.Len {
			n.env.NotifyService() // more next time
			break
		}
		e := abi.NetEvent{Sock: uint64(p.gen)<<32 | uint64(i), Ops: p.ops, Backlog: p.backlog, Typ: p.typ, Family: p.family,
			V6Only: uint8(boolInt(p.v6only)), LPort: p.local.port, RPort: p.remote.port, Local: p.local.ip, Remote: p.remote.ip}
		if !n.copyOut(v, k*size, unsafe.Slice((*byte)(unsafe.Pointer(&e)), size)) {
			return k, false
		}
		if p.ops&abi.NetOpListen != 0 {
			n.bump(int32(i)) // listen's wait is over (ListenWait)
		}
		n.noWork(p)
		k++
	}
	return k, true
}

// ListenWait is what listen on socket s, a listener the service serves,
// waits for after Listen: that the service has taken the request
// (NetPoll). The service applies the requests it polled before it reads
// the next frames from the NIC, so from then on a peer's SYN meets a
// listening endpoint, not a reset, as on Linux once listen returned.
// false: nothing to wait for.
func (n *Net[E]) ListenWait(s int) (Wait, bool) {
	n.env.Lock()
	defer n.env.Unlock()
	p := &n.socks[s]
	if !p.svc || p.dead || p.state != stListen || p.ops&abi.NetOpListen == 0 {
		return Wait{}, false
	}
	return n.wait(int32(s)), true
}

// copyOut copies b into v at byte off, whole or not at all.
func (n *Net[E]) copyOut(v *Iov, off int, b []byte) bool {
	b0, ok := n.seg(v, 0)
	if !ok || off+len(b) > b0.l {
		return false
	}
	return n.segOut(b0, off, NoEscape(b)) == len(b)
}

// WireReserve is how many socket slots connections from the wire may
// not take: peers that connect and go silent cannot leave the program
// without a socket of its own (a pipe-like AF_UNIX pair, a connect
// out, a health check's loopback connection).
const WireReserve = 64

// freeSocks is the number of free socket slots.
func (n *Net[E]) freeSocks() int { return n.Limit() - n.nused }

// accepted makes the socket of a connection the service accepted for a
// listener: queued for accept as loopback's are; refused (ENFILE) when
// only WireReserve slots are left.
func (n *Net[E]) accepted(c *abi.NetCall) Errno {
	lp, ok := n.svcSock(c.Sock)
	if !ok || lp.dead || lp.state != stListen {
		return unix.EBADF
	}
	l := n.index(lp)
	if lp.qlen > lp.backlog {
		lp.svcFullQ = true
		return unix.EAGAIN
	}
	if n.freeSocks() <= WireReserve {
		return unix.ENFILE // the rest is the program's own (the service resets the connection)
	}
	cs, e := n.newSock(unix.SOCK_STREAM)
	if e != 0 {
		return unix.ENFILE
	}
	cp := &n.socks[cs]
	atomic.StoreInt32(&cp.refs, 0)
	cp.family, cp.v6only, cp.tcp = lp.family, lp.v6only, lp.tcp
	cp.opts = lp.opts &^ (optReuseAddr | optReusePort)
	cp.local = inetAddr{ip: c.Local, port: c.LPort}
	cp.remote = inetAddr{ip: c.Remote, port: c.RPort}
	cp.state, cp.ss = stConnected, ssConnected
	if !n.ring(cp) || !n.txRing(cp) {
		n.release(cs, false)
		return unix.ENOBUFS
	}
	cp.svc, cp.svcHeld = true, true
	cp.links++
	cp.listener = l
	if lp.qtail >= 0 {
		n.socks[lp.qtail].qnext = cs
	} else {
		lp.qhead = cs
	}
	lp.qtail = cs
	lp.qlen++
	n.bump(l)
	c.Sock = uint64(cp.gen)<<32 | uint64(cs)
	return 0
}

// dgramIn queues a datagram from the wire, v, on UDP socket p, from
// c.Remote:c.RPort: dropped if a connected socket's peer is another, or
// the ring has no room for it.
func (n *Net[E]) dgramIn(s int32, p *sock, c *abi.NetCall, v *Iov) Errno {
	src := inetAddr{ip: c.Remote, port: c.RPort}
	if p.dead || p.typ != unix.SOCK_DGRAM || p.state == stConnected && p.remote != src {
		return 0
	}
	if v.Len > maxUDP6 {
		return unix.EMSGSIZE // no datagram is so large
	}
	if !n.room(p, msgHdr+inetNameLen+v.Len) {
		return 0
	}
	mark := p.n
	var h [msgHdr + inetNameLen]byte
	binary.LittleEndian.PutUint32(h[:], uint32(v.Len))
	h[4] = inetNameLen
	copy(h[msgHdr:], src.ip[:])
	binary.BigEndian.PutUint16(h[msgHdr+16:], src.port)
	p.put(h[:])
	if k, ok := n.fromIov(v, 0, v.Len, p); !ok || k != v.Len {
		p.n = mark
		return unix.EFAULT
	}
	p.msgs++
	n.bump(s)
	return 0
}

// dgramOut gives the service, in v, the next datagram UDP socket p sends.
func (n *Net[E]) dgramOut(s int32, p *sock, c *abi.NetCall, v *Iov) Errno {
	var h [msgHdr + inetNameLen]byte
	if p.txn < len(h) {
		return unix.EAGAIN
	}
	p.txGet(h[:])
	l := int(binary.LittleEndian.Uint32(h[:]))
	if p.txn < len(h)+l {
		return unix.EIO // cannot happen: datagrams are queued whole
	}
	copy(c.Remote[:], h[msgHdr:msgHdr+16])
	c.RPort = binary.BigEndian.Uint16(h[msgHdr+16:])
	c.Local, c.LPort = p.local.ip, p.local.port
	if l > v.Len {
		return unix.EMSGSIZE
	}
	if k, ok := n.iovOut(v, l, p, &p.tx, p.txr+len(h)); !ok || k != l {
		return unix.EFAULT // the datagram stays queued
	}
	n.txDrop(p, len(h)+l)
	c.N, c.Left = uintptr(l), uintptr(p.txn)
	n.bump(s)
	return 0
}
