package netsvc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// DHCP messages (RFC 2131, 2132): the frames the client sends, and what
// it takes from a server's answer. What is accepted follows systemd's
// sd-dhcp-client (networkd) where the RFCs leave room: a message whose
// options run past their area is dropped whole; an option that is
// malformed (a wrong length, a bad name, a classless route with a prefix
// longer than 32 or cut short) is ignored alone, as if the server had not
// sent it; options given twice are concatenated (RFC 3396); option
// overload (52) puts more options in the file and sname fields.

// Lease is what a DHCP server gave.
type Lease struct {
	Addr, Mask [4]byte
	Prefix     int
	// Router is the first router of option 3 (ignored when option 121
	// is given, as RFC 3442 says: Routes then carry the gateway).
	Router [4]byte
	Server [4]byte // the server identifier (54)
	// Seconds is the lease time (51; 0xffffffff: infinite), T1 and T2
	// the renewal and rebinding times (58, 59; 0: not given).
	Seconds, T1, T2 uint32
	DNS             [][4]byte // option 6, in the server's order
	Domain          string    // option 15
	Search          []string  // option 119 (RFC 3397)
	MTU             int       // option 26; 0: not given (or below 576, which networkd ignores)
	Routes          []Route   // option 121 (RFC 3442)
}

// Route is a classless static route: Dst/Prefix through Gateway (zero:
// on the link).
type Route struct {
	Dst     [4]byte
	Prefix  int
	Gateway [4]byte
}

func (r Route) String() string {
	d := fmt.Sprintf("%v/%d", ip4s(r.Dst), r.Prefix)
	if r.Prefix == 0 {
		d = "default"
	}
	if r.Gateway == ([4]byte{}) {
		return d + " on-link"
	}
	return d + " via " + ip4s(r.Gateway)
}

func ip4s(a [4]byte) string { return fmt.Sprintf("%d.%d.%d.%d", a[0], a[1], a[2], a[3]) }

const (
	dhcpDiscover = 1
	dhcpOffer    = 2
	dhcpRequest  = 3
	dhcpDecline  = 4
	dhcpAck      = 5
	dhcpNak      = 6
	dhcpRelease  = 7
	dhcpMagic    = 0x63825363

	dhcpMinMTU = 576 // networkd ignores a smaller option 26 (DHCP_MIN_PACKET_SIZE)
)

// dhcpParams is the parameter request list (55): mask, router, DNS,
// domain, MTU, lease, server, T1, T2, search, classless routes.
var dhcpParams = []byte{1, 3, 6, 15, 26, 51, 54, 58, 59, 119, 121}

// dhcpOut is one message the client sends and where it goes.
type dhcpOut struct {
	typ     byte
	xid     uint32
	ciaddr  [4]byte // RENEWING, REBINDING: the address held
	reqAddr [4]byte // option 50 (REQUESTING)
	server  [4]byte // option 54 (REQUESTING)
	// The IP source and destination, and the Ethernet destination: a
	// broadcast from 0.0.0.0 unless set (a renewal goes to the server).
	src, dst [4]byte
	dstMAC   [6]byte
	unicast  bool
}

// dhcpFrame is o from mac as an Ethernet frame: UDP 68 to 67, checksums
// in software.
func dhcpFrame(mac [6]byte, o *dhcpOut) []byte {
	b := make([]byte, 240, 340)
	b[0], b[1], b[2] = 1, 1, 6 // BOOTREQUEST, Ethernet, 6-byte addresses
	binary.BigEndian.PutUint32(b[4:], o.xid)
	if o.ciaddr == ([4]byte{}) {
		binary.BigEndian.PutUint16(b[10:], 0x8000) // broadcast the answer: we have no address
	}
	copy(b[12:], o.ciaddr[:])
	copy(b[28:], mac[:])
	binary.BigEndian.PutUint32(b[236:], dhcpMagic)
	b = append(b, 53, 1, o.typ)
	b = append(b, 61, 7, 1)
	b = append(b, mac[:]...)
	b = append(b, 57, 2, 1500>>8, 1500&255) // the largest message we take: an Ethernet frame's IP packet
	if o.reqAddr != ([4]byte{}) {
		b = append(b, 50, 4)
		b = append(b, o.reqAddr[:]...)
	}
	if o.server != ([4]byte{}) {
		b = append(b, 54, 4)
		b = append(b, o.server[:]...)
	}
	b = append(b, 55, byte(len(dhcpParams)))
	b = append(b, dhcpParams...)
	b = append(b, 255)
	for len(b) < 300 {
		b = append(b, 0)
	}
	dst, dmac := [4]byte{255, 255, 255, 255}, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if o.unicast {
		dst, dmac = o.dst, o.dstMAC
	}
	return udpFrame(mac, dmac, o.src, dst, 68, 67, b)
}

