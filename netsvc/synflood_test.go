package netsvc

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"yolk/kernel/net"
)

const floodPort = 8080

// floodListener is a program's listener on floodPort with the backlog
// Go's net.Listen asks for (somaxconn), served by an accept loop whose
// connections echo.
func (h *hosted) floodListener(t *testing.T) {
	n := h.k.Sockets
	l, e := n.Socket(unix.AF_INET, unix.SOCK_STREAM, 0, false)
	if e != 0 {
		t.Fatal(e)
	}
	if e := n.BindInet(l, sin4([4]byte{}, floodPort)); e != 0 {
		t.Fatalf("bind 0.0.0.0:%d: %v", floodPort, e)
	}
	if e := n.Listen(l, net.SomaxConn); e != 0 {
		t.Fatalf("listen: %v", e)
	}
	h.progs.Go(func() {
		defer n.Close(l)
		for !h.stopping() {
			var a int
			e := h.k.Do(100*time.Millisecond, func() (w net.Wait, e net.Errno) {
				a, w, e = n.Accept(l)
				return w, e
			})
			if e == unix.EAGAIN {
				continue
			}
			if e != 0 {
				return
			}
			h.served.Add(1)
			h.progs.Go(func() { h.echo(a) })
		}
	})
}

// floodSeg is a TCP segment to floodPort from src:port (off the link:
// what the service sends back goes to the gateway, which drops it, as
// a spoofed address's answer goes nowhere), with an MSS option on a
// SYN.
func floodSeg(src [4]byte, port uint16, seq, ack uint32, flags byte, data []byte) []byte {
	var opts []byte
	if flags&0x02 != 0 {
		opts = []byte{2, 4, 0x05, 0xb4} // MSS 1460
	}
	f := eth(svcMAC, peerMAC, 0x0800, ip4(src, svcIP, 6, 64, 0, 0, nil, tcpSeg(port, floodPort, seq, ack, flags, 64240, opts, data)))
	fixSums(f)
	return f
}

// synRcvd counts the netstack's half-open connections.
func (h *hosted) synRcvd() int {
	n := 0
	for _, ep := range h.s.st.RegisteredEndpoints() {
		if e, ok := ep.(*tcp.Endpoint); ok && e.EndpointState() == tcp.StateSynRecv {
			n++
		}
	}
	return n
}

