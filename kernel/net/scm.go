package net

import (
	"encoding/binary"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Control messages on AF_UNIX sockets: SCM_RIGHTS (descriptors in flight)
// and SCM_CREDENTIALS, as Linux's net/core/scm.c and af_unix.c.
//
// A descriptor in flight is a small record (its kind and handle) in a
// fixed pool of the layer, holding one reference to the object: for
// KindSocket a socket of this layer, for any other kind the kernel's
// object (Env.Hold, Env.Drop). The records of one message hang, as a
// list, off a chunk, another fixed pool: why pools rather than the ring
// after the message header: a stream has no headers (its descriptors stay
// with the bytes they were sent with, and a read stops at them: a chunk
// covers those bytes), the ring's bytes are copied in and out piecewise
// while a record is released one by one, and the pools bound what all
// sockets together may hold in flight (Linux's limit is per user:
// ETOOMANYREFS). A datagram's credentials go in its ring after the
// sender's name (header bit hdrCred); its descriptors are the first chunk
// of the receiver's list (header bit hdrFDs). A stream's chunks cover the
// ring's last bytes in order; bytes before the first chunk carry nothing.
//
// Releasing: a message dropped unread (the socket closed, a datagram
// socket's queue dropped on reconnect) drops its records' references; a
// socket whose last reference goes that way is released after the call's
// work, from a list (never recursively). A socket that holds itself, or a
// cycle of sockets holding each other, unreachable from any descriptor,
// is found by a collector like Linux's unix_gc (gc, run when a socket is
// released while sockets are in flight, or when a close leaves a socket
// held only by in-flight records) and released.

const (
	MaxFDs     = 253  // SCM_MAX_FD: descriptors in one message
	NumFlight  = 1024 // descriptors in flight, all sockets together
	NumChunks  = 1024
	KindSocket = 1 // an in-flight descriptor's kind: a socket of this layer

	hdrCred = 1 << 31 // in a message header's length: credentials follow the name
	hdrFDs  = 1 << 30 // the message has descriptors: its receiver's first chunk

	credLen = 12
)

// Cred is a message's credentials (struct ucred) as the receiver sees
// them; On: they are there (Recv: the receiver has SO_PASSCRED and gets a
// SCM_CREDENTIALS message).
type Cred struct {
	On            bool
	Pid, Uid, Gid uint32
}

// noCred is what a receiver with SO_PASSCRED is given for a message sent
// without credentials: no pid, the overflow ids (Linux's INVALID_UID
// munged).
var noCred = Cred{On: true, Pid: 0, Uid: 65534, Gid: 65534}

// ourCred is the one process's: pid 1, root.
var ourCred = Cred{On: true, Pid: 1, Uid: 0, Gid: 0}

type flight struct {
	kind uint8
	h    int32
	next int32 // 1 + the next record, 0: none
}

type chunk struct {
	next int32 // 1 + the next chunk, 0: none
	len  int32 // a stream's: the bytes it covers
	fds  int32 // 1 + its first descriptor, 0: none
	nfd  int32
	cred Cred
}

// scm is the layer's control-message state.
type scm struct {
	flights    [NumFlight]flight
	chunks     [NumChunks]chunk
	freeFlight int32 // 1 + the first free record
	freeChunk  int32
	inflight   int32 // socket records in flight (gc runs while there are some)
	zap        int32 // 1 + the first socket to release (sock.zap links them)
	stack      [NumSockets]int32
}

// Ctl is the control data of a message being sent: descriptors (a list
// in the layer's pool, with their references) and credentials. The zero
// value is none. Whatever SendMsg has not taken the kernel gives back
// with CtlDrop.
type Ctl struct {
	fds, tail int32
	NFD       int
	Cred      Cred
}

// FDs reports whether c still holds descriptors.
func (c *Ctl) FDs() bool { return c.fds != 0 }

func (n *Net[E]) initSCM() {
	for i := range n.scm.flights {
		n.scm.flights[i].next = int32(i + 2)
	}
	n.scm.flights[NumFlight-1].next = 0
	n.scm.freeFlight = 1
	for i := range n.scm.chunks {
		n.scm.chunks[i].next = int32(i + 2)
	}
	n.scm.chunks[NumChunks-1].next = 0
	n.scm.freeChunk = 1
	n.scm.zap = 0
}

// CtlAdd adds a descriptor in flight to c: kind and handle h, whose
// reference c now holds (dropped here on error). EINVAL beyond MaxFDs,
// ETOOMANYREFS when the pool is out.
func (n *Net[E]) CtlAdd(c *Ctl, kind, h int) Errno {
	n.env.Lock()
	e := n.ctlAdd(c, kind, h)
	n.env.Unlock()
	return e
}

func (n *Net[E]) ctlAdd(c *Ctl, kind, h int) Errno {
	i := n.scm.freeFlight
	if c.NFD >= MaxFDs || i == 0 {
		n.dropRef(uint8(kind), int32(h))
		n.reap()
		if c.NFD >= MaxFDs {
			return unix.EINVAL
		}
		return unix.ETOOMANYREFS
	}
	f := &n.scm.flights[i-1]
	n.scm.freeFlight = f.next
	*f = flight{kind: uint8(kind), h: int32(h)}
	if kind == KindSocket {
		atomic.AddInt32(&n.scm.inflight, 1)
		n.socks[h].nflight++
	}
	if c.tail != 0 {
		n.scm.flights[c.tail-1].next = i
	} else {
		c.fds = i
	}
	c.tail = i
	c.NFD++
	return 0
}

// CtlDrop releases what c still holds.
func (n *Net[E]) CtlDrop(c *Ctl) {
	if c.fds == 0 {
		return
	}
	n.env.Lock()
	n.dropList(c.fds)
	n.reap()
	n.env.Unlock()
	*c = Ctl{}
}

// TakeFD takes the first descriptor off the list *fds (Msg.FDs) and
// returns its kind and handle, whose reference is the caller's now; ok
// false when the list is empty.
func (n *Net[E]) TakeFD(fds *int32) (kind, h int, ok bool) {
	if *fds == 0 {
		return 0, 0, false
	}
	n.env.Lock()
	f := &n.scm.flights[*fds-1]
	kind, h = int(f.kind), int(f.h)
	if f.kind == KindSocket {
		atomic.AddInt32(&n.scm.inflight, -1)
		n.socks[h].nflight--
	}
	next := f.next
	f.next = n.scm.freeFlight
	n.scm.freeFlight = *fds
	*fds = next
	n.env.Unlock()
	return kind, h, true
}

// dropRef drops a reference an in-flight record held.
func (n *Net[E]) dropRef(kind uint8, h int32) {
	if kind != KindSocket {
		n.env.Drop(int(kind), int(h))
		return
	}
	p := &n.socks[h]
	if atomic.AddInt32(&p.refs, -1) == 0 {
		p.zap = n.scm.zap
		n.scm.zap = h + 1
	}
}

// dropList frees the records of list i, dropping their references.
func (n *Net[E]) dropList(i int32) {
	for i != 0 {
		f := &n.scm.flights[i-1]
		if f.kind == KindSocket {
			atomic.AddInt32(&n.scm.inflight, -1)
			n.socks[f.h].nflight--
		}
		n.dropRef(f.kind, f.h)
		next := f.next
		f.next = n.scm.freeFlight
		n.scm.freeFlight = i
		i = next
	}
}

// dupList is a copy of list i with references of its own (MSG_PEEK: a
// peek delivers new descriptors each time); a short copy if the pool runs
// out.
func (n *Net[E]) dupList(i int32) (head int32, count int) {
	var c Ctl
	for ; i != 0; i = n.scm.flights[i-1].next {
		f := n.scm.flights[i-1]
		if n.scm.freeFlight == 0 {
			break
		}
		if f.kind == KindSocket {
			atomic.AddInt32(&n.socks[f.h].refs, 1)
		} else {
			n.env.Hold(int(f.kind), int(f.h))
		}
		n.ctlAdd(&c, int(f.kind), int(f.h))
	}
	return c.fds, c.NFD
}

// reap releases the sockets whose last reference an in-flight record
// dropped (they may drop more).
func (n *Net[E]) reap() {
	for n.scm.zap != 0 {
		s := n.scm.zap - 1
		n.scm.zap = n.socks[s].zap
		n.socks[s].zap = 0
		n.release(s, false)
	}
}

// newChunk takes a free chunk: 1 + its index, 0 if none.
func (n *Net[E]) newChunk() (int32, *chunk) {
	i := n.scm.freeChunk
	if i == 0 {
		return 0, nil
	}
	c := &n.scm.chunks[i-1]
	n.scm.freeChunk = c.next
	*c = chunk{}
	return i, c
}

// appendChunk puts chunk i at the end of p's list.
func (n *Net[E]) appendChunk(p *sock, i int32) {
	if p.ctail != 0 {
		n.scm.chunks[p.ctail-1].next = i
	} else {
		p.chead = i
	}
	p.ctail = i
}

// popChunk takes p's first chunk off its list and frees it, dropping its
// descriptors unless it has none left.
func (n *Net[E]) popChunk(p *sock) {
	i := p.chead
	c := &n.scm.chunks[i-1]
	p.chead = c.next
	if p.chead == 0 {
		p.ctail = 0
	}
	p.clen -= int(c.len)
	n.dropList(c.fds)
	c.fds, c.next = 0, n.scm.freeChunk
	n.scm.freeChunk = i
}

// dropChunks drops all of p's chunks (its queue went).
func (n *Net[E]) dropChunks(p *sock) {
	for p.chead != 0 {
		n.popChunk(p)
	}
	p.clen = 0
}

// sendCred is what a message from p to o carries: the credentials given,
// or, if either socket has SO_PASSCRED (or o is not accepted yet),
// ours, as Linux's unix_maybe_add_creds.
func sendCred(p, o *sock, c *Ctl) Cred {
	if c != nil && c.Cred.On {
		return c.Cred
	}
	if p.opts&optPassCred != 0 || o.opts&optPassCred != 0 || o.listener >= 0 {
		return ourCred
	}
	return Cred{}
}

// attachStream records that the next k bytes queued on q (not yet put)
// carry cred and c's descriptors (which it takes); false if the pool is
// out.
func (n *Net[E]) attachStream(q *sock, k int, cred Cred, c *Ctl) bool {
	if c == nil || c.fds == 0 {
		if q.chead == 0 && !cred.On {
			return true // plain bytes before any chunk
		}
		if last := &n.scm.chunks[max(q.ctail, 1)-1]; q.ctail != 0 && last.fds == 0 && last.nfd == 0 && last.cred == cred {
			last.len += int32(k)
			q.clen += k
			return true
		}
	}
	id, ch := n.newChunk()
	if ch == nil {
		return false
	}
	ch.len, ch.cred = int32(k), cred
	if c != nil && c.fds != 0 {
		ch.fds, ch.nfd = c.fds, int32(c.NFD)
		c.fds, c.tail, c.NFD = 0, 0, 0
	}
	q.clen += k
	n.appendChunk(q, id)
	return true
}

// streamLimit is how many of want bytes a stream read on p may take
// (Linux's unix_stream_read_generic: never past a chunk whose credentials
// differ from the first's when p has SO_PASSCRED, never past a chunk with
// descriptors), and the credentials of what it reads. stop: the read ended
// at such a boundary. fds is the chunk with descriptors it ends with (0:
// none), whose bytes start at at: the read takes them (streamFDs) only
// once its bytes are copied, as Linux's takes a message's after copying
// it.
func (n *Net[E]) streamLimit(p *sock, want int, m *Msg) (limit int, stop bool, fds int32, at int) {
	passcred := p.opts&optPassCred != 0
	pos := 0
	prefix := p.n - p.clen
	first := true
	var ref Cred
	i := p.chead
	for seg := 0; ; seg++ {
		var c *chunk
		id := i
		l, cred := prefix, Cred{}
		if seg > 0 || prefix == 0 {
			if i == 0 {
				break
			}
			c = &n.scm.chunks[i-1]
			l, cred = int(c.len), c.cred
			i = c.next
		}
		if !first && passcred && cred != ref {
			stop = true
			break
		}
		if first {
			ref, first = cred, false
		}
		if c != nil && c.fds != 0 {
			fds, at = id, pos
		}
		pos += min(l, want-pos)
		if fds != 0 {
			stop = true
			break
		}
		if pos >= want {
			break
		}
	}
	if passcred {
		m.Cred = noCred
		if ref.On {
			m.Cred = ref
		}
	}
	return pos, stop, fds, at
}

// streamFDs gives m the descriptors of chunk i (a copy for a peek).
func (n *Net[E]) streamFDs(i int32, peek bool, m *Msg) {
	c := &n.scm.chunks[i-1]
	if peek {
		m.FDs, m.NFD = n.dupList(c.fds)
		return
	}
	m.FDs, m.NFD = c.fds, int(c.nfd)
	c.fds, c.nfd = 0, 0
}

// recvCtl reads the control data of the datagram at the front of p's
// ring whose header's length word is hl and whose credentials (if any)
// are at ring offset skip; it returns the offset of the data. The
// descriptors are taken unless the read is a peek (which copies them),
// even when the data is cut (MSG_TRUNC), as Linux's.
func (n *Net[E]) recvCtl(p *sock, hl uint32, skip, flags int, m *Msg) int {
	if p.opts&optPassCred != 0 {
		m.Cred = noCred
	}
	if hl&hdrCred != 0 {
		if p.opts&optPassCred != 0 {
			var cb [credLen]byte
			p.get(cb[:], skip)
			m.Cred.Pid = binary.LittleEndian.Uint32(cb[0:])
			m.Cred.Uid = binary.LittleEndian.Uint32(cb[4:])
			m.Cred.Gid = binary.LittleEndian.Uint32(cb[8:])
		}
		skip += credLen
	}
	if hl&hdrFDs != 0 && p.chead != 0 {
		c := &n.scm.chunks[p.chead-1]
		if flags&unix.MSG_PEEK != 0 {
			m.FDs, m.NFD = n.dupList(c.fds)
		} else {
			m.FDs, m.NFD = c.fds, int(c.nfd)
			c.fds, c.nfd = 0, 0
			n.popChunk(p)
		}
	}
	return skip
}

// consumeStream drops k bytes from the front of p's chunks.
func (n *Net[E]) consumeStream(p *sock, k int) {
	prefix := p.n - p.clen // before the ring drops them
	k -= min(k, prefix)
	for k > 0 && p.chead != 0 {
		c := &n.scm.chunks[p.chead-1]
		t := min(k, int(c.len))
		c.len -= int32(t)
		p.clen -= t
		k -= t
		if c.len == 0 {
			n.popChunk(p)
		}
	}
}

// gc releases the sockets only in-flight records hold that no
// descriptor can reach (Linux's unix_gc): a socket held by more
// references than the in-flight records in queues is reachable, and so is
// every socket in flight in the queue of a reachable one (or of an embryo
// a reachable listener queues: only accept makes an embryo's queue
// readable). Bounded: a pass over the sockets and the records, with a
// fixed stack.
func (n *Net[E]) gc() {
	if atomic.LoadInt32(&n.scm.inflight) == 0 {
		return
	}
	for i := range n.live() {
		n.socks[i].held, n.socks[i].mark = 0, false
	}
	for i := range n.live() {
		n.scanQueue(&n.socks[i], 0, false)
	}
	sp := 0
	for i := range n.live() {
		if p := &n.socks[i]; p.used && !p.dead && atomic.LoadInt32(&p.refs) > p.held {
			p.mark = true
			n.scm.stack[sp] = int32(i)
			sp++
		}
	}
	for sp > 0 {
		sp--
		p := &n.socks[n.scm.stack[sp]]
		sp = n.scanQueue(p, sp, true)
		if p.state == stListen {
			for e := p.qhead; e >= 0; e = n.socks[e].qnext {
				sp = n.scanQueue(&n.socks[e], sp, true)
			}
		}
	}
	// The rest are garbage: drop their queues (and a listener's
	// embryos', where a socket may be held too, as Linux's
	// unix_collect_skb), which drops them.
	for i := range n.live() {
		p := &n.socks[i]
		if !p.used || p.dead || p.held == 0 || p.mark || atomic.LoadInt32(&p.refs) == 0 {
			continue
		}
		atomic.AddInt32(&p.refs, 1) // kept while its own queue goes
		n.dropQueue(p)
		if p.state == stListen {
			for e := p.qhead; e >= 0; e = n.socks[e].qnext {
				n.dropQueue(&n.socks[e])
			}
		}
		n.dropRef(KindSocket, int32(i))
	}
	n.reap()
}

// dropQueue drops what p's queue holds (gc: no one can read it).
func (n *Net[E]) dropQueue(p *sock) {
	if p.chead != 0 {
		n.emptyRing(p)
	}
}

// scanQueue visits the sockets in flight in p's queue: mark false counts
// them (held); mark true marks them reachable, pushing them on the stack
// from sp on, and returns the new sp.
func (n *Net[E]) scanQueue(p *sock, sp int, mark bool) int {
	if !p.used || p.dead {
		return sp
	}
	for i := p.chead; i != 0; i = n.scm.chunks[i-1].next {
		for j := n.scm.chunks[i-1].fds; j != 0; j = n.scm.flights[j-1].next {
			fl := &n.scm.flights[j-1]
			if fl.kind != KindSocket {
				continue
			}
			q := &n.socks[fl.h]
			if !mark {
				q.held++
			} else if !q.mark {
				q.mark = true
				n.scm.stack[sp] = fl.h
				sp++
			}
		}
	}
	return sp
}
