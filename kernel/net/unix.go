package net

import (
	"golang.org/x/sys/unix"
	"sync/atomic"

	"yolk/kernel/abi"
)

// The AF_UNIX calls, in the order and with the errors of Linux's
// net/unix/af_unix.c. The kernel has already read the program's memory:
// addresses come as the bytes after sa_family, buffers as an Iov.

// Addr is where to connect or send: an abstract name (Name, its leading
// NUL included) or the socket a path's node names (Path, and the ID the
// node records: 0 for a node no bind made).
type Addr struct {
	Name []byte
	Path bool
	ID   uint64
	Raw  []byte // an inet or netlink socket's: the program's sockaddr as it is
}

// find is the live socket of type typ a names: ECONNREFUSED if none
// listens there, EPROTOTYPE if a path's socket has another type (an
// abstract name is looked up by type, as Linux's hash includes it).
func (n *Net[E]) find(a *Addr, typ uint8) (int32, Errno) {
	if a.Path {
		s := int(a.ID & 0xffffffff)
		p := n.sk(s)
		if a.ID == 0 || p == nil || uint64(p.gen) != a.ID>>32 || !p.path {
			return -1, unix.ECONNREFUSED
		}
		if p.typ != typ {
			return -1, unix.EPROTOTYPE
		}
		return int32(s), 0
	}
	if s := n.abstract(a.Name, typ); s >= 0 {
		return s, 0
	}
	return -1, unix.ECONNREFUSED
}

// abstract is the live socket of type typ bound to abstract name, -1 if
// none.
func (n *Net[E]) abstract(name []byte, typ uint8) int32 {
	for i := range n.live() {
		p := &n.socks[i]
		if p.used && !p.dead && !p.path && p.typ == typ && int(p.addrLen) == len(name)+2 && string(p.name[:len(name)]) == string(name) {
			return int32(i)
		}
	}
	return -1
}

// Autobind gives socket s an abstract name of five hex digits if it has
// no name (bind with only sa_family, as Linux's unix_autobind).
func (n *Net[E]) Autobind(s int) Errno {
	n.env.Lock()
	defer n.env.Unlock()
	return n.autobind(&n.socks[s])
}

func (n *Net[E]) autobind(p *sock) Errno {
	if p.addrLen != 0 {
		return 0
	}
	var name [6]byte
	for try := 0; try <= 0xFFFFF; try++ {
		n.autoName = (n.autoName + 1) & 0xFFFFF
		for i := 0; i < 5; i++ {
			name[5-i] = "0123456789abcdef"[n.autoName>>(4*i)&15]
		}
		if n.abstract(name[:], p.typ) < 0 {
			copy(p.name[:], name[:])
			p.addrLen, p.path = 2+6, false
			return 0
		}
	}
	return unix.ENOSPC
}

// BindAbstract binds socket s to the abstract name (its leading NUL
// included): EINVAL if s has a name, EADDRINUSE if a socket of its type
// has this one.
func (n *Net[E]) BindAbstract(s int, name []byte) Errno { return n.bind(s, name, false) }

// BindPath records that socket s is named by path (without its NUL),
// whose node the kernel has made with s's ID: EINVAL if s has a name (the
// kernel then removes the node, as Linux).
func (n *Net[E]) BindPath(s int, path []byte) Errno { return n.bind(s, path, true) }

func (n *Net[E]) bind(s int, name []byte, path bool) Errno {
	n.env.Lock()
	defer n.env.Unlock()
	p := &n.socks[s]
	if p.addrLen != 0 {
		return unix.EINVAL
	}
	if path {
		c := copy(p.name[:len(p.name)-1], name)
		p.name[c] = 0
		p.addrLen = uint8(2 + c + 1) // the NUL counts, as Linux's unix_mkname_bsd
	} else {
		if n.abstract(name, p.typ) >= 0 {
			return unix.EADDRINUSE
		}
		p.addrLen = uint8(2 + copy(p.name[:], name))
	}
	p.path = path
	return 0
}

