package procfs

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// /proc/net/igmp and /proc/net/igmp6: the multicast groups each
// interface has joined, which Go's net.Interface.MulticastAddrs reads.
// yolk has no multicast sockets, so the groups are the ones Linux's
// kernel joins by itself, derived from the interfaces:
//   - IPv4 (ip_mc_up): every interface that is up joins the all-hosts
//     group 224.0.0.1, one user; it is in state V3 (no querier seen),
//     its timer not running, not the last reporter.
//   - IPv6 (ipv6_add_dev, addrconf_join_solict): every interface joins
//     ff01::1 and then ff02::1 (the all-nodes groups), and, unless it is
//     the loopback or NOARP, each unicast address's solicited-node group
//     ff02::1:ffXX:XXXX (one user per address that maps to it). Linux
//     puts a group joined at the head of the interface's list and lists
//     from the head, so the latest join comes first: the solicited-node
//     groups (addresses are added after the device, link-local before
//     global, which netlink's order, global first, reverses), then
//     ff02::1, then ff01::1. The flags are what the groups show once
//     their reports are sent: MAF_LOADED (the device's filter has the
//     group) for ff02::1 and the solicited-node groups, MAF_NOREPORT for
//     the all-nodes groups; the timers are not running.

// igmp6's mca_flags (include/net/if_inet6.h).
const (
	mafLoaded   = 0x04
	mafNoReport = 0x08
)

// igmp renders /proc/net/igmp as igmp_mc_seq_show: a header, then per
// interface with a group a line of its own and one per group. The group
// is the __be32 address printed as a number ("%08X"), so its bytes show
// in the machine's order: 224.0.0.1 is 010000E0 on a little-endian one.
func igmp(o *out, s *Snapshot) {
	o.str("Idx\tDevice    : Count Querier\tGroup    Users Timer\tReporter\n")
	for i := 0; i < int(s.NumIfaces) && i < len(s.Ifaces); i++ {
		f := &s.Ifaces[i]
		if f.Flags&unix.IFF_UP == 0 {
			continue
		}
		o.sdec(int64(f.Index))
		o.ch('\t')
		o.bytesl(cstr(f.Name[:]), 10)
		o.str(":     1      V3\n")
		o.str("\t\t\t\t")
		o.hexUpper(uint64(binary.NativeEndian.Uint32(allHosts[:])), 8)
		o.str("     1 0:00000000\t\t0\n")
	}
}

// igmp6 renders /proc/net/igmp6 as igmp6_mc_seq_show: a line per group
// of each interface, "%-4d %-15s %pi6 %5d %08X %ld" (index, name, the
// group in 32 hex digits, users, flags, timer).
func igmp6(o *out, s *Snapshot) {
	for i := 0; i < int(s.NumIfaces) && i < len(s.Ifaces); i++ {
		f := &s.Ifaces[i]
		n := min(int(f.NAddr6), len(f.Addr6))
		if f.Flags&(unix.IFF_LOOPBACK|unix.IFF_NOARP) != 0 {
			n = 0
		}
		for j := 0; j < n; j++ {
			users := 1
			for k := j + 1; k < n; k++ {
				if solicited(&f.Addr6[k]) == solicited(&f.Addr6[j]) {
					users = 0 // shown where a later address (an earlier join) has it
				}
			}
			if users == 0 {
				continue
			}
			for k := 0; k < j; k++ {
				if solicited(&f.Addr6[k]) == solicited(&f.Addr6[j]) {
					users++
				}
			}
			g := solicited(&f.Addr6[j])
			igmp6Line(o, f, &g, users, mafLoaded)
		}
		igmp6Line(o, f, &allNodesLink, 1, mafLoaded|mafNoReport)
		igmp6Line(o, f, &allNodesIface, 1, mafNoReport)
	}
}

var (
	allHosts      = [4]byte{224, 0, 0, 1}
	allNodesLink  = [16]byte{0: 0xff, 1: 0x02, 15: 1}
	allNodesIface = [16]byte{0: 0xff, 1: 0x01, 15: 1}
)

// solicited is a's solicited-node multicast address (addrconf_addr_solict_mult).
func solicited(a *[16]byte) [16]byte {
	return [16]byte{0: 0xff, 1: 0x02, 11: 1, 12: 0xff, 13: a[13], 14: a[14], 15: a[15]}
}

func igmp6Line(o *out, f *Iface, g *[16]byte, users int, flags uint64) {
	o.decl(uint64(f.Index), 4)
	o.ch(' ')
	o.bytesl(cstr(f.Name[:]), 15)
	o.ch(' ')
	for _, c := range g {
		o.ch(hexDigits[c>>4])
		o.ch(hexDigits[c&15])
	}
	o.ch(' ')
	o.decw(uint64(users), 5)
	o.ch(' ')
	o.hexUpper(flags, 8)
	o.str(" 0\n")
}