// TestSYNFloodCookies: a SYN flood from addresses that never answer, at
// a listener with Go's backlog (4,096). Once synFloodIncomplete SYNs in
// a second made no connection, the rest get SYN cookies (before: one
// endpoint a SYN, up to the backlog, and no cookie: a TCG guest spent
// itself on them and stopped answering, docs/security.md); when the
// half-open connections die the flood's SYNs still get cookies; a
// connection that completes with a cookie is accepted by the program
// and carries bytes both ways; a peer's connection during the flood
// works; cookies for every SYN end after synFloodQuiet quiet seconds,
// not before; nothing is left in the kernel's pools afterwards.
func TestSYNFloodCookies(t *testing.T) {
	var (
		mu       sync.Mutex
		synAck   []byte // the service's SYN-ACK to the cookie client
		echoed   []byte // what the service sent it after
		cookieIP = [4]byte{198, 51, 100, 251}
	)
	const cookiePort = 5555
	tap := func(f []byte, out bool) {
		if !out || len(f) < 54 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[23] != 6 || [4]byte(f[30:34]) != cookieIP {
			return
		}
		s := f[14+int(f[14]&15)*4:]
		if binary.BigEndian.Uint16(s[2:]) != cookiePort {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if s[13] == 0x12 {
			synAck = bytes.Clone(s)
		} else if data := s[int(s[12]>>4)*4:]; len(data) > 0 {
			echoed = append(echoed, data...)
		}
	}
	h := newHosted(t, hostedOpts{tap: tap})
	h.floodListener(t)
	// The service has the listener once a peer's connection to it works.
	to := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(svcIP), Port: floodPort}
	c, err := h.dial(to, ipv4.ProtocolNumber, bound)
	if err != nil {
		t.Fatalf("dialling the listener: %v", err)
	}
	if err := roundTrip(c, []byte("before the flood")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	st := h.s.st.Stats().TCP
	cookies0 := st.ListenOverflowSynCookieSent.Value()
	// The test says when a second has passed: synFlood.check, called
	// below, is the timer's.
	h.s.flood.mu.Lock()
	h.s.flood.every = time.Hour
	h.s.flood.mu.Unlock()
	// Nor does the flood depend on how fast this host injects it: the
	// 1,000 SYNs count as one second's (under -race on a loaded host
	// they took longer, and no second had 512).
	h.s.nicMu.Lock() // the loop's field
	h.s.flood.winLen = time.Hour
	h.s.nicMu.Unlock()
	flooding := func() bool {
		h.s.flood.mu.Lock()
		defer h.s.flood.mu.Unlock()
		return h.s.flood.on
	}

	// The flood: 1,000 SYNs from 250 addresses off the link.
	const flood = 1000
	for i := 0; i < flood; i++ {
		src := [4]byte{198, 51, 100, byte(1 + i%250)}
		if !h.k.Inject(floodSeg(src, uint16(20000+i/250), uint32(i)*2654435761, 0, 0x02, nil), bound) {
			t.Fatalf("the NIC's receive ring stayed full for %v at SYN %d", bound, i)
		}
	}
	// Answered with a cookie, or dropped before the netstack while too
	// many are unanswered (synFlood.admit).
	dropped := func() uint64 {
		h.s.flood.mu.Lock()
		defer h.s.flood.mu.Unlock()
		return h.s.flood.dropped
	}
	var half int
	var cookies uint64
	for end := time.Now().Add(bound); ; time.Sleep(10 * time.Millisecond) {
		half, cookies = h.synRcvd(), st.ListenOverflowSynCookieSent.Value()-cookies0+dropped()
		if half+int(cookies) >= flood || time.Now().After(end) {
			break
		}
	}
	t.Logf("%d SYNs: %d half-open connections, %d SYN cookies sent or SYNs dropped early (%d)", flood, half, cookies, dropped())
	if half > synFloodIncomplete || int(cookies) < flood-synFloodIncomplete {
		t.Fatalf("after %d SYNs at a listener with backlog %d: %d half-open connections and %d cookies or early drops; want at most %d half-open, cookies for the rest",
			flood, net.SomaxConn, half, cookies, synFloodIncomplete)
	}

	// The half-open connections die (here reset; in a flood from
	// addresses on the link, when ARP for them fails): the flood's next
	// SYNs still get cookies, not endpoints, while it lasts.
	for i := 0; i < flood; i++ {
		src := [4]byte{198, 51, 100, byte(1 + i%250)}
		h.k.Inject(floodSeg(src, uint16(20000+i/250), uint32(i)*2654435761+1, 0, 0x04, nil), bound)
	}
	for end := time.Now().Add(bound); h.synRcvd() > 0 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
	}
	if n := h.synRcvd(); n > 0 {
		t.Fatalf("%d half-open connections left after their resets", n)
	}
	const more = 200
	cookies0 = st.ListenOverflowSynCookieSent.Value() + dropped()
	for i := 0; i < more; i++ {
		src := [4]byte{198, 51, 101, byte(1 + i%250)}
		h.k.Inject(floodSeg(src, 30000, uint32(i)*2654435761, 0, 0x02, nil), bound)
	}
	for end := time.Now().Add(bound); ; time.Sleep(10 * time.Millisecond) {
		half, cookies = h.synRcvd(), st.ListenOverflowSynCookieSent.Value()+dropped()-cookies0
		if half+int(cookies) >= more || time.Now().After(end) {
			break
		}
	}
	t.Logf("%d more SYNs once the half-open connections died: %d half-open, %d cookies or early drops", more, half, cookies)
	if half != 0 || cookies != more {
		t.Errorf("the flood's SYNs after its half-open connections died: %d half-open connections and %d cookies or early drops, want none and %d (cookies while the flood lasts)",
			half, cookies, more)
	}

	// A client whose handshake completes with a cookie.
	const iss = 777000
	var sa []byte
	var next time.Time
	for end := time.Now().Add(bound); sa == nil && time.Now().Before(end); time.Sleep(time.Millisecond) {
		if time.Now().After(next) { // again, as a client does: the service may drop it early
			h.k.Inject(floodSeg(cookieIP, cookiePort, iss, 0, 0x02, nil), bound)
			next = time.Now().Add(100 * time.Millisecond)
		}
		mu.Lock()
		sa = synAck
		mu.Unlock()
	}
	if sa == nil {
		t.Fatalf("no SYN-ACK to the cookie client in %v; %s", bound, h.diag())
	}
	if got := binary.BigEndian.Uint32(sa[8:]); got != iss+1 {
		t.Fatalf("SYN-ACK acknowledges %d, want %d", got, iss+1)
	}
	srvSeq := binary.BigEndian.Uint32(sa[4:]) + 1
	served := h.served.Load()
	msg := []byte("a connection from a cookie")
	h.k.Inject(floodSeg(cookieIP, cookiePort, iss+1, srvSeq, 0x18, msg), bound) // ACK+PSH with the bytes
	for end := time.Now().Add(bound); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		got := bytes.Clone(echoed)
		mu.Unlock()
		if bytes.Equal(got, msg) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the cookie client got %q back in %v, want %q; %s", got, bound, msg, h.diag())
		}
	}
	if h.served.Load() != served+1 {
		t.Errorf("the program accepted %d connections meanwhile, want the cookie client's", h.served.Load()-served)
	}
	if st.ListenOverflowSynCookieRcvd.Value() == 0 {
		t.Errorf("the cookie client's connection was not made from a cookie: %s", h.diag())
	}
	// It goes: the program's read fails, it closes its socket.
	h.k.Inject(floodSeg(cookieIP, cookiePort, iss+1+uint32(len(msg)), 0, 0x04, nil), bound)

	// A peer's connection while the half-open ones are still there.
	c, err = h.dial(to, ipv4.ProtocolNumber, bound)
	if err != nil {
		t.Fatalf("dialling the listener during the flood: %v; %s", err, h.diag())
	}
	if err := roundTrip(c, []byte("during the flood")); err != nil {
		t.Fatalf("a connection during the flood: %v", err)
	}
	c.Close()

	// A second with the 200 SYNs in it: the flood goes on; so it does
	// through seconds with a few SYNs, fewer than synFloodTrickle, and
	// one with more, until synFloodQuiet seconds in a row have had
	// fewer. Then it is over, and a SYN makes a half-open connection
	// again (cookies cost window scaling and SACK).
	if h.s.flood.check(); !flooding() {
		t.Errorf("cookies for every SYN ended after a second with %d SYNs", more)
	}
	port := uint16(1)
	second := func(syns int) {
		for i := 0; i < syns; i++ { // one at a time: none dropped early
			want := h.s.flood.cookies() + 1
			h.k.Inject(floodSeg([4]byte{198, 51, 103, 1}, port, 1, 0, 0x02, nil), bound)
			port++
			for end := time.Now().Add(bound); h.s.flood.cookies() < want && time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
			}
		}
		h.s.flood.check()
	}
	for i := 0; i < synFloodQuiet-1; i++ {
		second(synFloodTrickle - 1)
	}
	if second(synFloodTrickle); !flooding() {
		t.Fatalf("cookies for every SYN ended after %d seconds with %d SYNs each", synFloodQuiet-1, synFloodTrickle-1)
	}
	for i := 0; i < synFloodQuiet-1; i++ {
		if second(synFloodTrickle / 2); !flooding() {
			t.Fatalf("cookies for every SYN ended after %d quiet seconds, want %d", i+1, synFloodQuiet)
		}
	}
	if second(0); flooding() {
		t.Errorf("cookies for every SYN after %d quiet seconds", synFloodQuiet)
	}
	h.k.Inject(floodSeg([4]byte{198, 51, 102, 1}, 40000, 1, 0, 0x02, nil), bound)
	for end := time.Now().Add(bound); h.synRcvd() == 0 && time.Now().Before(end); time.Sleep(time.Millisecond) {
	}
	if h.synRcvd() == 0 {
		t.Errorf("a SYN after the flood made no half-open connection: cookies still for every SYN; %s", h.diag())
	}
	t.Log(h.diag())
	h.finish()
}

