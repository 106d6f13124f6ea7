package net

import (
	"encoding/binary"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Behaviour of the inet sockets that the host's Linux cannot be asked
// for deterministically: a full backlog, the absence of a route, the
// port range, the slots given back.

func sin4(ip [4]byte, port uint16) []byte {
	b := make([]byte, sinLen)
	binary.LittleEndian.PutUint16(b, unix.AF_INET)
	binary.BigEndian.PutUint16(b[2:], port)
	copy(b[4:], ip[:])
	return b
}

func newInet(t testing.TB) *testNet {
	n := new(testNet)
	n.Init(newEnv(t, 4096))
	return n
}

func listenTCP(t *testing.T, n *testNet, backlog int) (int, uint16) {
	t.Helper()
	s, e := n.Socket(unix.AF_INET, unix.SOCK_STREAM, 0, true)
	if e != 0 {
		t.Fatal(e)
	}
	if e := n.BindInet(s, sin4([4]byte{127, 0, 0, 1}, 0)); e != 0 {
		t.Fatal(e)
	}
	if e := n.Listen(s, backlog); e != 0 {
		t.Fatal(e)
	}
	var sa [AddrMax]byte
	n.Name(s, false, &sa)
	return s, binary.BigEndian.Uint16(sa[2:])
}

// TestBacklogFull: a listener with backlog b takes b+1 connections; the
// next non-blocking connect stays in progress (no EPOLLOUT) until accept
// makes room, then completes; a blocking one waits on its own counter.
// Closing the listener refuses those still waiting.
func TestBacklogFull(t *testing.T) {
	n := newInet(t)
	l, port := listenTCP(t, n, 1)
	to := sin4([4]byte{127, 0, 0, 1}, port)
	var cs []int
	for i := 0; i < 3; i++ {
		c, _ := n.Socket(unix.AF_INET, unix.SOCK_STREAM, 0, true)
		if _, e := n.Connect(c, &Addr{Raw: to}); e != unix.EINPROGRESS {
			t.Fatalf("connect %d = %v, want EINPROGRESS", i, e)
		}
		cs = append(cs, c)
	}
	out := func(c int) bool {
		id, _ := n.Pollable(c)
		ev, _, _ := n.Poll(c, id)
		return ev&unix.EPOLLOUT != 0
	}
	if !out(cs[0]) || !out(cs[1]) || out(cs[2]) {
		t.Fatalf("writable: %v %v %v, want the first two only (backlog 1 takes 2)", out(cs[0]), out(cs[1]), out(cs[2]))
	}
	if _, e := n.Connect(cs[2], &Addr{Raw: to}); e != unix.EALREADY {
		t.Errorf("connect again while waiting = %v, want EALREADY", e)
	}
	if _, _, e := n.Accept(l); e != 0 {
		t.Fatal(e)
	}
	if !out(cs[2]) {
		t.Fatalf("the waiting connect did not complete when accept made room")
	}
	if _, e := n.Connect(cs[2], &Addr{Raw: to}); e != 0 {
		t.Errorf("connect after completion = %v, want 0", e)
	}
	// Fill the queue again, then a blocking connect waits.
	b, _ := n.Socket(unix.AF_INET, unix.SOCK_STREAM, 0, false)
	w, e := n.Connect(b, &Addr{Raw: to})
	if e != unix.EAGAIN || w.Sock != b {
		t.Fatalf("blocking connect to a full queue = %+v %v, want EAGAIN on its own counter", w, e)
	}
	d, _ := n.Socket(unix.AF_INET, unix.SOCK_STREAM, 0, true)
	n.Connect(d, &Addr{Raw: to})
	n.Close(l)
	if _, e := n.Connect(b, &Addr{Raw: to}); e != unix.ECONNREFUSED {
		t.Errorf("blocking connect after the listener closed = %v, want ECONNREFUSED", e)
	}
	var out4 [16]byte
	if n.Getsockopt(d, unix.SOL_SOCKET, unix.SO_ERROR, &out4); binary.LittleEndian.Uint32(out4[:]) != uint32(unix.ECONNREFUSED) {
		t.Errorf("SO_ERROR of a waiting connect after the listener closed = %d, want ECONNREFUSED", out4[0])
	}
	for _, c := range cs[1:] { // cs[0] was accepted
		var m Msg
		buf := make([]byte, 4)
		if _, e := n.Recv(c, &Iov{One: buf, Len: 4}, unix.MSG_DONTWAIT, &m); e != unix.ECONNRESET {
			t.Errorf("read on a connection the closed listener never accepted: %v, want ECONNRESET", e)
		}
		n.Close(c)
	}
}

// TestNoRoute: without the TCP/IP service, addresses other than this
// machine's are unreachable, and may not be bound.
func TestNoRoute(t *testing.T) {
	n := newInet(t)
	s, _ := n.Socket(unix.AF_INET, unix.SOCK_STREAM, 0, true)
	if _, e := n.Connect(s, &Addr{Raw: sin4([4]byte{10, 0, 2, 2}, 80)}); e != unix.ENETUNREACH {
		t.Errorf("connect to 10.0.2.2 = %v, want ENETUNREACH", e)
	}
	if e := n.BindInet(s, sin4([4]byte{10, 0, 2, 15}, 0)); e != unix.EADDRNOTAVAIL {
		t.Errorf("bind 10.0.2.15 = %v, want EADDRNOTAVAIL", e)
	}
	n.SetLocal([][4]byte{{10, 0, 2, 15}}, nil)
	if e := n.BindInet(s, sin4([4]byte{10, 0, 2, 15}, 0)); e != 0 {
		t.Errorf("bind 10.0.2.15 once it is the NIC's = %v", e)
	}
	u, _ := n.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0, true)
	b := []byte("x")
	if _, _, e := n.Send(u, &Iov{One: b, Len: 1}, 0, 0, &Addr{Raw: sin4([4]byte{192, 0, 2, 1}, 53)}); e != unix.ENETUNREACH {
		t.Errorf("sendto 192.0.2.1 = %v, want ENETUNREACH", e)
	}
	for _, c := range [][3]int{
		{unix.AF_INET, unix.SOCK_STREAM, 262}, // MPTCP: Go's probe must see EPROTONOSUPPORT
		{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP},
		{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP},
	} {
		if _, e := n.Socket(c[0], c[1], c[2], true); e == 0 {
			t.Errorf("socket%v succeeded", c)
		}
	}
}