// Listen makes socket s a listener with room for backlog+1 connections
// (Linux's off-by-one); the kernel has bounded backlog by SomaxConn.
func (n *Net[E]) Listen(s, backlog int) Errno {
	n.env.Lock()
	defer n.env.Unlock()
	p := &n.socks[s]
	if isInet(p.family) {
		return n.listenInet(int32(s), backlog)
	}
	if p.family == unix.AF_NETLINK {
		return unix.EOPNOTSUPP
	}
	switch {
	case p.typ == unix.SOCK_DGRAM:
		return unix.EOPNOTSUPP
	case p.addrLen == 0:
		return unix.EINVAL
	case p.state != stClose && p.state != stListen:
		return unix.EINVAL
	}
	p.backlog = int32(backlog)
	p.state = stListen
	n.freeRing(p)
	n.bump(int32(s))
	return 0
}

// Connect connects socket s to a (a nil: AF_UNSPEC, which disconnects a
// datagram socket; an inet socket's address is a.Raw, inet.go). A stream
// or seqpacket connection is made at once, the server's end queued on the
// listener for Accept; EAGAIN (and what to wait for) when the listener's
// queue is full.
func (n *Net[E]) Connect(s int, a *Addr) (Wait, Errno) {
	n.env.Lock()
	defer n.env.Unlock()
	p := &n.socks[s]
	if isInet(p.family) {
		return n.connectInet(int32(s), a.Raw)
	}
	if p.typ == unix.SOCK_DGRAM {
		return Wait{}, n.connectDgram(int32(s), a)
	}
	if a == nil {
		return Wait{}, unix.EINVAL
	}
	if p.opts&optPassCred != 0 {
		n.autobind(p)
	}
	o, e := n.find(a, p.typ)
	if e != 0 {
		return Wait{}, e
	}
	op := &n.socks[o]
	if op.state != stListen || op.shut&shutRcv != 0 {
		return Wait{}, unix.ECONNREFUSED
	}
	if op.qlen > op.backlog {
		return n.wait(o), unix.EAGAIN
	}
	if p.state != stClose {
		if p.state == stConnected {
			return Wait{}, unix.EISCONN
		}
		return Wait{}, unix.EINVAL
	}
	c, e := n.newSock(int(p.typ))
	if e != 0 {
		return Wait{}, unix.ENOMEM
	}
	cp := &n.socks[c]
	atomic.StoreInt32(&cp.refs, 0) // no descriptor until accepted
	if e = n.connectPair(int32(s), c); e != 0 {
		n.release(c, false)
		return Wait{}, e
	}
	// The server's end has the listener's name, as Linux's.
	cp.addrLen, cp.path, cp.name = op.addrLen, op.path, op.name
	cp.listener = o
	if op.qtail >= 0 {
		n.socks[op.qtail].qnext = c
	} else {
		op.qhead = c
	}
	op.qtail = c
	op.qlen++
	n.bump(o)
	n.bump(int32(s))
	return Wait{}, 0
}

// connectDgram sets (or, a nil, clears) datagram socket s's peer.
func (n *Net[E]) connectDgram(s int32, a *Addr) Errno {
	p := &n.socks[s]
	o := int32(-1)
	if a != nil {
		if p.opts&optPassCred != 0 {
			n.autobind(p)
		}
		var e Errno
		if o, e = n.find(a, p.typ); e != 0 {
			return e
		}
		if q := n.socks[o].peer; q >= 0 && q != s {
			return unix.EPERM
		}
	}
	if old := p.peer; old != o {
		if old >= 0 {
			// Linux's unix_dgram_disconnected: what was queued is
			// dropped, and a peer connected back learns of it.
			if p.n > 0 {
				n.emptyRing(p) // descriptors in flight with them too
				if op := &n.socks[old]; !op.dead && op.peer == s {
					op.err = unix.ECONNRESET
					n.bump(old)
				}
			}
			n.unpeer(p)
		}
		if o >= 0 {
			n.setPeer(p, o)
		}
	}
	p.state = stClose
	if o >= 0 {
		p.state = stConnected
	}
	n.bump(s)
	n.reap()
	return 0
}

