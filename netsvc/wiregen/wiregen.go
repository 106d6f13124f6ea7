// Package wiregen makes Ethernet frames for fuzzing a network stack
// from the wire: an attacker's frames aimed at one service (a NIC with
// its MAC, IPv4 address and IPv6 link-local address) on a link that
// also carries a peer whose connections to the service are checked.
// netsvc's hosted fuzzer (netsvc/wirefuzz_test.go) and the guest's over
// a tap link (qemu/wirefuzz_test.go) share it.
//
// The frames are made by a generator that knows the protocols (Gen):
// valid frames of each kind, with their fields varied where parsers
// decide (lengths, offsets, flags, options, fragment offsets, extension
// header chains, NDP and DHCP options), then, half the time, mutated as
// bytes, with checksums made right again most of the time so that the
// mutation reaches past the checksum. The fuzzer's hosts have addresses of
// their own: no frame it makes carries the peer's addresses (scrub), so
// it cannot take over the connections the test checks (which an attacker
// on the wire could, and which would prove nothing about the stack). It
// also answers the service as its hosts would (Observe): ARP and neighbour
// solicitations for their addresses, and completes the handshakes the
// service's SYN-ACKs start, with data and a FIN or a RST, so that
// connections from the fuzzer reach the sockets and the program.
//
// It only makes bytes: it sends nothing, opens nothing, and a caller
// decides where the frames go. A run is a function of its seed and of
// the frames the caller gives Observe.
package wiregen

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"sync"
)

// Addrs is the link the frames are for. The fuzzer's own hosts are
// neighbours on the service's IPv4 /24 (its .16 to .215) and anything
// else; the peer's addresses never appear in a frame.
type Addrs struct {
	SvcMAC  [6]byte
	SvcIP   [4]byte
	SvcLL   [16]byte // the service's IPv6 link-local address
	PeerMAC [6]byte
	PeerIP  [4]byte
	PeerLL  [16]byte
	// DHCPServer and DHCPServerMAC are where the DHCP replies come from;
	// their default options name PeerIP as the router and DHCPServer as
	// the DNS server.
	DHCPServer    [4]byte
	DHCPServerMAC [6]byte
	EchoPort      uint16 // where the service serves: half the segments go there
}

// on is the address with last byte b on the service's /24.
func (a *Addrs) on(b byte) [4]byte { return [4]byte{a.SvcIP[0], a.SvcIP[1], a.SvcIP[2], b} }

// LinkLocal is the IPv6 link-local address of mac (EUI-64).
func LinkLocal(mac [6]byte) [16]byte {
	return [16]byte{0xfe, 0x80, 8: mac[0] ^ 2, 9: mac[1], 10: mac[2], 11: 0xff, 12: 0xfe, 13: mac[3], 14: mac[4], 15: mac[5]}
}

// Frame kinds (KindNames names them).
const (
	kARP = iota
	kTCP4
	kUDP4
	kICMP4
	kIP4Opts
	kFrag4
	kTCP6
	kUDP6
	kICMP6
	kNDP
	kFrag6
	kDHCP
	kEther
	kRandom
	kReplay
	KAnswer // the fuzzer's hosts answering the service
	NKinds
)

// KindNames names the kinds, for a run's report.
var KindNames = [NKinds]string{"ARP", "TCP/IPv4", "UDP/IPv4", "ICMPv4", "IPv4 options", "IPv4 fragments", "TCP/IPv6", "UDP/IPv6",
	"ICMPv6", "NDP", "IPv6 fragments", "DHCP replies", "other Ethernet", "random bytes", "replayed", "answers"}

// Gen makes the frames. Next and Build are for one goroutine; Observe
// may run in others.
type Gen struct {
	a     Addrs
	r     *rand.Rand
	XID   uint32     // the DHCP transaction the replies name
	slaac [][16]byte // the service's addresses from the fuzzer's router advertisements

	mu      sync.Mutex // guards seen, answers, ar (observe runs in the wire's goroutines)
	ar      *rand.Rand // the answers' randomness
	seen    [][]byte   // recent frames on the wire, for replays
	seenAt  int
	answers [][]byte

	Count      [NKinds]int // frames made, by kind
	Mutated    int         // of them, mutated as bytes
	handshakes int         // SYN-ACKs the fuzzer's hosts answered (under mu)
}

// New is a generator for the link a describes, its randomness from seed.
func New(seed int64, a Addrs) *Gen {
	return &Gen{a: a, r: rand.New(rand.NewSource(seed)), ar: rand.New(rand.NewSource(seed + 1)), XID: 0x5eed}
}

// Handshakes is how many of the service's SYN-ACKs the fuzzer's hosts
// have answered.
func (g *Gen) Handshakes() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.handshakes
}

func (g *Gen) n(k int) int           { return g.r.Intn(k) }
func (g *Gen) chance(p float64) bool { return g.r.Float64() < p }
func (g *Gen) u16() uint16           { return uint16(g.r.Uint32()) }

func (g *Gen) bytes(n int) []byte {
	b := make([]byte, n)
	g.r.Read(b)
	return b
}

func pick[T any](g *Gen, xs ...T) T { return xs[g.n(len(xs))] }

// Next is the next burst of frames: answers first, else frames of a
// random kind, mutated or not, scrubbed of the peer's addresses.
func (g *Gen) Next() (int, [][]byte) {
	g.mu.Lock()
	if len(g.answers) > 0 {
		a := g.answers[0]
		g.answers = g.answers[1:]
		g.mu.Unlock()
		g.Count[KAnswer]++
		return KAnswer, [][]byte{a}
	}
	g.mu.Unlock()
	k := g.n(KAnswer)
	fs := g.Build(k)
	for i, f := range fs {
		if k == kReplay || g.chance(0.4) {
			f = g.Mutate(f)
			g.Mutated++
			if g.chance(0.6) {
				FixSums(f)
			}
		}
		if g.scrub(f) {
			FixSums(f)
		}
		fs[i] = f
	}
	g.Count[k] += len(fs)
	return k, fs
}