// udpFrame is an Ethernet frame from smac to dmac of a UDP datagram
// src:sport to dst:dport holding b.
func udpFrame(smac, dmac [6]byte, src, dst [4]byte, sport, dport uint16, b []byte) []byte {
	udp := make([]byte, 8, 8+len(b))
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(b)))
	udp = append(udp, b...)
	c := ^sum16(sum16(sum16(sum16(0, src[:]), dst[:]), []byte{0, 17, byte(len(udp) >> 8), byte(len(udp))}), udp)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(udp[6:], c)
	ip := make([]byte, 20, 20+len(udp))
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(udp)))
	copy(ip[12:], src[:])
	copy(ip[16:], dst[:])
	binary.BigEndian.PutUint16(ip[10:], ^sum16(0, ip))
	f := make([]byte, 0, 14+len(ip)+len(udp))
	f = append(f, dmac[:]...)
	f = append(f, smac[:]...)
	f = append(f, 0x08, 0x00)
	f = append(f, ip...)
	return append(f, udp...)
}

// sum16 adds b to the Internet checksum's folded ones' complement sum.
func sum16(s uint16, b []byte) uint16 {
	x := uint32(s)
	for i := 0; i+1 < len(b); i += 2 {
		x += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		x += uint32(b[len(b)-1]) << 8
	}
	for x > 0xffff {
		x = x&0xffff + x>>16
	}
	return uint16(x)
}

// isDHCPReply reports whether frame f is an IPv4 UDP datagram from port
// 67 to port 68: a DHCP server's answer, the client's to take.
func isDHCPReply(f []byte) bool {
	if len(f) < 14+20+8 || f[12] != 0x08 || f[13] != 0 || f[14]>>4 != 4 || f[14+9] != 17 {
		return false
	}
	ihl := int(f[14]&15) * 4
	if ihl < 20 || len(f) < 14+ihl+8 || f[14+6]&0x3f != 0 || f[14+7] != 0 { // a fragment is not ours
		return false
	}
	u := f[14+ihl:]
	return binary.BigEndian.Uint16(u[0:]) == 67 && binary.BigEndian.Uint16(u[2:]) == 68
}

// dhcpAnswer is the BOOTP reply to mac and xid that frame f carries, nil
// if it carries none (or a malformed one).
func dhcpAnswer(f []byte, mac [6]byte, xid uint32) []byte {
	if len(f) < 14+20+8+240 || f[12] != 0x08 || f[13] != 0 {
		return nil
	}
	ip := f[14:]
	ihl := int(ip[0]&15) * 4
	if ip[0]>>4 != 4 || ihl < 20 || ip[9] != 17 || len(ip) < ihl+8 || sum16(0, ip[:ihl]) != 0xffff {
		return nil
	}
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	if tot < ihl+8 || tot > len(ip) {
		return nil
	}
	udp := ip[ihl:tot]
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if binary.BigEndian.Uint16(udp[0:]) != 67 || binary.BigEndian.Uint16(udp[2:]) != 68 || ulen < 8+240 || ulen > len(udp) {
		return nil
	}
	if c := binary.BigEndian.Uint16(udp[6:]); c != 0 &&
		sum16(sum16(sum16(sum16(0, ip[12:16]), ip[16:20]), []byte{0, 17, byte(ulen >> 8), byte(ulen)}), udp[:ulen]) != 0xffff {
		return nil
	}
	b := udp[8:ulen]
	if b[0] != 2 || binary.BigEndian.Uint32(b[4:]) != xid || [6]byte(b[28:34]) != mac || binary.BigEndian.Uint32(b[236:]) != dhcpMagic {
		return nil
	}
	return b
}

