package net

// The interface table netlink reports and the socket layer routes by:
// lo and the NIC, their flags, MTUs and addresses (IPv4 and IPv6). The
// service adds and removes the NIC's addresses through it. Kernel-context
// Go, as the rest of the package: fixed arrays, nothing allocated.

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// IfAddr is an address of an interface.
type IfAddr struct {
	Family    uint8 // AF_INET or AF_INET6
	Prefix    uint8
	Scope     uint8 // RT_SCOPE_*
	Flags     uint8 // IFA_F_*
	Proto     uint8 // IFA_PROTO (IPv6), 0: none
	Bcast     bool  // IPv4: Broadcast is set
	Addr      [16]byte
	Broadcast [4]byte
}

// Iface is a network interface, as RTM_NEWLINK describes it.
type Iface struct {
	Index     int32
	Type      uint16 // ARPHRD_*
	Flags     uint32 // IFF_*
	MTU       uint32
	MinMTU    uint32
	MaxMTU    uint32
	OperState uint8
	Carrier   uint32 // carrier changes, ups, downs
	CarrierUp uint32
	CarrierDn uint32
	NameLen   uint8
	Name      [ifNameMax]byte
	HW        [6]byte // hardware address
	HWBcast   [6]byte
	NAddrs    int
	Addrs     [MaxIfAddrs]IfAddr
}

// Ifaces is the interface table: the loopback interface (after Init)
// and the interfaces the kernel adds. Gen changes with every change, so
// a dump that spans one is marked NLM_F_DUMP_INTR.
type Ifaces struct {
	Gen uint32
	N   int
	If  [MaxIfaces]Iface
	// The IPv4 main table (routes.go): the service's routes.
	NRoutes int
	Routes  [abi.NetMaxRoutes]abi.NetRoute
}

// Init makes the table hold lo alone: index 1, up, MTU 65536, with
// 127.0.0.1/8 and ::1/128.
func (t *Ifaces) Init() {
	*t = Ifaces{N: 1}
	lo := &t.If[0]
	lo.Index = 1
	lo.Type = unix.ARPHRD_LOOPBACK
	lo.Flags = unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING | unix.IFF_LOWER_UP
	lo.MTU = 65536
	lo.OperState = ifOperUnknown
	lo.NameLen = uint8(copy(lo.Name[:], "lo"))
	t.AddAddr4(1, [4]byte{127, 0, 0, 1}, 8)
	t.AddAddr6(1, [16]byte{15: 1}, 128)
}

// AddEthernet adds an Ethernet interface named name with hardware address
// mac and MTU mtu, up with its carrier, and returns its index; 0 if the
// table is full or the name longer than 15 bytes.
func (t *Ifaces) AddEthernet(name string, mac [6]byte, mtu int) int {
	if t.N == MaxIfaces || len(name) == 0 || len(name) > ifNameMax {
		return 0
	}
	p := &t.If[t.N]
	*p = Iface{Index: t.If[t.N-1].Index + 1, Type: unix.ARPHRD_ETHER,
		Flags: unix.IFF_UP | unix.IFF_BROADCAST | unix.IFF_RUNNING | unix.IFF_MULTICAST | unix.IFF_LOWER_UP,
		MTU:   uint32(mtu), MinMTU: 68, MaxMTU: 65535, OperState: ifOperUp,
		Carrier: 2, CarrierUp: 1, CarrierDn: 1, // the link came up once, as a NIC's does
		HW: mac, HWBcast: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	p.NameLen = uint8(copy(p.Name[:], name))
	t.N++
	t.Gen++
	return int(p.Index)
}

// byName is the index of the interface called name, 0 if none.
func (t *Ifaces) byName(name string) int {
	for i := 0; i < t.N; i++ {
		if string(t.If[i].Name[:t.If[i].NameLen]) == name {
			return int(t.If[i].Index)
		}
	}
	return 0
}

func (t *Ifaces) byIndex(index int) *Iface {
	for i := 0; i < t.N; i++ {
		if int(t.If[i].Index) == index {
			return &t.If[i]
		}
	}
	return nil
}

// AddAddr4 gives interface index the address addr/prefix: permanent,
// labelled with the interface's name, host scope in 127/8 (else
// universe), with the subnet's broadcast address below /31. Errors:
// ENODEV (no such interface), EINVAL (prefix), EEXIST, ENOSPC.
func (t *Ifaces) AddAddr4(index int, addr [4]byte, prefix int) Errno {
	if prefix < 0 || prefix > 32 {
		return unix.EINVAL
	}
	a := IfAddr{Family: unix.AF_INET, Prefix: uint8(prefix), Flags: unix.IFA_F_PERMANENT}
	copy(a.Addr[:], addr[:])
	if addr[0] == 127 {
		a.Scope = unix.RT_SCOPE_HOST
	}
	if prefix < 31 && addr[0] != 127 { // Linux gives lo's 127.0.0.1/8 none
		a.Bcast = true
		host := uint32(1)<<(32-prefix) - 1
		ne.PutUint32(a.Broadcast[:], ne.Uint32(addr[:])|be32(host))
	}
	return t.addAddr(index, a)
}

// be32 is v in network byte order, as a native word.
func be32(v uint32) uint32 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return ne.Uint32(b[:])
}

