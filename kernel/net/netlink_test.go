package net

// Tests of netlink.go: the dumps parse as package net parses them, match
// the host's Linux in structure, chunk into whole-message datagrams, and
// bad requests get Linux's answers.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

var nlMAC = [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}

// nlTable is lo and an eth0 as QEMU's user network configures it.
func nlTable(t *testing.T) *Ifaces {
	tab := new(Ifaces)
	tab.Init()
	i := tab.AddEthernet("eth0", nlMAC, 1500)
	if i != 2 {
		t.Fatalf("AddEthernet: index %d, want 2", i)
	}
	if e := tab.AddAddr4(i, [4]byte{10, 0, 2, 15}, 24); e != 0 {
		t.Fatalf("AddAddr4: %v", e)
	}
	if e := tab.AddLinkLocal6(i); e != 0 {
		t.Fatalf("AddLinkLocal6: %v", e)
	}
	return tab
}

// nlReq is the request syscall.NetlinkRIB sends: a header and an
// rtgenmsg.
func nlReq(typ, flags uint16, seq uint32, family byte) []byte {
	b := make([]byte, 17)
	ne.PutUint32(b, 17)
	ne.PutUint16(b[4:], typ)
	ne.PutUint16(b[6:], flags)
	ne.PutUint32(b[8:], seq)
	b[16] = family
	return b
}

// nlModel runs a datagram of requests through tab as the socket layer
// would (netlink.go's package comment) and returns the datagrams the
// socket's queue receives, each at most size bytes.
func nlModel(tab *Ifaces, port uint32, req []byte, size int) [][]byte {
	var out [][]byte
	var cur DumpCursor
	buf := make([]byte, size)
	for len(req) > 0 {
		was := cur.Active()
		used, n1, n2 := tab.Request(req, port, &cur, buf)
		if n1 > 0 {
			out = append(out, slices.Clone(buf[:n1]))
		}
		if n2 > 0 {
			out = append(out, slices.Clone(buf[n1:n1+n2]))
		}
		if !was && cur.Active() {
			out = append(out, slices.Clone(buf[:tab.Dump(&cur, buf)]))
		}
		if used == 0 {
			break
		}
		req = req[used:]
	}
	for cur.Active() {
		out = append(out, slices.Clone(buf[:tab.Dump(&cur, buf)]))
	}
	return out
}

// nlHost sends req on a fresh NETLINK_ROUTE socket of the host's and
// returns the datagrams it receives until none is left, and its port.
func nlHost(t *testing.T, req []byte) ([][]byte, uint32) {
	s, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		t.Skipf("host netlink: %v", err)
	}
	defer unix.Close(s)
	if err := unix.Bind(s, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	sa, _ := unix.Getsockname(s)
	port := sa.(*unix.SockaddrNetlink).Pid
	if err := unix.Sendto(s, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	b := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(s, b, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EAGAIN) {
			return out, port
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, slices.Clone(b[:n]))
	}
}

// nlMsgs parses datagrams as syscall.NetlinkRIB does, checking every
// message's seq and pid as it does, and that each datagram holds whole
// messages.
func nlMsgs(t *testing.T, dgrams [][]byte, seq, port uint32) []syscall.NetlinkMessage {
	t.Helper()
	var all []syscall.NetlinkMessage
	for _, d := range dgrams {
		msgs, err := syscall.ParseNetlinkMessage(d)
		if err != nil {
			t.Fatalf("ParseNetlinkMessage: %v", err)
		}
		sum := 0
		for _, m := range msgs {
			if m.Header.Seq != seq || m.Header.Pid != port {
				t.Errorf("message seq %d pid %d, want %d %d", m.Header.Seq, m.Header.Pid, seq, port)
			}
			sum += (int(m.Header.Len) + 3) &^ 3
		}
		if sum != len(d) {
			t.Errorf("datagram of %d bytes holds %d bytes of whole messages", len(d), sum)
		}
		all = append(all, msgs...)
	}
	return all
}

// nlLinks and nlAddrs are net/interface_linux.go's interfaceTable and
// addrTable, in test code.
func nlLinks(t *testing.T, msgs []syscall.NetlinkMessage) []net.Interface {
	var ift []net.Interface
	for _, m := range msgs {
		if m.Header.Type == syscall.NLMSG_DONE {
			break
		}
		if m.Header.Type != syscall.RTM_NEWLINK {
			continue
		}
		ifim := (*syscall.IfInfomsg)(unsafe.Pointer(&m.Data[0]))
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			t.Fatalf("ParseNetlinkRouteAttr: %v", err)
		}
		ifi := net.Interface{Index: int(ifim.Index)}
		f := ifim.Flags
		for _, b := range []struct {
			sys uint32
			fl  net.Flags
		}{{syscall.IFF_UP, net.FlagUp}, {syscall.IFF_RUNNING, net.FlagRunning}, {syscall.IFF_BROADCAST, net.FlagBroadcast},
			{syscall.IFF_LOOPBACK, net.FlagLoopback}, {syscall.IFF_POINTOPOINT, net.FlagPointToPoint}, {syscall.IFF_MULTICAST, net.FlagMulticast}} {
			if f&b.sys != 0 {
				ifi.Flags |= b.fl
			}
		}
		for _, a := range attrs {
			switch a.Attr.Type {
			case syscall.IFLA_ADDRESS:
				if slices.ContainsFunc(a.Value, func(b byte) bool { return b != 0 }) {
					ifi.HardwareAddr = a.Value
				}
			case syscall.IFLA_IFNAME:
				ifi.Name = string(a.Value[:len(a.Value)-1])
			case syscall.IFLA_MTU:
				ifi.MTU = int(ne.Uint32(a.Value))
			}
		}
		ift = append(ift, ifi)
	}
	return ift
}