// Build makes a burst of kind k, checksums right unless the kind breaks
// them on purpose.
func (g *Gen) Build(k int) [][]byte {
	one := func(f []byte) [][]byte { return [][]byte{f} }
	switch k {
	case kARP:
		return one(g.arp())
	case kTCP4:
		return one(g.v4(6, g.tcp(), nil))
	case kUDP4:
		return one(g.v4(17, g.udp(), nil))
	case kICMP4:
		return one(g.v4(1, g.icmp4(), nil))
	case kIP4Opts:
		proto, l4 := pick(g, byte(1), 6, 17), []byte(nil)
		switch proto {
		case 1:
			l4 = g.echo4()
		case 6:
			l4 = g.tcp()
		default:
			l4 = g.udp()
		}
		return one(g.v4(proto, l4, g.ip4Opts()))
	case kFrag4:
		return g.frag4()
	case kTCP6:
		return one(g.v6(6, g.tcp()))
	case kUDP6:
		return one(g.v6(17, g.udp()))
	case kICMP6:
		return one(g.v6(58, g.icmp6()))
	case kNDP:
		return one(g.ndp())
	case kFrag6:
		return g.frag6()
	case kDHCP:
		return one(g.dhcp())
	case kEther:
		return one(g.ether())
	case kRandom:
		f := g.bytes(14 + g.n(1505))
		copy(f, pick(g, g.a.SvcMAC[:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}))
		return one(f)
	case kReplay:
		g.mu.Lock()
		var f []byte
		if len(g.seen) > 0 {
			f = bytes.Clone(g.seen[g.n(len(g.seen))])
		}
		g.mu.Unlock()
		if f == nil {
			return one(g.v4(6, g.tcp(), nil))
		}
		if g.chance(0.5) {
			SwapAddrs(f)
		}
		return one(f)
	}
	panic(k)
}

// Addresses: the fuzzer's hosts, and where their frames go.

func (g *Gen) mac() [6]byte {
	m := [6]byte{0x02, 0xf0}
	g.r.Read(m[2:])
	return m
}

// hostMAC is the MAC the fuzzer's host at ip answers with.
func HostMAC(ip []byte) [6]byte {
	m := [6]byte{0x02, 0xf1}
	copy(m[2:], ip[len(ip)-4:])
	return m
}

func (g *Gen) src4() [4]byte {
	switch g.n(10) {
	case 0, 1, 2:
		var a [4]byte
		g.r.Read(a[:]) // anything: multicast, broadcast, loopback, 0.0.0.0
		return a
	case 3:
		return pick(g, [4]byte{}, [4]byte{255, 255, 255, 255}, [4]byte{127, 0, 0, 1}, g.a.SvcIP, [4]byte{224, 0, 0, 1}, g.a.on(255))
	}
	return g.a.on(byte(16 + g.n(200))) // a neighbour
}

func (g *Gen) dst4() [4]byte {
	switch g.n(10) {
	case 0:
		return [4]byte{255, 255, 255, 255}
	case 1:
		return pick(g, g.a.on(255), [4]byte{224, 0, 0, 1}, [4]byte{127, 0, 0, 1})
	case 2:
		return g.src4()
	}
	return g.a.SvcIP
}

func (g *Gen) src6() [16]byte {
	var a [16]byte
	switch g.n(10) {
	case 0:
		g.r.Read(a[:])
	case 1:
		return pick(g, [16]byte{}, [16]byte{15: 1}, g.a.SvcLL, [16]byte{0xff, 0x02, 15: 1})
	case 2, 3:
		copy(a[:], []byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(g.n(16))})
		g.r.Read(a[8:])
	default:
		a[0], a[1] = 0xfe, 0x80
		g.r.Read(a[8:])
	}
	return a
}

func (g *Gen) dst6() [16]byte {
	switch g.n(10) {
	case 0:
		return [16]byte{0xff, 0x02, 15: 1}
	case 1:
		return Solicited(g.a.SvcLL)
	case 2:
		return g.src6()
	case 3, 4:
		if len(g.slaac) > 0 {
			return g.slaac[g.n(len(g.slaac))]
		}
	}
	return g.a.SvcLL
}

func Solicited(a [16]byte) [16]byte {
	return [16]byte{0xff, 0x02, 11: 1, 12: 0xff, 13: a[13], 14: a[14], 15: a[15]}
}

