// Package net is yolk's socket layer: AF_UNIX sockets (stream, datagram,
// seqpacket) with Linux's semantics errno for errno — socketpair, bind to
// a path or an abstract name (or autobind), listen with a bounded accept
// queue, connect, accept, shutdown, send and receive with message
// boundaries and MSG_PEEK/MSG_TRUNC, the options Go sets, and readiness
// for epoll. TCP/IP comes later (docs/net.md) and will keep its state here
// too.
//
// Kernel-context Go: nothing here allocates on the Go heap, stores a Go
// pointer into memory, calls the scheduler or blocks. Sockets are a fixed
// pool inside the Net value, named by small integers; their receive rings
// live in whole pages the kernel supplies through Env, named by address.
// kernel/kcontext_test.go checks this on a built image.
//
// Nothing blocks: a call that would have to wait returns EAGAIN and a Wait
// naming the socket whose change counter it waits on and the value the
// counter had when the call looked, under the lock; every change of a
// socket's state bumps its counter and calls Env.Wake, so the kernel blocks
// on a wait queue with that condition and never loses a wake-up. The same
// counter and Poll give epoll its readiness.
//
// Names: an abstract name lives here; a path name is a socket node of the
// file system, made and looked up by the kernel (kernel/fs's BindSocket
// and SocketAt), which records the socket's ID. A closed socket's node
// stays, as on Linux: connecting to it is ECONNREFUSED.
//
// Lifetime: a socket is alive while descriptors or calls hold it (Ref,
// Close); closed, it stays in its slot, dead, while a peer still names it
// (Linux's peer reference: getpeername still answers), and the slot is
// freed when the last peer lets go.
//
// Control messages (scm.go): SCM_RIGHTS and SCM_CREDENTIALS, as Linux's,
// descriptors in flight as references in fixed pools, a collector for
// sockets in flight that only hold each other.
//
// Not supported yet: MSG_OOB, SO_PEEK_OFF, SO_PASSPIDFD and SCM_PIDFD,
// SCM_SECURITY.
package net

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/internal/bitmap"
	"yolk/kernel/internal/pages"
)

// Env is what the kernel supplies. It must be a value type without
// pointers (in the kernel an empty struct).
type Env interface {
	pages.Supplier // receive rings
	// Lock and Unlock guard the whole socket layer.
	Lock()
	Unlock()
	// Wake is called, with the lock held, after sock's state changed.
	Wake(sock int)
	// CopyIn and CopyOut copy between b and the program's memory at p,
	// checked, and return the bytes copied (fewer than len(b): the
	// memory may not be read or written, or went away meanwhile).
	CopyIn(b []byte, p uintptr) int
	CopyOut(p uintptr, b []byte) int
	// NotifyService is called, with the lock held, when the TCP/IP
	// service has work (svc.go).
	NotifyService()
	// Hold and Drop add and drop a reference to the kernel's object of
	// kind (not KindSocket) and handle h, a descriptor in flight
	// (scm.go); they are called with the lock held.
	Hold(kind, h int)
	Drop(kind, h int)
}

// Errno is a Linux error number.
type Errno = unix.Errno

const (
	PageSize   = pages.Size
	NumSockets = 16384
	RingPages  = 16
	RingSize   = RingPages * PageSize // a stream's or an AF_UNIX socket's ring
	// DgramRingPages is an inet datagram socket's ring: two of the
	// largest datagrams (IPv6's) with their records' headers, as Linux's
	// default receive buffer (212,992) takes them.
	DgramRingPages = (2*(msgHdr+inetNameLen+maxUDP6) + PageSize - 1) / PageSize
	maxRingPages   = DgramRingPages

	// AddrMax is sizeof(struct sockaddr_un): the family and 108 bytes of
	// name.
	AddrMax = 110
	// SockMax bounds socket types: EINVAL from there on, before the
	// family is looked at (Linux's SOCK_MAX).
	SockMax = 11
	// SomaxConn is Linux's net.core.somaxconn: listen's backlog bound.
	SomaxConn = 4096
	// MaxDgramQlen is Linux's net.unix.max_dgram_qlen: a datagram
	// socket's queue takes one message more than this.
	MaxDgramQlen = 10

	// Linux's buffer sizes as SO_SNDBUF and SO_RCVBUF report them.
	defaultBuf = 212992 // net.core.wmem_default, rmem_default
	maxBuf     = 212992 // net.core.wmem_max, rmem_max
	minSndBuf  = 4608
	minRcvBuf  = 2304

	sockWords = (NumSockets + 63) / 64 // the pool's bitmaps (kernel/internal/bitmap)
	sockSum   = (sockWords + 63) / 64

	msgHdr = 5 // a queued message: its length (uint32) and its sender's address length (uint8, 0: unnamed), then the address bytes and the data
)