func nlAddrs(t *testing.T, msgs []syscall.NetlinkMessage) []string {
	var out []string
	for _, m := range msgs {
		if m.Header.Type == syscall.NLMSG_DONE {
			break
		}
		if m.Header.Type != syscall.RTM_NEWADDR {
			continue
		}
		ifam := (*syscall.IfAddrmsg)(unsafe.Pointer(&m.Data[0]))
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			t.Fatalf("ParseNetlinkRouteAttr: %v", err)
		}
		ptp := slices.ContainsFunc(attrs, func(a syscall.NetlinkRouteAttr) bool { return a.Attr.Type == syscall.IFA_LOCAL })
		for _, a := range attrs {
			if ptp && a.Attr.Type == syscall.IFA_ADDRESS {
				continue
			}
			var ipn *net.IPNet
			switch ifam.Family {
			case syscall.AF_INET:
				ipn = &net.IPNet{IP: net.IPv4(a.Value[0], a.Value[1], a.Value[2], a.Value[3]), Mask: net.CIDRMask(int(ifam.Prefixlen), 32)}
			case syscall.AF_INET6:
				ipn = &net.IPNet{IP: slices.Clone(a.Value), Mask: net.CIDRMask(int(ifam.Prefixlen), 128)}
			}
			if ipn != nil {
				out = append(out, fmt.Sprintf("%d %s", ifam.Index, ipn))
			}
			break
		}
	}
	return out
}

// TestNetlinkAsGoReads: the dumps, read as package net reads them, give
// the table's interfaces and addresses.
func TestNetlinkAsGoReads(t *testing.T) {
	tab := nlTable(t)
	const port = 1
	msgs := nlMsgs(t, nlModel(tab, port, nlReq(unix.RTM_GETLINK, unix.NLM_F_DUMP|unix.NLM_F_REQUEST, 1, unix.AF_UNSPEC), NLGoodSize), 1, port)
	got := fmt.Sprint(nlLinks(t, msgs))
	want := fmt.Sprint([]net.Interface{
		{Index: 1, MTU: 65536, Name: "lo", Flags: net.FlagUp | net.FlagLoopback | net.FlagRunning},
		{Index: 2, MTU: 1500, Name: "eth0", HardwareAddr: nlMAC[:], Flags: net.FlagUp | net.FlagBroadcast | net.FlagRunning | net.FlagMulticast},
	})
	if got != want {
		t.Errorf("interfaces:\n got %s\nwant %s", got, want)
	}
	if last := msgs[len(msgs)-1]; last.Header.Type != unix.NLMSG_DONE || last.Header.Flags != unix.NLM_F_MULTI || !bytes.Equal(last.Data, []byte{0, 0, 0, 0}) {
		t.Errorf("last message %+v %x, want NLMSG_DONE, NLM_F_MULTI, 4 zero bytes", last.Header, last.Data)
	}
	for _, fam := range []struct {
		family byte
		want   []string
	}{
		{unix.AF_UNSPEC, []string{"1 127.0.0.1/8", "2 10.0.2.15/24", "1 ::1/128", "2 fe80::5054:ff:fe12:3456/64"}},
		{unix.AF_INET, []string{"1 127.0.0.1/8", "2 10.0.2.15/24"}},
		{unix.AF_INET6, []string{"1 ::1/128", "2 fe80::5054:ff:fe12:3456/64"}},
	} {
		msgs := nlMsgs(t, nlModel(tab, port, nlReq(unix.RTM_GETADDR, unix.NLM_F_DUMP|unix.NLM_F_REQUEST, 7, fam.family), NLGoodSize), 7, port)
		if got := nlAddrs(t, msgs); !slices.Equal(got, fam.want) {
			t.Errorf("family %d: addresses %q, want %q", fam.family, got, fam.want)
		}
	}
	// eth0's IPv4 address has its broadcast address and its label.
	msgs = nlMsgs(t, nlModel(tab, port, nlReq(unix.RTM_GETADDR, unix.NLM_F_DUMP|unix.NLM_F_REQUEST, 1, unix.AF_INET), NLGoodSize), 1, port)
	attrs, _ := syscall.ParseNetlinkRouteAttr(&msgs[1])
	var brd, label []byte
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.IFA_BROADCAST:
			brd = a.Value
		case unix.IFA_LABEL:
			label = a.Value
		}
	}
	if !bytes.Equal(brd, []byte{10, 0, 2, 255}) || string(label) != "eth0\x00" {
		t.Errorf("eth0's IPv4 address: broadcast %v label %q, want 10.0.2.255, eth0", brd, label)
	}
}

