package net

// Netlink route sockets (NETLINK_ROUTE) as package net's interface calls
// read them: the interface table, the answers to RTM_GETLINK and
// RTM_GETADDR written datagram by datagram from a small dump cursor, and
// sockaddr_nl's rules for socket, bind, connect, sendto and the names.
// Kernel-context Go, like the rest of the package: everything is written
// into buffers the caller gives, nothing is allocated.
//
// How the socket layer uses it (Linux's order of events):
//   - sendto: NLDest checks the address and autobinds; then, for each
//     message of the datagram, Ifaces.Request answers it. The datagrams it
//     returns (an error or acknowledgement, the answer to a single
//     RTM_GETLINK) go on the socket's queue at once. A dump it starts is
//     recorded in the socket's DumpCursor; call Ifaces.Dump once right
//     away, before the next message, for the dump's first datagram (Linux
//     fills it inside sendmsg).
//   - recvmsg: when the queue is empty and the cursor is active,
//     Ifaces.Dump gives the next datagram (Linux refills when the reader
//     has drained the queue). The sender's address is NLKernelAddr.
// A datagram is at most the buffer given (NLGoodSize is Linux's choice),
// holds whole messages and at least one; NLMSG_DONE comes alone in the
// last, as Linux sends these two dumps.
//
// Choices where yolk differs from Linux (as root):
//   - only RTM_GETLINK (dump, or one link by index or IFLA_IFNAME),
//     RTM_GETADDR and RTM_GETROUTE (dumps; the routes are the IPv4 main
//     table's, routes.go) are answered; every other GET type, and every
//     NEW, DEL and SET type, is -EOPNOTSUPP (Linux would act on them;
//     the interfaces are configured by the kernel, not by programs);
//   - RTM_GETLINK dumps every link whatever the family; RTM_GETADDR
//     dumps AF_INET's, AF_INET6's or (any other family) both;
//   - request filters (IFLA_EXT_MASK, ifa_index: strict checking) are
//     ignored: the whole table is dumped;
//   - autobind gives pid 1, then -4097, -4098 … (Linux: random negative);
//   - sending to a port other than the kernel's (0) is ECONNREFUSED: no
//     user-to-user netlink;
//   - IFA_CACHEINFO's time stamps are 0 (the addresses exist from boot);
//   - an error answer whose copy of the request would not fit the buffer
//     is capped (NLM_F_CAPPED, as with NETLINK_CAP_ACK).

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

const (
	MaxIfaces  = 4  // interfaces in the table
	MaxIfAddrs = 4  // addresses per interface
	ifNameMax  = 15 // IFNAMSIZ less the NUL

	// NLGoodSize is the datagram size Linux fills a dump's datagrams up
	// to (NLMSG_GOODSIZE on 4 KiB pages); NLMinDatagram is the least a
	// buffer given to Request or Dump may hold (any one message fits).
	NLGoodSize    = 3776
	NLMinDatagram = 256
	// NLAddrLen is sizeof(struct sockaddr_nl).
	NLAddrLen = unix.SizeofSockaddrNetlink
	// NLPid is the port id autobind gives first: the process id.
	NLPid = 1

	nlHdr     = unix.NLMSG_HDRLEN
	ifInfoLen = unix.SizeofIfInfomsg
	ifAddrLen = unix.SizeofIfAddrmsg
	nlErrLen  = 4 + nlHdr // struct nlmsgerr

	ifOperUnknown = 0 // IF_OPER_UNKNOWN
	ifOperUp      = 6 // IF_OPER_UP
	ifaProto      = 11
	ifaProtKernLo = 1 // IFAPROT_KERNEL_LO
	ifaProtKernLL = 3 // IFAPROT_KERNEL_LL
	lifeInfinity  = 0xffffffff
	txQueueLen    = 1000
)

var ne = binary.NativeEndian

// DumpCursor is a socket's dump in progress: which dump, for whom, and
// the position of the next message in it. The zero value is no dump.
type DumpCursor struct {
	Type   uint16 // RTM_GETLINK or RTM_GETADDR; 0: none
	Family uint8  // RTM_GETADDR: AF_INET or AF_INET6 alone, 0 both
	Pos    uint16 // the next message; the one after the last is NLMSG_DONE
	Seq    uint32
	Port   uint32
	Gen    uint32 // the table's Gen when the dump began
}

