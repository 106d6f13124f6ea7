package net

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLifetime: every page and slot comes back once the sockets are
// closed, in any order, embryos and dead peers included.
func TestLifetime(t *testing.T) {
	env := newEnv(t, 4096)
	n := new(testNet)
	n.Init(env)
	for round := range 3 {
		a, b, _ := n.Pair(unix.SOCK_STREAM, 0, true)
		l, _ := n.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET, 0, true)
		n.BindAbstract(l, []byte("\x00l"))
		n.Listen(l, 8)
		var cs []int
		for range 3 {
			c, _ := n.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET, 0, true)
			if _, e := n.Connect(c, &Addr{Name: []byte("\x00l")}); e != 0 {
				t.Fatalf("connect: %v", e)
			}
			cs = append(cs, c)
		}
		acc, _, _ := n.Accept(l)
		d, e := n.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0, true)
		if e != 0 {
			t.Fatal(e)
		}
		n.BindAbstract(d, []byte("\x00d"))
		g, _ := n.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0, true)
		n.Connect(g, &Addr{Name: []byte("\x00d")})
		v := Iov{One: []byte("data"), Len: 4}
		n.Send(a, &v, 0, 0, nil)
		n.Send(g, &v, 0, 0, nil)
		if round == 0 {
			n.Close(a) // a dead peer b still names
			n.Close(l) // embryos go with it
			n.Close(d)
		} else {
			n.Close(l)
			n.Close(d)
			n.Close(a)
		}
		for _, c := range cs {
			n.Close(c)
		}
		n.Close(acc)
		n.Close(b)
		n.Close(g)
		if p := env.InUse(); p != 0 {
			t.Errorf("round %d: %d pages still held", round, p)
		}
		for i := range n.socks {
			if n.socks[i].used {
				t.Errorf("round %d: socket %d still used (dead %v, links %d, refs %d)", round, i, n.socks[i].dead, n.socks[i].links, n.socks[i].refs)
			}
		}
	}
}

// TestWait: a receive that got EAGAIN waits on the counter its Wait
// names, and a send from another goroutine moves it.
func TestWait(t *testing.T) {
	env := newEnv(t, 256)
	n := new(testNet)
	n.Init(env)
	a, b, _ := n.Pair(unix.SOCK_STREAM, 0, false)
	var m Msg
	buf := make([]byte, 8)
	w, e := n.Recv(b, &Iov{One: buf, Len: 8}, 0, &m)
	if e != unix.EAGAIN || w.Addr == 0 || w.Sock != b {
		t.Fatalf("Recv on an empty socket = %+v, %v", w, e)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		n.Send(a, &Iov{One: []byte("hi"), Len: 2}, 0, 0, nil)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for atomic.LoadUint32((*uint32)(unsafePointer(w.Addr))) == w.Val {
		if time.Now().After(deadline) {
			t.Fatalf("the counter never moved")
		}
		time.Sleep(time.Millisecond)
	}
	if _, e := n.Recv(b, &Iov{One: buf, Len: 8}, 0, &m); e != 0 || string(buf[:m.N]) != "hi" {
		t.Errorf("Recv after the wake = %q, %v", buf[:m.N], e)
	}
	// A full ring: the stream writer waits on its own counter, which the
	// reader moves.
	big := make([]byte, RingSize+1)
	c, _, e := n.Send(a, &Iov{One: big, Len: len(big)}, 0, 0, nil)
	if c != RingSize || e != 0 {
		t.Fatalf("Send of more than a ring = %d, %v", c, e)
	}
	_, w, e = n.Send(a, &Iov{One: big, Len: len(big)}, c, 0, nil)
	if e != unix.EAGAIN || w.Sock != a {
		t.Fatalf("Send to a full ring = %+v, %v", w, e)
	}
	n.Recv(b, &Iov{One: buf, Len: 8}, 0, &m)
	if atomic.LoadUint32((*uint32)(unsafePointer(w.Addr))) == w.Val {
		t.Errorf("reading did not move the writer's counter")
	}
}