// nlAttrs is a message's attributes: types in order, and values.
func nlAttrs(t *testing.T, m syscall.NetlinkMessage) ([]uint16, map[uint16][]byte) {
	attrs, err := syscall.ParseNetlinkRouteAttr(&m)
	if err != nil {
		t.Fatal(err)
	}
	var types []uint16
	vals := map[uint16][]byte{}
	for _, a := range attrs {
		types = append(types, a.Attr.Type)
		vals[a.Attr.Type] = a.Value
	}
	return types, vals
}

// nlHostOnly are the attributes the host's lo has and yolk's has not, by
// design: counters and state yolk does not keep, or features it has not.
var nlHostOnly = map[uint16]string{
	unix.IFLA_STATS:               "statistics: no counters kept",
	unix.IFLA_STATS64:             "statistics: no counters kept",
	unix.IFLA_QDISC:               "no queueing discipline",
	unix.IFLA_AF_SPEC:             "per-family configuration (devconf): none",
	unix.IFLA_MAP:                 "device memory map: none",
	unix.IFLA_XDP:                 "no XDP",
	unix.IFLA_LINKINFO:            "no link kinds",
	unix.IFLA_GSO_MAX_SEGS:        "offload sizes: none",
	unix.IFLA_GSO_MAX_SIZE:        "offload sizes: none",
	unix.IFLA_GRO_MAX_SIZE:        "offload sizes: none",
	unix.IFLA_TSO_MAX_SIZE:        "offload sizes: none",
	unix.IFLA_TSO_MAX_SEGS:        "offload sizes: none",
	unix.IFLA_GSO_IPV4_MAX_SIZE:   "offload sizes: none",
	unix.IFLA_GRO_IPV4_MAX_SIZE:   "offload sizes: none",
	66:                            "IFLA_MAX_PACING_OFFLOAD_HORIZON: offload, none",
	67:                            "IFLA_NETNS_IMMUTABLE: no network namespaces",
	68:                            "IFLA_HEADROOM: device headroom, none",
	69:                            "IFLA_TAILROOM: device tailroom, none",
	unix.NLA_F_NESTED | 62:        "IFLA_DEVLINK_PORT: no devlink",
	unix.NLA_F_NESTED | 65:        "IFLA_DPLL_PIN: no DPLL",
	unix.IFLA_PERM_ADDRESS:        "permanent address: lo has none on newer kernels either",
	unix.IFLA_PARENT_DEV_NAME:     "no bus devices",
	unix.IFLA_PARENT_DEV_BUS_NAME: "no bus devices",
}

// nlValuesDiffer are attributes of yolk's lo whose values may differ from
// the host's: the host's state, not the interface's nature.
var nlValuesDiffer = map[uint16]string{
	unix.IFLA_TXQLEN:             "txqueuelen: host configuration (yolk: Linux 6's default, 1000)",
	unix.IFLA_CARRIER_CHANGES:    "the host's history",
	unix.IFLA_CARRIER_UP_COUNT:   "the host's history",
	unix.IFLA_CARRIER_DOWN_COUNT: "the host's history",
	unix.IFLA_PROMISCUITY:        "the host's state (a packet socket may hold lo)",
	unix.IFLA_ALLMULTI:           "the host's state",
	unix.IFLA_GROUP:              "host configuration",
}

// nlCompareLink compares our RTM_NEWLINK for lo with the host's.
func nlCompareLink(t *testing.T, ours, host syscall.NetlinkMessage) {
	t.Helper()
	if ours.Header.Type != host.Header.Type || ours.Header.Flags != host.Header.Flags {
		t.Errorf("lo: header type %d flags %#x, host %d %#x", ours.Header.Type, ours.Header.Flags, host.Header.Type, host.Header.Flags)
	}
	oi := *(*syscall.IfInfomsg)(unsafe.Pointer(&ours.Data[0]))
	hi := *(*syscall.IfInfomsg)(unsafe.Pointer(&host.Data[0]))
	if oi != hi {
		t.Errorf("lo: ifinfomsg %+v, host %+v", oi, hi)
	}
	ot, ov := nlAttrs(t, ours)
	ht, hv := nlAttrs(t, host)
	var common []uint16
	for _, a := range ht {
		if _, ok := ov[a]; ok {
			common = append(common, a)
		} else if _, ok := nlHostOnly[a]; !ok {
			t.Errorf("lo: the host has attribute %d (value %x), yolk not", a, hv[a])
		}
	}
	if !slices.Equal(common, ot) {
		t.Errorf("lo: attributes %v; the host has them in the order %v", ot, common)
	}
	for a, v := range ov {
		h, ok := hv[a]
		switch _, differ := nlValuesDiffer[a]; {
		case !ok:
		case len(h) != len(v):
			t.Errorf("lo: attribute %d is %d bytes, the host's %d", a, len(v), len(h))
		case !differ && !bytes.Equal(h, v):
			t.Errorf("lo: attribute %d is %x, the host's %x", a, v, h)
		}
	}
}