// TestSYNFloodAdmit: while cookies are on for every SYN, the service
// passes at most synFloodInFlight unanswered SYNs to listening ports to
// the netstack and drops the rest; other frames, SYNs to other ports
// and a proven peer's SYNs pass; answers make room; a second without
// one forgets the count.
func TestSYNFloodAdmit(t *testing.T) {
	st := stack.New(stack.Options{NetworkProtocols: []stack.NetworkProtocolFactory{ipv4.NewProtocol}, TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol}})
	defer st.Destroy()
	f := &synFlood{st: st, every: time.Hour}
	defer f.stop()
	f.listen(floodPort)
	syn := floodSeg([4]byte{198, 51, 100, 1}, 1000, 1, 0, 0x02, nil)
	other := floodSeg([4]byte{198, 51, 100, 1}, 1000, 1, 0, 0x02, nil)
	binary.BigEndian.PutUint16(other[14+20+2:], floodPort+1)
	ack := floodSeg([4]byte{198, 51, 100, 1}, 1000, 1, 1, 0x10, nil)
	for i := 0; i < 2*synFloodInFlight; i++ {
		if !f.admit(syn) {
			t.Fatalf("SYN %d dropped with cookies off", i)
		}
	}
	cookie := st.Stats().TCP.ListenOverflowSynCookieSent
	cookie.Increment() // a listener's queue overflowed
	if f.look(); !f.onFlag.Load() {
		t.Fatal("cookies not on after a cookie")
	}
	n := 0
	for f.admit(syn) {
		if n++; n > synFloodInFlight {
			break
		}
	}
	if n != synFloodInFlight {
		t.Fatalf("%d SYNs passed before the first drop, want %d", n, synFloodInFlight)
	}
	if !f.admit(other) || !f.admit(ack) {
		t.Errorf("a SYN to a port without a listener, or an ACK, dropped")
	}
	if port, _, ok := synPort(ack); ok {
		t.Errorf("an ACK taken for a SYN to %d", port)
	}
	// A proven peer's SYN passes.
	f.proven(tcpip.AddrFrom4([4]byte{198, 51, 100, 2}))
	if !f.admit(floodSeg([4]byte{198, 51, 100, 2}, 1000, 1, 0, 0x02, nil)) {
		t.Errorf("a proven peer's SYN dropped early")
	}
	for i := 0; i < 11; i++ { // the proven peer's, and 10
		cookie.Increment()
	}
	n = 0
	for f.admit(syn) {
		n++
	}
	if n != 10 {
		t.Errorf("%d SYNs passed after 10 answers, want 10", n)
	}
	f.check() // answers in this second: the count stays
	if f.admit(syn) {
		t.Errorf("a SYN passed after a second with answers and %d unanswered", synFloodInFlight)
	}
	f.check() // none: forgotten
	if !f.admit(syn) {
		t.Errorf("a SYN dropped after a second without answers")
	}
	f.unlisten(floodPort)
	if !f.admit(syn) || !f.admit(syn) {
		t.Errorf("a SYN dropped to a port no longer listened on")
	}
}