// TestEphemeralPorts: the port range runs out with EADDRINUSE, and
// closed sockets give their ports and slots back.
func TestEphemeralPorts(t *testing.T) {
	n := newInet(t)
	var socks []int
	for {
		s, e := n.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0, true)
		if e == unix.ENFILE {
			break
		}
		if e := n.BindInet(s, sin4([4]byte{127, 0, 0, 1}, 0)); e != 0 {
			t.Fatalf("bind %d: %v", len(socks), e)
		}
		socks = append(socks, s)
	}
	if len(socks) != NumSockets {
		t.Fatalf("%d sockets, want %d", len(socks), NumSockets)
	}
	for _, s := range socks {
		n.Close(s)
	}
	for i := range n.socks {
		if n.socks[i].used {
			t.Fatalf("socket %d still used after close", i)
		}
	}
	// Connections opened and closed many times leave nothing behind.
	l, port := listenTCP(t, n, 128)
	for i := 0; i < 2000; i++ {
		c, _ := n.Socket(unix.AF_INET, unix.SOCK_STREAM, 0, true)
		if _, e := n.Connect(c, &Addr{Raw: sin4([4]byte{127, 0, 0, 1}, port)}); e != unix.EINPROGRESS {
			t.Fatalf("connect %d: %v", i, e)
		}
		a, _, e := n.Accept(l)
		if e != 0 {
			t.Fatalf("accept %d: %v", i, e)
		}
		n.Send(c, &Iov{One: []byte("x"), Len: 1}, 0, 0, nil)
		n.Close(c)
		n.Close(a)
	}
	n.Close(l)
	for i := range n.socks {
		if n.socks[i].used {
			t.Fatalf("socket %d still used", i)
		}
	}
}

// TestNetlinkSocket: a route dump through the socket calls, as
// syscall.NetlinkRIB makes them, parses as Go's net package parses it.
func TestNetlinkSocket(t *testing.T) {
	n := newInet(t)
	s, e := n.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE, true)
	if e != 0 {
		t.Fatal(e)
	}
	sa := make([]byte, NLAddrLen)
	binary.NativeEndian.PutUint16(sa, unix.AF_NETLINK)
	if e := n.BindNL(s, sa); e != 0 {
		t.Fatalf("bind: %v", e)
	}
	for _, typ := range []uint16{unix.RTM_GETLINK, unix.RTM_GETADDR} {
		req := make([]byte, unix.NLMSG_HDRLEN+unix.SizeofRtGenmsg)
		binary.NativeEndian.PutUint32(req, uint32(len(req)))
		binary.NativeEndian.PutUint16(req[4:], typ)
		binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_DUMP|unix.NLM_F_REQUEST)
		binary.NativeEndian.PutUint32(req[8:], 1)
		if c, _, e := n.Send(s, &Iov{One: req, Len: len(req)}, 0, 0, &Addr{Raw: sa}); e != 0 || c != len(req) {
			t.Fatalf("sendto: %d %v", c, e)
		}
		var msgs []syscall.NetlinkMessage
		done := false
		for i := 0; !done && i < 100; i++ {
			buf := make([]byte, 4096)
			var m Msg
			if _, e := n.Recv(s, &Iov{One: buf, Len: len(buf)}, unix.MSG_DONTWAIT, &m); e != 0 {
				t.Fatalf("recv %d: %v", i, e)
			}
			if m.AddrLen != NLAddrLen || binary.NativeEndian.Uint16(m.Addr[:]) != unix.AF_NETLINK {
				t.Errorf("sender %x, want the kernel's sockaddr_nl", m.Addr[:m.AddrLen])
			}
			ms, err := syscall.ParseNetlinkMessage(buf[:m.N])
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			for _, msg := range ms {
				if msg.Header.Type == unix.NLMSG_DONE {
					done = true
				} else {
					msgs = append(msgs, msg)
				}
			}
		}
		if !done {
			t.Fatalf("dump %d never ended", typ)
		}
		switch typ {
		case unix.RTM_GETLINK:
			if len(msgs) != 1 || msgs[0].Header.Type != unix.RTM_NEWLINK {
				t.Errorf("links: %d messages, want lo alone", len(msgs))
			}
		case unix.RTM_GETADDR:
			if len(msgs) != 2 {
				t.Errorf("addresses: %d messages, want lo's 127.0.0.1 and ::1", len(msgs))
			}
		}
	}
	var name [AddrMax]byte
	if l, e := n.Name(s, false, &name); e != 0 || l != NLAddrLen || binary.NativeEndian.Uint32(name[4:]) != NLPid {
		t.Errorf("getsockname = %x, %v; want port %d", name[:l], e, NLPid)
	}
	if e := n.Listen(s, 1); e != unix.EOPNOTSUPP {
		t.Errorf("listen on netlink = %v, want EOPNOTSUPP", e)
	}
	n.Close(s)
}