// States, as Linux's sk_state for unix sockets.
const (
	stClose = iota // unconnected (TCP_CLOSE)
	stListen
	stConnected // TCP_ESTABLISHED
)

// Shutdown bits (Linux's RCV_SHUTDOWN, SEND_SHUTDOWN).
const (
	shutRcv  = 1
	shutSend = 2
	shutBoth = 3
)

// Boolean socket options kept as bits.
const (
	optReuseAddr = 1 << iota
	optKeepAlive
	optBroadcast
	optPassCred
	optReusePort
	optDontRoute
	optOOBInline
	optPassSec
)

type sock struct {
	used     bool // the slot is taken (alive, or dead and still named by a peer)
	dead     bool // closed: no descriptor holds it
	family   uint8
	typ      uint8
	state    uint8
	shut     uint8
	nonblock atomic.Bool
	path     bool  // named by a path (else abstract, if named)
	addrLen  uint8 // the sockaddr's length as Linux keeps it; 0: unnamed
	opts     uint16
	err      Errno // pending error (SO_ERROR)
	gen      uint32
	refs     int32 // descriptors and calls in progress
	links    int32 // sockets whose peer is this one
	peer     int32 // -1: none
	backlog  int32 // listen's, or MaxDgramQlen
	qhead    int32 // listener: its accept queue (embryos), -1 if empty
	qtail    int32
	qlen     int32
	qnext    int32 // an embryo: the next in its listener's queue
	listener int32 // an embryo: the listener queueing it, -1 once accepted
	msgs     int32 // messages queued (datagram, seqpacket)
	sndbuf   int32
	rcvbuf   int32
	// SO_RCVTIMEO, SO_SNDTIMEO in nanoseconds (0: none) and O_NONBLOCK:
	// atomics, which Mode reads without the lock.
	rcvtimeo, sndtimeo atomic.Int64
	r, n               int // the receive ring: read position, bytes queued
	seq                uint32
	name               [AddrMax - 2]byte     // AF_UNIX: its name
	pages              [maxRingPages]uintptr // held while they hold bytes (back, consumed)
	rxOn               bool                  // it has a receive side (a connected or datagram socket; not a listener)

	// AF_INET, AF_INET6 (inet.go).
	v6only   bool     // IPV6_V6ONLY
	bindAddr bool     // bind fixed the address (Linux's SOCK_BINDADDR_LOCK)
	bindPort bool     // bind fixed the port (SOCK_BINDPORT_LOCK)
	ss       uint8    // TCP: the socket layer's state (ssUnconnected...)
	closed   bool     // TCP: reset after a connection (TCP_CLOSE): no peer name
	fin      bool     // TCP: the peer's FIN came (Linux's SOCK_DONE)
	synTo    int32    // TCP in stSynSent: the listener it waits for
	local    inetAddr // its address; port 0 if unbound
	remote   inetAddr // TCP: its peer's; UDP: connected to
	tcp      tcpOpts

	dump DumpCursor // AF_NETLINK: the dump in progress (nlsock.go)

	// The TCP/IP service's (svc.go).
	svc      bool   // its traffic goes through the service
	svcHeld  bool   // the service holds it (a link) until NetRelease
	svcFull  bool   // a NetRx was short: NetOpRxRoom when the reader makes room
	svcFullQ bool   // a NetAccepted was refused: NetOpAcceptRoom when accept makes room
	ops      uint32 // abi.NetOp* bits the service has yet to see
	txr, txn int    // the transmit ring: read position, bytes queued
	tx       [maxRingPages]uintptr

	// AF_UNIX control messages (scm.go).
	chead, ctail int32 // 1 + the first and last chunk of its queue, 0: none
	clen         int   // a stream's: the bytes its chunks cover
	zap          int32 // 1 + the next socket to release
	nflight      int32 // in-flight records naming it
	held         int32 // gc: references in-flight records in queues hold
	mark         bool  // gc: reachable
}