// Accept takes the first connection off listener s's queue and returns
// its socket, with one reference: EAGAIN (and what to wait for) if the
// queue is empty.
func (n *Net[E]) Accept(s int) (int, Wait, Errno) {
	n.env.Lock()
	defer n.env.Unlock()
	p := &n.socks[s]
	if p.typ == unix.SOCK_DGRAM || p.family == unix.AF_NETLINK {
		return -1, Wait{}, unix.EOPNOTSUPP
	}
	if p.state != stListen {
		return -1, Wait{}, unix.EINVAL
	}
	c := p.qhead
	if c < 0 {
		if p.shut&shutRcv != 0 {
			return -1, Wait{}, unix.EINVAL
		}
		return -1, n.wait(int32(s)), unix.EAGAIN
	}
	cp := &n.socks[c]
	p.qhead = cp.qnext
	if p.qhead < 0 {
		p.qtail = -1
	}
	p.qlen--
	cp.qnext, cp.listener = -1, -1
	atomic.StoreInt32(&cp.refs, 1)
	if p.family == unix.AF_UNIX {
		// Linux's unix_sock_inherit_flags.
		cp.opts |= p.opts & (optPassCred | optPassSec)
	}
	n.bump(int32(s))
	if isInet(p.family) {
		n.synComplete(int32(s))
		if p.svcFullQ {
			p.svcFullQ = false
			n.svcWant(p, abi.NetOpAcceptRoom)
		}
	}
	return int(c), Wait{}, 0
}

// Name writes socket s's address (peer: its peer's) as a sockaddr_un into
// sa and returns its length as Linux does: 2 for an unnamed socket (the
// family alone), the path and its NUL, or the whole abstract name.
// ENOTCONN for the peer of an unconnected socket.
func (n *Net[E]) Name(s int, peer bool, sa *[AddrMax]byte) (int, Errno) {
	n.env.Lock()
	defer n.env.Unlock()
	p := &n.socks[s]
	if isInet(p.family) {
		return n.nameInet(p, peer, sa)
	}
	if p.family == unix.AF_NETLINK {
		return n.nl.Name(s, peer, sa[:]), 0
	}
	if peer {
		if p.peer < 0 {
			return 0, unix.ENOTCONN
		}
		p = &n.socks[p.peer]
	}
	return putName(p, sa), 0
}

func putName(p *sock, sa *[AddrMax]byte) int {
	sa[0], sa[1] = unix.AF_UNIX, 0
	if p.addrLen == 0 {
		return 2
	}
	copy(sa[2:], p.name[:p.addrLen-2])
	return int(p.addrLen)
}

// Shutdown shuts down socket s for receiving (SHUT_RD), sending (SHUT_WR)
// or both; a connected stream or seqpacket peer gets the mirror image. An
// unconnected socket is no error, as on Linux.
func (n *Net[E]) Shutdown(s, how int) Errno {
	n.env.Lock()
	defer n.env.Unlock()
	if how < unix.SHUT_RD || how > unix.SHUT_RDWR {
		return unix.EINVAL
	}
	p := &n.socks[s]
	mode := uint8(how + 1)
	if p.family == unix.AF_NETLINK {
		return unix.EOPNOTSUPP
	}
	if isInet(p.family) {
		return n.shutdownInet(int32(s), mode)
	}
	p.shut |= mode
	if q := p.peer; q >= 0 && p.typ != unix.SOCK_DGRAM {
		var peer uint8
		if mode&shutRcv != 0 {
			peer |= shutSend
		}
		if mode&shutSend != 0 {
			peer |= shutRcv
		}
		n.socks[q].shut |= peer
		n.bump(q)
	}
	n.bump(int32(s))
	return 0
}

// What a sockaddr_un names (ParseAddr).
const (
	AddrAuto     = 1 + iota // the family alone: bind autobinds
	AddrAbstract            // an abstract name, from its leading NUL
	AddrPath                // a path name
)

// ParseAddr reads a sockaddr_un of len(sa) bytes as bind and connect do
// (Linux's unix_validate_addr and unix_mkname_bsd): the family alone is
// AddrAuto (bind's autobind; EINVAL elsewhere); otherwise the length must
// be 3 to AddrMax and the family AF_UNIX (EINVAL); a leading NUL makes the
// rest an abstract name (NUL included), else the path is the bytes up to
// the first NUL.
func ParseAddr(sa []byte) (kind int, name []byte, e Errno) {
	if len(sa) < 2 || len(sa) > AddrMax || sa[0] != unix.AF_UNIX || sa[1] != 0 {
		return 0, nil, unix.EINVAL
	}
	if len(sa) == 2 {
		return AddrAuto, nil, 0
	}
	name = sa[2:]
	if name[0] == 0 {
		return AddrAbstract, name, 0
	}
	for i, c := range name {
		if c == 0 {
			return AddrPath, name[:i], 0
		}
	}
	return AddrPath, name, 0
}
