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

// TestRingPagesFollowBytes: a ring holds a page only while the page holds
// bytes not yet read, so connected idle sockets hold none (the service's
// thousands of idle connections cost no ring memory); a full ring holds
// all its pages; a ring that cannot get a page refuses with ENOBUFS
// instead of writing through a missing page.
func TestRingPagesFollowBytes(t *testing.T) {
	env := newEnv(t, 4096)
	n := new(testNet)
	n.Init(env)
	var pairs [][2]int
	for range 100 {
		a, b, e := n.Pair(unix.SOCK_STREAM, 0, true)
		if e != 0 {
			t.Fatal(e)
		}
		pairs = append(pairs, [2]int{a, b})
	}
	if p := env.InUse(); p != 0 {
		t.Fatalf("100 idle pairs hold %d pages, want 0", p)
	}
	a, b := pairs[0][0], pairs[0][1]
	buf := make([]byte, RingSize+10)
	var m Msg
	for _, c := range []struct{ write, read, pages int }{
		{10, 0, 1},               // a page for the first bytes
		{PageSize, 0, 2},         // into the second page
		{0, 10, 2},               // the first page still holds bytes
		{0, PageSize - 10, 1},    // the first page is empty: it goes
		{0, 10, 0},               // all read: none
		{RingSize, 0, RingPages}, // a full ring holds every page
		{0, RingSize - 1, 1},     // one byte left: its page
		{PageSize, 0, 2},         // writes wrap to the start
		{0, PageSize + 1, 0},     // and all read
		{3*PageSize + 7, 0, 4},   // from the start again
		{0, 3*PageSize + 7, 0},
	} {
		if c.write > 0 {
			if k, _, e := n.Send(a, &Iov{One: buf[:c.write], Len: c.write}, 0, 0, nil); k != c.write || e != 0 {
				t.Fatalf("write %d: %d, %v", c.write, k, e)
			}
		}
		if c.read > 0 {
			if _, e := n.Recv(b, &Iov{One: buf[:c.read], Len: c.read}, unix.MSG_DONTWAIT, &m); e != 0 || m.N != c.read {
				t.Fatalf("read %d: %d, %v", c.read, m.N, e)
			}
		}
		if p := env.InUse(); p != c.pages {
			t.Errorf("after write %d, read %d: %d pages held, want %d", c.write, c.read, p, c.pages)
		}
	}
	// Datagrams: a page for the queued ones, none once read.
	d, e := n.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0, true)
	if e != 0 {
		t.Fatal(e)
	}
	n.BindInet(d, sin4([4]byte{127, 0, 0, 1}, 5353))
	for range 3 {
		n.Send(d, &Iov{One: buf[:100], Len: 100}, 0, 0, &Addr{Raw: sin4([4]byte{127, 0, 0, 1}, 5353)})
	}
	if p := env.InUse(); p != 1 {
		t.Errorf("3 small datagrams queued: %d pages, want 1", p)
	}
	for range 3 {
		n.Recv(d, &Iov{One: buf[:200], Len: 200}, unix.MSG_DONTWAIT, &m)
	}
	if p := env.InUse(); p != 0 {
		t.Errorf("datagrams read: %d pages, want 0", p)
	}
	// Memory out: a stream write refuses, a datagram is dropped. (A
	// byte queued on another pair holds the one page the limit allows.)
	n.Send(pairs[1][0], &Iov{One: buf[:1], Len: 1}, 0, 0, nil)
	env.SetLimit(env.InUse())
	if k, _, e := n.Send(a, &Iov{One: buf[:10], Len: 10}, 0, 0, nil); e != unix.ENOBUFS {
		t.Errorf("a stream write with no page to be had: %d, %v; want ENOBUFS", k, e)
	}
	n.Send(d, &Iov{One: buf[:10], Len: 10}, 0, 0, &Addr{Raw: sin4([4]byte{127, 0, 0, 1}, 5353)})
	if _, e := n.Recv(d, &Iov{One: buf[:20], Len: 20}, unix.MSG_DONTWAIT, &m); e != unix.EAGAIN {
		t.Errorf("a datagram with no page to be had was queued: %d, %v", m.N, e)
	}
	env.SetLimit(0)
	for _, pr := range pairs {
		n.Close(pr[0])
		n.Close(pr[1])
	}
	n.Close(d)
	if p := env.InUse(); p != 0 {
		t.Errorf("after close: %d pages held", p)
	}
}