// Active reports whether a dump is in progress.
func (c *DumpCursor) Active() bool { return c.Type != 0 }

// nlw writes netlink messages into b; bad records running out of room.
type nlw struct {
	b   []byte
	n   int
	bad bool
}

func (w *nlw) grow(k int) []byte {
	if w.bad || len(w.b)-w.n < k {
		w.bad = true
		return nil
	}
	s := w.b[w.n : w.n+k]
	w.n += k
	return s
}

func (w *nlw) u32(v uint32) {
	if s := w.grow(4); s != nil {
		ne.PutUint32(s, v)
	}
}

func (w *nlw) bytes(v []byte) {
	if s := w.grow(len(v)); s != nil {
		copy(s, v)
	}
}

func (w *nlw) pad() {
	if s := w.grow((4 - w.n%4) % 4); s != nil {
		clear(s)
	}
}

// begin writes a message header (its length patched by end) and returns
// where the message starts.
func (w *nlw) begin(typ, flags uint16, seq, port uint32) int {
	at := w.n
	if s := w.grow(nlHdr); s != nil {
		ne.PutUint32(s, 0)
		ne.PutUint16(s[4:], typ)
		ne.PutUint16(s[6:], flags)
		ne.PutUint32(s[8:], seq)
		ne.PutUint32(s[12:], port)
	}
	return at
}

func (w *nlw) end(at int) {
	w.pad()
	if !w.bad {
		ne.PutUint32(w.b[at:], uint32(w.n-at))
	}
}

func (w *nlw) attr(typ uint16, v []byte) {
	if s := w.grow(4); s != nil {
		ne.PutUint16(s, uint16(4+len(v)))
		ne.PutUint16(s[2:], typ)
	}
	w.bytes(v)
	w.pad()
}

func (w *nlw) attr32(typ uint16, v uint32) {
	var b [4]byte
	ne.PutUint32(b[:], v)
	w.attr(typ, b[:])
}

func (w *nlw) attr8(typ uint16, v uint8) {
	b := [1]byte{v}
	w.attr(typ, b[:])
}

// link writes p's RTM_NEWLINK, with Linux's attributes in Linux's order
// less those yolk has nothing behind (statistics, queueing discipline,
// offload sizes, per-family configuration, XDP).
func (w *nlw) link(p *Iface, flags uint16, seq, port uint32) {
	at := w.begin(unix.RTM_NEWLINK, flags, seq, port)
	if s := w.grow(ifInfoLen); s != nil {
		s[0], s[1] = unix.AF_UNSPEC, 0
		ne.PutUint16(s[2:], p.Type)
		ne.PutUint32(s[4:], uint32(p.Index))
		ne.PutUint32(s[8:], p.Flags)
		ne.PutUint32(s[12:], 0) // ifi_change
	}
	var name [ifNameMax + 1]byte
	copy(name[:], p.Name[:p.NameLen])
	w.attr(unix.IFLA_IFNAME, name[:p.NameLen+1])
	w.attr32(unix.IFLA_TXQLEN, txQueueLen)
	w.attr8(unix.IFLA_OPERSTATE, p.OperState)
	w.attr8(unix.IFLA_LINKMODE, 0)
	w.attr32(unix.IFLA_MTU, p.MTU)
	w.attr32(unix.IFLA_MIN_MTU, p.MinMTU)
	w.attr32(unix.IFLA_MAX_MTU, p.MaxMTU)
	w.attr32(unix.IFLA_GROUP, 0)
	w.attr32(unix.IFLA_PROMISCUITY, 0)
	w.attr32(unix.IFLA_ALLMULTI, 0)
	w.attr32(unix.IFLA_NUM_TX_QUEUES, 1)
	w.attr32(unix.IFLA_NUM_RX_QUEUES, 1)
	w.attr8(unix.IFLA_CARRIER, 1)
	w.attr32(unix.IFLA_CARRIER_CHANGES, p.Carrier)
	w.attr32(unix.IFLA_CARRIER_UP_COUNT, p.CarrierUp)
	w.attr32(unix.IFLA_CARRIER_DOWN_COUNT, p.CarrierDn)
	w.attr8(unix.IFLA_PROTO_DOWN, 0)
	w.attr(unix.IFLA_ADDRESS, p.HW[:])
	w.attr(unix.IFLA_BROADCAST, p.HWBcast[:])
	w.end(at)
}