// AddAddr6 gives interface index the address addr/prefix: permanent, of
// link scope in fe80::/10, host scope for ::1 (which Linux marks as the
// kernel's for lo), else universe.
func (t *Ifaces) AddAddr6(index int, addr [16]byte, prefix int) Errno {
	if prefix < 0 || prefix > 128 {
		return unix.EINVAL
	}
	a := IfAddr{Family: unix.AF_INET6, Prefix: uint8(prefix), Flags: unix.IFA_F_PERMANENT, Addr: addr}
	switch {
	case addr == [16]byte{15: 1}:
		a.Scope, a.Proto = unix.RT_SCOPE_HOST, ifaProtKernLo
	case addr[0] == 0xfe && addr[1]&0xc0 == 0x80:
		a.Scope, a.Proto = unix.RT_SCOPE_LINK, ifaProtKernLL
	}
	return t.addAddr(index, a)
}

// AddLinkLocal6 gives Ethernet interface index its IPv6 link-local
// address, fe80::/64 with the interface identifier the MAC's EUI-64 makes.
func (t *Ifaces) AddLinkLocal6(index int) Errno {
	p := t.byIndex(index)
	if p == nil {
		return unix.ENODEV
	}
	m := p.HW
	return t.AddAddr6(index, [16]byte{0: 0xfe, 1: 0x80, 8: m[0] ^ 2, 9: m[1], 10: m[2], 11: 0xff, 12: 0xfe, 13: m[3], 14: m[4], 15: m[5]}, 64)
}

// addAddr inserts a, keeping each family's addresses in Linux's dump
// order: IPv4 in the order added, IPv6 by scope (global first).
func (t *Ifaces) addAddr(index int, a IfAddr) Errno {
	p := t.byIndex(index)
	if p == nil {
		return unix.ENODEV
	}
	at := p.NAddrs
	for i := 0; i < p.NAddrs; i++ {
		q := &p.Addrs[i]
		if q.Family == a.Family && q.Addr == a.Addr {
			return unix.EEXIST
		}
		if at == p.NAddrs && a.Family == unix.AF_INET6 && q.Family == unix.AF_INET6 && q.Scope > a.Scope {
			at = i
		}
	}
	if p.NAddrs == MaxIfAddrs {
		return unix.ENOSPC
	}
	copy(p.Addrs[at+1:p.NAddrs+1], p.Addrs[at:p.NAddrs])
	p.Addrs[at] = a
	p.NAddrs++
	t.Gen++
	return 0
}

// DelAddr6 takes IPv6 address addr from interface index; ENOENT if it
// has none such.
func (t *Ifaces) DelAddr6(index int, addr [16]byte) Errno {
	p := t.byIndex(index)
	if p == nil {
		return unix.ENODEV
	}
	return t.delAddr(p, unix.AF_INET6, addr)
}
