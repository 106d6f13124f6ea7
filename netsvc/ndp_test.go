package netsvc

import (
	"encoding/binary"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"yolk/kernel/abi"
)

// ra is a router advertisement from router (a link-local address) to
// all nodes: router lifetime life, default router preference prf (RFC
// 4191: 0 medium, 1 high, 3 low), and, if prefix is not zero, a prefix
// information option for it (/64, on-link and autonomous) valid for
// valid seconds.
func ra(router [16]byte, life uint16, prf byte, prefix [16]byte, valid uint32) []byte {
	m := []byte{134, 0, 0, 0, 64, prf << 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(m[6:], life)
	mac := hostMAC(router[:])
	m = append(m, 1, 1)
	m = append(m, mac[:]...)
	if prefix != [16]byte{} {
		pi := []byte{3, 4, 64, 0xc0}
		pi = binary.BigEndian.AppendUint32(pi, valid)
		pi = binary.BigEndian.AppendUint32(pi, valid)
		pi = append(pi, 0, 0, 0, 0)
		m = append(m, append(pi, prefix[:]...)...)
	}
	all := [16]byte{0xff, 0x02, 15: 1}
	f := eth([6]byte{0x33, 0x33, 0, 0, 0, 1}, mac, 0x86dd, ip6(router, all, 58, 255, m))
	fixSums(f)
	return f
}

// addr6Counter counts the NetAddr6 (n) and NetDelAddr6 (del) calls the
// service makes.
type addr6Counter struct {
	kernelCalls
	n, del atomic.Int32
}

func (c *addr6Counter) Net(nc abi.NetCall, buf []byte) (abi.NetCall, syscall.Errno) {
	switch nc.Op {
	case abi.NetAddr6:
		c.n.Add(1)
	case abi.NetDelAddr6:
		c.del.Add(1)
	}
	return c.kernelCalls.Net(nc, buf)
}

// TestNDPRoutesBounded: a router that comes and goes (advertisements with
// a lifetime, then 0), changes its preference, and a prefix that comes
// and goes, as anyone on the link can send them, leave the service's
// route table as it was plus what is valid now (Linux's: one default
// route per router, one route per on-link prefix), not a route more for
// each advertisement; and the service tells the kernel its address from
// that prefix once.
func TestNDPRoutesBounded(t *testing.T) {
	var cnt *addr6Counter
	h := newHosted(t, hostedOpts{wrap: func(k kernelCalls) kernelCalls { cnt = &addr6Counter{kernelCalls: k}; return cnt }})
	routes := func() []tcpip.Route {
		h.s.nicMu.Lock() // the loop applies NDP's routes under it
		defer h.s.nicMu.Unlock()
		return h.s.st.GetRouteTable()
	}
	before := len(routes())
	router := [16]byte{0xfe, 0x80, 15: 0x99}
	prefix := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 7}
	send := func(f []byte) {
		if !h.k.Inject(f, bound) {
			t.Fatal("the NIC's ring stayed full")
		}
	}
	settle := func() {
		// The loop takes the frame, the netstack calls the dispatcher,
		// the loop applies what it recorded: a health check's round trip
		// comes after all of that.
		if err := h.health(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 50; i++ {
		send(ra(router, 1800, byte(i%2), prefix, 7200)) // the router (its preference changing) and the prefix
		settle()
		send(ra(router, 0, 0, prefix, 0)) // the router gone; the prefix's valid lifetime 0 (RFC 4862 keeps the address 2 hours)
		settle()
	}
	if got := len(routes()); got > before+1 {
		t.Errorf("after 50 advertisements and withdrawals: %d routes, %d before: %v ...", got, before, routes()[:6])
	}
	send(ra(router, 1800, 0, prefix, 7200))
	settle()
	var def, onlink int
	for _, r := range routes() {
		switch {
		case r.Destination.Prefix() == 0 && r.Destination.ID().Len() == 16 && r.Gateway == tcpip.AddrFrom16(router):
			def++
		case r.Destination.Prefix() == 64 && r.Destination.ID() == tcpip.AddrFrom16(prefix):
			onlink++
		}
	}
	if def != 1 || onlink != 1 {
		t.Errorf("with the router and the prefix advertised: %d default routes through it, %d routes to the prefix; want 1 and 1", def, onlink)
	}
	if n := cnt.n.Load(); n != 1 {
		t.Errorf("the service told the kernel of an IPv6 address %d times, want once (one address)", n)
	}
	h.finish()
}

// TestNDPAddressOnce: a prefix advertised with a lifetime of a second,
// again after its address expired, makes the same address again: the
// kernel is told of it once each time it comes (it was told again
// without having been told it went), and told it went each time its
// lifetime ends (NetDelAddr6: the kernel kept it for good, the source
// of every IPv6 connect).
func TestNDPAddressOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for an address to expire, twice")
	}
	var cnt *addr6Counter
	h := newHosted(t, hostedOpts{wrap: func(k kernelCalls) kernelCalls { cnt = &addr6Counter{kernelCalls: k}; return cnt }})
	router := [16]byte{0xfe, 0x80, 15: 0x98}
	prefix := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 8}
	for i := 0; i < 2; i++ {
		h.k.Inject(ra(router, 0, 0, prefix, 1), bound)
		time.Sleep(1300 * time.Millisecond)
	}
	if err := h.health(); err != nil {
		t.Fatal(err)
	}
	if n, del := cnt.n.Load(), cnt.del.Load(); n != 2 || del != 2 {
		t.Errorf("the service told the kernel of its address in %v %d times and of its end %d times, want 2 and 2", tcpip.AddrFrom16(prefix), n, del)
	}
	h.finish()
}