func (g *Gen) dstMAC(ip6 bool, dst []byte) [6]byte {
	if g.chance(0.1) {
		return pick(g, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, g.mac())
	}
	if dst[0] == 0xff && ip6 {
		return [6]byte{0x33, 0x33, dst[12], dst[13], dst[14], dst[15]}
	}
	if !ip6 && (dst[0] >= 224 || dst[3] == 255) {
		return [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	return g.a.SvcMAC
}

// IPv4 and IPv6 datagrams.

func (g *Gen) v4(proto byte, l4, opts []byte) []byte {
	src, dst := g.src4(), g.dst4()
	frag := uint16(0)
	if g.chance(0.3) {
		frag = 0x4000 // DF
	}
	f := Eth(g.dstMAC(false, dst[:]), g.mac(), 0x0800, IP4(src, dst, proto, pick(g, byte(64), 1, 0, 255), g.u16(), frag, opts, l4))
	g.breakIP4(f)
	FixSums(f)
	g.breakSums(f)
	return f
}

// breakIP4 varies the IPv4 header's length fields and version now and
// then.
func (g *Gen) breakIP4(f []byte) {
	ip := f[14:]
	switch g.n(20) {
	case 0:
		binary.BigEndian.PutUint16(ip[2:], pick(g, uint16(0), 19, 20, uint16(len(ip)-1), uint16(len(ip)+1), 0xffff, g.u16()))
	case 1:
		ip[0] = ip[0]&0xf0 | byte(g.n(16))
	case 2:
		ip[0] = byte(g.n(16))<<4 | ip[0]&15
	case 3:
		binary.BigEndian.PutUint16(ip[6:], g.u16()) // flags and offset: a fragment of nothing
	}
}

// breakSums gets a checksum wrong now and then (zero, for UDP, is none).
func (g *Gen) breakSums(f []byte) {
	if g.chance(0.1) && len(f) > 40 {
		f[14+g.n(len(f)-14)] ^= byte(1 << g.n(8))
	}
}

func (g *Gen) v6(next byte, l4 []byte) []byte {
	src, dst := g.src6(), g.dst6()
	first, payload := next, l4
	if g.chance(0.5) {
		first, payload = g.ext6(next, l4)
	}
	f := Eth(g.dstMAC(true, dst[:]), g.mac(), 0x86dd, IP6(src, dst, first, pick(g, byte(64), 255, 1, 0), payload))
	switch g.n(20) {
	case 0:
		binary.BigEndian.PutUint16(f[14+4:], pick(g, uint16(0), uint16(len(payload)-1), uint16(len(payload)+1), 0xffff))
	case 1:
		f[14] = byte(g.n(16))<<4 | f[14]&15
	}
	FixSums(f)
	g.breakSums(f)
	return f
}

// ext6 puts a chain of extension headers in front of a payload of kind
// next: hop-by-hop and destination options (padding, router alert,
// jumbo, unknown options of each action), routing headers of every
// type, atomic fragment headers, an unknown header, no next header.
func (g *Gen) ext6(next byte, payload []byte) (byte, []byte) {
	k := 1 + g.n(4)
	kinds := make([]byte, k)
	for i := range kinds {
		kinds[i] = pick(g, byte(0), 0, 60, 60, 43, 44, 59, 253)
	}
	b := payload
	for i := k - 1; i >= 0; i-- {
		var h []byte
		switch kinds[i] {
		case 0, 60:
			h = []byte{next, 0}
			for j := g.n(4); j >= 0; j-- {
				switch g.n(6) {
				case 0:
					h = append(h, 0)
				case 1:
					l := g.n(8)
					h = append(append(h, 1, byte(l)), make([]byte, l)...)
				case 2:
					h = append(h, 5, 2, byte(g.n(3)), 0)
				case 3:
					h = append(h, 0xc2, 4)
					h = binary.BigEndian.AppendUint32(h, pick(g, uint32(0), 65536, g.r.Uint32()))
				default:
					l := g.n(12)
					h = append(append(h, pick(g, byte(0x1e), 0x5e, 0x9e, 0xde), byte(l)), g.bytes(l)...)
				}
			}
			for len(h)%8 != 0 {
				h = append(h, 0) // Pad1
			}
			h[1] = byte(len(h)/8 - 1)
		case 43:
			n := g.n(3)
			h = []byte{next, byte(2 * n), pick(g, byte(0), 2, 3, 4, byte(g.n(256))), byte(pick(g, 0, 0, n, g.n(256))), 0, 0, 0, 0}
			for i := 0; i < n; i++ {
				a := g.src6()
				h = append(h, a[:]...)
			}
		case 44:
			h = []byte{next, 0, 0, 0}
			h = binary.BigEndian.AppendUint32(h, g.r.Uint32())
			if g.chance(0.1) {
				h[3] = byte(g.n(256)) // offset and M: a fragment of what follows
			}
		case 59:
			h = []byte{next, 0, 1, 4, 0, 0, 0, 0} // what follows is to be ignored
		default:
			h = append([]byte{next, 0}, g.bytes(6)...)
		}
		if g.chance(0.05) {
			h[1] = byte(g.n(256)) // a length past the end
		}
		b = append(h, b...)
		next = kinds[i]
	}
	return next, b
}

// Transport payloads.

func (g *Gen) port() uint16 {
	if g.chance(0.5) {
		return g.a.EchoPort
	}
	return pick(g, uint16(0), 22, 53, 67, 68, 80, uint16(32768+g.n(28000)), g.u16())
}

func (g *Gen) tcp() []byte {
	flags := pick(g, byte(0x02), 0x02, 0x12, 0x10, 0x18, 0x04, 0x14, 0x11, 0x01, 0x03, 0x06, 0x29, 0x00, 0xff, byte(g.n(256)))
	data := g.bytes(pick(g, 0, 0, g.n(64), g.n(1400)))
	s := TCPSeg(g.u16(), g.port(), g.r.Uint32(), g.r.Uint32(), flags, pick(g, uint16(0), 1, 65535, g.u16()), g.tcpOpts(), data)
	switch g.n(12) {
	case 0:
		s[12] = byte(g.n(16))<<4 | s[12]&15 // data offset: past the end, inside the header
	case 1:
		binary.BigEndian.PutUint16(s[18:], g.u16()) // urgent pointer
	case 2:
		s[12] |= byte(g.n(16)) // reserved bits, AccECN
	}
	return s
}

// tcpOpts is a TCP option list: MSS, window scale, SACK permitted, SACK
// blocks, timestamps, NOP, EOL, fast open, MPTCP, and ones whose length
// is wrong.
func (g *Gen) tcpOpts() []byte {
	var o []byte
	for i := g.n(6); i > 0; i-- {
		switch g.n(10) {
		case 0:
			o = binary.BigEndian.AppendUint16(append(o, 2, 4), pick(g, uint16(0), 1, 536, 1460, 65535, g.u16()))
		case 1:
			o = append(o, 3, 3, byte(g.n(20)))
		case 2:
			o = append(o, 4, 2)
		case 3:
			k := g.n(5)
			o = append(append(o, 5, byte(2+8*k)), g.bytes(8*k)...)
		case 4:
			o = append(append(o, 8, 10), g.bytes(8)...)
		case 5:
			o = append(o, 1)
		case 6:
			o = append(o, 0)
		case 7:
			l := pick(g, 0, 1, 2, 3, 40, 255)
			o = append(append(o, byte(g.n(256)), byte(l)), g.bytes(min(max(l-2, 0), 8))...)
		case 8:
			l := pick(g, 2, 6, 10, 18)
			o = append(append(o, 34, byte(l)), g.bytes(l-2)...)
		default:
			l := 4 + g.n(20)
			o = append(append(o, 30, byte(l)), g.bytes(l-2)...)
		}
	}
	if len(o) > 40 {
		o = o[:40]
	}
	for len(o)%4 != 0 {
		o = append(o, 1)
	}
	return o
}

func (g *Gen) udp() []byte {
	data := g.bytes(pick(g, 0, g.n(64), g.n(512), g.n(1400)))
	s := UDPSeg(g.u16(), g.port(), data)
	if g.chance(0.2) {
		binary.BigEndian.PutUint16(s[4:], pick(g, uint16(0), 7, 8, uint16(len(s)-1), uint16(len(s)+1), 0xffff, g.u16()))
	}
	return s
}

func (g *Gen) echo4() []byte {
	return append([]byte{8, 0, 0, 0, byte(g.n(256)), byte(g.n(256)), 0, byte(g.n(256))}, g.bytes(g.n(1000))...)
}

// icmp4 is an ICMP message: echo, the errors quoting a datagram the
// service might have sent (its address, port 7), redirect, timestamp,
// unknown types.
func (g *Gen) icmp4() []byte {
	switch g.n(8) {
	case 0, 1:
		return g.echo4()
	case 2, 3, 4:
		typ := pick(g, byte(3), 3, 11, 12, 4, 5)
		m := []byte{typ, byte(g.n(16)), 0, 0, 0, 0, 0, 0}
		switch typ {
		case 3:
			binary.BigEndian.PutUint16(m[6:], pick(g, uint16(0), 68, 576, 1280, 1500, 0xffff, g.u16())) // next-hop MTU (code 4)
		case 12:
			m[4] = byte(g.n(40))
		case 5:
			x := g.a.on(byte(g.n(256)))
			copy(m[4:], x[:])
		}
		dst := g.src4()
		proto := pick(g, byte(6), 17, 1, byte(g.n(256)))
		q := IP4(g.a.SvcIP, dst, proto, 64, g.u16(), 0, nil, nil)
		binary.BigEndian.PutUint16(q[2:], uint16(20+g.n(1500)))
		if g.chance(0.1) {
			q[0] = 0x40 | byte(g.n(16))
		}
		q = append(q, g.bytes(8)...)
		binary.BigEndian.PutUint16(q[20:], pick(g, g.a.EchoPort, g.u16()))
		return append(m, q[:pick(g, len(q), len(q), g.n(len(q)))]...)
	case 5:
		return append([]byte{byte(13 + 2*g.n(3)), 0, 0, 0, 0, 1, 0, 1}, g.bytes(pick(g, 12, g.n(20)))...)
	}
	return append([]byte{byte(g.n(256)), byte(g.n(256)), 0, 0}, g.bytes(g.n(64))...)
}

// ip4Opts is an IPv4 option list: record route, timestamps, source
// routes, router alert, security, unknown options, lengths wrong.
func (g *Gen) ip4Opts() []byte {
	var o []byte
	for i := 1 + g.n(4); i > 0; i-- {
		switch g.n(8) {
		case 0:
			k := 1 + g.n(9)
			o = append(append(o, 7, byte(3+4*k), byte(pick(g, 4, 4+4*g.n(k+1), g.n(256)))), g.bytes(4*k)...)
		case 1:
			k := 1 + g.n(4)
			fl := byte(pick(g, 0, 1, 3, g.n(16)))
			o = append(append(o, 68, byte(4+8*k), byte(pick(g, 5, 5+8*g.n(k+1), g.n(256))), byte(g.n(16))<<4|fl), g.bytes(8*k)...)
		case 2:
			k := 1 + g.n(4)
			o = append(append(o, pick(g, byte(131), 137), byte(3+4*k), byte(pick(g, 4, 4+4*g.n(k+1), g.n(256)))), g.bytes(4*k)...)
		case 3:
			o = append(o, 148, 4, 0, 0)
		case 4:
			o = append(append(o, 130, 11), g.bytes(9)...)
		case 5:
			o = append(o, pick(g, byte(0), 1))
		default:
			l := pick(g, 0, 1, 2, 4, 40, g.n(256))
			o = append(append(o, byte(g.n(256)), byte(l)), g.bytes(min(max(l-2, 0), 10))...)
		}
	}
	if len(o) > 40 {
		o = o[:40]
	}
	for len(o)%4 != 0 {
		o = append(o, 0)
	}
	return o
}

// frag4 is a datagram (an echo request, UDP to port 7, a TCP segment)
// as fragments, then disordered: shuffled, duplicated, one lost, overlaps,
// offsets past 64 KiB, a middle one without MF, a last one with it.
func (g *Gen) frag4() [][]byte {
	src, dst := g.src4(), g.a.SvcIP
	var l4 []byte
	proto := pick(g, byte(1), 17, 17, 6)
	switch proto {
	case 1:
		l4 = append([]byte{8, 0, 0, 0, 0, 1, 0, 1}, g.bytes(g.n(5000))...)
	case 17:
		l4 = UDPSeg(g.u16(), g.a.EchoPort, g.bytes(g.n(5000)))
	default:
		l4 = TCPSeg(g.u16(), g.a.EchoPort, g.r.Uint32(), 0, 0x02, 65535, nil, g.bytes(g.n(3000)))
	}
	whole := Eth(g.a.SvcMAC, g.mac(), 0x0800, IP4(src, dst, proto, 64, 0, 0, nil, l4))
	FixSums(whole)
	l4 = whole[34:]
	id, size := g.u16(), max(8*(1+g.n(185)), (len(l4)/24+8)&^7) // up to 24 pieces
	type piece struct {
		off int
		mf  bool
		b   []byte
	}
	var ps []piece
	for off := 0; off < len(l4); off += size {
		end := min(off+size, len(l4))
		ps = append(ps, piece{off, end < len(l4), l4[off:end]})
	}
	for i := g.n(3); i > 0; i-- {
		j := g.n(len(ps))
		switch g.n(7) {
		case 0:
			g.r.Shuffle(len(ps), func(a, b int) { ps[a], ps[b] = ps[b], ps[a] })
		case 1:
			ps = append(ps, ps[j])
		case 2:
			if len(ps) > 1 {
				ps = append(ps[:j], ps[j+1:]...)
			}
		case 3:
			ps[j].off = max(ps[j].off-8*(1+g.n(4)), 0)
		case 4:
			ps[j].off = 8 * (8191 - g.n(8))
		case 5:
			ps[j].mf = !ps[j].mf
		default:
			ps = append(ps, piece{8 * g.n(len(l4)/8+1), g.chance(0.5), g.bytes(8 * g.n(40))})
		}
	}
	var fs [][]byte
	for _, p := range ps {
		fl := uint16(p.off/8) & 0x1fff
		if p.mf {
			fl |= 0x2000
		}
		f := Eth(g.a.SvcMAC, g.mac(), 0x0800, IP4(src, dst, proto, 64, id, fl, nil, p.b))
		FixSums(f)
		fs = append(fs, f)
	}
	return fs
}

// frag6 is frag4 for IPv6: fragment headers after an optional hop-by-hop
// header, the same disorder, and a first fragment too small to hold the
// upper-layer header.
func (g *Gen) frag6() [][]byte {
	src, dst := g.src6(), g.a.SvcLL
	if len(g.slaac) > 0 && g.chance(0.3) {
		dst = g.slaac[0]
	}
	var l4 []byte
	next := pick(g, byte(58), 17, 17, 6)
	switch next {
	case 58:
		l4 = append([]byte{128, 0, 0, 0, 0, 1, 0, 1}, g.bytes(g.n(5000))...)
	case 17:
		l4 = UDPSeg(g.u16(), g.a.EchoPort, g.bytes(g.n(5000)))
	default:
		l4 = TCPSeg(g.u16(), g.a.EchoPort, g.r.Uint32(), 0, 0x02, 65535, nil, g.bytes(g.n(3000)))
	}
	whole := Eth(g.a.SvcMAC, g.mac(), 0x86dd, IP6(src, dst, next, 64, l4))
	FixSums(whole)
	l4 = whole[54:]
	id, size := g.r.Uint32(), max(8*(1+g.n(170)), (len(l4)/24+8)&^7) // up to 24 pieces
	if g.chance(0.1) && len(l4) <= 24*8 {
		size = 8 // the upper-layer header spans fragments
	}
	type piece struct {
		off int
		m   bool
		b   []byte
	}
	var ps []piece
	for off := 0; off < len(l4); off += size {
		end := min(off+size, len(l4))
		ps = append(ps, piece{off, end < len(l4), l4[off:end]})
	}
	for i := g.n(3); i > 0; i-- {
		j := g.n(len(ps))
		switch g.n(6) {
		case 0:
			g.r.Shuffle(len(ps), func(a, b int) { ps[a], ps[b] = ps[b], ps[a] })
		case 1:
			ps = append(ps, ps[j])
		case 2:
			if len(ps) > 1 {
				ps = append(ps[:j], ps[j+1:]...)
			}
		case 3:
			ps[j].off = max(ps[j].off-8*(1+g.n(4)), 0)
		case 4:
			ps[j].off = 8 * (8191 - g.n(8))
		default:
			ps[j].m = !ps[j].m
		}
	}
	hbh := g.chance(0.2)
	var fs [][]byte
	for _, p := range ps {
		fh := []byte{next, 0, 0, 0}
		v := uint16(p.off/8) << 3
		if p.m {
			v |= 1
		}
		binary.BigEndian.PutUint16(fh[2:], v)
		fh = binary.BigEndian.AppendUint32(fh, id)
		first := byte(44)
		pl := append(fh, p.b...)
		if hbh {
			pl = append([]byte{44, 0, 1, 4, 0, 0, 0, 0}, pl...)
			first = 0
		}
		f := Eth(g.a.SvcMAC, g.mac(), 0x86dd, IP6(src, dst, first, 64, pl))
		fs = append(fs, f)
	}
	return fs
}

// icmp6 is an ICMPv6 message: echo, errors quoting a datagram of the
// service's (packet too big with any MTU), MLD, unknown types.
func (g *Gen) icmp6() []byte {
	switch g.n(8) {
	case 0, 1:
		return append([]byte{128, 0, 0, 0, byte(g.n(256)), byte(g.n(256)), 0, 1}, g.bytes(g.n(1000))...)
	case 2, 3, 4:
		typ := pick(g, byte(1), 2, 2, 3, 4)
		m := []byte{typ, byte(g.n(8)), 0, 0, 0, 0, 0, 0}
		switch typ {
		case 2:
			binary.BigEndian.PutUint32(m[4:], pick(g, uint32(0), 1279, 1280, 1500, 65536, g.r.Uint32()))
		case 4:
			binary.BigEndian.PutUint32(m[4:], uint32(pick(g, 6, 40, 42, g.n(1500))))
		}
		from := g.a.SvcLL
		if len(g.slaac) > 0 && g.chance(0.5) {
			from = g.slaac[g.n(len(g.slaac))]
		}
		q := IP6(from, g.src6(), pick(g, byte(6), 17, 58, 0, 44), 64, g.bytes(8+g.n(40)))
		binary.BigEndian.PutUint16(q[40:], pick(g, g.a.EchoPort, g.u16()))
		return append(m, q[:pick(g, len(q), len(q), g.n(len(q)))]...)
	case 5:
		typ := pick(g, byte(130), 131, 132, 143)
		m := []byte{typ, 0, 0, 0, 0, 0, 0, 0}
		if typ == 143 {
			m[7] = byte(g.n(4))
			for i := 0; i < int(m[7]); i++ {
				m = append(m, byte(1+g.n(6)), 0, 0, 1)
				m = append(m, 0xff, 0x02)
				m = append(m, g.bytes(18)...)
			}
		} else {
			m = append(m, 0xff, 0x02)
			m = append(m, g.bytes(14+pick(g, 0, 0, 4, g.n(20)))...)
		}
		return m
	}
	return append([]byte{byte(g.n(256)), byte(g.n(256)), 0, 0}, g.bytes(g.n(64))...)
}

// ndp is a neighbour discovery message from one of the fuzzer's hosts:
// router solicitations and advertisements (prefixes, MTU, routes, DNS,
// options of length 0), neighbour solicitations and advertisements
// (about the service's own addresses too), redirects.
func (g *Gen) ndp() []byte {
	src := [16]byte{0xfe, 0x80}
	g.r.Read(src[8:])
	dst := pick(g, [16]byte{0xff, 0x02, 15: 1}, g.a.SvcLL)
	opt := func(typ byte, body []byte) []byte { // body padded to 8n-2 bytes
		for (len(body)+2)%8 != 0 {
			body = append(body, 0)
		}
		return append([]byte{typ, byte((len(body) + 2) / 8)}, body...)
	}
	slla := func() []byte { m := HostMAC(src[:]); return opt(pick(g, byte(1), 2), m[:]) }
	var m []byte
	switch g.n(5) {
	case 0:
		m = append([]byte{133, 0, 0, 0, 0, 0, 0, 0}, slla()...)
	case 1, 2:
		m = []byte{134, 0, 0, 0, byte(pick(g, 64, 0, 255)), byte(g.n(256)), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint16(m[6:], pick(g, uint16(0), 1800, 9000, g.u16()))
		binary.BigEndian.PutUint32(m[8:], pick(g, uint32(0), 30000, g.r.Uint32()))
		m = append(m, slla()...)
		for i := g.n(4); i >= 0; i-- {
			switch g.n(7) {
			case 0, 1, 2:
				p := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(g.n(16))}
				plen := byte(64)
				if g.chance(0.2) {
					g.r.Read(p[:])
					plen = byte(g.n(129))
				}
				b := []byte{plen, pick(g, byte(0xc0), 0xc0, 0x80, 0x40, byte(g.n(256)))}
				b = binary.BigEndian.AppendUint32(b, pick(g, uint32(0), 7200, 0xffffffff, g.r.Uint32()))
				b = binary.BigEndian.AppendUint32(b, pick(g, uint32(0), 3600, 0xffffffff, g.r.Uint32()))
				b = append(b, 0, 0, 0, 0)
				m = append(m, opt(3, append(b, p[:]...))...)
				if plen == 64 && b[1]&0x40 != 0 {
					g.learn(p)
				}
			case 3:
				m = append(m, opt(5, binary.BigEndian.AppendUint32([]byte{0, 0}, pick(g, uint32(0), 1279, 1280, 1500, 9000, g.r.Uint32())))...)
			case 4:
				b := []byte{byte(g.n(129)), byte(g.n(256))}
				b = binary.BigEndian.AppendUint32(b, g.r.Uint32())
				m = append(m, opt(24, append(b, g.bytes(8*g.n(3))...))...)
			case 5:
				b := binary.BigEndian.AppendUint32([]byte{0, 0}, g.r.Uint32())
				m = append(m, opt(pick(g, byte(25), 31), append(b, g.bytes(16*g.n(3))...))...)
			default:
				m = append(m, byte(g.n(256)), byte(pick(g, 0, 1, g.n(4))), 0, 0, 0, 0, 0, 0) // 0: the whole message is invalid
			}
		}
	case 3:
		t := pick(g, g.a.SvcLL, g.src6(), [16]byte{0xff, 0x02, 15: 1})
		if len(g.slaac) > 0 && g.chance(0.3) {
			t = g.slaac[g.n(len(g.slaac))]
		}
		m = append([]byte{135, 0, 0, 0, 0, 0, 0, 0}, t[:]...)
		if g.chance(0.2) {
			src = [16]byte{} // duplicate address detection: no option
		} else {
			m = append(m, slla()...)
		}
		dst = pick(g, Solicited(t), t, [16]byte{0xff, 0x02, 15: 1})
	default:
		t := pick(g, src, g.a.SvcLL, g.src6())
		if len(g.slaac) > 0 && g.chance(0.3) {
			t = g.slaac[g.n(len(g.slaac))]
		}
		if g.chance(0.3) {
			m = append([]byte{137, 0, 0, 0, 0, 0, 0, 0}, t[:]...)
			d := g.src6()
			m = append(m, d[:]...)
			m = append(m, opt(4, append(make([]byte, 6), g.bytes(48)...))...)
		} else {
			m = append([]byte{136, 0, 0, 0, byte(g.n(8)) << 5, 0, 0, 0}, t[:]...)
			tm := HostMAC(t[:])
			m = append(m, opt(2, tm[:])...)
		}
	}
	f := Eth(g.dstMAC(true, dst[:]), HostMAC(src[:]), 0x86dd, IP6(src, dst, 58, byte(pick(g, 255, 255, 255, 64)), m))
	FixSums(f)
	g.breakSums(f)
	return f
}

// learn records the service's address in a prefix it was told of.
func (g *Gen) learn(p [16]byte) {
	copy(p[8:], g.a.SvcLL[8:])
	for _, a := range g.slaac {
		if a == p {
			return
		}
	}
	if len(g.slaac) < 16 {
		g.slaac = append(g.slaac, p)
	}
}

// dhcp is a DHCP server's reply to the service's client: any type, its
// transaction or another, options of every length (overrunning the
// message, missing the end).
func (g *Gen) dhcp() []byte {
	var o []byte
	for i := g.n(8); i > 0; i-- {
		code := pick(g, byte(1), 3, 6, 51, 54, 0, 53, byte(g.n(256)))
		l := pick(g, 4, 4, 0, 1, 8, g.n(256))
		o = append(append(o, code, byte(l)), g.bytes(min(l, 40))...)
	}
	if g.chance(0.8) {
		o = append(o, 255)
	}
	xid := g.XID
	if g.chance(0.2) {
		xid = g.r.Uint32()
	}
	yi := g.a.on(byte(g.n(256)))
	f := g.dhcpReply(pick(g, g.a.SvcMAC, g.a.SvcMAC, g.mac()), xid, pick(g, byte(dhcpOffer), dhcpAck, dhcpNak, byte(g.n(256))), yi, o)
	if g.chance(0.2) {
		m := f[42:]
		m[pick(g, 0, 1, 2, 236, 237, 240, 241, 242)] = byte(g.n(256))
	}
	if g.chance(0.2) {
		binary.BigEndian.PutUint16(f[38:], pick(g, uint16(0), 8, 247, 248, 0xffff, g.u16())) // the UDP length
	}
	FixSums(f)
	if g.chance(0.2) {
		f = f[:max(14, len(f)-g.n(len(f)-14))]
	}
	return f
}

// ether is a frame of another kind: VLAN tags, an 802.3 length instead
// of a type, IPv6 under the IPv4 type and back, RARP, LLDP, unknown
// types.
func (g *Gen) ether() []byte {
	var inner []byte
	switch g.n(3) {
	case 0:
		inner = g.v4(17, g.udp(), nil)[14:]
	case 1:
		inner = g.v6(58, g.icmp6())[14:]
	default:
		inner = g.arp()[14:]
	}
	typ := pick(g, uint16(0x8100), 0x88a8, 0x0800, 0x86dd, 0x0806, 0x8035, 0x88cc, uint16(g.n(0x600)), g.u16())
	if typ == 0x8100 || typ == 0x88a8 {
		inner = append([]byte{0, byte(g.n(256)), pick(g, byte(8), 0x86), pick(g, byte(0), 0xdd, 6)}, inner...)
	}
	dst := pick(g, g.a.SvcMAC, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, [6]byte{0x33, 0x33, 0, 0, 0, 1}, [6]byte{1, 0, 0x5e, 0, 0, 1}, g.mac())
	return Eth(dst, g.mac(), typ, inner)
}

func (g *Gen) arp() []byte {
	a := make([]byte, 28)
	binary.BigEndian.PutUint16(a[0:], 1)
	binary.BigEndian.PutUint16(a[2:], 0x0800)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], pick(g, uint16(1), 1, 2, 2, g.u16()))
	sip := g.src4()
	smac := HostMAC(sip[:])
	copy(a[8:], smac[:])
	copy(a[14:], sip[:])
	if a[7] == 2 {
		copy(a[18:], g.a.SvcMAC[:])
	}
	tip := pick(g, g.a.SvcIP, g.a.SvcIP, g.dst4(), sip) // sip: gratuitous
	copy(a[24:], tip[:])
	if g.chance(0.1) {
		g.r.Read(a[:6]) // hardware and protocol types, lengths
	}
	dst := pick(g, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, g.a.SvcMAC)
	f := Eth(dst, smac, 0x0806, a)
	if g.chance(0.3) {
		f = append(f, make([]byte, 18)...) // padded to 60 bytes, as on a real wire
	}
	return f
}