// TestNetlinkLikeHost: lo's link and addresses have the host's structure
// (header, ifinfomsg/ifaddrmsg, attributes in order), the dump's
// datagrams end with NLMSG_DONE alone, and the datagrams carry the
// request's seq and the socket's port.
func TestNetlinkLikeHost(t *testing.T) {
	tab := nlTable(t)
	req := nlReq(unix.RTM_GETLINK, unix.NLM_F_DUMP|unix.NLM_F_REQUEST, 1, unix.AF_UNSPEC)
	hd, hport := nlHost(t, req)
	od := nlModel(tab, 1, req, NLGoodSize)
	hm, om := nlMsgs(t, hd, 1, hport), nlMsgs(t, od, 1, 1)
	if last := hd[len(hd)-1]; len(last) != 20 {
		t.Errorf("the host's last datagram is %d bytes, not NLMSG_DONE alone: update Dump", len(last))
	}
	if last := od[len(od)-1]; len(last) != 20 || ne.Uint16(last[4:]) != unix.NLMSG_DONE {
		t.Errorf("our last datagram %x, want NLMSG_DONE alone", last)
	}
	if !bytes.Equal(hd[len(hd)-1][:12], od[len(od)-1][:12]) {
		t.Errorf("NLMSG_DONE: ours %x, host's %x", od[len(od)-1], hd[len(hd)-1])
	}
	lo := func(msgs []syscall.NetlinkMessage) syscall.NetlinkMessage {
		for _, m := range msgs {
			if m.Header.Type == unix.RTM_NEWLINK {
				if _, v := nlAttrs(t, m); string(v[unix.IFLA_IFNAME]) == "lo\x00" {
					return m
				}
			}
		}
		t.Fatal("no lo")
		return syscall.NetlinkMessage{}
	}
	nlCompareLink(t, lo(om), lo(hm))

	req = nlReq(unix.RTM_GETADDR, unix.NLM_F_DUMP|unix.NLM_F_REQUEST, 1, unix.AF_UNSPEC)
	hd, hport = nlHost(t, req)
	hm = nlMsgs(t, hd, 1, hport)
	om = nlMsgs(t, nlModel(tab, 1, req, NLGoodSize), 1, 1)
	find := func(msgs []syscall.NetlinkMessage, family byte) (syscall.NetlinkMessage, bool) {
		for _, m := range msgs {
			if m.Header.Type != unix.RTM_NEWADDR {
				continue
			}
			ifa := (*syscall.IfAddrmsg)(unsafe.Pointer(&m.Data[0]))
			if ifa.Family == family && ifa.Index == 1 {
				return m, true
			}
		}
		return syscall.NetlinkMessage{}, false
	}
	for _, family := range []byte{unix.AF_INET, unix.AF_INET6} {
		h, ok := find(hm, family)
		if !ok {
			t.Logf("the host's lo has no address of family %d", family)
			continue
		}
		o, _ := find(om, family)
		if o.Header.Type != h.Header.Type || o.Header.Flags != h.Header.Flags {
			t.Errorf("family %d: header %+v, host %+v", family, o.Header, h.Header)
		}
		oa := *(*syscall.IfAddrmsg)(unsafe.Pointer(&o.Data[0]))
		ha := *(*syscall.IfAddrmsg)(unsafe.Pointer(&h.Data[0]))
		if oa != ha {
			t.Errorf("family %d: ifaddrmsg %+v, host %+v", family, oa, ha)
		}
		ot, ov := nlAttrs(t, o)
		ht, hv := nlAttrs(t, h)
		if !slices.Equal(ot, ht) {
			t.Errorf("family %d: attributes %v, host %v", family, ot, ht)
		}
		for a, v := range ov {
			h := hv[a]
			if a == unix.IFA_CACHEINFO { // cstamp and tstamp: when the host made it
				v, h = v[:8], h[:min(8, len(h))]
			}
			if !bytes.Equal(v, h) {
				t.Errorf("family %d: attribute %d is %x, the host's %x", family, a, v, h)
			}
		}
	}
}