var errTruncated = errors.New("an option runs past its area")

// dhcpOptions is a message's options by code, concatenated where a code
// comes more than once (RFC 3396); have says which came.
type dhcpOptions struct {
	v    [256][]byte
	have [256]bool
}

// parseOptions reads BOOTP message m's options: the options field, then
// (option 52 there) the file and sname fields. A truncated option is an
// error: the message is dropped, as networkd drops it.
func parseOptions(m []byte) (*dhcpOptions, error) {
	o := new(dhcpOptions)
	if len(m) < 240 {
		return nil, errTruncated
	}
	if err := o.area(m[240:]); err != nil {
		return nil, err
	}
	if v := o.v[52]; o.have[52] && len(v) == 1 {
		ov := v[0]
		if ov&1 != 0 {
			if err := o.area(m[108:236]); err != nil {
				return nil, err
			}
		}
		if ov&2 != 0 {
			if err := o.area(m[44:108]); err != nil {
				return nil, err
			}
		}
	}
	return o, nil
}

func (o *dhcpOptions) area(b []byte) error {
	for i := 0; i < len(b); {
		c := b[i]
		switch c {
		case 0:
			i++
			continue
		case 255:
			return nil
		}
		if i+1 >= len(b) || i+2+int(b[i+1]) > len(b) {
			return errTruncated
		}
		l := int(b[i+1])
		if c != 52 || !o.have[52] { // an overload option outside the options field is not one
			o.v[c] = append(o.v[c], b[i+2:i+2+l]...)
		}
		o.have[c] = true
		i += 2 + l
	}
	return nil // no end option: the area's end ends it, as networkd takes it
}

// dhcpType is message m's type (53), 0 if it has none.
func dhcpType(m []byte) byte {
	o, err := parseOptions(m)
	if err != nil {
		return 0
	}
	return o.typ()
}

func (o *dhcpOptions) typ() byte {
	if v := o.v[53]; len(v) == 1 {
		return v[0]
	}
	return 0
}

func (o *dhcpOptions) addr(code byte) ([4]byte, bool) {
	if v := o.v[code]; len(v) == 4 {
		return [4]byte(v), true
	}
	return [4]byte{}, false
}

func (o *dhcpOptions) u32(code byte) (uint32, bool) {
	if v := o.v[code]; len(v) == 4 {
		return binary.BigEndian.Uint32(v), true
	}
	return 0, false
}

// unicast reports whether a is an address a host may have: not 0.0.0.0,
// the limited broadcast, loopback, multicast or class E.
func unicast(a [4]byte) bool {
	return a != [4]byte{} && a[0] != 127 && a[0] < 224
}

// parseLease is what BOOTP message m gives: the offered or acknowledged
// address and the options the client uses. An error: the message is not
// one to take (options cut short, no usable address).
func parseLease(m []byte) (Lease, error) {
	var l Lease
	o, err := parseOptions(m)
	if err != nil {
		return l, err
	}
	l.Addr = [4]byte(m[16:20])
	if !unicast(l.Addr) {
		return l, fmt.Errorf("offered address %v is no host's", ip4s(l.Addr))
	}
	if v, ok := o.addr(1); ok && contiguous(v) {
		l.Mask, l.Prefix = v, maskLen(v)
	} else {
		// No (usable) subnet mask: the address's class decides, as
		// networkd's default.
		switch {
		case l.Addr[0] < 128:
			l.Prefix = 8
		case l.Addr[0] < 192:
			l.Prefix = 16
		default:
			l.Prefix = 24
		}
		copy(l.Mask[:], net4Mask(l.Prefix))
	}
	if v := o.v[3]; len(v) >= 4 && len(v)%4 == 0 && unicast([4]byte(v)) {
		l.Router = [4]byte(v)
	}
	if v := o.v[6]; len(v) >= 4 && len(v)%4 == 0 {
		for i := 0; i < len(v); i += 4 {
			if a := [4]byte(v[i:]); unicast(a) {
				l.DNS = append(l.DNS, a)
			}
		}
	}
	if v := o.v[15]; len(v) > 0 {
		if d := strings.TrimRight(string(v), "\x00"); validDomain(d) {
			l.Domain = strings.TrimSuffix(d, ".")
		}
	}
	if o.have[119] {
		l.Search = parseSearch(o.v[119])
	}
	if v := o.v[26]; len(v) == 2 {
		if mtu := int(binary.BigEndian.Uint16(v)); mtu >= dhcpMinMTU {
			l.MTU = mtu
		}
	}
	l.Server, _ = o.addr(54)
	l.Seconds, _ = o.u32(51)
	l.T1, _ = o.u32(58)
	l.T2, _ = o.u32(59)
	if o.have[121] {
		l.Routes = parseClassless(o.v[121])
	}
	if l.Routes != nil {
		l.Router = [4]byte{} // RFC 3442: the router option is ignored
	}
	return l, nil
}

