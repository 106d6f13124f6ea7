package netsvc

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"time"
)

// The DHCP client's state machine (RFC 2131 §4.4): INIT, SELECTING,
// REQUESTING, BOUND, RENEWING, REBINDING. It does no I/O and reads no
// clock: the runner (dhcprun.go) gives it the time, the frames that came
// to port 68 and its timer's expiries, and carries out what it answers
// (a frame to send, a lease to apply or to drop). The hosted tests drive
// it with a clock of their own.
//
//   - SELECTING: a DISCOVER, again after 2, 4, 8 … 64 s (± half a
//     second, from the client's seeded source); the first usable OFFER
//     is taken.
//   - REQUESTING: the REQUEST (broadcast, options 50 and 54), again as
//     the DISCOVER was, four times; then INIT again. A NAK: INIT.
//   - BOUND until T1 (option 58, else half the lease): RENEWING, a
//     REQUEST unicast to the server (ciaddr set, no options 50 and 54),
//     again after half the time left to T2 (at least 60 s, RFC 2131),
//     until T2 (option 59, else 7/8 of the lease): REBINDING, the same
//     REQUEST broadcast, again after half the time left to the expiry
//     (at least 60 s), until the expiry: the lease is dropped and
//     discovery starts again. An ACK in RENEWING or REBINDING is a new
//     lease (its times count from the REQUEST); a NAK drops the lease
//     and starts discovery again.
//   - Lease times count from the first transmission of the REQUEST that
//     was acknowledged. An infinite lease (0xffffffff) is never renewed.

type dhcpState int

const (
	stInit dhcpState = iota
	stSelecting
	stRequesting
	stBound
	stRenewing
	stRebinding
)

var stateNames = [...]string{"INIT", "SELECTING", "REQUESTING", "BOUND", "RENEWING", "REBINDING"}

func (s dhcpState) String() string { return stateNames[s] }

const (
	dhcpFirstWait  = 2 * time.Second
	dhcpMaxWait    = 64 * time.Second
	dhcpMinRetry   = 60 * time.Second // RENEWING and REBINDING (RFC 2131)
	dhcpRequests   = 4                // REQUESTs in REQUESTING before discovery starts again
	dhcpMinLease   = 10 * time.Second // shorter leases are taken as this long (no renewal storm)
	infiniteLease  = 0xffffffff
	dhcpNakBackoff = 64 * time.Second // the longest wait after NAKs in a row
)

// dhcpClient is one NIC's client.
type dhcpClient struct {
	mac [6]byte
	rnd *rand.Rand
	st  dhcpState
	xid uint32

	offer  Lease   // SELECTING's pick, REQUESTING's
	lease  Lease   // BOUND, RENEWING, REBINDING: the lease held
	srvMAC [6]byte // where the held lease's ACK came from: renewals go there

	reqAt     time.Time // the first transmission of the REQUEST in flight
	wait      time.Duration
	tries     int
	naks      int       // NAKs in a row
	next      time.Time // when timer must run; zero: never
	t1, t2    time.Time
	expiry    time.Time // zero: infinite
	discovers int       // DISCOVERs sent since INIT
}

// dhcpAct is what the runner does after a step.
type dhcpAct struct {
	frame []byte // send it
	bound bool   // the client holds a new or renewed lease (c.lease): apply it
	drop  bool   // the held lease is gone: drop its address, routes and DNS
	note  string // a line for the console
}

func newDHCPClient(mac [6]byte, seed int64) *dhcpClient {
	return &dhcpClient{mac: mac, rnd: rand.New(rand.NewSource(seed))}
}

// jitter is d ± half a second.
func (c *dhcpClient) jitter(d time.Duration) time.Duration {
	return d + time.Duration(c.rnd.Int63n(int64(time.Second))) - time.Second/2
}

// begin starts discovery (INIT → SELECTING) at now.
func (c *dhcpClient) begin(now time.Time) dhcpAct {
	c.st = stSelecting
	c.xid = c.rnd.Uint32()
	c.wait = dhcpFirstWait
	c.discovers = 0
	return c.discover(now)
}

func (c *dhcpClient) discover(now time.Time) dhcpAct {
	c.discovers++
	c.next = now.Add(c.jitter(c.wait))
	c.wait = min(2*c.wait, dhcpMaxWait)
	return dhcpAct{frame: dhcpFrame(c.mac, &dhcpOut{typ: dhcpDiscover, xid: c.xid})}
}

