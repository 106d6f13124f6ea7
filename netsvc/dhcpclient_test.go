package netsvc

import (
	"encoding/binary"
	"testing"
	"time"
)

// The client's state machine on a fake clock: the messages it sends (to
// whom, with what), when, and what it asks the runner to do.

// sent is what a frame the client sent says.
type sent struct {
	typ              byte
	xid              uint32
	ciaddr, req, srv [4]byte
	dstIP, srcIP     [4]byte
	dstMAC           [6]byte
	bcastFlag        bool
}

func decode(t *testing.T, f []byte) sent {
	t.Helper()
	if f == nil {
		t.Fatalf("no frame sent")
	}
	if sum16(0, f[14:34]) != 0xffff {
		t.Fatalf("IP header checksum wrong")
	}
	m := f[14+20+8:]
	o, err := parseOptions(m)
	if err != nil {
		t.Fatalf("the client's own message: %v", err)
	}
	s := sent{typ: o.typ(), xid: binary.BigEndian.Uint32(m[4:]), ciaddr: [4]byte(m[12:16]), dstIP: [4]byte(f[30:34]), srcIP: [4]byte(f[26:30]),
		dstMAC: [6]byte(f[0:6]), bcastFlag: binary.BigEndian.Uint16(m[10:])&0x8000 != 0}
	s.req, _ = o.addr(50)
	s.srv, _ = o.addr(54)
	if binary.BigEndian.Uint16(f[34:]) != 68 || binary.BigEndian.Uint16(f[36:]) != 67 {
		t.Fatalf("ports %d to %d", binary.BigEndian.Uint16(f[34:]), binary.BigEndian.Uint16(f[36:]))
	}
	return s
}

