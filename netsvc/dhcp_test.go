package netsvc

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"yolk/kernel/abi"
)

// The DHCP client's messages and state machine, on the host: options as
// GCE's metadata server and dnsmasq send them, malformed ones (judged as
// systemd-networkd judges them), and the client's steps at the times a
// fake clock gives.

var (
	gceAddr   = [4]byte{10, 128, 0, 5}
	gceGW     = [4]byte{10, 128, 0, 1}
	gceServer = [4]byte{169, 254, 169, 254}
	srvMAC    = [6]byte{0x42, 0x01, 0x0a, 0x80, 0, 1}
)

// opt is a DHCP option: code, length, value.
func opt(code byte, v ...byte) []byte { return append([]byte{code, byte(len(v))}, v...) }

func u32b(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// gceOptions are the options GCE's metadata server gives (less the
// host name and NTP): a /32, the gateway's host route and the default
// route through it (121), the router (3, which 121 overrides), MTU 1460,
// the metadata server as DNS, the project's domain and search list.
func gceOptions(lease uint32) []byte {
	search := []byte("\x01c\x04proj\x08internal\x00\x06google\xc0\x07") // google.internal: a pointer to "internal"
	return join(
		opt(1, 255, 255, 255, 255),
		opt(3, gceGW[:]...),
		opt(121, 32, 10, 128, 0, 1, 0, 0, 0, 0, 0, 10, 128, 0, 1),
		opt(26, 1460>>8, 1460&255),
		opt(6, 169, 254, 169, 254),
		opt(15, []byte("c.proj.internal")...),
		opt(119, search...),
		opt(51, u32b(lease)...),
		opt(54, gceServer[:]...),
		[]byte{255})
}

// bootp is a server's BOOTP reply of type typ to svcMAC, transaction
// xid, leasing yiaddr, with options (after the type) opts.
func bootp(xid uint32, typ byte, yiaddr [4]byte, opts []byte) []byte {
	b := make([]byte, 240, 600)
	b[0], b[1], b[2] = 2, 1, 6
	binary.BigEndian.PutUint32(b[4:], xid)
	copy(b[16:], yiaddr[:])
	copy(b[28:], svcMAC[:])
	binary.BigEndian.PutUint32(b[236:], dhcpMagic)
	b = append(b, 53, 1, typ)
	return append(b, opts...)
}

// reply is bootp in a frame from the server (srvMAC, gceServer).
func reply(xid uint32, typ byte, yiaddr [4]byte, opts []byte) []byte {
	return udpFrame(srvMAC, svcMAC, gceServer, [4]byte{255, 255, 255, 255}, 67, 68, bootp(xid, typ, yiaddr, opts))
}

func lease(t *testing.T, opts []byte) Lease {
	t.Helper()
	l, err := parseLease(bootp(1, dhcpAck, gceAddr, opts))
	if err != nil {
		t.Fatalf("parseLease: %v", err)
	}
	return l
}

func routeStrings(rs []abi.NetRoute) []string {
	var s []string
	for _, r := range rs {
		x := Route{Dst: r.Dst, Prefix: int(r.Prefix), Gateway: r.Gateway}.String()
		if r.Proto == rtprotKernel {
			x += " (subnet)"
		}
		s = append(s, x)
	}
	return s
}

// TestDHCPLeaseGCE: GCE's answer read whole; its routes: the gateway's
// host route on the link and the default route through it, option 3
// ignored.
func TestDHCPLeaseGCE(t *testing.T) {
	l := lease(t, gceOptions(3600))
	want := Lease{Addr: gceAddr, Mask: [4]byte{255, 255, 255, 255}, Prefix: 32, Server: gceServer, Seconds: 3600,
		DNS: [][4]byte{gceServer}, Domain: "c.proj.internal", Search: []string{"c.proj.internal", "google.internal"}, MTU: 1460,
		Routes: []Route{{Dst: gceGW, Prefix: 32}, {Gateway: gceGW}}}
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("lease\n%+v\nwant\n%+v", l, want)
	}
	got := routeStrings(leaseRoutes(&l, rtprotDHCP))
	if w := []string{"default via 10.128.0.1", "10.128.0.1/32 on-link"}; !slices.Equal(got, w) {
		t.Errorf("routes %q, want %q", got, w)
	}
	if d := l.describe(); !strings.Contains(d, "10.128.0.5/32 from 169.254.169.254, lease 3600 s (renew at 1800 s, rebind at 3150 s)") ||
		!strings.Contains(d, "MTU 1460") || !strings.Contains(d, "search c.proj.internal google.internal") {
		t.Errorf("console line %q", d)
	}
	if s := strings.Join(searchNames(&l), " "); s != "c.proj.internal google.internal" {
		t.Errorf("search list %q", s)
	}
}