// request sends (again) REQUESTING's, RENEWING's or REBINDING's REQUEST.
func (c *dhcpClient) request(now time.Time) dhcpAct {
	if c.tries == 0 {
		c.reqAt = now
	}
	c.tries++
	o := dhcpOut{typ: dhcpRequest, xid: c.xid}
	switch c.st {
	case stRequesting:
		o.reqAddr, o.server = c.offer.Addr, c.offer.Server
		c.next = now.Add(c.jitter(c.wait))
		c.wait = min(2*c.wait, dhcpMaxWait)
	case stRenewing:
		o.ciaddr, o.src = c.lease.Addr, c.lease.Addr
		o.unicast, o.dst, o.dstMAC = true, c.lease.Server, c.srvMAC
		c.next = retryBefore(now, c.t2)
	case stRebinding:
		o.ciaddr, o.src = c.lease.Addr, c.lease.Addr
		c.next = retryBefore(now, c.expiry)
	}
	return dhcpAct{frame: dhcpFrame(c.mac, &o)}
}

// retryBefore is the next retransmission in RENEWING or REBINDING: half
// the time left to end, at least a minute, never past end.
func retryBefore(now, end time.Time) time.Time {
	t := now.Add(max(end.Sub(now)/2, dhcpMinRetry))
	if t.After(end) {
		return end
	}
	return t
}

// timer runs the step due at c.next (the runner calls it when now has
// reached c.next).
func (c *dhcpClient) timer(now time.Time) dhcpAct {
	if c.next.IsZero() || now.Before(c.next) {
		return dhcpAct{}
	}
	switch c.st {
	case stInit:
		return c.begin(now)
	case stSelecting:
		return c.discover(now)
	case stRequesting:
		if c.tries >= dhcpRequests {
			a := c.begin(now)
			a.note = fmt.Sprintf("no answer to %d REQUESTs for %v: discovering again", dhcpRequests, ip4s(c.offer.Addr))
			return a
		}
		return c.request(now)
	case stBound:
		c.st, c.xid, c.tries = stRenewing, c.rnd.Uint32(), 0
		a := c.request(now)
		a.note = fmt.Sprintf("renewing %v with %v", ip4s(c.lease.Addr), ip4s(c.lease.Server))
		return a
	case stRenewing:
		if !now.Before(c.t2) {
			c.st, c.xid, c.tries = stRebinding, c.rnd.Uint32(), 0
			a := c.request(now)
			a.note = fmt.Sprintf("no answer from %v: rebinding %v (broadcast)", ip4s(c.lease.Server), ip4s(c.lease.Addr))
			return a
		}
		return c.request(now)
	case stRebinding:
		if !now.Before(c.expiry) {
			addr := c.lease.Addr
			c.lease = Lease{}
			a := c.begin(now)
			a.drop = true
			a.note = fmt.Sprintf("lease of %v expired: address dropped, discovering again", ip4s(addr))
			return a
		}
		return c.request(now)
	}
	return dhcpAct{}
}

// input takes frame f, which came to UDP port 68.
func (c *dhcpClient) input(now time.Time, f []byte) dhcpAct {
	if c.st == stInit || c.st == stBound {
		return dhcpAct{} // no transaction in flight
	}
	m := dhcpAnswer(f, c.mac, c.xid)
	if m == nil {
		return dhcpAct{}
	}
	o, err := parseOptions(m)
	if err != nil {
		return dhcpAct{}
	}
	switch t := o.typ(); {
	case t == dhcpOffer && c.st == stSelecting:
		l, err := parseLease(m)
		if err != nil || l.Server == ([4]byte{}) {
			return dhcpAct{} // networkd takes no OFFER without a server identifier
		}
		c.offer = l
		c.st, c.tries, c.wait = stRequesting, 0, dhcpFirstWait
		return c.request(now)
	case t == dhcpAck && c.st >= stRequesting:
		l, err := parseLease(m)
		if err != nil {
			return dhcpAct{}
		}
		if c.st == stRequesting && l.Addr != c.offer.Addr {
			return dhcpAct{} // an ACK of another address than the one asked for
		}
		if c.st > stRequesting && l.Addr != c.lease.Addr {
			return dhcpAct{} // a renewal gives the address held, or a NAK
		}
		if l.Server == ([4]byte{}) {
			l.Server = c.offer.Server
			if c.st > stRequesting {
				l.Server = c.lease.Server
			}
		}
		renewed := c.st > stRequesting
		c.bind(l, [6]byte(f[6:12]))
		a := dhcpAct{bound: true}
		if renewed {
			a.note = fmt.Sprintf("renewed %v/%d for %s", ip4s(l.Addr), l.Prefix, leaseTime(l.Seconds))
		}
		c.naks = 0
		return a
	case t == dhcpNak && c.st >= stRequesting:
		if srv, ok := o.addr(54); ok && c.st == stRequesting && srv != c.offer.Server {
			return dhcpAct{} // another server's NAK: not to our REQUEST (RFC 2131 §4.3.2 names the one chosen)
		}
		held := c.st > stRequesting
		addr := c.lease.Addr
		if !held {
			addr = c.offer.Addr
		}
		c.lease = Lease{}
		c.naks++
		var a dhcpAct
		if c.naks == 1 {
			a = c.begin(now)
		} else {
			// NAKs in a row: wait before discovering again (a server
			// that refuses every REQUEST is not hammered).
			c.st = stInit
			c.next = now.Add(min(time.Duration(1<<min(c.naks-1, 6))*time.Second, dhcpNakBackoff))
		}
		a.drop = held
		a.note = fmt.Sprintf("NAK for %v: discovering again", ip4s(addr))
		if held {
			a.note = fmt.Sprintf("NAK for %v: address dropped, discovering again", ip4s(addr))
		}
		return a
	}
	return dhcpAct{}
}