// Net is the socket layer. The zero value is not usable: call Init.
type Net[E Env] struct {
	env        E
	lastGen    uint32
	autoName   uint32
	nextPort   int
	nV4, nV6   int
	localV4    [4][4]byte // the NIC's addresses, beside loopback's
	localV6    [4][16]byte
	ifaces     Ifaces  // the interfaces, for netlink
	nl         NLPorts // netlink's port ids
	svcOn      bool    // a TCP/IP service is up: other addresses are reachable
	svcOffline bool    // ... but not now (abi.NetOffline)
	svcPrefix  int
	nlReq      [4096]byte
	nlOut      [NLGoodSize]byte
	scm        scm

	// The pool's books, so that no per-call path scans it: the slots
	// taken (a bitmap: the lowest free one is found in a few words),
	// how many, one past the highest taken (every scan that must look
	// at all sockets stops there), the sockets with work for the
	// service (poll walks those bits), and the slots the program may
	// use (Limit; 0: all).
	used, usedFull [sockWords]uint64
	work           [sockWords]uint64
	nused          int
	synWait        int // at least the loopback connects waiting in SYN_SENT for a listener's room (inet.go)
	top            int
	limit          int
	socks          [NumSockets]sock
}

// Wait names what a call that returned EAGAIN waits for: block until the
// counter at Addr differs from Val; Sock is the index Env.Wake is called
// with.
type Wait struct {
	Sock int
	Addr uintptr
	Val  uint32
}

// Init makes the layer empty.
func (n *Net[E]) Init(env E) {
	n.env = env
	n.ifaces.Init()
	n.initSCM()
}

func mem(a uintptr, c int) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&a))), c)
}

// sk is socket s if s names a live one.
func (n *Net[E]) sk(s int) *sock {
	if s < 0 || s >= NumSockets {
		return nil
	}
	p := &n.socks[s]
	if !p.used || p.dead {
		return nil
	}
	return p
}

// SeqAddr is the address of socket slot s's change counter (Pollable's),
// for epoll's Changed; no lock.
func (n *Net[E]) SeqAddr(s int) uintptr { return uintptr(unsafe.Pointer(&n.socks[s].seq)) }

// bump records a change of socket s and wakes its waiters.
func (n *Net[E]) bump(s int32) {
	atomic.AddUint32(&n.socks[s].seq, 1)
	n.env.Wake(int(s))
}

func (n *Net[E]) wait(s int32) Wait {
	p := &n.socks[s]
	return Wait{int(s), uintptr(unsafe.Pointer(&p.seq)), atomic.LoadUint32(&p.seq)}
}

func (n *Net[E]) index(p *sock) int32 {
	return int32((uintptr(unsafe.Pointer(p)) - uintptr(unsafe.Pointer(&n.socks[0]))) / unsafe.Sizeof(sock{}))
}

// newSock takes the lowest free slot for a socket of type typ: ENFILE if
// none is left, as Linux's sock_alloc when the system's files run out.
func (n *Net[E]) newSock(typ int) (int32, Errno) {
	i := bitmap.Lowest(n.used[:], n.usedFull[:], 0, n.Limit())
	if i < 0 {
		return -1, unix.ENFILE
	}
	bitmap.Set(n.used[:], n.usedFull[:], i)
	bitmap.ClearBit(n.work[:], i)
	n.nused++
	n.top = max(n.top, i+1)
	p := &n.socks[i]
	n.lastGen++
	*p = sock{used: true, family: unix.AF_UNIX, typ: uint8(typ), refs: 1, peer: -1, qhead: -1, qtail: -1, qnext: -1, listener: -1,
		synTo: -1, backlog: MaxDgramQlen, sndbuf: defaultBuf, rcvbuf: defaultBuf, gen: n.lastGen, seq: p.seq, tcp: defaultTCP}
	return int32(i), 0
}

// freeSlot gives p's slot back.
func (n *Net[E]) freeSlot(p *sock) {
	i := int(n.index(p))
	p.used = false
	bitmap.Clear(n.used[:], n.usedFull[:], i)
	n.nused--
	for n.top > 0 && !n.socks[n.top-1].used {
		n.top--
	}
}