// Mutate changes a few bytes of f, mostly in its headers: bits flipped,
// interesting values, cut short, grown, bytes inserted, deleted, copied.
func (g *Gen) Mutate(f []byte) []byte {
	at := func() int {
		if g.chance(0.7) {
			return g.n(min(len(f), 14+60+60))
		}
		return g.n(len(f))
	}
	for i := 1 + g.n(4); i > 0; i-- {
		switch g.n(9) {
		case 0:
			f[at()] ^= 1 << g.n(8)
		case 1:
			f[at()] = pick(g, byte(0), 1, 0x7f, 0x80, 0xff, 0x40, 0x3f, 0xfe)
		case 2:
			if o := at(); o+2 <= len(f) {
				binary.BigEndian.PutUint16(f[o:], pick(g, uint16(0), 1, 0x7fff, 0x8000, 0xffff, 0xfffe, uint16(len(f)), uint16(len(f)-14), uint16(len(f)-34)))
			}
		case 3:
			f = f[:14+g.n(len(f)-13)]
		case 4:
			f = append(f, g.bytes(1+g.n(64))...)
		case 5:
			o := at()
			f = append(f[:o], f[min(o+1+g.n(16), len(f)):]...)
		case 6:
			o := at()
			f = append(f[:o], append(g.bytes(1+g.n(16)), f[o:]...)...)
		case 7:
			a, b := at(), at()
			copy(f[a:], f[b:min(b+1+g.n(16), len(f))])
		default:
			if o := at(); o+4 <= len(f) {
				binary.BigEndian.PutUint32(f[o:], g.r.Uint32())
			}
		}
		if len(f) < 14 {
			f = append(f, make([]byte, 14-len(f))...)
		}
	}
	return f[:min(len(f), 1518)]
}

