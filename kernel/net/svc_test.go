package net

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// TestService plays the TCP/IP service against the socket layer: a
// connect out, bytes both ways, FIN, close and release; a connection in
// through a listener; a datagram out and one in.
func TestService(t *testing.T) {
	n := newInet(t)
	gw := [4]byte{10, 0, 2, 2}
	if _, e := n.Socket(unix.AF_INET, unix.SOCK_STREAM, 0, true); e != 0 {
		t.Fatal(e)
	}
	n.ServiceUp([4]byte{10, 0, 2, 15}, 24)
	call := func(c *abi.NetCall, buf []byte) Errno { return n.Service(c, buf) }
	events := func() []abi.NetEvent {
		buf := make([]byte, 16*int(unsafe.Sizeof(abi.NetEvent{})))
		c := abi.NetCall{Op: abi.NetPoll}
		if e := call(&c, buf); e != 0 {
			t.Fatalf("NetPoll: %v", e)
		}
		return unsafe.Slice((*abi.NetEvent)(unsafe.Pointer(&buf[0])), c.N)
	}
	c, _ := n.Socket(unix.AF_INET, unix.SOCK_STREAM, 0, true)
	if _, e := n.Connect(c, &Addr{Raw: sin4(gw, 80)}); e != unix.EINPROGRESS {
		t.Fatalf("connect to the gateway = %v, want EINPROGRESS", e)
	}
	ev := events()
	if len(ev) != 1 || ev[0].Ops != abi.NetOpConnect || ev[0].RPort != 80 || [4]byte(ev[0].Remote[12:]) != gw ||
		[4]byte(ev[0].Local[12:]) != [4]byte{10, 0, 2, 15} || ev[0].LPort < ephemeralLo {
		t.Fatalf("events after connect: %+v", ev)
	}
	id := ev[0].Sock
	pollOut := func(s int) bool {
		pid, _ := n.Pollable(s)
		e, _, _ := n.Poll(s, pid)
		return e&unix.EPOLLOUT != 0
	}
	if pollOut(c) {
		t.Errorf("writable before the connect finished")
	}
	call(&abi.NetCall{Op: abi.NetConnected, Sock: id}, nil)
	if !pollOut(c) {
		t.Errorf("not writable once connected")
	}
	if _, e := n.Connect(c, &Addr{Raw: sin4(gw, 80)}); e != 0 {
		t.Errorf("connect after completion = %v", e)
	}
	if k, _, e := n.Send(c, &Iov{One: []byte("GET /"), Len: 5}, 0, 0, nil); k != 5 || e != 0 {
		t.Fatalf("write = %d, %v", k, e)
	}
	if ev := events(); len(ev) != 1 || ev[0].Ops != abi.NetOpTx {
		t.Fatalf("events after write: %+v", ev)
	}
	out := make([]byte, 64)
	tx := abi.NetCall{Op: abi.NetTx, Sock: id}
	if call(&tx, out); string(out[:tx.N]) != "GET /" {
		t.Errorf("NetTx gave %q", out[:tx.N])
	}
	call(&abi.NetCall{Op: abi.NetRx, Sock: id}, []byte("200 OK"))
	call(&abi.NetCall{Op: abi.NetFin, Sock: id}, nil)
	buf := make([]byte, 64)
	var m Msg
	if _, e := n.Recv(c, &Iov{One: buf, Len: 64}, unix.MSG_DONTWAIT, &m); e != 0 || string(buf[:m.N]) != "200 OK" {
		t.Errorf("read = %q, %v", buf[:m.N], e)
	}
	if _, e := n.Recv(c, &Iov{One: buf, Len: 64}, unix.MSG_DONTWAIT, &m); e != 0 || m.N != 0 {
		t.Errorf("read after FIN = %d, %v; want end of file", m.N, e)
	}
	// Bytes written just before close still go: the service drains them
	// after the close.
	n.Send(c, &Iov{One: []byte("bye"), Len: 3}, 0, 0, nil)
	n.Close(c)
	if ev := events(); len(ev) != 1 || ev[0].Ops != abi.NetOpTx|abi.NetOpClose || ev[0].Sock != id {
		t.Fatalf("events after write and close: %+v", ev)
	}
	tx = abi.NetCall{Op: abi.NetTx, Sock: id}
	if e := call(&tx, out); e != 0 || string(out[:tx.N]) != "bye" {
		t.Errorf("NetTx after close = %q, %v; want the bytes written before it", out[:tx.N], e)
	}
	if e := call(&abi.NetCall{Op: abi.NetRx, Sock: id}, []byte("late")); e != 0 {
		t.Errorf("NetRx after close = %v, want the bytes taken and dropped", e)
	}
	if !n.socks[id&0xffffffff].used {
		t.Errorf("the slot went before the service released it")
	}
	call(&abi.NetCall{Op: abi.NetRelease, Sock: id}, nil)
	if n.socks[id&0xffffffff].used {
		t.Errorf("the slot stayed after NetRelease")
	}
	if e := call(&abi.NetCall{Op: abi.NetFin, Sock: id}, nil); e != unix.EBADF {
		t.Errorf("a call for a released socket = %v, want EBADF", e)
	}

	// A connection in.
	l, _ := n.Socket(unix.AF_INET6, unix.SOCK_STREAM, 0, true)
	sa6 := make([]byte, sin6Len)
	sa6[0] = unix.AF_INET6
	sa6[2], sa6[3] = 0x1f, 0x90 // port 8080
	if e := n.BindInet(l, sa6); e != 0 {
		t.Fatal(e)
	}
	n.Listen(l, 4)
	ev = events()
	if len(ev) != 1 || ev[0].Ops != abi.NetOpListen || ev[0].LPort != 8080 || ev[0].Family != unix.AF_INET6 {
		t.Fatalf("events after listen: %+v", ev)
	}
	acc := abi.NetCall{Op: abi.NetAccepted, Sock: ev[0].Sock, LPort: 8080, RPort: 40000,
		Local: v4Addr([]byte{10, 0, 2, 15}).ip, Remote: v4Addr(gw[:]).ip}
	if e := call(&acc, nil); e != 0 {
		t.Fatalf("NetAccepted: %v", e)
	}
	a, _, e := n.Accept(l)
	if e != 0 {
		t.Fatalf("accept: %v", e)
	}
	var name [AddrMax]byte
	if k, _ := n.Name(a, true, &name); k != sin6Len || [4]byte(name[20:24]) != gw || name[2] != 40000>>8 {
		t.Errorf("accepted peer = %x", name[:k])
	}
	call(&abi.NetCall{Op: abi.NetRx, Sock: acc.Sock}, []byte("hi"))
	if _, e := n.Recv(a, &Iov{One: buf, Len: 64}, unix.MSG_DONTWAIT, &m); e != 0 || string(buf[:m.N]) != "hi" {
		t.Errorf("read on the accepted connection = %q, %v", buf[:m.N], e)
	}

	// Datagrams.
	u, _ := n.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0, true)
	if k, _, e := n.Send(u, &Iov{One: []byte("query"), Len: 5}, 0, 0, &Addr{Raw: sin4(gw, 53)}); k != 5 || e != 0 {
		t.Fatalf("sendto the gateway = %d, %v", k, e)
	}
	ev = events()
	if len(ev) != 1 || ev[0].Ops != abi.NetOpBind|abi.NetOpDgram {
		t.Fatalf("events after sendto: %+v", ev)
	}
	out2 := abi.NetCall{Op: abi.NetDgramOut, Sock: ev[0].Sock}
	if e := call(&out2, out); e != 0 || string(out[:out2.N]) != "query" || out2.RPort != 53 || [4]byte(out2.Remote[12:]) != gw {
		t.Errorf("NetDgramOut = %q to %v:%d, %v", out[:out2.N], out2.Remote, out2.RPort, e)
	}
	call(&abi.NetCall{Op: abi.NetDgramIn, Sock: ev[0].Sock, Remote: v4Addr(gw[:]).ip, RPort: 53}, []byte("answer"))
	if _, e := n.Recv(u, &Iov{One: buf, Len: 64}, unix.MSG_DONTWAIT, &m); e != 0 || string(buf[:m.N]) != "answer" || [4]byte(m.Addr[4:8]) != gw {
		t.Errorf("recvfrom = %q from %x, %v", buf[:m.N], m.Addr[:m.AddrLen], e)
	}
}