// live is the part of the pool a scan over every socket looks at: the
// slots from the first to the highest taken.
func (n *Net[E]) live() []sock { return n.socks[:n.top] }

// Limit is how many socket slots the layer hands out (NumSockets unless
// SetLimit said fewer); SetLimit sets it (a hosted test's smaller
// machine; slots above it already taken stay).
func (n *Net[E]) Limit() int {
	if n.limit > 0 {
		return n.limit
	}
	return NumSockets
}

func (n *Net[E]) SetLimit(k int) {
	n.env.Lock()
	defer n.env.Unlock()
	n.limit = min(max(k, 0), NumSockets)
}

// Socket makes a socket of family (AF_UNIX, AF_INET, AF_INET6), type
// typ and protocol proto: for AF_UNIX SOCK_STREAM, SOCK_DGRAM, SOCK_RAW
// (a datagram socket, as Linux) or SOCK_SEQPACKET; for the others TCP or
// UDP (inet.go).
func (n *Net[E]) Socket(family, typ, proto int, nonblock bool) (int, Errno) {
	n.env.Lock()
	defer n.env.Unlock()
	if family == unix.AF_UNIX {
		s, e := n.socket(typ, proto, nonblock)
		return int(s), e
	}
	if typ < 0 || typ >= SockMax {
		return -1, unix.EINVAL
	}
	e := inetSocket(family, typ, proto)
	if family == unix.AF_NETLINK {
		e = NLSocket(typ, proto)
	}
	if e != 0 {
		return -1, e
	}
	s, e := n.newSock(typ)
	if e != 0 {
		return -1, e
	}
	p := &n.socks[s]
	p.family = uint8(family)
	p.nonblock.Store(nonblock)
	if isInet(p.family) {
		p.local = wildcard(p.family)
	} else {
		n.nl.Release(int(s))
	}
	return int(s), 0
}

// Family is socket s's family.
func (n *Net[E]) Family(s int) int {
	n.env.Lock()
	defer n.env.Unlock()
	return int(n.socks[s].family)
}

func (n *Net[E]) socket(typ, proto int, nonblock bool) (int32, Errno) {
	if typ < 0 || typ >= SockMax {
		return -1, unix.EINVAL
	}
	if proto != 0 && proto != unix.AF_UNIX {
		return -1, unix.EPROTONOSUPPORT
	}
	switch typ {
	case unix.SOCK_STREAM, unix.SOCK_DGRAM, unix.SOCK_SEQPACKET:
	case unix.SOCK_RAW:
		typ = unix.SOCK_DGRAM
	default:
		return -1, unix.ESOCKTNOSUPPORT
	}
	s, e := n.newSock(typ)
	if e == 0 {
		n.socks[s].nonblock.Store(nonblock)
	}
	return s, e
}

// Pair makes two sockets connected to each other (socketpair).
func (n *Net[E]) Pair(typ, proto int, nonblock bool) (a, b int, e Errno) {
	n.env.Lock()
	defer n.env.Unlock()
	sa, e := n.socket(typ, proto, nonblock)
	if e != 0 {
		return -1, -1, e
	}
	sb, e := n.socket(typ, proto, nonblock)
	if e == 0 {
		e = n.connectPair(sa, sb)
	}
	if e != 0 {
		atomic.StoreInt32(&n.socks[sa].refs, 0)
		n.release(sa, false)
		if sb >= 0 {
			atomic.StoreInt32(&n.socks[sb].refs, 0)
			n.release(sb, false)
		}
		return -1, -1, e
	}
	return int(sa), int(sb), 0
}

// connectPair connects a and b both ways, with their rings.
func (n *Net[E]) connectPair(a, b int32) Errno {
	pa, pb := &n.socks[a], &n.socks[b]
	if !n.ring(pa) || !n.ring(pb) {
		return unix.ENOMEM
	}
	n.setPeer(pa, b)
	n.setPeer(pb, a)
	pa.state, pb.state = stConnected, stConnected
	return 0
}

func (n *Net[E]) setPeer(p *sock, peer int32) {
	p.peer = peer
	n.socks[peer].links++
}

// unpeer drops p's peer, freeing it if it was dead and nothing else
// names it.
func (n *Net[E]) unpeer(p *sock) {
	q := p.peer
	if q < 0 {
		return
	}
	p.peer = -1
	qp := &n.socks[q]
	qp.links--
	n.maybeFree(qp)
}