// TestDHCPRoutes: the routes leases make without option 121 (a /32 with
// a router: a host route to it first; a /24 whose router is on the
// link: none), and with an option 121 that has no default route (then
// there is none: option 3 is ignored).
func TestDHCPRoutes(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []byte
		want []string
	}{
		{"/32, router", join(opt(1, 255, 255, 255, 255), opt(3, 10, 128, 0, 1)), []string{"default via 10.128.0.1", "10.128.0.1/32 on-link"}},
		{"/24, router", join(opt(1, 255, 255, 255, 0), opt(3, 10, 128, 0, 1, 10, 128, 0, 2)), []string{"default via 10.128.0.1", "10.128.0.0/24 on-link (subnet)"}},
		{"/24, router outside", join(opt(1, 255, 255, 255, 0), opt(3, 10, 129, 0, 1)), []string{"default via 10.129.0.1", "10.128.0.0/24 on-link (subnet)", "10.129.0.1/32 on-link"}},
		{"121 without a default", join(opt(1, 255, 255, 255, 0), opt(3, 10, 128, 0, 1), opt(121, 16, 192, 168, 10, 128, 0, 9)),
			[]string{"10.128.0.0/24 on-link (subnet)", "192.168.0.0/16 via 10.128.0.9"}},
		{"121 gateway off the link", join(opt(1, 255, 255, 255, 255), opt(121, 0, 10, 128, 0, 1, 8, 172, 10, 128, 0, 1)),
			[]string{"default via 10.128.0.1", "10.128.0.1/32 on-link", "172.0.0.0/8 via 10.128.0.1"}},
		{"no mask: class A", opt(3, 10, 0, 0, 1), []string{"default via 10.0.0.1", "10.0.0.0/8 on-link (subnet)"}},
		{"no router", opt(1, 255, 255, 255, 255), nil},
	} {
		l := lease(t, append(c.opts, 255))
		if got := routeStrings(leaseRoutes(&l, rtprotDHCP)); !slices.Equal(got, c.want) {
			t.Errorf("%s: routes %q, want %q", c.name, got, c.want)
		}
	}
	// More routes than the kernel's table: the first NetMaxRoutes.
	var many []byte
	for i := 0; i < 40; i++ {
		many = append(many, 24, 192, 168, byte(i), 0, 0, 0, 0)
	}
	l := lease(t, join(opt(1, 255, 255, 255, 255), opt(121, many[:248]...), opt(121, many[248:]...), []byte{255}))
	if len(l.Routes) != 40 {
		t.Errorf("option 121 given twice (RFC 3396): %d routes, want 40", len(l.Routes))
	}
	if rs := leaseRoutes(&l, rtprotDHCP); len(rs) != abi.NetMaxRoutes {
		t.Errorf("%d routes made, want the table's %d", len(rs), abi.NetMaxRoutes)
	}
}

