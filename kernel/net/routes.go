package net

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// The NIC's IPv4 configuration as the service changes it after NetUp
// (a DHCP lease: its address, the MTU of option 26, the routes of
// options 3 and 121), and the route table netlink's RTM_GETROUTE dump
// reports: the service's routes, as Linux's main table holds them
// (`ip route`). The kernel only records and reports them; routing is the
// service's. Kernel-context Go, like the rest of the package.

const rtMsgLen = unix.SizeofRtMsg

// linkConf answers the service's NetAddr4, NetMTU and NetRoutes4; ok
// false for other operations.
func (n *Net[E]) linkConf(c *abi.NetCall, v *Iov) (e Errno, ok bool) {
	switch c.Op {
	case abi.NetAddr4:
		return n.setAddr4([4]byte(c.Local[12:]), int(c.Len)), true
	case abi.NetMTU:
		if c.Len < 68 || c.Len > 65535 {
			return unix.EINVAL, true
		}
		if p := n.ifaces.byIndex(n.ifaces.byName("eth0")); p != nil {
			p.MTU = uint32(c.Len)
			n.ifaces.Gen++
		}
		return 0, true
	case abi.NetRoutes4:
		return n.setRoutes(v), true
	}
	return 0, false
}

// setAddr4 makes addr/prefix the NIC's IPv4 address (0.0.0.0: none): the
// machine's own address for the loopback path, the source of traffic
// through the service, and eth0's address in netlink's table.
func (n *Net[E]) setAddr4(addr [4]byte, prefix int) Errno {
	if prefix < 0 || prefix > 32 {
		return unix.EINVAL
	}
	i := n.ifaces.byName("eth0")
	if p := n.ifaces.byIndex(i); p != nil && n.nV4 > 0 {
		var old [16]byte // as netlink's table keeps it: the four bytes first
		copy(old[:4], n.localV4[0][:])
		n.ifaces.delAddr(p, unix.AF_INET, old)
	}
	n.nV4 = 0
	if addr != ([4]byte{}) {
		n.nV4, n.localV4[0], n.svcPrefix = 1, addr, prefix
		if i > 0 {
			n.ifaces.AddAddr4(i, addr, prefix)
		}
	}
	return 0
}

// setRoutes makes the routes in v (NetRoute records) the table:
// EINVAL for a length that is no whole number of records, more than
// NetMaxRoutes, or a prefix over 32; EFAULT for a bad buffer.
func (n *Net[E]) setRoutes(v *Iov) Errno {
	const size = int(unsafe.Sizeof(abi.NetRoute{}))
	if v.Len%size != 0 || v.Len > abi.NetMaxRoutes*size {
		return unix.EINVAL
	}
	var rs [abi.NetMaxRoutes]abi.NetRoute
	k := v.Len / size
	if k > 0 {
		b, ok := n.seg(v, 0)
		if !ok || n.segIn(b, 0, NoEscape(unsafe.Slice((*byte)(unsafe.Pointer(&rs[0])), v.Len))) != v.Len {
			return unix.EFAULT
		}
	}
	for i := 0; i < k; i++ {
		if rs[i].Prefix > 32 {
			return unix.EINVAL
		}
	}
	n.ifaces.Routes, n.ifaces.NRoutes = rs, k
	n.ifaces.Gen++
	return 0
}

// nthRoute is a route dump's message k, nil after the last: IPv4 routes
// only (an AF_INET6 dump is empty).
func (t *Ifaces) nthRoute(cur *DumpCursor, k int) *abi.NetRoute {
	if cur.Type != unix.RTM_GETROUTE || cur.Family == unix.AF_INET6 || k >= t.NRoutes {
		return nil
	}
	return &t.Routes[k]
}

// routeMsg writes r's RTM_NEWROUTE as Linux's fib_dump_info: the main
// table, a unicast route out of eth0.
func (w *nlw) routeMsg(t *Ifaces, r *abi.NetRoute, flags uint16, seq, port uint32) {
	at := w.begin(unix.RTM_NEWROUTE, flags, seq, port)
	if s := w.grow(rtMsgLen); s != nil {
		s[0], s[1], s[2], s[3] = unix.AF_INET, r.Prefix, 0, 0 // family, dst_len, src_len, tos
		s[4], s[5], s[6], s[7] = unix.RT_TABLE_MAIN, r.Proto, r.Scope, unix.RTN_UNICAST
		ne.PutUint32(s[8:], 0) // rtm_flags
	}
	w.attr32(unix.RTA_TABLE, unix.RT_TABLE_MAIN)
	if r.Prefix > 0 {
		w.attr(unix.RTA_DST, r.Dst[:])
	}
	if r.Src != ([4]byte{}) {
		w.attr(unix.RTA_PREFSRC, r.Src[:])
	}
	if r.Gateway != ([4]byte{}) {
		w.attr(unix.RTA_GATEWAY, r.Gateway[:])
	}
	w.attr32(unix.RTA_OIF, uint32(t.byName("eth0")))
	w.end(at)
}

// Routes4 copies the route table into out and returns how many routes
// it holds (a hosted test's look at what the service set).
func (n *Net[E]) Routes4(out []abi.NetRoute) int {
	n.env.Lock()
	defer n.env.Unlock()
	copy(out, n.ifaces.Routes[:n.ifaces.NRoutes])
	return n.ifaces.NRoutes
}

// delAddr takes p's address addr of family from it; ENOENT if it has
// none such.
func (t *Ifaces) delAddr(p *Iface, family uint8, addr [16]byte) Errno {
	for i := 0; i < p.NAddrs; i++ {
		if q := &p.Addrs[i]; q.Family == family && q.Addr == addr {
			copy(p.Addrs[i:p.NAddrs-1], p.Addrs[i+1:p.NAddrs])
			p.NAddrs--
			p.Addrs[p.NAddrs] = IfAddr{}
			t.Gen++
			return 0
		}
	}
	return unix.ENOENT
}