func (n *Net[E]) maybeFree(p *sock) {
	if p.dead && p.links == 0 && atomic.LoadInt32(&p.refs) == 0 {
		n.freeSlot(p)
	}
}

// Rings take pages as they fill and give them back as they empty: a
// page is held while it holds bytes not yet read (or, briefly, room a
// writer reserved), so an idle socket holds none. Positions are offsets
// from the ring's start modulo its size; an emptied ring starts again at
// 0.

// ring gives p its receive side (it always can: the pages come as bytes
// do); true.
func (n *Net[E]) ring(p *sock) bool {
	p.rxOn = true
	return true
}

// room gives p its receive side and reports whether need more bytes fit
// in its ring, with the pages for them: false if the ring is full or
// memory is out (a datagram is then dropped, or waits).
func (n *Net[E]) room(p *sock, need int) bool {
	n.ring(p)
	return p.ringSize()-p.n >= need && n.back(p, &p.pages, p.r+p.n, need) == need
}

// ringPages is the size in pages of each of p's rings: an inet datagram
// socket's take the largest datagram, the others RingPages.
func (p *sock) ringPages() int {
	if p.typ == unix.SOCK_DGRAM && isInet(p.family) {
		return DgramRingPages
	}
	return RingPages
}

func (p *sock) ringSize() int { return p.ringPages() * PageSize }

// back gives ring r of p the pages under the k bytes from position pos
// that it lacks, and returns how many of the k bytes have their page
// (fewer if memory is out: those from the first page it could not get).
func (n *Net[E]) back(p *sock, r *[maxRingPages]uintptr, pos, k int) int {
	size := p.ringSize()
	for done := 0; done < k; {
		q := (pos + done) % size
		if i := q / PageSize; r[i] == 0 {
			if r[i] = n.env.AllocPage(); r[i] == 0 {
				return done
			}
		}
		done += PageSize - q%PageSize
	}
	return k
}

// backStream is how many of c bytes a stream write to ring r of p can
// put in, their pages taken: ENOBUFS if none (memory is out).
func (n *Net[E]) backStream(p *sock, r *[maxRingPages]uintptr, pos, c int) (int, Errno) {
	k := n.back(p, r, pos, c)
	if k == 0 && c > 0 {
		return 0, unix.ENOBUFS
	}
	return k, 0
}

// consumed gives back the pages of ring r of p that hold none of its
// live bytes [head, head+count) any more, after a read of the bytes at
// [from, from+k).
func (n *Net[E]) consumed(p *sock, r *[maxRingPages]uintptr, from, k, head, count int) {
	pages := p.ringPages()
	if count == 0 {
		n.freePages(r)
		return
	}
	size := p.ringSize()
	start := head % size
	end := start + count // past size when the live bytes wrap
	for pg, last := from/PageSize, (from+k-1)/PageSize; pg <= last; pg++ {
		i := pg % pages
		lo, hi := i*PageSize, (i+1)*PageSize
		live := lo < end && hi > start || end > size && lo < end-size
		if !live && r[i] != 0 {
			n.env.FreePage(r[i])
			r[i] = 0
		}
	}
}

// drop consumes k bytes of p's receive ring.
func (n *Net[E]) drop(p *sock, k int) {
	from := p.r
	p.r = (p.r + k) % p.ringSize()
	p.n -= k
	if p.n == 0 {
		p.r = 0
	}
	n.consumed(p, &p.pages, from, k, p.r, p.n)
}

// freePages gives a ring's pages back.
func (n *Net[E]) freePages(r *[maxRingPages]uintptr) {
	for i, a := range r {
		if a != 0 {
			n.env.FreePage(a)
			r[i] = 0
		}
	}
}

func (n *Net[E]) freeRing(p *sock) {
	n.emptyRing(p)
	p.rxOn = false
}

// emptyRing drops what p's receive ring holds, descriptors in flight
// with it, and its pages.
func (n *Net[E]) emptyRing(p *sock) {
	n.freePages(&p.pages)
	n.dropChunks(p)
	p.r, p.n, p.msgs = 0, 0, 0
}

// ID is socket s's identity, which a path's socket node records: it never
// names another socket, even after s's slot is reused.
func (n *Net[E]) ID(s int) uint64 {
	n.env.Lock()
	defer n.env.Unlock()
	return uint64(n.socks[s].gen)<<32 | uint64(s)
}

