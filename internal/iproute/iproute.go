// Package iproute reads the IPv4 main routing table through a netlink
// route dump (RTM_GETROUTE) and writes each route as `ip route` (iproute2)
// prints it: the destination ("default" for /0, no length for /32), the
// gateway, the device, the protocol (but boot), the scope (but
// universe), the preferred source, the metric, linkdown. For programs that check
// what the kernel reports (the guest self-tests, test programs); ordinary
// Go, on yolk as on Linux.
package iproute

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"unsafe"
)

const rtnhLinkdown = 16 // RTNH_F_LINKDOWN: the device has no carrier

var protos = map[uint8]string{syscall.RTPROT_KERNEL: "kernel", syscall.RTPROT_STATIC: "static", 9: "ra", 16: "dhcp"}

// Routes is the main table's IPv4 routes, in the dump's order.
func Routes() ([]string, error) {
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETROUTE, syscall.AF_INET)
	if err != nil {
		return nil, err
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range msgs {
		if m.Header.Type != syscall.RTM_NEWROUTE || len(m.Data) < syscall.SizeofRtMsg {
			continue
		}
		rt := (*syscall.RtMsg)(unsafe.Pointer(&m.Data[0]))
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			return nil, err
		}
		a := map[uint16][]byte{}
		for _, x := range attrs {
			a[x.Attr.Type] = x.Value
		}
		if t, ok := a[syscall.RTA_TABLE]; ok && len(t) == 4 && u32(t) != syscall.RT_TABLE_MAIN || rt.Table != syscall.RT_TABLE_MAIN || rt.Type != syscall.RTN_UNICAST {
			continue
		}
		var b strings.Builder
		switch d := a[syscall.RTA_DST]; {
		case rt.Dst_len == 0:
			b.WriteString("default")
		case rt.Dst_len == 32:
			b.WriteString(net.IP(d).String())
		default:
			fmt.Fprintf(&b, "%v/%d", net.IP(d), rt.Dst_len)
		}
		if g, ok := a[syscall.RTA_GATEWAY]; ok {
			fmt.Fprintf(&b, " via %v", net.IP(g))
		}
		if o, ok := a[syscall.RTA_OIF]; ok && len(o) == 4 {
			if i, err := net.InterfaceByIndex(int(u32(o))); err == nil {
				fmt.Fprintf(&b, " dev %s", i.Name)
			} else {
				fmt.Fprintf(&b, " dev if%d", u32(o))
			}
		}
		if rt.Protocol != syscall.RTPROT_BOOT {
			if p, ok := protos[rt.Protocol]; ok {
				fmt.Fprintf(&b, " proto %s", p)
			} else {
				fmt.Fprintf(&b, " proto %d", rt.Protocol)
			}
		}
		switch rt.Scope {
		case syscall.RT_SCOPE_UNIVERSE:
		case syscall.RT_SCOPE_LINK:
			b.WriteString(" scope link")
		case syscall.RT_SCOPE_HOST:
			b.WriteString(" scope host")
		default:
			fmt.Fprintf(&b, " scope %d", rt.Scope)
		}
		if s, ok := a[syscall.RTA_PREFSRC]; ok {
			fmt.Fprintf(&b, " src %v", net.IP(s))
		}
		if p, ok := a[syscall.RTA_PRIORITY]; ok && len(p) == 4 {
			fmt.Fprintf(&b, " metric %d", u32(p))
		}
		if rt.Flags&rtnhLinkdown != 0 {
			b.WriteString(" linkdown")
		}
		out = append(out, b.String())
	}
	return out, nil
}

func u32(b []byte) uint32 { return *(*uint32)(unsafe.Pointer(&b[0])) }