// addr writes the RTM_NEWADDR of p's address a, as Linux's
// inet_fill_ifaddr (IPv4) and inet6_fill_ifaddr (IPv6).
func (w *nlw) addr(p *Iface, a *IfAddr, flags uint16, seq, port uint32) {
	at := w.begin(unix.RTM_NEWADDR, flags, seq, port)
	if s := w.grow(ifAddrLen); s != nil {
		s[0], s[1], s[2], s[3] = a.Family, a.Prefix, a.Flags, a.Scope
		ne.PutUint32(s[4:], uint32(p.Index))
	}
	var ci [unix.SizeofIfaCacheinfo]byte
	ne.PutUint32(ci[0:], lifeInfinity) // ifa_prefered
	ne.PutUint32(ci[4:], lifeInfinity) // ifa_valid; cstamp, tstamp 0
	if a.Family == unix.AF_INET {
		w.attr(unix.IFA_ADDRESS, a.Addr[:4])
		w.attr(unix.IFA_LOCAL, a.Addr[:4])
		if a.Bcast {
			w.attr(unix.IFA_BROADCAST, a.Broadcast[:])
		}
		var name [ifNameMax + 1]byte
		copy(name[:], p.Name[:p.NameLen])
		w.attr(unix.IFA_LABEL, name[:p.NameLen+1])
		w.attr32(unix.IFA_FLAGS, uint32(a.Flags))
		w.attr(unix.IFA_CACHEINFO, ci[:])
	} else {
		w.attr(unix.IFA_ADDRESS, a.Addr[:])
		w.attr(unix.IFA_CACHEINFO, ci[:])
		w.attr32(unix.IFA_FLAGS, uint32(a.Flags))
		if a.Proto != 0 {
			w.attr8(ifaProto, a.Proto)
		}
	}
	w.end(at)
}

// ack writes the NLMSG_ERROR answer to the request msg (header and
// payload, as sent) with errno e (0: an acknowledgement), as Linux's
// netlink_ack: an error carries a copy of the request's payload unless
// it would not fit (then, as an acknowledgement, NLM_F_CAPPED).
func (w *nlw) ack(msg []byte, e Errno, port uint32) {
	var flags uint16
	payload := len(msg) - nlHdr
	if e == 0 || len(w.b)-w.n < nlHdr+nlErrLen+payload+3 {
		flags, payload = unix.NLM_F_CAPPED, 0
	}
	at := w.begin(unix.NLMSG_ERROR, flags, ne.Uint32(msg[8:]), port)
	w.u32(uint32(-int32(e)))
	w.bytes(msg[:nlHdr+payload])
	w.end(at)
}

// Request handles the first netlink message in req, which a program
// sent to the kernel from the socket bound to port, as Linux's
// netlink_rcv_skb and rtnetlink_rcv_msg. used is the bytes the message
// took (0: req holds no message Linux would read; stop there). The
// datagrams to queue at once are out[:n1] and then out[n1:n1+n2] (n1 0:
// none): an error or acknowledgement, the link a single RTM_GETLINK
// asks for (and its acknowledgement with NLM_F_ACK). A dump request
// starts a dump in cur, or is EBUSY while cur has one. len(out) must be
// at least NLMinDatagram.
func (t *Ifaces) Request(req []byte, port uint32, cur *DumpCursor, out []byte) (used, n1, n2 int) {
	l := nlMsgLen(req)
	if l == 0 {
		return 0, 0, 0
	}
	n1, n2 = t.Answer(req[:l], port, cur, out)
	return min((l+3)&^3, len(req)), n1, n2
}

// nlMsgLen is the length of the netlink message at the start of req, 0
// if req holds no message Linux would read (a short header, or a length
// below the header's or past req).
func nlMsgLen(req []byte) int {
	if len(req) < nlHdr {
		return 0
	}
	l := int(ne.Uint32(req))
	if l < nlHdr || l > len(req) {
		return 0
	}
	return l
}