// Usage is the number of socket slots in use (alive, or closed and still
// named by a peer or the service) and of the pages their rings hold.
func (n *Net[E]) Usage() (socks, pages int) {
	n.env.Lock()
	defer n.env.Unlock()
	for i := range n.live() {
		p := &n.socks[i]
		if !p.used {
			continue
		}
		socks++
		for j := range p.pages {
			if p.pages[j] != 0 {
				pages++
			}
			if p.tx[j] != 0 {
				pages++
			}
		}
	}
	return socks, pages
}

// Type is socket s's type (SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET).
func (n *Net[E]) Type(s int) int {
	n.env.Lock()
	defer n.env.Unlock()
	return int(n.socks[s].typ)
}

// Nonblocking reports whether s is O_NONBLOCK; SetNonblocking sets it.
// Both are atomics, without the lock (Mode).
func (n *Net[E]) Nonblocking(s int) bool { return n.socks[s].nonblock.Load() }

func (n *Net[E]) SetNonblocking(s int, on bool) { n.socks[s].nonblock.Store(on) }

// Mode is what a send (send true) or receive on s needs to know before
// it starts, in one look: O_NONBLOCK, the type, and SO_SNDTIMEO or
// SO_RCVTIMEO in nanoseconds (0: none). No lock: the caller holds a
// reference (the slot is not reused), the type never changes, the rest
// are atomics; a change racing with the call is seen or not, as on Linux.
func (n *Net[E]) Mode(s int, send bool) (nonblock bool, typ int, timeout int64) {
	p := &n.socks[s]
	if send {
		return p.nonblock.Load(), int(p.typ), p.sndtimeo.Load()
	}
	return p.nonblock.Load(), int(p.typ), p.rcvtimeo.Load()
}

// Timeout is s's SO_RCVTIMEO (send false) or SO_SNDTIMEO in nanoseconds,
// 0 for none.
func (n *Net[E]) Timeout(s int, send bool) int64 {
	if send {
		return n.socks[s].sndtimeo.Load()
	}
	return n.socks[s].rcvtimeo.Load()
}

// Ref adds a reference to socket s, on which the caller holds one (its
// descriptor, under the file table's lock; a record in flight), so the
// slot cannot be freed meanwhile: an atomic add, no lock. The socket
// lock's holders read refs atomically too.
func (n *Net[E]) Ref(s int) {
	atomic.AddInt32(&n.socks[s].refs, 1)
}

// Close drops a reference to socket s; the last one closes it. A drop
// that leaves references while no socket is in flight takes no lock (a
// call's own reference, the common case): nothing happens then but the
// count. With sockets in flight the lock is taken, for gc when only
// records in flight are left (Linux's unix_gc; a socket that went in
// flight while the count dropped gets that look too).
func (n *Net[E]) Close(s int) {
	p := &n.socks[s]
	for {
		r := atomic.LoadInt32(&p.refs)
		if r <= 1 || atomic.LoadInt32(&n.scm.inflight) != 0 {
			break
		}
		if atomic.CompareAndSwapInt32(&p.refs, r, r-1) {
			if atomic.LoadInt32(&n.scm.inflight) != 0 {
				n.env.Lock()
				if atomic.LoadInt32(&p.refs) == p.nflight {
					n.gc()
				}
				n.env.Unlock()
			}
			return
		}
	}
	n.env.Lock()
	defer n.env.Unlock()
	if r := atomic.AddInt32(&p.refs, -1); r > 0 {
		if r == p.nflight {
			n.gc() // only in flight: perhaps in a cycle no descriptor reaches
		}
		return
	}
	n.release(int32(s), false)
	n.reap()
	n.gc()
}