// TestNetlinkChunks: with any datagram size, every datagram holds whole
// messages with the request's seq and the socket's port, and together
// they are the dump a large buffer gives.
func TestNetlinkChunks(t *testing.T) {
	tab := nlTable(t)
	for _, typ := range []uint16{unix.RTM_GETLINK, unix.RTM_GETADDR} {
		req := nlReq(typ, unix.NLM_F_DUMP|unix.NLM_F_REQUEST, 42, unix.AF_UNSPEC)
		whole := nlModel(tab, 0xfffff000, req, 1<<16)
		if len(whole) != 2 {
			t.Errorf("type %d: %d datagrams in 64 KiB, want the messages and NLMSG_DONE", typ, len(whole))
		}
		for size := NLMinDatagram; size <= 1024; size += 28 {
			parts := nlModel(tab, 0xfffff000, req, size)
			nlMsgs(t, parts, 42, 0xfffff000)
			for _, d := range parts[:len(parts)-1] {
				if len(d) > size || len(d) == 0 {
					t.Errorf("size %d: a datagram of %d bytes", size, len(d))
				}
			}
			if !bytes.Equal(bytes.Join(parts, nil), bytes.Join(whole, nil)) {
				t.Errorf("type %d size %d: the datagrams differ from the whole dump", typ, size)
			}
		}
	}
	// A change of the table during a dump marks what follows.
	var cur DumpCursor
	buf := make([]byte, NLMinDatagram)
	tab.Request(nlReq(unix.RTM_GETLINK, unix.NLM_F_DUMP|unix.NLM_F_REQUEST, 1, 0), 1, &cur, buf)
	tab.Dump(&cur, buf)
	tab.AddEthernet("eth1", nlMAC, 1500)
	for cur.Active() {
		n := tab.Dump(&cur, buf)
		if f := ne.Uint16(buf[6:]); f&unix.NLM_F_DUMP_INTR == 0 {
			t.Errorf("after a change: flags %#x, want NLM_F_DUMP_INTR (%d bytes)", f, n)
		}
	}
}

// nlNorm zeroes the port in every message header of datagrams, so
// answers to sockets with different ports compare.
func nlNorm(dgrams [][]byte) string {
	var s []string
	for _, d := range dgrams {
		d = slices.Clone(d)
		for o := 0; o+16 <= len(d); {
			ne.PutUint32(d[o+12:], 0)
			l := int(ne.Uint32(d[o:]))
			if l < 16 {
				break
			}
			o += (l + 3) &^ 3
		}
		s = append(s, fmt.Sprintf("%x", d))
	}
	return fmt.Sprint(s)
}

