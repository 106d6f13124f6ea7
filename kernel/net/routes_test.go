package net

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// gceRoutes is what a GCE lease makes (netsvc's leaseRoutes): the
// gateway's host route on the link and the default route through it,
// for a /32 address.
var gceRoutes = []abi.NetRoute{
	{Dst: [4]byte{}, Prefix: 0, Gateway: [4]byte{10, 128, 0, 1}, Src: [4]byte{10, 128, 0, 5}, Proto: unix.RTPROT_DHCP},
	{Dst: [4]byte{10, 128, 0, 1}, Prefix: 32, Src: [4]byte{10, 128, 0, 5}, Proto: unix.RTPROT_DHCP, Scope: unix.RT_SCOPE_LINK},
}

func routesBuf(rs []abi.NetRoute) []byte {
	if len(rs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&rs[0])), len(rs)*int(unsafe.Sizeof(rs[0])))
}

// ipRoute is a dump's routes as `ip route` prints them (the attributes
// yolk writes).
func ipRoute(t *testing.T, msgs []syscall.NetlinkMessage) []string {
	var out []string
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWROUTE {
			continue
		}
		rt := (*unix.RtMsg)(unsafe.Pointer(&m.Data[0]))
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			t.Fatalf("ParseNetlinkRouteAttr: %v", err)
		}
		a := map[uint16][]byte{}
		for _, x := range attrs {
			a[x.Attr.Type] = x.Value
		}
		s := "default"
		if d, ok := a[unix.RTA_DST]; ok {
			s = fmt.Sprintf("%d.%d.%d.%d", d[0], d[1], d[2], d[3])
			if rt.Dst_len != 32 {
				s += fmt.Sprintf("/%d", rt.Dst_len)
			}
		}
		if g, ok := a[unix.RTA_GATEWAY]; ok {
			s += fmt.Sprintf(" via %d.%d.%d.%d", g[0], g[1], g[2], g[3])
		}
		s += fmt.Sprintf(" dev if%d", ne.Uint32(a[unix.RTA_OIF]))
		switch rt.Protocol {
		case unix.RTPROT_KERNEL:
			s += " proto kernel"
		case unix.RTPROT_DHCP:
			s += " proto dhcp"
		}
		if rt.Scope == unix.RT_SCOPE_LINK {
			s += " scope link"
		}
		if p, ok := a[unix.RTA_PREFSRC]; ok {
			s += fmt.Sprintf(" src %d.%d.%d.%d", p[0], p[1], p[2], p[3])
		}
		if rt.Table != unix.RT_TABLE_MAIN || ne.Uint32(a[unix.RTA_TABLE]) != unix.RT_TABLE_MAIN || rt.Type != unix.RTN_UNICAST {
			s += " (not a main-table unicast route)"
		}
		out = append(out, s)
	}
	return out
}