// Observe records a frame on the wire for replays and, for a frame from
// the service, queues what the fuzzer's hosts answer: ARP replies and
// neighbour advertisements for their addresses, and the rest of a
// handshake the service's SYN-ACK starts (the ACK, data, a FIN or a
// RST). It runs in the wire's goroutines: it must not block.
func (g *Gen) Observe(f []byte, out bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.seen) < 256 {
		g.seen = append(g.seen, bytes.Clone(f))
	} else {
		g.seen[g.seenAt] = bytes.Clone(f)
		g.seenAt = (g.seenAt + 1) % len(g.seen)
	}
	if !out || len(g.answers) > 1024 || len(f) < 42 {
		return
	}
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0806: // who has?
		a := f[14:]
		tip := [4]byte(a[24:28])
		if binary.BigEndian.Uint16(a[6:]) != 1 || tip == g.a.PeerIP || tip == g.a.SvcIP {
			return
		}
		r := make([]byte, 28)
		copy(r, a[:6])
		r[7] = 2
		m := HostMAC(tip[:])
		copy(r[8:], m[:])
		copy(r[14:], tip[:])
		copy(r[18:], a[8:18])
		g.answers = append(g.answers, Eth(g.a.SvcMAC, m, 0x0806, r))
	case 0x0800:
		ip := f[14:]
		ihl := int(ip[0]&15) * 4
		if ip[9] != 6 || len(ip) < ihl+20 || [4]byte(ip[16:20]) == g.a.PeerIP {
			return
		}
		src, dst := [4]byte(ip[12:16]), [4]byte(ip[16:20])
		for _, s := range g.complete(ip[ihl:]) {
			r := Eth(g.a.SvcMAC, HostMAC(dst[:]), 0x0800, IP4(dst, src, 6, 64, 0, 0, nil, s))
			FixSums(r)
			g.answers = append(g.answers, r)
		}
	case 0x86dd:
		ip := f[14:]
		if len(ip) < 40+24 || [16]byte(ip[24:40]) == g.a.PeerLL {
			return
		}
		src, dst := [16]byte(ip[8:24]), [16]byte(ip[24:40])
		switch ip[6] {
		case 58: // a neighbour solicitation for one of the fuzzer's hosts
			m := ip[40:]
			t := [16]byte(m[8:24])
			if m[0] != 135 || t == g.a.PeerLL || t == g.a.SvcLL {
				return
			}
			hm := HostMAC(t[:])
			na := append([]byte{136, 0, 0, 0, 0x60, 0, 0, 0}, t[:]...)
			na = append(na, 2, 1)
			na = append(na, hm[:]...)
			r := Eth(g.a.SvcMAC, hm, 0x86dd, IP6(t, src, 58, 255, na))
			FixSums(r)
			g.answers = append(g.answers, r)
		case 6:
			for _, s := range g.complete(ip[40:]) {
				r := Eth(g.a.SvcMAC, HostMAC(dst[:]), 0x86dd, IP6(dst, src, 6, 64, s))
				FixSums(r)
				g.answers = append(g.answers, r)
			}
		}
	}
}