// Answer is Request for the one message msg: all of it, or, for a
// message longer than the caller's buffer, its first len(msg) bytes,
// its header saying its whole length (attributes past the cut are not
// seen; a dump request needs only its header and family, and an error's
// copy of a message that long is capped anyway).
func (t *Ifaces) Answer(msg []byte, port uint32, cur *DumpCursor, out []byte) (n1, n2 int) {
	typ, flags := ne.Uint16(msg[4:]), ne.Uint16(msg[6:])
	w := nlw{b: out}
	var e Errno
	if flags&unix.NLM_F_REQUEST != 0 && typ >= unix.NLMSG_MIN_TYPE {
		var dump bool
		e, dump = t.route(msg, port, cur, &w)
		if dump {
			return 0, 0 // no acknowledgement: the dump ends with NLMSG_DONE
		}
	}
	n1 = w.n
	if flags&unix.NLM_F_ACK != 0 || e != 0 {
		w.ack(msg, e, port)
	}
	if n1 == 0 {
		return w.n, 0
	}
	return n1, w.n - n1
}

// route answers one rtnetlink request; dump reports that it started a
// dump.
func (t *Ifaces) route(msg []byte, port uint32, cur *DumpCursor, w *nlw) (e Errno, dump bool) {
	typ, flags := ne.Uint16(msg[4:]), ne.Uint16(msg[6:])
	if typ > unix.RTM_MAX {
		return unix.EOPNOTSUPP, false
	}
	if len(msg) < nlHdr+1 { // no rtgenmsg: ignored, as Linux
		return 0, false
	}
	family := msg[nlHdr]
	if (typ-unix.RTM_BASE)&3 != 2 { // not a GET
		return unix.EOPNOTSUPP, false
	}
	if flags&unix.NLM_F_DUMP != 0 {
		switch typ {
		case unix.RTM_GETLINK:
			family = 0
		case unix.RTM_GETADDR, unix.RTM_GETROUTE:
			if family != unix.AF_INET && family != unix.AF_INET6 {
				family = 0
			}
		default:
			return unix.EOPNOTSUPP, false
		}
		if cur.Active() {
			return unix.EBUSY, false
		}
		*cur = DumpCursor{Type: typ, Family: family, Seq: ne.Uint32(msg[8:]), Port: port, Gen: t.Gen}
		return 0, true
	}
	if typ != unix.RTM_GETLINK {
		return unix.EOPNOTSUPP, false
	}
	// rtnl_getlink: an ifinfomsg, then the interface by index or name.
	if len(msg) < nlHdr+ifInfoLen {
		return unix.EINVAL, false
	}
	var p *Iface
	if index := int32(ne.Uint32(msg[nlHdr+4:])); index > 0 {
		p = t.byIndex(int(index))
	} else if name, ok := nlAttr(msg[nlHdr+ifInfoLen:], unix.IFLA_IFNAME); ok {
		name = untilNUL(name)
		for i := 0; i < t.N; i++ {
			if string(t.If[i].Name[:t.If[i].NameLen]) == string(name) {
				p = &t.If[i]
			}
		}
	} else {
		return unix.EINVAL, false
	}
	if p == nil {
		return unix.ENODEV, false
	}
	w.link(p, 0, ne.Uint32(msg[8:]), port)
	return 0, false
}

// nlAttr is the value of the first attribute of type typ in b.
func nlAttr(b []byte, typ uint16) ([]byte, bool) {
	for len(b) >= 4 {
		l := int(ne.Uint16(b))
		if l < 4 || l > len(b) {
			return nil, false
		}
		if ne.Uint16(b[2:])&^(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER) == typ {
			return b[4:l], true
		}
		b = b[min((l+3)&^3, len(b)):]
	}
	return nil, false
}