// TestServiceLinkConf: what a DHCP lease changes after NetUp. NetAddr4
// moves the NIC's address (the machine's own address, netlink's eth0
// address) and 0.0.0.0 drops it; NetMTU is eth0's MTU in RTM_NEWLINK;
// NetRoutes4's routes are the RTM_GETROUTE dump, as `ip route` shows
// GCE's; bad calls change nothing.
func TestServiceLinkConf(t *testing.T) {
	n := newInet(t)
	n.AddNIC(nlMAC, 1500, [4]byte{10, 0, 2, 15}, 24)
	n.ServiceUp([4]byte{10, 0, 2, 15}, 24)
	call := func(c abi.NetCall, buf []byte) Errno { return n.Service(&c, kbuf(buf)) }
	gce := [4]byte{10, 128, 0, 5}
	if e := call(abi.NetCall{Op: abi.NetAddr4, Local: [16]byte(append(v4Prefix[:], gce[:]...)), Len: 32}, nil); e != 0 {
		t.Fatalf("NetAddr4: %v", e)
	}
	if !n.local(&inetAddr{ip: v4Addr(gce[:]).ip}) || n.local(&inetAddr{ip: v4Addr([]byte{10, 0, 2, 15}).ip}) {
		t.Errorf("after NetAddr4 the machine's own address is not 10.128.0.5 alone")
	}
	eth := n.ifaces.byIndex(n.ifaces.byName("eth0"))
	v4 := func() []string {
		var s []string
		for i := 0; i < eth.NAddrs; i++ {
			if a := eth.Addrs[i]; a.Family == unix.AF_INET {
				s = append(s, fmt.Sprintf("%d.%d.%d.%d/%d", a.Addr[0], a.Addr[1], a.Addr[2], a.Addr[3], a.Prefix))
			}
		}
		return s
	}
	if got := v4(); !slices.Equal(got, []string{"10.128.0.5/32"}) {
		t.Errorf("eth0's IPv4 addresses %v, want 10.128.0.5/32", got)
	}
	for _, c := range []abi.NetCall{{Op: abi.NetMTU, Len: 67}, {Op: abi.NetMTU, Len: 65536}, {Op: abi.NetAddr4, Len: 33}} {
		if e := call(c, nil); e != unix.EINVAL {
			t.Errorf("op %d len %d: %v, want EINVAL", c.Op, c.Len, e)
		}
	}
	if e := call(abi.NetCall{Op: abi.NetMTU, Len: 1460}, nil); e != 0 || eth.MTU != 1460 {
		t.Errorf("NetMTU 1460: %v, eth0 MTU %d", e, eth.MTU)
	}
	links := nlLinks(t, nlMsgs(t, nlModel(&n.ifaces, 1, nlReq(unix.RTM_GETLINK, unix.NLM_F_REQUEST|unix.NLM_F_DUMP, 1, 0), NLGoodSize), 1, 1))
	if len(links) != 2 || links[1].MTU != 1460 {
		t.Errorf("RTM_GETLINK dump: %+v, want eth0 with MTU 1460", links)
	}
	if e := call(abi.NetCall{Op: abi.NetRoutes4}, routesBuf(gceRoutes)); e != 0 {
		t.Fatalf("NetRoutes4: %v", e)
	}
	dump := func(family byte) []string {
		return ipRoute(t, nlMsgs(t, nlModel(&n.ifaces, 1, nlReq(unix.RTM_GETROUTE, unix.NLM_F_REQUEST|unix.NLM_F_DUMP, 7, family), NLGoodSize), 7, 1))
	}
	want := []string{"default via 10.128.0.1 dev if2 proto dhcp src 10.128.0.5", "10.128.0.1 dev if2 proto dhcp scope link src 10.128.0.5"}
	for _, fam := range []byte{unix.AF_INET, unix.AF_UNSPEC} {
		if got := dump(fam); !slices.Equal(got, want) {
			t.Errorf("RTM_GETROUTE dump (family %d):\n%s\nwant\n%s", fam, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if got := dump(unix.AF_INET6); len(got) != 0 {
		t.Errorf("AF_INET6 route dump: %v, want none", got)
	}
	bad := slices.Clone(gceRoutes)
	bad[1].Prefix = 33
	many := make([]abi.NetRoute, abi.NetMaxRoutes+1)
	for _, b := range [][]byte{routesBuf(bad), routesBuf(gceRoutes)[:5], routesBuf(many)} {
		if e := call(abi.NetCall{Op: abi.NetRoutes4}, b); e != unix.EINVAL {
			t.Errorf("NetRoutes4 of %d bytes: %v, want EINVAL", len(b), e)
		}
	}
	if got := dump(unix.AF_INET); !slices.Equal(got, want) {
		t.Errorf("after refused calls the dump is\n%s", strings.Join(got, "\n"))
	}
	var rs [abi.NetMaxRoutes]abi.NetRoute
	if k := n.Routes4(rs[:]); k != 2 || rs[0] != gceRoutes[0] {
		t.Errorf("Routes4: %d, %+v", k, rs[:k])
	}
	// The lease ends: no address, no routes.
	call(abi.NetCall{Op: abi.NetAddr4, Local: [16]byte{10: 0xff, 11: 0xff}}, nil)
	call(abi.NetCall{Op: abi.NetRoutes4}, nil)
	if got := v4(); len(got) != 0 || n.nV4 != 0 {
		t.Errorf("after NetAddr4 0.0.0.0: eth0 has %v, %d local addresses", got, n.nV4)
	}
	if got := dump(unix.AF_INET); len(got) != 0 {
		t.Errorf("after NetRoutes4 of none: %v", got)
	}
	if _, ok := n.nicSource(&inetAddr{ip: v4Addr([]byte{1, 2, 3, 4}).ip}); ok {
		t.Errorf("a source address with none left")
	}
}

// TestRouteDumpLikeHost: the attributes of a route, in the host's order
// (fib_dump_info's): ours are the host's for the same kind of route (with
// a gateway or on the link, a default route or not), the metric and the
// preferred source aside.
func TestRouteDumpLikeHost(t *testing.T) {
	host, port := nlHost(t, nlReq(unix.RTM_GETROUTE, unix.NLM_F_REQUEST|unix.NLM_F_DUMP, 3, unix.AF_INET))
	tab := nlTable(t)
	tab.Routes[0], tab.Routes[1], tab.NRoutes = gceRoutes[0], gceRoutes[1], 2
	ours := nlMsgs(t, nlModel(tab, port, nlReq(unix.RTM_GETROUTE, unix.NLM_F_REQUEST|unix.NLM_F_DUMP, 3, unix.AF_INET), NLGoodSize), 3, port)
	order := func(m syscall.NetlinkMessage) []uint16 {
		types, _ := nlAttrs(t, m)
		return slices.DeleteFunc(types, func(a uint16) bool { return a == unix.RTA_PRIORITY || a == unix.RTA_CACHEINFO || a == unix.RTA_PREFSRC })
	}
	compared := 0
	for _, h := range nlMsgs(t, host, 3, port) {
		if h.Header.Type != unix.RTM_NEWROUTE {
			continue
		}
		rt := (*unix.RtMsg)(unsafe.Pointer(&h.Data[0]))
		if rt.Table != unix.RT_TABLE_MAIN {
			continue
		}
		hasGW := slices.Contains(order(h), unix.RTA_GATEWAY)
		for _, o := range ours {
			if o.Header.Type != unix.RTM_NEWROUTE {
				continue
			}
			ot := order(o)
			if slices.Contains(ot, unix.RTA_GATEWAY) != hasGW || (rt.Dst_len > 0) != slices.Contains(ot, unix.RTA_DST) {
				continue
			}
			if !slices.Equal(ot, order(h)) {
				t.Errorf("attributes %v, the host's for a like route %v", ot, order(h))
			}
			compared++
		}
	}
	t.Logf("%d routes compared with the host's", compared)
}