// TestDHCPMalformed: what networkd does with each malformed option: the
// option alone is ignored; options that run past their area drop the
// message; an address no host may have drops it too. None panics.
func TestDHCPMalformed(t *testing.T) {
	base := Lease{Addr: gceAddr, Mask: [4]byte{255, 0, 0, 0}, Prefix: 8} // class A without a (usable) mask
	for _, c := range []struct {
		name string
		opts []byte
		want func(*Lease)
	}{
		{"121 prefix 33", join(opt(3, gceGW[:]...), opt(121, 33, 10, 128, 0, 1, 0, 0, 0, 0, 0, 10, 128, 0, 1)), func(l *Lease) { l.Router = gceGW }},
		{"121 cut short", join(opt(3, gceGW[:]...), opt(121, 0, 10, 128, 0, 1, 24, 10, 1, 2)), func(l *Lease) { l.Router = gceGW }},
		{"121 bits past the prefix", opt(121, 8, 10, 10, 128, 0, 1, 24, 10, 1, 2, 10, 128, 0, 1),
			func(l *Lease) {
				l.Routes = []Route{{Dst: [4]byte{10}, Prefix: 8, Gateway: gceGW}, {Dst: [4]byte{10, 1, 2}, Prefix: 24, Gateway: gceGW}}
			}},
		{"121 empty", join(opt(3, gceGW[:]...), opt(121)), func(l *Lease) { l.Router = gceGW }},
		{"mask not contiguous", opt(1, 255, 0, 255, 0), nil},
		{"mask of 3 bytes", opt(1, 255, 255, 255), nil},
		{"router 0.0.0.0", opt(3, 0, 0, 0, 0), nil},
		{"router of 5 bytes", opt(3, 10, 128, 0, 1, 1), nil},
		{"DNS of 6 bytes", opt(6, 8, 8, 8, 8, 1, 1), nil},
		{"DNS with 0.0.0.0 and a broadcast", opt(6, 0, 0, 0, 0, 255, 255, 255, 255, 10, 0, 0, 2), func(l *Lease) { l.DNS = [][4]byte{{10, 0, 0, 2}} }},
		{"MTU of 1 byte", opt(26, 5), nil},
		{"MTU 575", opt(26, 575>>8, 575&255), nil},
		{"MTU 576", opt(26, 576>>8, 576&255), func(l *Lease) { l.MTU = 576 }},
		{"domain with a space", opt(15, []byte("a b.internal")...), nil},
		{"domain with NULs after", opt(15, []byte("ex.internal\x00\x00")...), func(l *Lease) { l.Domain = "ex.internal" }},
		{"domain with a trailing dot", opt(15, []byte("ex.internal.")...), func(l *Lease) { l.Domain = "ex.internal" }},
		{"search pointer forward", opt(119, 0xc0, 2, 1, 'a', 0), nil},
		{"search pointer loop", opt(119, 1, 'a', 0, 0xc0, 3), func(l *Lease) { l.Search = []string{"a"} }},
		{"search label past the end", opt(119, 1, 'a', 0, 9, 'b'), func(l *Lease) { l.Search = []string{"a"} }},
		{"search bad label", opt(119, 3, 'a', '/', 'b', 0, 1, 'c', 0), func(l *Lease) { l.Search = []string{"c"} }},
		{"lease of 3 bytes", opt(51, 0, 0, 1), nil},
		{"server of 8 bytes", opt(54, 1, 2, 3, 4, 5, 6, 7, 8), nil},
		{"no end option", opt(26, 1460>>8, 1460&255), func(l *Lease) { l.MTU = 1460 }},
	} {
		l, err := parseLease(bootp(1, dhcpAck, gceAddr, c.opts))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		want := base
		if c.want != nil {
			c.want(&want)
		}
		if !reflect.DeepEqual(l, want) {
			t.Errorf("%s: lease\n%+v\nwant\n%+v", c.name, l, want)
		}
	}
	for _, c := range []struct {
		name   string
		yiaddr [4]byte
		opts   []byte
	}{
		{"an option's length past the end", gceAddr, []byte{26, 4, 5, 0xdc}},
		{"a code without a length", gceAddr, []byte{26}},
		{"overload into a cut file field", gceAddr, join(opt(52, 1), []byte{255})},
		{"address 0.0.0.0", [4]byte{}, []byte{255}},
		{"address 255.255.255.255", [4]byte{255, 255, 255, 255}, []byte{255}},
		{"address 127.0.0.1", [4]byte{127, 0, 0, 1}, []byte{255}},
		{"address 224.0.0.1", [4]byte{224, 0, 0, 1}, []byte{255}},
	} {
		m := bootp(1, dhcpAck, c.yiaddr, c.opts)
		if c.name == "overload into a cut file field" {
			m[108], m[109] = 6, 200 // DNS, 200 bytes: past the file field
		}
		if _, err := parseLease(m); err == nil {
			t.Errorf("%s: taken", c.name)
		}
	}
}