// complete answers TCP segment s of the service if it is a SYN-ACK: the
// ACK and data, then a FIN (or a RST), as segments from its destination,
// with timestamps if the SYN-ACK has them (they were negotiated).
func (g *Gen) complete(s []byte) [][]byte {
	if len(s) < 20 || s[13] != 0x12 {
		return nil
	}
	sport, dport := binary.BigEndian.Uint16(s), binary.BigEndian.Uint16(s[2:])
	seq, ack := binary.BigEndian.Uint32(s[8:]), binary.BigEndian.Uint32(s[4:])+1 // ours, and the service's next
	var opts []byte
	for o := s[20:min(int(s[12]>>4)*4, len(s))]; len(o) >= 2 && o[0] != 0; {
		if o[0] == 1 {
			o = o[1:]
			continue
		}
		if o[0] == 8 && o[1] == 10 && len(o) >= 10 {
			opts = append([]byte{1, 1, 8, 10, 0, 0, 0, 1}, o[2:6]...)
		}
		if o[1] < 2 || int(o[1]) > len(o) {
			break
		}
		o = o[o[1]:]
	}
	data := make([]byte, 1+g.ar.Intn(1000))
	g.ar.Read(data)
	g.handshakes++
	r := [][]byte{
		TCPSeg(dport, sport, seq, ack, 0x10, 65535, opts, nil),
		TCPSeg(dport, sport, seq, ack, 0x18, 65535, opts, data),
	}
	if g.ar.Intn(5) > 0 {
		r = append(r, TCPSeg(dport, sport, seq+uint32(len(data)), ack, 0x11, 65535, opts, nil))
	} else {
		r = append(r, TCPSeg(dport, sport, seq+uint32(len(data)), 0, 0x04, 0, nil, nil))
	}
	return r
}