// release closes socket s, as Linux's unix_release_sock (embryo: a
// connection never accepted, closed with its listener).
func (n *Net[E]) release(s int32, embryo bool) {
	p := &n.socks[s]
	unread := p.n > 0
	p.dead = true
	n.freeRing(p)
	if p.family != unix.AF_UNIX {
		if isInet(p.family) {
			n.releaseInet(s, unread || embryo || p.tcp.lingerOn && p.tcp.linger == 0)
		} else {
			n.nl.Release(int(s))
			p.dump = DumpCursor{}
		}
		n.bump(s)
		n.maybeFree(p)
		return
	}
	if p.state == stListen {
		for e := p.qhead; e >= 0; {
			next := n.socks[e].qnext
			n.socks[e].listener = -1
			n.release(e, true)
			e = next
		}
		p.qhead, p.qtail, p.qlen = -1, -1, 0
	}
	if q := p.peer; q >= 0 {
		qp := &n.socks[q]
		if p.typ != unix.SOCK_DGRAM {
			qp.shut = shutBoth
			if unread || embryo {
				qp.err = unix.ECONNRESET
			}
		}
		n.bump(q)
		n.unpeer(p)
	}
	n.bump(s)
	n.maybeFree(p)
}

// Pollable returns socket s's identity for Poll and the address of the
// counter that changes with its readiness.
func (n *Net[E]) Pollable(s int) (id uint64, addr uintptr) {
	n.env.Lock()
	defer n.env.Unlock()
	p := &n.socks[s]
	return uint64(p.gen)<<32 | uint64(s), uintptr(unsafe.Pointer(&p.seq))
}

// Poll is socket s's readiness as epoll events, as Linux's unix_poll and
// unix_dgram_poll; seq is the change counter's value they belong to. ok is
// false when s is no longer the socket id names.
func (n *Net[E]) Poll(s int, id uint64) (events uint32, seq uint32, ok bool) {
	n.env.Lock()
	defer n.env.Unlock()
	p := n.sk(s)
	if p == nil || uint64(p.gen)<<32|uint64(s) != id {
		return 0, 0, false
	}
	seq = atomic.LoadUint32(&p.seq)
	if isInet(p.family) {
		return n.pollInet(p), seq, true
	}
	if p.family == unix.AF_NETLINK {
		events = unix.EPOLLOUT | unix.EPOLLWRNORM
		if p.msgs > 0 || p.dump.Active() {
			events |= unix.EPOLLIN | unix.EPOLLRDNORM
		}
		if p.err != 0 {
			events |= unix.EPOLLERR
		}
		return events, seq, true
	}
	if p.err != 0 {
		events |= unix.EPOLLERR
	}
	if p.shut == shutBoth {
		events |= unix.EPOLLHUP
	}
	if p.shut&shutRcv != 0 {
		events |= unix.EPOLLRDHUP | unix.EPOLLIN | unix.EPOLLRDNORM
	}
	if p.n > 0 || p.qlen > 0 {
		events |= unix.EPOLLIN | unix.EPOLLRDNORM
	}
	if p.typ != unix.SOCK_DGRAM && p.state == stClose {
		events |= unix.EPOLLHUP
	}
	if p.state == stListen {
		return events, seq, true
	}
	writable := true
	if q := p.peer; q >= 0 && !n.socks[q].dead {
		qp := &n.socks[q]
		if p.typ == unix.SOCK_DGRAM {
			writable = qp.peer == int32(s) || !n.full(qp)
		} else {
			writable = qp.n*4 <= RingSize
		}
	}
	if writable {
		events |= unix.EPOLLOUT | unix.EPOLLWRNORM | unix.EPOLLWRBAND
	}
	return events, seq, true
}

// full reports whether datagram receiver q's queue is full, as Linux's
// unix_recvq_full.
func (n *Net[E]) full(q *sock) bool { return q.msgs > q.backlog }

// Ring helpers: positions are offsets from the read position.

func (p *sock) at(pos int) (uintptr, int) { return p.ringAt(&p.pages, pos) }

// ringAt is the kernel address of byte pos of p's ring r (the receive or
// the transmit ring), and the bytes from there to the end of its page.
func (p *sock) ringAt(r *[maxRingPages]uintptr, pos int) (uintptr, int) {
	pos %= p.ringSize()
	return r[pos/PageSize] + uintptr(pos%PageSize), PageSize - pos%PageSize
}

func (p *sock) put(b []byte) {
	for len(b) > 0 {
		a, c := p.at(p.r + p.n)
		c = copy(mem(a, c), b)
		b = b[c:]
		p.n += c
	}
}

func (p *sock) get(b []byte, skip int) {
	pos := p.r + skip
	for len(b) > 0 {
		a, c := p.at(pos)
		c = copy(b, mem(a, c))
		b = b[c:]
		pos += c
	}
}