func contiguous(m [4]byte) bool {
	inv := ^binary.BigEndian.Uint32(m[:])
	return inv&(inv+1) == 0
}

func maskLen(m [4]byte) int {
	n := 0
	for v := binary.BigEndian.Uint32(m[:]); v&0x80000000 != 0; v <<= 1 {
		n++
	}
	return n
}

// parseClassless reads option 121: each route is a prefix length, the
// prefix's significant octets, and a router. A prefix length over 32 or
// a route cut short makes the whole option void (nil), as networkd
// drops it; bits past the prefix are cleared.
func parseClassless(v []byte) []Route {
	var rs []Route
	for len(v) > 0 {
		w := int(v[0])
		if w > 32 {
			return nil
		}
		n := (w + 7) / 8
		if len(v) < 1+n+4 {
			return nil
		}
		var r Route
		r.Prefix = w
		copy(r.Dst[:], v[1:1+n])
		m := net4Mask(w)
		for i := range r.Dst {
			r.Dst[i] &= m[i]
		}
		r.Gateway = [4]byte(v[1+n:])
		rs = append(rs, r)
		v = v[1+n+4:]
	}
	return rs
}

// parseSearch reads option 119: domain names in DNS's encoding (RFC
// 1035), with compression pointers into the option's own bytes, which
// must point backwards (no loops). A malformed name ends the list; the
// names before it are kept.
func parseSearch(v []byte) []string {
	var names []string
	for i := 0; i < len(v); {
		name, next, ok := dnsName(v, i)
		if !ok {
			break
		}
		if name != "" && validDomain(name) {
			names = append(names, name)
		}
		i = next
	}
	return names
}

// dnsName decodes the name at v[i:]; next is the offset after it (its
// first pointer, or its zero octet).
func dnsName(v []byte, i int) (name string, next int, ok bool) {
	var b strings.Builder
	next = -1
	limit := i // a pointer must point before the name that holds it
	for hops := 0; ; {
		if i >= len(v) {
			return "", 0, false
		}
		l := int(v[i])
		switch {
		case l == 0:
			if next < 0 {
				next = i + 1
			}
			return b.String(), next, true
		case l&0xc0 == 0xc0:
			if i+1 >= len(v) {
				return "", 0, false
			}
			p := (l&0x3f)<<8 | int(v[i+1])
			if next < 0 {
				next = i + 2
			}
			if p >= limit || hops > 64 {
				return "", 0, false
			}
			hops++
			i, limit = p, p
		case l&0xc0 != 0:
			return "", 0, false
		default:
			if i+1+l > len(v) || b.Len()+l+1 > 253 {
				return "", 0, false
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.Write(v[i+1 : i+1+l])
			i += 1 + l
		}
	}
}

// validDomain reports whether d is a domain name resolv.conf can carry:
// labels of letters, digits, '-' and '_', dot-separated, at most 253
// bytes (a trailing dot allowed).
func validDomain(d string) bool {
	d = strings.TrimSuffix(d, ".")
	if d == "" || len(d) > 253 {
		return false
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