// scrub makes sure f carries none of the peer's addresses (its IPv4
// address, MAC, IPv6 interface identifier), so that it cannot take over
// the connections the test checks; true if it changed f.
func (g *Gen) scrub(f []byte) bool {
	changed := false
	for _, p := range [][]byte{g.a.PeerIP[:], g.a.PeerMAC[:], g.a.PeerLL[8:]} {
		for i := 0; ; {
			j := bytes.Index(f[i:], p)
			if j < 0 {
				break
			}
			f[i+j+len(p)-1] ^= 0x40
			changed = true
			i += j + 1
		}
	}
	return changed
}

// SwapAddrs turns a frame round: MACs, IP addresses, ports.
func SwapAddrs(f []byte) {
	if len(f) < 14 {
		return
	}
	var m [6]byte
	copy(m[:], f[:6])
	copy(f[:6], f[6:12])
	copy(f[6:12], m[:])
	sw := func(a, b []byte) {
		for i := range a {
			a[i], b[i] = b[i], a[i]
		}
	}
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0800:
		if len(f) >= 14+24 {
			sw(f[26:30], f[30:34])
			sw(f[34:36], f[36:38])
		}
	case 0x86dd:
		if len(f) >= 14+44 {
			sw(f[22:38], f[38:54])
			sw(f[54:56], f[56:58])
		}
	}
	FixSums(f)
}

// Frames and checksums.

func Eth(dst, src [6]byte, typ uint16, payload []byte) []byte {
	f := make([]byte, 14, 14+len(payload))
	copy(f, dst[:])
	copy(f[6:], src[:])
	binary.BigEndian.PutUint16(f[12:], typ)
	return append(f, payload...)
}