func untilNUL(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// Dump writes the next datagram of cur's dump into out (at least
// NLMinDatagram bytes) and returns its length: whole messages, as many as
// fit, and NLMSG_DONE alone in the last datagram, after which cur is idle.
// 0: no dump is in progress.
func (t *Ifaces) Dump(cur *DumpCursor, out []byte) int {
	if !cur.Active() {
		return 0
	}
	flags := uint16(unix.NLM_F_MULTI)
	if cur.Gen != t.Gen {
		flags |= unix.NLM_F_DUMP_INTR
	}
	w := nlw{b: out}
	for {
		at := w.n
		p, a := t.nth(cur, int(cur.Pos))
		r := t.nthRoute(cur, int(cur.Pos))
		if cur.Type == unix.RTM_GETROUTE && r != nil {
			w.routeMsg(t, r, flags, cur.Seq, cur.Port)
		}
		switch {
		case cur.Type == unix.RTM_GETROUTE && r != nil:
		case p == nil && w.n > 0:
			return w.n // NLMSG_DONE goes alone
		case p == nil:
			m := w.begin(unix.NLMSG_DONE, flags, cur.Seq, cur.Port)
			w.u32(0)
			w.end(m)
			*cur = DumpCursor{}
			return w.n
		case a == nil:
			w.link(p, flags, cur.Seq, cur.Port)
		default:
			w.addr(p, a, flags, cur.Seq, cur.Port)
		}
		if w.bad {
			return at
		}
		cur.Pos++
	}
}

// nth is the dump's message k: an interface (and, for RTM_GETADDR, its
// address), nil after the last. Addresses come family by family (IPv4
// first, as Linux's rtnl_dump_all), interface by interface.
func (t *Ifaces) nth(cur *DumpCursor, k int) (*Iface, *IfAddr) {
	if cur.Type == unix.RTM_GETROUTE {
		return nil, nil
	}
	if cur.Type == unix.RTM_GETLINK {
		if k < t.N {
			return &t.If[k], nil
		}
		return nil, nil
	}
	for _, fam := range [2]uint8{unix.AF_INET, unix.AF_INET6} {
		if cur.Family != 0 && cur.Family != fam {
			continue
		}
		for i := 0; i < t.N; i++ {
			p := &t.If[i]
			for j := 0; j < p.NAddrs; j++ {
				if p.Addrs[j].Family != fam {
					continue
				}
				if k == 0 {
					return p, &p.Addrs[j]
				}
				k--
			}
		}
	}
	return nil, nil
}

// NLKernelAddr writes the kernel's sockaddr_nl, the source of every
// answer, into b (NLAddrLen bytes) and returns its length.
func NLKernelAddr(b []byte) int { return nlPutAddr(b, 0, 0) }

func nlPutAddr(b []byte, port, groups uint32) int {
	if len(b) < NLAddrLen {
		return 0
	}
	ne.PutUint16(b, unix.AF_NETLINK)
	ne.PutUint16(b[2:], 0)
	ne.PutUint32(b[4:], port)
	ne.PutUint32(b[8:], groups)
	return NLAddrLen
}

// NLSocket checks socket(AF_NETLINK, typ, proto) as Linux's
// netlink_create: SOCK_RAW or SOCK_DGRAM (else ESOCKTNOSUPPORT), and a
// protocol yolk has: NETLINK_ROUTE alone (else EPROTONOSUPPORT).
func NLSocket(typ, proto int) Errno {
	if typ != unix.SOCK_RAW && typ != unix.SOCK_DGRAM {
		return unix.ESOCKTNOSUPPORT
	}
	if proto != unix.NETLINK_ROUTE {
		return unix.EPROTONOSUPPORT
	}
	return 0
}

// NLPorts is the NETLINK_ROUTE port table, indexed by the socket
// layer's socket numbers: each netlink socket's port id (0: not bound),
// multicast groups and connected destination.
type NLPorts struct {
	port   [NumSockets]uint32
	groups [NumSockets]uint32
	dst    [NumSockets]uint32
	dstGrp [NumSockets]uint32
	next   int32 // the next negative id autobind tries; 0: -4097
}

func (t *NLPorts) inUse(port uint32) bool {
	for _, p := range &t.port { // by pointer: a range over the array value copies it (64 KiB) onto the kernel stack
		if p == port {
			return true
		}
	}
	return false
}

// Port is socket s's port id, 0 if it is not bound.
func (t *NLPorts) Port(s int) uint32 { return t.port[s] }

// Release forgets socket s (closed).
func (t *NLPorts) Release(s int) {
	t.port[s], t.groups[s], t.dst[s], t.dstGrp[s] = 0, 0, 0, 0
}

// Autobind binds socket s to a free port id if it has none, as Linux's
// netlink_autobind: the process id first, then negative ids.
func (t *NLPorts) Autobind(s int) {
	if t.port[s] != 0 {
		return
	}
	if !t.inUse(NLPid) {
		t.port[s] = NLPid
		return
	}
	for {
		if t.next >= -4096 {
			t.next = -4097
		}
		id := uint32(t.next)
		t.next--
		if !t.inUse(id) {
			t.port[s] = id
			return
		}
	}
}

// parseNL reads a sockaddr_nl: EINVAL if it is short or not AF_NETLINK.
func parseNL(sa []byte) (port, groups uint32, e Errno) {
	if len(sa) < NLAddrLen || ne.Uint16(sa) != unix.AF_NETLINK {
		return 0, 0, unix.EINVAL
	}
	return ne.Uint32(sa[4:]), ne.Uint32(sa[8:]), 0
}

// Bind binds socket s to the sockaddr_nl sa, as Linux's netlink_bind:
// EINVAL for a short address, another family, or another port than the
// one s is bound to; nl_pid 0 autobinds; EADDRINUSE for a port another
// socket has. The groups are recorded (nothing is ever multicast).
func (t *NLPorts) Bind(s int, sa []byte) Errno {
	port, groups, e := parseNL(sa)
	if e != 0 {
		return e
	}
	if t.port[s] != 0 && port != t.port[s] {
		return unix.EINVAL
	}
	if t.port[s] == 0 {
		if port == 0 {
			t.Autobind(s)
		} else if t.inUse(port) {
			return unix.EADDRINUSE
		} else {
			t.port[s] = port
		}
	}
	t.groups[s] = groups
	return 0
}

// Connect sets socket s's default destination, as Linux's
// netlink_connect: AF_UNSPEC disconnects; EINVAL for a short address or
// another family; it autobinds.
func (t *NLPorts) Connect(s int, sa []byte) Errno {
	if len(sa) < 2 {
		return unix.EINVAL
	}
	if ne.Uint16(sa) == unix.AF_UNSPEC {
		t.dst[s], t.dstGrp[s] = 0, 0
		return 0
	}
	port, groups, e := parseNL(sa)
	if e != 0 {
		return e
	}
	t.Autobind(s)
	t.dst[s], t.dstGrp[s] = port, lowestBit(groups)
	return 0
}

// lowestBit is ffs(g): the lowest set bit's number from 1, 0 if none.
func lowestBit(g uint32) uint32 {
	for i := uint32(0); i < 32; i++ {
		if g&(1<<i) != 0 {
			return i + 1
		}
	}
	return 0
}

// Dest checks sendto's address sa (nil or empty: the connected
// destination) for socket s, as Linux's netlink_sendmsg, and autobinds
// s: EINVAL for a short address or another family; ECONNREFUSED for a
// port other than the kernel's, 0 (yolk delivers nothing between
// sockets). Multicast groups are accepted: nobody listens.
func (t *NLPorts) Dest(s int, sa []byte) Errno {
	port := t.dst[s]
	if len(sa) > 0 {
		p, _, e := parseNL(sa)
		if e != 0 {
			return e
		}
		port = p
	}
	t.Autobind(s)
	if port != 0 {
		return unix.ECONNREFUSED
	}
	return 0
}

// Name writes socket s's sockaddr_nl (getsockname: its port id, 0 if
// unbound, and groups; getpeername, peer true: its destination) into b
// and returns its length, 0 if b is shorter than NLAddrLen.
func (t *NLPorts) Name(s int, peer bool, b []byte) int {
	if peer {
		g := uint32(0)
		if t.dstGrp[s] != 0 {
			g = 1 << (t.dstGrp[s] - 1)
		}
		return nlPutAddr(b, t.dst[s], g)
	}
	return nlPutAddr(b, t.port[s], t.groups[s])
}
