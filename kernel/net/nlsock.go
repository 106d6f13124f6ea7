package net

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// AF_NETLINK sockets (NETLINK_ROUTE): the socket-layer side of
// netlink.go. A request sent is answered at once into the socket's ring
// as datagrams from the kernel's port; a dump is written one datagram
// ahead of the reader, from the socket's DumpCursor, as Linux's
// netlink_dump refills the queue when the reader has drained it.

// AddNIC puts the NIC in the interface table netlink answers from, as
// eth0 with its MAC, MTU and IPv4 address (prefix 0: none).
func (n *Net[E]) AddNIC(mac [6]byte, mtu int, addr [4]byte, prefix int) {
	n.env.Lock()
	defer n.env.Unlock()
	i := n.ifaces.AddEthernet("eth0", mac, mtu)
	if i > 0 && prefix > 0 {
		n.ifaces.AddAddr4(i, addr, prefix)
	}
}

// Iface copies interface i of the table (from 0, ascending index) into
// p, under the lock; false past the last (/proc/net/igmp's and igmp6's
// fill).
func (n *Net[E]) Iface(i int, p *Iface) bool {
	n.env.Lock()
	defer n.env.Unlock()
	if i < 0 || i >= n.ifaces.N {
		return false
	}
	*p = n.ifaces.If[i]
	return true
}

// BindNL, ConnectNL: bind and connect on netlink socket s.
func (n *Net[E]) BindNL(s int, sa []byte) Errno {
	n.env.Lock()
	defer n.env.Unlock()
	return n.nl.Bind(s, sa)
}

func (n *Net[E]) ConnectNL(s int, sa []byte) Errno {
	n.env.Lock()
	defer n.env.Unlock()
	return n.nl.Connect(s, sa)
}

// queueNL appends datagram b, from the kernel, to p's ring; false if
// there is no room (the answer is dropped, as Linux drops it with
// ENOBUFS for the reader).
func (n *Net[E]) queueNL(p *sock, b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if !n.room(p, msgHdr+len(b)) {
		p.err = unix.ENOBUFS
		return false
	}
	var h [msgHdr]byte
	binary.LittleEndian.PutUint32(h[:], uint32(len(b)))
	p.put(h[:])
	p.put(b)
	p.msgs++
	return true
}

// sendNL takes the requests in v from off on, as Linux's netlink_sendmsg
// and netlink_rcv_skb: a datagram of up to the send buffer less 32 bytes
// (EMSGSIZE past that), every byte of it readable (EFAULT, nothing
// answered), its messages answered into s's ring in turn until one whose
// header is short or whose length runs past the datagram (the rest, as
// padding, is ignored). The messages go through nlReq, a window on the
// datagram moved on when a message is not all in it; of a message longer
// than nlReq the first len(nlReq) bytes are read (Ifaces.Answer).
func (n *Net[E]) sendNL(s int32, v *Iov, off int, sa []byte) (int, Wait, Errno) {
	p := &n.socks[s]
	if e := n.nl.Dest(int(s), sa); e != 0 {
		return 0, Wait{}, e
	}
	l := v.Len - off
	if l > int(p.sndbuf)-32 {
		return 0, Wait{}, unix.EMSGSIZE
	}
	at, have := 0, 0 // nlReq[:have] is the datagram's bytes from at on
	for pos := 0; pos < l; pos += len(n.nlReq) {
		// Linux copies the datagram in before it reads a message.
		if !n.nlWindow(v, off, l, pos, &at, &have) {
			return 0, Wait{}, unix.EFAULT
		}
	}
	port := n.nl.Port(int(s))
	for pos := 0; l-pos >= nlHdr; {
		if (pos < at || pos+nlHdr > at+have) && !n.nlWindow(v, off, l, pos, &at, &have) {
			return 0, Wait{}, unix.EFAULT // unmapped since the check
		}
		ml := int(ne.Uint32(n.nlReq[pos-at:]))
		if ml < nlHdr || ml > l-pos {
			break
		}
		k := min(ml, len(n.nlReq))
		if pos+k > at+have && !n.nlWindow(v, off, l, pos, &at, &have) {
			return 0, Wait{}, unix.EFAULT
		}
		was := p.dump.Active()
		n1, n2 := n.ifaces.Answer(n.nlReq[pos-at:pos-at+k], port, &p.dump, n.nlOut[:])
		n.queueNL(p, n.nlOut[:n1])
		n.queueNL(p, n.nlOut[n1:n1+n2])
		if !was && p.dump.Active() {
			n.queueNL(p, n.nlOut[:n.ifaces.Dump(&p.dump, n.nlOut[:])])
		}
		pos += min((ml+3)&^3, l-pos)
	}
	n.bump(s)
	return l, Wait{}, 0
}

// nlWindow fills nlReq with the datagram's bytes (v's l bytes from off
// on) from pos on, as many as it holds; false if v's memory went bad.
func (n *Net[E]) nlWindow(v *Iov, off, l, pos int, at, have *int) bool {
	k := min(l-pos, len(n.nlReq))
	c, ok := n.gather(v, off+pos, n.nlReq[:k])
	*at, *have = pos, c
	return ok && c == k
}

// gather copies v's bytes from off on into b.
func (n *Net[E]) gather(v *Iov, off int, b []byte) (int, bool) {
	done := 0
	for i := 0; i < n.segs(v) && done < len(b); i++ {
		seg, ok := n.seg(v, i)
		if !ok {
			return done, false
		}
		if off >= seg.l {
			off -= seg.l
			continue
		}
		want := min(len(b)-done, seg.l-off)
		got := n.segIn(seg, off, b[done:])
		done += got
		if got < want {
			return done, false
		}
		off = 0
	}
	return done, true
}

// refillNL writes the next datagram of s's dump when its queue is empty.
func (n *Net[E]) refillNL(p *sock) {
	if p.msgs == 0 && p.dump.Active() {
		n.queueNL(p, n.nlOut[:n.ifaces.Dump(&p.dump, n.nlOut[:])])
	}
}