func IP4(src, dst [4]byte, proto, ttl byte, id, frag uint16, opts, payload []byte) []byte {
	h := make([]byte, 20, 20+len(opts)+len(payload))
	h = append(h, opts...)
	h[0] = 0x40 | byte(len(h)/4)
	binary.BigEndian.PutUint16(h[2:], uint16(len(h)+len(payload)))
	binary.BigEndian.PutUint16(h[4:], id)
	binary.BigEndian.PutUint16(h[6:], frag)
	h[8], h[9] = ttl, proto
	copy(h[12:], src[:])
	copy(h[16:], dst[:])
	return append(h, payload...)
}

func IP6(src, dst [16]byte, next, hop byte, payload []byte) []byte {
	h := make([]byte, 40, 40+len(payload))
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	h[6], h[7] = next, hop
	copy(h[8:], src[:])
	copy(h[24:], dst[:])
	return append(h, payload...)
}

func TCPSeg(sport, dport uint16, seq, ack uint32, flags byte, win uint16, opts, data []byte) []byte {
	s := make([]byte, 20, 20+len(opts)+len(data))
	binary.BigEndian.PutUint16(s, sport)
	binary.BigEndian.PutUint16(s[2:], dport)
	binary.BigEndian.PutUint32(s[4:], seq)
	binary.BigEndian.PutUint32(s[8:], ack)
	s = append(s, opts...)
	s[12] = byte(len(s)/4) << 4
	s[13] = flags
	binary.BigEndian.PutUint16(s[14:], win)
	return append(s, data...)
}

func UDPSeg(sport, dport uint16, data []byte) []byte {
	s := make([]byte, 8, 8+len(data))
	binary.BigEndian.PutUint16(s, sport)
	binary.BigEndian.PutUint16(s[2:], dport)
	binary.BigEndian.PutUint16(s[4:], uint16(8+len(data)))
	return append(s, data...)
}

// FixSums makes f's IPv4 header checksum and, in a datagram that is not
// a fragment, its TCP, UDP, ICMP or ICMPv6 checksum right for what f
// holds (behind IPv6 extension headers too), as far as f's lengths let
// them be found.
func FixSums(f []byte) {
	if len(f) < 14 {
		return
	}
	p := f[14:]
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0800:
		if len(p) < 20 {
			return
		}
		ihl := int(p[0]&15) * 4
		if ihl < 20 || ihl > len(p) {
			return
		}
		end := int(binary.BigEndian.Uint16(p[2:]))
		if end < ihl || end > len(p) {
			end = len(p)
		}
		p[10], p[11] = 0, 0
		binary.BigEndian.PutUint16(p[10:], ^sum16(0, p[:ihl]))
		if binary.BigEndian.Uint16(p[6:])&0x3fff != 0 {
			return // a fragment: the datagram's checksum was made whole
		}
		src, dst := p[12:16], p[16:20]
		fixL4(p[9], p[ihl:end], func(l int) uint16 {
			return sum16(sum16(sum16(0, src), dst), []byte{0, p[9], byte(l >> 8), byte(l)})
		})
	case 0x86dd:
		if len(p) < 40 {
			return
		}
		end := min(40+int(binary.BigEndian.Uint16(p[4:])), len(p))
		next, off := p[6], 40
	walk:
		for off < end {
			switch next {
			case 0, 43, 60:
				if off+2 > end {
					return
				}
				next, off = p[off], off+(int(p[off+1])+1)*8
			case 44:
				if off+8 > end || binary.BigEndian.Uint16(p[off+2:])&0xfff9 != 0 {
					return // a fragment
				}
				next, off = p[off], off+8
			default:
				break walk
			}
		}
		if off > end {
			return
		}
		src, dst := p[8:24], p[24:40]
		fixL4(next, p[off:end], func(l int) uint16 {
			return sum16(sum16(sum16(0, src), dst), []byte{0, 0, byte(l >> 8), byte(l), 0, 0, 0, next})
		})
	}
}

func fixL4(proto byte, s []byte, pseudo func(int) uint16) {
	switch proto {
	case 6:
		if len(s) >= 20 {
			s[16], s[17] = 0, 0
			binary.BigEndian.PutUint16(s[16:], ^sum16(pseudo(len(s)), s))
		}
	case 17:
		if len(s) >= 8 {
			if l := int(binary.BigEndian.Uint16(s[4:])); l >= 8 && l <= len(s) {
				s = s[:l]
			}
			s[6], s[7] = 0, 0
			c := ^sum16(pseudo(len(s)), s)
			if c == 0 {
				c = 0xffff
			}
			binary.BigEndian.PutUint16(s[6:], c)
		}
	case 1:
		if len(s) >= 4 {
			s[2], s[3] = 0, 0
			binary.BigEndian.PutUint16(s[2:], ^sum16(0, s))
		}
	case 58:
		if len(s) >= 4 {
			s[2], s[3] = 0, 0
			binary.BigEndian.PutUint16(s[2:], ^sum16(pseudo(len(s)), s))
		}
	}
}

// DHCP message types and the options' magic cookie.
const (
	dhcpOffer = 2
	dhcpAck   = 5
	dhcpNak   = 6
	dhcpMagic = 0x63825363
)

// dhcpReply is the server's DHCP message of type typ to the client mac,
// transaction xid, leasing yiaddr; opts, if given, replaces the options
// after the message type.
func (g *Gen) dhcpReply(mac [6]byte, xid uint32, typ byte, yiaddr [4]byte, opts []byte) []byte {
	a := &g.a
	b := make([]byte, 240, 400)
	b[0], b[1], b[2] = 2, 1, 6
	binary.BigEndian.PutUint32(b[4:], xid)
	copy(b[16:], yiaddr[:])
	copy(b[20:], a.DHCPServer[:])
	copy(b[28:], mac[:])
	binary.BigEndian.PutUint32(b[236:], dhcpMagic)
	b = append(b, 53, 1, typ)
	if opts == nil {
		b = append(b, 1, 4, 255, 255, 255, 0, 3, 4)
		b = append(b, a.PeerIP[:]...)
		b = append(b, 6, 4)
		b = append(b, a.DHCPServer[:]...)
		b = append(b, 51, 4, 0, 1, 0x51, 0x80, 54, 4)
		b = append(b, a.DHCPServer[:]...)
		b = append(b, 255)
	} else {
		b = append(b, opts...)
	}
	u := UDPSeg(67, 68, b)
	f := Eth(a.SvcMAC, a.DHCPServerMAC, 0x0800, IP4(a.DHCPServer, [4]byte{255, 255, 255, 255}, 17, 64, 0, 0, nil, u))
	FixSums(f)
	return f
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
