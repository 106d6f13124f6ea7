package netsvc

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"yolk/kernel/abi"
	"yolk/kernel/net"
)

// TestDHCPHostedGCE: the service boots on a lease shaped as GCE's
// (10.0.2.15/32, the gateway 10.0.2.2 through option 121's host route,
// MTU 1460, two DNS servers, a domain and a search list) from the
// harness's server, with a 12-second lease whose T1 is 2 s. The kernel
// reports the routes and the MTU, resolv.conf has every server and the
// search list, the service's SYN-ACKs carry the MSS of MTU 1460, the
// lease is renewed (a REQUEST from the address held) and the service
// still serves the peer, which it reaches through the host route.
func TestDHCPHostedGCE(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	search := []byte("\x01c\x04proj\x08internal\x00\x06google\xc0\x07")
	opts := join(
		opt(1, 255, 255, 255, 255),
		opt(3, 10, 0, 2, 99), // ignored: option 121 is there
		opt(121, 32, 10, 0, 2, 2, 0, 0, 0, 0, 0, 10, 0, 2, 2),
		opt(26, 1460>>8, 1460&255),
		opt(6, 10, 0, 2, 3, 10, 0, 2, 4),
		opt(15, []byte("c.proj.internal")...),
		opt(119, search...),
		opt(51, u32b(12)...), opt(58, u32b(2)...), opt(59, u32b(9)...),
		opt(54, dnsIP[:]...),
		[]byte{255})
	var mss atomic.Int64
	tap := func(f []byte, out bool) {
		if m := synAckMSS(f); out && m > 0 {
			mss.Store(int64(m))
		}
	}
	h := newHosted(t, hostedOpts{dhcp: true, dhcpOpts: opts, resolv: resolv, tap: tap})
	if h.lease.Prefix != 32 || h.lease.MTU != 1460 || len(h.lease.Routes) != 2 || h.lease.Router != ([4]byte{}) {
		t.Errorf("lease %+v", h.lease)
	}
	var rs [abi.NetMaxRoutes]abi.NetRoute
	k := h.k.Sockets.Routes4(rs[:])
	if got, want := routeStrings(rs[:k]), []string{"default via 10.0.2.2", "10.0.2.2/32 on-link"}; !slices.Equal(got, want) {
		t.Errorf("the kernel's routes %q, want %q", got, want)
	}
	var eth net.Iface
	if !h.k.Sockets.Iface(1, &eth) || eth.MTU != 1460 || eth.NAddrs == 0 || eth.Addrs[0].Prefix != 32 || [4]byte(eth.Addrs[0].Addr[:4]) != svcIP {
		t.Errorf("the kernel's eth0: MTU %d, addresses %+v; want MTU 1460 and 10.0.2.15/32", eth.MTU, eth.Addrs[:eth.NAddrs])
	}
	b, err := os.ReadFile(resolv)
	if want := "# DHCP (yolk netsvc)\nnameserver 10.0.2.3\nnameserver 10.0.2.4\nsearch c.proj.internal google.internal\n"; err != nil || string(b) != want {
		t.Errorf("resolv.conf %q (%v), want %q", b, err, want)
	}
	if m := mss.Load(); m != 1460-40 {
		t.Errorf("the service's SYN-ACK said MSS %d, want %d (MTU 1460)", m, 1460-40)
	}
	for end := time.Now().Add(bound); h.renewals.Load() == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no renewal within %v of a lease whose T1 is 2 s", bound)
		}
	}
	if err := h.health(); err != nil {
		t.Fatalf("after the renewal: %v", err)
	}
	t.Logf("%d renewals; routes %q", h.renewals.Load(), routeStrings(rs[:k]))
	h.finish()
}

// synAckMSS is the MSS option of the IPv4 TCP SYN-ACK frame f carries,
// 0 if it is none.
func synAckMSS(f []byte) int {
	if len(f) < 14+20+20 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[14+9] != 6 {
		return 0
	}
	tcp := f[14+int(f[14]&15)*4:]
	if len(tcp) < 20 || tcp[13]&0x12 != 0x12 {
		return 0
	}
	o := tcp[20:min(int(tcp[12]>>4)*4, len(tcp))]
	for len(o) > 0 && o[0] != 0 {
		if o[0] == 1 {
			o = o[1:]
			continue
		}
		if len(o) < 2 || o[1] < 2 || int(o[1]) > len(o) {
			return 0
		}
		if o[0] == 2 && o[1] == 4 {
			return int(binary.BigEndian.Uint16(o[2:]))
		}
		o = o[o[1]:]
	}
	return 0
}

// TestDHCPHostedExpiry: the server goes silent; the client renews at T1
// and rebinds at T2 unanswered, and at the expiry the service drops the
// address (the kernel's eth0 has none, no routes, resolv.conf no
// server) and discovers again; once the server answers again the lease,
// its routes and resolv.conf come back and the peer is served again.
func TestDHCPHostedExpiry(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	opts := join(opt(1, 255, 255, 255, 0), opt(3, peerIP[:]...), opt(6, dnsIP[:]...),
		opt(51, u32b(10)...), opt(58, u32b(2)...), opt(59, u32b(4)...), opt(54, dnsIP[:]...), []byte{255})
	h := newHosted(t, hostedOpts{dhcp: true, dhcpOpts: opts, resolv: resolv})
	h.dhcpMute.Store(true)
	start := time.Now()
	ethV4 := func() int {
		var eth net.Iface
		h.k.Sockets.Iface(1, &eth)
		n := 0
		for _, a := range eth.Addrs[:eth.NAddrs] {
			if a.Family == 2 { // AF_INET
				n++
			}
		}
		return n
	}
	var rs [abi.NetMaxRoutes]abi.NetRoute
	for end := time.Now().Add(10*time.Second + bound); h.k.Sockets.Routes4(rs[:]) != 0 || ethV4() != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the lease of 10 s not dropped after %v of silence: %d routes, %d IPv4 addresses", time.Since(start), h.k.Sockets.Routes4(rs[:]), ethV4())
		}
	}
	dropped := time.Since(start)
	// resolv.conf is written after the routes go (dropLease): wait for
	// it, as below (under qemu-aarch64 the test read it in between).
	for end := time.Now().Add(bound); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(resolv)
		if !strings.Contains(string(b), "nameserver") {
			break
		}
		if time.Now().After(end) {
			t.Errorf("resolv.conf names a server %v after the lease ended:\n%s", bound, b)
			break
		}
	}
	heard := h.heard.Load()
	h.dhcpMute.Store(false)
	for end := time.Now().Add(bound + 4*time.Second); h.k.Sockets.Routes4(rs[:]) != 2 || ethV4() != 1; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no lease again after the server came back")
		}
	}
	// resolv.conf is written after the routes are set (setLease), and
	// a write truncates first: wait for it, as for the routes.
	for end := time.Now().Add(bound); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(resolv)
		if strings.Contains(string(b), "nameserver 10.0.2.3\n") {
			break
		}
		if time.Now().After(end) {
			t.Errorf("resolv.conf %v after the new lease's routes:\n%s", bound, b)
			break
		}
	}
	if err := h.health(); err != nil {
		t.Fatalf("after the new lease: %v", err)
	}
	t.Logf("dropped %v after the server went silent (%d messages unanswered); leased again", dropped.Round(100*time.Millisecond), heard)
	if dropped < 8*time.Second {
		t.Errorf("the lease was dropped after %v: before its expiry", dropped)
	}
	h.finish()
}