// bind holds lease l (BOUND), its times counted from c.reqAt.
func (c *dhcpClient) bind(l Lease, srvMAC [6]byte) {
	c.lease, c.srvMAC, c.st, c.tries = l, srvMAC, stBound, 0
	if l.Seconds == infiniteLease {
		c.t1, c.t2, c.expiry, c.next = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		return
	}
	life := max(time.Duration(l.Seconds)*time.Second, dhcpMinLease)
	t1, t2 := leaseTimes(life, time.Duration(l.T1)*time.Second, time.Duration(l.T2)*time.Second)
	c.t1, c.t2, c.expiry = c.reqAt.Add(t1), c.reqAt.Add(t2), c.reqAt.Add(life)
	c.next = c.t1
}

// leaseTimes are T1 and T2 for a lease of life: the server's if they
// are in order (0 < T1 < T2 < life), else repaired as networkd repairs
// them: T2 7/8 of the lease, T1 half of it.
func leaseTimes(life, t1, t2 time.Duration) (time.Duration, time.Duration) {
	if t2 <= 0 || t2 >= life {
		t2 = life * 7 / 8
	}
	if t1 <= 0 || t1 >= t2 {
		t1 = life / 2
	}
	if t1 >= t2 {
		t2 = life * 7 / 8
	}
	return t1, t2
}

func leaseTime(s uint32) string {
	if s == infiniteLease {
		return "ever"
	}
	return fmt.Sprintf("%d s", s)
}

// describe is the console's line for lease l.
func (l *Lease) describe() string {
	s := fmt.Sprintf("%v/%d from %v, lease %s", ip4s(l.Addr), l.Prefix, ip4s(l.Server), leaseTime(l.Seconds))
	if l.Seconds != infiniteLease && l.Seconds != 0 {
		t1, t2 := leaseTimes(time.Duration(max(l.Seconds, 10))*time.Second, time.Duration(l.T1)*time.Second, time.Duration(l.T2)*time.Second)
		s += fmt.Sprintf(" (renew at %d s, rebind at %d s)", int(t1.Seconds()), int(t2.Seconds()))
	}
	if len(l.Routes) > 0 {
		s += "; routes (option 121):"
		for i, r := range l.Routes {
			if i > 0 {
				s += ","
			}
			s += " " + r.String()
		}
	} else if l.Router != ([4]byte{}) {
		s += "; router " + ip4s(l.Router)
	}
	if l.MTU != 0 {
		s += fmt.Sprintf("; MTU %d", l.MTU)
	}
	if len(l.DNS) > 0 {
		s += "; DNS"
		for _, d := range l.DNS {
			s += " " + ip4s(d)
		}
	}
	if l.Domain != "" {
		s += "; domain " + l.Domain
	}
	if len(l.Search) > 0 {
		s += "; search"
		for _, d := range l.Search {
			s += " " + d
		}
	}
	return s
}

// frameXID is the transaction id of the DHCP message frame f carries (0
// if it carries none): the tests' server answers with it.
func frameXID(f []byte) uint32 {
	if len(f) < 14+20+8+8 {
		return 0
	}
	return binary.BigEndian.Uint32(f[14+20+8+4:])
}