// TestDHCPOverload: option 52 puts options in the file field (1), the
// sname field (2) or both (3), read after the options field; an option
// 52 there is not one; the end option ends each field.
func TestDHCPOverload(t *testing.T) {
	m := bootp(1, dhcpAck, gceAddr, join(opt(52, 3), opt(51, u32b(600)...), []byte{255}))
	copy(m[108:], join(opt(6, 10, 0, 0, 2), opt(52, 0), opt(26, 1460>>8, 1460&255), []byte{255}, opt(15, []byte("no")...)))
	copy(m[44:], join(opt(15, []byte("sname.internal")...), []byte{0, 0, 255}))
	l, err := parseLease(m)
	if err != nil {
		t.Fatal(err)
	}
	if l.Seconds != 600 || !slices.Equal(l.DNS, [][4]byte{{10, 0, 0, 2}}) || l.MTU != 1460 || l.Domain != "sname.internal" {
		t.Errorf("overloaded: %+v", l)
	}
	m[245] = 1 // option 52's value: the file field alone
	if l, _ = parseLease(m); l.Domain != "" || l.MTU != 1460 {
		t.Errorf("overload 1: %+v", l)
	}
	m[245] = 0
	if l, _ = parseLease(m); l.Domain != "" || l.MTU != 0 || l.DNS != nil {
		t.Errorf("overload 0: %+v", l)
	}
}

// TestDHCPMutations: 20,000 mutations of GCE's answer (bytes flipped,
// cut, lengths changed) through the parser and a client in each state
// that takes answers: nothing panics, and a lease taken has a host's
// address.
func TestDHCPMutations(t *testing.T) {
	rnd := rand.New(rand.NewSource(31))
	good := reply(0, dhcpAck, gceAddr, gceOptions(120))
	for i := 0; i < 20000; i++ {
		f := slices.Clone(good)
		for k := rnd.Intn(4) + 1; k > 0 && len(f) > 14+20+8+240+1; k-- {
			switch rnd.Intn(4) {
			case 0:
				f[14+20+8+240+rnd.Intn(len(f)-14-20-8-240)] = byte(rnd.Intn(256))
			case 1:
				f = f[:14+20+8+240+rnd.Intn(len(f)-14-20-8-240)]
			case 2:
				f[14+20+8+rnd.Intn(240)] ^= byte(1 << rnd.Intn(8))
			case 3:
				j := 14 + 20 + 8 + 240 + rnd.Intn(len(f)-14-20-8-240)
				f = append(f[:j], append(bytes.Repeat([]byte{byte(rnd.Intn(256))}, rnd.Intn(8)), f[j:]...)...)
			}
		}
		m := f[14+20+8:]
		if l, err := parseLease(m); err == nil && !unicast(l.Addr) {
			t.Fatalf("mutation %d: lease of %v taken", i, l.Addr)
		}
		// Through the client, checksums made right again so that the
		// frame reaches the options.
		fr := udpFrame(srvMAC, svcMAC, gceServer, [4]byte{255, 255, 255, 255}, 67, 68, m)
		for _, st := range []dhcpState{stSelecting, stRequesting, stRenewing, stRebinding} {
			c := newDHCPClient(svcMAC, 1)
			now := time.Unix(1000, 0)
			c.begin(now)
			c.st, c.offer, c.lease = st, Lease{Addr: gceAddr, Server: gceServer}, Lease{Addr: gceAddr, Server: gceServer}
			binary.BigEndian.PutUint32(fr[14+20+8+4:], c.xid)
			fixUDPSum(fr)
			c.input(now, fr)
		}
	}
}

// fixUDPSum recomputes the UDP checksum of IPv4 frame f.
func fixUDPSum(f []byte) {
	ip := f[14:]
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[6:], 0)
	c := ^sum16(sum16(sum16(sum16(0, ip[12:16]), ip[16:20]), []byte{0, 17, byte(len(udp) >> 8), byte(len(udp))}), udp)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(udp[6:], c)
}