func nlMsg(typ, flags uint16, seq uint32, payload []byte) []byte {
	b := make([]byte, 16, 16+len(payload)+3)
	ne.PutUint32(b, uint32(16+len(payload)))
	ne.PutUint16(b[4:], typ)
	ne.PutUint16(b[6:], flags)
	ne.PutUint32(b[8:], seq)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// ifinfo is an ifinfomsg for index, then attributes.
func ifinfo(index int32, attrs ...[]byte) []byte {
	b := make([]byte, 16)
	ne.PutUint32(b[4:], uint32(index))
	for _, a := range attrs {
		b = append(b, a...)
	}
	return b
}

func rta(typ uint16, v string) []byte {
	b := make([]byte, 4, 8+len(v))
	ne.PutUint16(b, uint16(4+len(v)))
	ne.PutUint16(b[2:], typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// TestNetlinkRequests: requests other than a plain dump get the host's
// answers, byte for byte (the port aside): errors carrying the request,
// acknowledgements, silence, a single link.
func TestNetlinkRequests(t *testing.T) {
	tab := nlTable(t)
	const req, ack, dump = unix.NLM_F_REQUEST, unix.NLM_F_ACK, unix.NLM_F_DUMP
	for _, c := range []struct {
		name string
		msg  []byte
	}{
		{"type above RTM_MAX", nlMsg(0x400, req|dump, 3, []byte{0})},
		{"RTM_GETADDR without NLM_F_DUMP", nlMsg(unix.RTM_GETADDR, req, 3, []byte{0})},
		{"RTM_GETLINK without NLM_F_DUMP, short", nlMsg(unix.RTM_GETLINK, req, 3, []byte{0})},
		{"RTM_GETLINK of no interface", nlMsg(unix.RTM_GETLINK, req, 3, ifinfo(999))},
		{"RTM_GETLINK of no name", nlMsg(unix.RTM_GETLINK, req, 3, ifinfo(0, rta(unix.IFLA_IFNAME, "nosuch\x00")))},
		{"RTM_GETLINK with neither", nlMsg(unix.RTM_GETLINK, req, 3, ifinfo(0))},
		{"NLMSG_NOOP with NLM_F_ACK", nlMsg(unix.NLMSG_NOOP, req|ack, 3, nil)},
		{"no NLM_F_REQUEST, NLM_F_ACK", nlMsg(unix.RTM_GETLINK, ack|dump, 3, []byte{0})},
		{"no NLM_F_REQUEST", nlMsg(unix.RTM_GETLINK, dump, 3, []byte{0})},
		{"no rtgenmsg", nlMsg(unix.RTM_GETLINK, req|dump, 3, nil)},
		{"no rtgenmsg, NLM_F_ACK", nlMsg(unix.RTM_GETLINK, req|dump|ack, 3, nil)},
		{"short header", []byte{12, 0, 0, 0, unix.RTM_GETLINK, 0, 1, 3, 0, 0, 0, 0}},
		{"length past the datagram", nlMsg(unix.RTM_GETLINK, req|dump, 3, []byte{0})[:16]},
		{"error, then acknowledgement", append(nlMsg(0x400, req, 3, []byte{1, 2, 3, 4, 5}), nlMsg(unix.NLMSG_NOOP, req|ack, 4, nil)...)},
	} {
		h, _ := nlHost(t, c.msg)
		o := nlModel(tab, 1, c.msg, NLGoodSize)
		if nlNorm(h) != nlNorm(o) {
			t.Errorf("%s:\n ours %s\nhost's %s", c.name, nlNorm(o), nlNorm(h))
		}
	}
	// A single link, by index and by name, with NLM_F_ACK: the link
	// without NLM_F_MULTI, then the acknowledgement.
	for _, msg := range [][]byte{
		nlMsg(unix.RTM_GETLINK, req|ack, 5, ifinfo(1)),
		nlMsg(unix.RTM_GETLINK, req|ack, 5, ifinfo(0, rta(unix.IFLA_IFNAME, "lo\x00"))),
	} {
		h, hport := nlHost(t, msg)
		o := nlModel(tab, 1, msg, NLGoodSize)
		if len(h) != 2 || len(o) != 2 {
			t.Fatalf("%d datagrams, the host's %d; want 2", len(o), len(h))
		}
		hm, om := nlMsgs(t, h, 5, hport), nlMsgs(t, o, 5, 1)
		nlCompareLink(t, om[0], hm[0])
		if nlNorm(h[1:]) != nlNorm(o[1:]) {
			t.Errorf("acknowledgement: ours %s, host's %s", nlNorm(o[1:]), nlNorm(h[1:]))
		}
	}
	// Two dumps in one datagram: the second is EBUSY, queued after the
	// first's first datagram.
	two := append(nlReq(unix.RTM_GETADDR, req|dump, 8, 0), 0, 0, 0)
	two = append(two, nlReq(unix.RTM_GETLINK, req|dump, 9, 0)...)
	shape := func(dgrams [][]byte) (s []string) {
		for _, d := range dgrams {
			msgs, _ := syscall.ParseNetlinkMessage(d)
			m := msgs[0]
			e := ""
			if m.Header.Type == unix.NLMSG_ERROR {
				e = unix.ErrnoName(syscall.Errno(-int32(ne.Uint32(m.Data))))
			}
			s = append(s, fmt.Sprintf("%d/%d%s", m.Header.Type, m.Header.Seq, e))
		}
		return s
	}
	h, _ := nlHost(t, two)
	o := nlModel(tab, 1, two, NLGoodSize)
	if !slices.Equal(shape(h), shape(o)) {
		t.Errorf("two dumps: datagrams %v, the host's %v", shape(o), shape(h))
	}
	// Changes are not programs' to make.
	o = nlModel(tab, 1, nlMsg(unix.RTM_NEWADDR, req|ack, 1, make([]byte, 8)), NLGoodSize)
	if got := shape(o); !slices.Equal(got, []string{"2/1ENOTSUP"}) {
		t.Errorf("RTM_NEWADDR: %v, want EOPNOTSUPP (ENOTSUP)", got)
	}
}

// TestNetlinkAddrs: sockaddr_nl's rules, beside the host's.
func TestNetlinkAddrs(t *testing.T) {
	nl := func(port, groups uint32) []byte {
		b := make([]byte, NLAddrLen)
		nlPutAddr(b, port, groups)
		return b
	}
	var p NLPorts
	check := func(what string, got, want Errno) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("bind short", p.Bind(0, nl(0, 0)[:11]), unix.EINVAL)
	check("bind AF_UNIX", p.Bind(0, []byte{unix.AF_UNIX, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), unix.EINVAL)
	check("bind 0", p.Bind(0, nl(0, 0)), 0)
	if p.Port(0) != NLPid {
		t.Errorf("first autobind: port %d, want the pid %d", p.Port(0), NLPid)
	}
	check("rebind same", p.Bind(0, nl(NLPid, 0)), 0)
	check("rebind other", p.Bind(0, nl(77, 0)), unix.EINVAL)
	check("bind a taken port", p.Bind(1, nl(NLPid, 0)), unix.EADDRINUSE)
	check("bind 0 again", p.Bind(1, nl(0, 0)), 0)
	if int32(p.Port(1)) >= -4096 {
		t.Errorf("second autobind: port %d, want below -4096", int32(p.Port(1)))
	}
	check("bind 77", p.Bind(2, nl(77, 0)), 0)
	check("sendto the kernel", p.Dest(3, nl(0, 0)), 0)
	if p.Port(3) == 0 || p.Port(3) == p.Port(1) {
		t.Errorf("sendto did not autobind a new port: %d", int32(p.Port(3)))
	}
	check("sendto short", p.Dest(3, nl(0, 0)[:8]), unix.EINVAL)
	check("sendto port 77", p.Dest(3, nl(77, 0)), unix.ECONNREFUSED)
	check("connect AF_UNSPEC", p.Connect(4, []byte{0, 0}), 0)
	check("connect short", p.Connect(4, []byte{unix.AF_NETLINK}), unix.EINVAL)
	var b [NLAddrLen]byte
	p.Name(4, false, b[:])
	if !bytes.Equal(b[:], nl(0, 0)) {
		t.Errorf("getsockname of an unbound socket: %x", b)
	}
	check("connect groups", p.Connect(4, nl(0, 0x6)), 0)
	p.Name(4, true, b[:])
	if !bytes.Equal(b[:], nl(0, 2)) {
		t.Errorf("getpeername after connect(groups 0x6): %x, want groups 0x2", b)
	}
	p.Release(0)
	check("rebind the released pid", p.Bind(5, nl(0, 0)), 0)
	if p.Port(5) != NLPid {
		t.Errorf("autobind after the pid's socket closed: %d", int32(p.Port(5)))
	}
	check("socket SOCK_STREAM", NLSocket(unix.SOCK_STREAM, unix.NETLINK_ROUTE), unix.ESOCKTNOSUPPORT)
	check("socket NETLINK_GENERIC", NLSocket(unix.SOCK_RAW, unix.NETLINK_GENERIC), unix.EPROTONOSUPPORT)
	check("socket", NLSocket(unix.SOCK_DGRAM, unix.NETLINK_ROUTE), 0)

	// The same on the host, where it does not depend on the pid.
	hs := func() int {
		s, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		if err != nil {
			t.Skip(err)
		}
		t.Cleanup(func() { unix.Close(s) })
		return s
	}
	bind := func(s int, sa []byte) Errno {
		_, _, e := unix.Syscall(unix.SYS_BIND, uintptr(s), uintptr(unsafe.Pointer(&sa[0])), uintptr(len(sa)))
		return e
	}
	s := hs()
	check("host: bind short", bind(s, nl(0, 0)[:11]), unix.EINVAL)
	check("host: bind AF_UNIX", bind(s, []byte{unix.AF_UNIX, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), unix.EINVAL)
	check("host: bind 0", bind(s, nl(0, 0)), 0)
	sa, _ := unix.Getsockname(s)
	port := sa.(*unix.SockaddrNetlink).Pid
	check("host: rebind other", bind(s, nl(port+1, 0)), unix.EINVAL)
	check("host: bind a taken port", bind(hs(), nl(port, 0)), unix.EADDRINUSE)
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(hs()), uintptr(unsafe.Pointer(&b[0])), 1, 0, uintptr(unsafe.Pointer(&b[0])), 8)
	check("host: sendto short", e, unix.EINVAL)
	check("host: sendto port 77", unix.Sendto(hs(), nlReq(unix.RTM_GETLINK, 0x301, 1, 0), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Pid: 77}).(Errno), unix.ECONNREFUSED)
	_, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_STREAM, unix.NETLINK_ROUTE)
	check("host: socket SOCK_STREAM", err.(Errno), unix.ESOCKTNOSUPPORT)
}

// TestNetlinkNoAlloc: requests and dumps allocate nothing (kernel
// context; kernel/kcontext_test.go checks it on an image once the socket
// layer calls them).
func TestNetlinkNoAlloc(t *testing.T) {
	tab := nlTable(t)
	reqs := [][]byte{
		nlReq(unix.RTM_GETLINK, unix.NLM_F_DUMP|unix.NLM_F_REQUEST, 1, 0),
		nlReq(unix.RTM_GETADDR, unix.NLM_F_DUMP|unix.NLM_F_REQUEST, 1, 0),
		nlMsg(unix.RTM_GETLINK, unix.NLM_F_REQUEST|unix.NLM_F_ACK, 5, ifinfo(0, rta(unix.IFLA_IFNAME, "eth0\x00"))),
		nlMsg(0x400, unix.NLM_F_REQUEST, 1, []byte{0}),
	}
	buf := make([]byte, NLMinDatagram)
	var p NLPorts
	var sa [NLAddrLen]byte
	if n := testing.AllocsPerRun(10, func() {
		for _, r := range reqs {
			var cur DumpCursor
			tab.Request(r, 1, &cur, buf)
			for tab.Dump(&cur, buf) > 0 {
			}
		}
		p.Autobind(0)
		p.Name(0, false, sa[:])
		p.Release(0)
	}); n != 0 {
		t.Errorf("%v allocations per run", n)
	}
}

// TestNetlinkLarge: a request datagram larger than the layer's request
// buffer (4 KiB) is taken as Linux takes it, up to the send buffer less
// 32 bytes: trailing padding ignored, a message longer than the buffer
// read, several messages answered in turn, the walk stopped at a length
// past the datagram; beyond, EMSGSIZE. Datagrams are compared with the
// host's by their messages' types, seqs and errnos, runs of one kind
// counted once (the host has other interfaces).
func TestNetlinkLarge(t *testing.T) {
	const req, ack, dump = unix.NLM_F_REQUEST, unix.NLM_F_ACK, unix.NLM_F_DUMP
	pad := func(b []byte, n int) []byte { return append(b, make([]byte, n-len(b))...) }
	long := func(typ, flags uint16, seq uint32, body []byte, n int) []byte {
		b := pad(nlMsg(typ, flags, seq, body), n)
		ne.PutUint32(b, uint32(n))
		return b
	}
	var mixed []byte
	for seq := range uint32(3) {
		mixed = append(mixed, long(unix.RTM_GETLINK, req|ack, seq+1, ifinfo(1), 2000)...)
	}
	mixed = append(mixed, nlReq(unix.RTM_GETADDR, req|dump, 4, 0)...)
	mixed = append(mixed, 0, 0, 0)
	mixed = append(mixed, nlReq(unix.RTM_GETLINK, req|dump, 5, 0)...)
	past := append(nlMsg(unix.RTM_GETLINK, req|ack, 1, ifinfo(1)), long(unix.RTM_GETLINK, req|ack, 2, ifinfo(1), 9000)[:6000]...)
	for _, c := range []struct {
		name string
		msg  []byte
	}{
		{"RTM_GETLINK dump in 8 KiB", pad(nlReq(unix.RTM_GETLINK, req|dump, 1, 0), 8192)},
		{"RTM_GETADDR dump in 64 KiB", pad(nlReq(unix.RTM_GETADDR, req|dump, 1, 0), 65536)},
		{"RTM_GETADDR dump in the send buffer less 32", pad(nlReq(unix.RTM_GETADDR, req|dump, 1, 0), defaultBuf-32)},
		{"one byte more", pad(nlReq(unix.RTM_GETADDR, req|dump, 1, 0), defaultBuf-31)},
		{"RTM_GETLINK dump of 8 KiB", long(unix.RTM_GETLINK, req|dump, 2, []byte{0}, 8192)},
		{"three links, then two dumps", mixed},
		{"a length past the datagram", past},
	} {
		hc, he, hd := nlHostSend(t, c.msg)
		oc, oe, od := nlSockSend(t, c.msg)
		h := fmt.Sprintf("sendto %d %v: %s", hc, he, nlShape(hd))
		o := fmt.Sprintf("sendto %d %v: %s", oc, oe, nlShape(od))
		if h != o {
			t.Errorf("%s:\n  ours %s\nhost's %s", c.name, o, h)
		}
		t.Logf("%s: %s", c.name, h)
	}
}

// nlShape is the messages of datagrams as type/seq (and errno), a run of
// the same counted once.
func nlShape(dgrams [][]byte) string {
	var s []string
	for _, d := range dgrams {
		msgs, err := syscall.ParseNetlinkMessage(d)
		if err != nil {
			return err.Error()
		}
		for _, m := range msgs {
			x := fmt.Sprintf("%d/%d", m.Header.Type, m.Header.Seq)
			if m.Header.Type == unix.NLMSG_ERROR {
				x += unix.ErrnoName(syscall.Errno(-int32(ne.Uint32(m.Data))))
			}
			if len(s) == 0 || s[len(s)-1] != x {
				s = append(s, x)
			}
		}
	}
	return strings.Join(s, " ")
}

// nlHostSend is nlHost with the send's result.
func nlHostSend(t *testing.T, req []byte) (int, Errno, [][]byte) {
	s, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		t.Skipf("host netlink: %v", err)
	}
	defer unix.Close(s)
	c, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s), uintptr(unsafe.Pointer(&req[0])), uintptr(len(req)), 0, 0, 0)
	var out [][]byte
	b := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(s, b, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EAGAIN) {
			return int(int32(c)), e, out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, slices.Clone(b[:n]))
	}
}

// nlSockSend is nlHostSend through the socket layer.
func nlSockSend(t *testing.T, req []byte) (int, Errno, [][]byte) {
	n := newInet(t)
	s, e := n.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE, true)
	if e != 0 {
		t.Fatal(e)
	}
	defer n.Close(s)
	c, _, se := n.Send(s, &Iov{One: req, Len: len(req)}, 0, 0, nil)
	if se != 0 {
		c = -1
	}
	var out [][]byte
	b := make([]byte, 1<<16)
	for {
		var m Msg
		if _, e := n.Recv(s, &Iov{One: b, Len: len(b)}, unix.MSG_DONTWAIT, &m); e != 0 {
			if e != unix.EAGAIN {
				t.Fatal(e)
			}
			return c, se, out
		}
		out = append(out, slices.Clone(b[:m.N]))
	}
}