// TestServiceMisuse: a service call for the wrong kind of socket changes
// nothing (the call is for any program to make); a UDP socket closed
// with a datagram queued still sends it; a listener's close reaches the
// service.
func TestServiceMisuse(t *testing.T) {
	n := newInet(t)
	n.ServiceUp([4]byte{10, 0, 2, 15}, 24)
	poll := func() []abi.NetEvent {
		buf := make([]byte, 16*int(unsafe.Sizeof(abi.NetEvent{})))
		c := abi.NetCall{Op: abi.NetPoll}
		n.Service(&c, buf)
		return unsafe.Slice((*abi.NetEvent)(unsafe.Pointer(&buf[0])), c.N)
	}
	l, _ := n.Socket(unix.AF_INET, unix.SOCK_STREAM, 0, true)
	n.BindInet(l, sin4([4]byte{}, 8080))
	n.Listen(l, 4)
	ev := poll()
	if len(ev) != 1 || ev[0].Ops != abi.NetOpListen {
		t.Fatalf("listen: %+v", ev)
	}
	lid := ev[0].Sock
	for _, op := range []uint32{abi.NetRx, abi.NetTx, abi.NetFin, abi.NetConnected, abi.NetDgramIn, abi.NetDgramOut} {
		if e := n.Service(&abi.NetCall{Op: op, Sock: lid}, []byte("xxxxxxxxxxxxxxxxxxxxxxxxxxxx")); e != unix.EINVAL {
			t.Errorf("op %d on a listener: %v, want EINVAL", op, e)
		}
	}
	n.Close(l)
	if ev := poll(); len(ev) != 1 || ev[0].Ops&abi.NetOpClose == 0 {
		t.Errorf("a listener's close: %+v, want NetOpClose", ev)
	}
	n.Service(&abi.NetCall{Op: abi.NetRelease, Sock: lid}, nil)

	u, _ := n.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0, true)
	if k, _, e := n.Send(u, &Iov{One: []byte("last words"), Len: 10}, 0, 0, &Addr{Raw: sin4([4]byte{10, 0, 2, 2}, 514)}); k != 10 || e != 0 {
		t.Fatalf("sendto: %d %v", k, e)
	}
	n.Close(u)
	ev = poll()
	if len(ev) != 1 || ev[0].Ops&abi.NetOpAbort != 0 || ev[0].Ops&abi.NetOpClose == 0 {
		t.Fatalf("a UDP socket closed with a datagram queued: %+v, want NetOpClose (not Abort)", ev)
	}
	out := make([]byte, 64)
	o := abi.NetCall{Op: abi.NetDgramOut, Sock: ev[0].Sock}
	if e := n.Service(&o, out); e != 0 || string(out[:o.N]) != "last words" {
		t.Errorf("NetDgramOut after close: %q, %v", out[:o.N], e)
	}
	if e := n.Service(&abi.NetCall{Op: abi.NetRx, Sock: ev[0].Sock}, []byte("x")); e != unix.EINVAL {
		t.Errorf("NetRx on a UDP socket: %v, want EINVAL", e)
	}
	n.Service(&abi.NetCall{Op: abi.NetRelease, Sock: ev[0].Sock}, nil)
	for i := range n.socks {
		if n.socks[i].used {
			t.Errorf("socket %d still used", i)
		}
	}
}