var (
	bcastIP  = [4]byte{255, 255, 255, 255}
	bcastMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

// boundClient runs a client from discovery to a lease of secs (T1, T2 as
// given, 0: none) at t0; the REQUEST goes out at t0 too.
func boundClient(t *testing.T, t0 time.Time, secs, t1, t2 uint32) *dhcpClient {
	t.Helper()
	c := newDHCPClient(svcMAC, 7)
	d := decode(t, c.begin(t0).frame)
	if d.typ != dhcpDiscover || d.dstIP != bcastIP || d.dstMAC != bcastMAC || d.srcIP != ([4]byte{}) || !d.bcastFlag {
		t.Fatalf("DISCOVER: %+v", d)
	}
	a := c.input(t0, reply(d.xid, dhcpOffer, gceAddr, gceOptions(secs)))
	r := decode(t, a.frame)
	if r.typ != dhcpRequest || r.req != gceAddr || r.srv != gceServer || r.ciaddr != ([4]byte{}) || r.dstIP != bcastIP || r.xid != d.xid {
		t.Fatalf("REQUEST in REQUESTING: %+v", r)
	}
	opts := gceOptions(secs)
	opts = opts[:len(opts)-1]
	if t1 != 0 {
		opts = append(opts, opt(58, u32b(t1)...)...)
	}
	if t2 != 0 {
		opts = append(opts, opt(59, u32b(t2)...)...)
	}
	a = c.input(t0, reply(r.xid, dhcpAck, gceAddr, append(opts, 255)))
	if !a.bound || a.drop || a.frame != nil || c.st != stBound || c.lease.Addr != gceAddr || c.lease.MTU != 1460 {
		t.Fatalf("ACK: %+v, state %v, lease %+v", a, c.st, c.lease)
	}
	return c
}

// TestDHCPRenew: a 120-second lease (dnsmasq's shortest): at T1 (60 s) a
// REQUEST unicast to the server, with ciaddr and without options 50 and
// 54; the server's ACK renews the lease, its times counted from that
// REQUEST.
func TestDHCPRenew(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	c := boundClient(t, t0, 120, 0, 0)
	if want := t0.Add(60 * time.Second); !c.next.Equal(want) {
		t.Fatalf("next step at %v, want T1 %v", c.next.Sub(t0), want.Sub(t0))
	}
	if a := c.timer(t0.Add(59 * time.Second)); a.frame != nil || c.st != stBound {
		t.Fatalf("a step before its time: %+v", a)
	}
	at := t0.Add(60 * time.Second)
	a := c.timer(at)
	r := decode(t, a.frame)
	if c.st != stRenewing || r.typ != dhcpRequest || r.ciaddr != gceAddr || r.srcIP != gceAddr || r.dstIP != gceServer || r.dstMAC != srvMAC ||
		r.req != ([4]byte{}) || r.srv != ([4]byte{}) || r.bcastFlag {
		t.Fatalf("RENEWING's REQUEST: %+v (state %v)", r, c.st)
	}
	if a.note == "" {
		t.Errorf("no console line for the renewal")
	}
	if a := c.input(at, reply(r.xid+1, dhcpAck, gceAddr, gceOptions(120))); a.bound {
		t.Fatalf("an ACK to another transaction taken")
	}
	if a := c.input(at, reply(r.xid, dhcpAck, [4]byte{10, 128, 0, 6}, gceOptions(120))); a.bound {
		t.Fatalf("a renewal ACK of another address taken")
	}
	ackAt := at.Add(300 * time.Millisecond)
	a = c.input(ackAt, reply(r.xid, dhcpAck, gceAddr, gceOptions(120)))
	if !a.bound || a.drop || c.st != stBound || !c.next.Equal(at.Add(60*time.Second)) || !c.expiry.Equal(at.Add(120*time.Second)) {
		t.Fatalf("renewed: %+v, state %v, next %v, expiry %v (from the REQUEST at %v)", a, c.st, c.next.Sub(t0), c.expiry.Sub(t0), at.Sub(t0))
	}
}

// TestDHCPRebindExpire: no answer in RENEWING: retransmissions no
// sooner than a minute (so, with a 120 s lease, the next step is T2,
// 105 s); at T2 the REQUEST is broadcast (REBINDING); with no answer
// still, at the expiry the lease is dropped and discovery starts again.
func TestDHCPRebindExpire(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	c := boundClient(t, t0, 120, 0, 0)
	c.timer(t0.Add(60 * time.Second))
	if want := t0.Add(105 * time.Second); !c.next.Equal(want) {
		t.Fatalf("RENEWING's retransmission at %v, want T2 (105 s)", c.next.Sub(t0))
	}
	a := c.timer(c.next)
	r := decode(t, a.frame)
	if c.st != stRebinding || r.ciaddr != gceAddr || r.srcIP != gceAddr || r.dstIP != bcastIP || r.dstMAC != bcastMAC || r.srv != ([4]byte{}) {
		t.Fatalf("REBINDING's REQUEST: %+v (state %v)", r, c.st)
	}
	if want := t0.Add(120 * time.Second); !c.next.Equal(want) {
		t.Fatalf("REBINDING's next step at %v, want the expiry (120 s)", c.next.Sub(t0))
	}
	a = c.timer(c.next)
	d := decode(t, a.frame)
	if !a.drop || a.bound || c.st != stSelecting || d.typ != dhcpDiscover || d.srcIP != ([4]byte{}) || d.ciaddr != ([4]byte{}) {
		t.Fatalf("expiry: %+v, state %v, sent %+v", a, c.st, d)
	}
	// A long lease: RENEWING retransmits at half the time to T2.
	c = boundClient(t, t0, 86400, 0, 0)
	c.timer(c.next)
	if got, want := c.next.Sub(t0), 43200*time.Second+(75600-43200)*time.Second/2; got != want {
		t.Errorf("a day's lease: RENEWING's retransmission at %v, want %v", got, want)
	}
	// The server's T1 and T2, and ones out of order repaired.
	for _, x := range []struct{ t1, t2, wantT1, wantT2 uint32 }{{10, 100, 10, 100}, {100, 10, 60, 105}, {0, 200, 60, 105}, {119, 0, 60, 105}} {
		c = boundClient(t, t0, 120, x.t1, x.t2)
		if c.t1.Sub(t0) != time.Duration(x.wantT1)*time.Second || c.t2.Sub(t0) != time.Duration(x.wantT2)*time.Second {
			t.Errorf("T1 %d, T2 %d given: %v, %v; want %d s, %d s", x.t1, x.t2, c.t1.Sub(t0), c.t2.Sub(t0), x.wantT1, x.wantT2)
		}
	}
	// An infinite lease is never renewed.
	if c = boundClient(t, t0, infiniteLease, 0, 0); !c.next.IsZero() {
		t.Errorf("an infinite lease: next step at %v", c.next)
	}
}

// TestDHCPNak: a NAK to a renewal drops the lease and starts discovery;
// a NAK in REQUESTING starts discovery again at once, and NAKs in a row
// wait longer each time; another server's NAK is not ours.
func TestDHCPNak(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	c := boundClient(t, t0, 120, 0, 0)
	r := decode(t, c.timer(t0.Add(60*time.Second)).frame)
	a := c.input(t0.Add(60*time.Second), reply(r.xid, dhcpNak, [4]byte{}, join(opt(54, gceServer[:]...), []byte{255})))
	d := decode(t, a.frame)
	if !a.drop || c.st != stSelecting || d.typ != dhcpDiscover {
		t.Fatalf("NAK in RENEWING: %+v, state %v", a, c.st)
	}
	// REQUESTING: NAK, NAK.
	now := t0.Add(61 * time.Second)
	c = newDHCPClient(svcMAC, 9)
	d = decode(t, c.begin(now).frame)
	a = c.input(now, reply(d.xid, dhcpOffer, gceAddr, gceOptions(120)))
	r = decode(t, a.frame)
	if a := c.input(now, reply(r.xid, dhcpNak, [4]byte{}, join(opt(54, 10, 9, 9, 9), []byte{255}))); a.frame != nil || c.st != stRequesting {
		t.Fatalf("another server's NAK taken: %+v", a)
	}
	a = c.input(now, reply(r.xid, dhcpNak, [4]byte{}, []byte{255}))
	if a.drop || c.st != stSelecting || decode(t, a.frame).typ != dhcpDiscover {
		t.Fatalf("first NAK in REQUESTING: %+v, state %v", a, c.st)
	}
	d = decode(t, a.frame)
	r = decode(t, c.input(now, reply(d.xid, dhcpOffer, gceAddr, gceOptions(120))).frame)
	a = c.input(now, reply(r.xid, dhcpNak, [4]byte{}, []byte{255}))
	if a.frame != nil || c.st != stInit || c.next.Sub(now) != 2*time.Second {
		t.Fatalf("second NAK in a row: %+v, state %v, next in %v (want 2 s)", a, c.st, c.next.Sub(now))
	}
	if d := decode(t, c.timer(c.next).frame); d.typ != dhcpDiscover || c.st != stSelecting {
		t.Fatalf("after the wait: %+v, state %v", d, c.st)
	}
}

// TestDHCPRetransmit: DISCOVERs at 2, 4, 8, 16, 32, 64, 64 s (± half a
// second); REQUESTs four times, then discovery again; OFFERs without a
// server identifier, and answers in BOUND, are not taken.
func TestDHCPRetransmit(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := newDHCPClient(svcMAC, 3)
	d := decode(t, c.begin(now).frame)
	xid := d.xid
	for _, w := range []time.Duration{2, 4, 8, 16, 32, 64, 64} {
		gap := c.next.Sub(now)
		if gap < w*time.Second-time.Second/2 || gap > w*time.Second+time.Second/2 {
			t.Errorf("DISCOVER again after %v, want %v ± 0.5 s", gap, w*time.Second)
		}
		now = c.next
		if d := decode(t, c.timer(now).frame); d.typ != dhcpDiscover || d.xid != xid {
			t.Fatalf("retransmission: %+v", d)
		}
	}
	noServer := gceOptions(120)
	noServer = noServer[:len(noServer)-7] // less option 54 and the end
	if a := c.input(now, reply(xid, dhcpOffer, gceAddr, append(noServer, 255))); a.frame != nil || c.st != stSelecting {
		t.Fatalf("an OFFER without a server identifier taken: %+v", a)
	}
	c.input(now, reply(xid, dhcpOffer, gceAddr, gceOptions(120)))
	for i := 1; i < dhcpRequests; i++ {
		now = c.next
		if r := decode(t, c.timer(now).frame); r.typ != dhcpRequest || r.req != gceAddr {
			t.Fatalf("REQUEST %d: %+v", i+1, r)
		}
	}
	now = c.next
	a := c.timer(now)
	if d := decode(t, a.frame); d.typ != dhcpDiscover || c.st != stSelecting || a.note == "" {
		t.Fatalf("after %d REQUESTs: %+v, state %v", dhcpRequests, d, c.st)
	}
	c = boundClient(t, now, 120, 0, 0)
	if a := c.input(now, reply(c.xid, dhcpAck, gceAddr, gceOptions(120))); a.bound || a.frame != nil {
		t.Errorf("an answer in BOUND taken: %+v", a)
	}
}
