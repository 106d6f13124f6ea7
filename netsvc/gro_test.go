package netsvc

import (
	"bytes"
	"io"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"yolk/kernel/abi"
)

// linkStack is a netstack on a nicLink without offloads, at svcIP, the
// peer's address resolved (its answers go out at once, not behind
// ARP), listening on TCP port 80.
func linkStack(t *testing.T) (*nicLink, *stack.Stack, *gonet.TCPListener) {
	l := newNICLink(1500, tcpip.LinkAddress(svcMAC[:]), false, func() {})
	st := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
	})
	t.Cleanup(st.Destroy)
	if e := st.CreateNIC(1, l); e != nil {
		t.Fatal(e)
	}
	st.AddProtocolAddress(1, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4(svcIP), PrefixLen: 24}}, stack.AddressProperties{})
	sub, _ := tcpip.NewSubnet(tcpip.AddrFrom4([4]byte{10, 0, 2, 0}), tcpip.MaskFromBytes([]byte{255, 255, 255, 0}))
	st.SetRouteTable([]tcpip.Route{{Destination: sub, NIC: 1}})
	if e := st.AddStaticNeighbor(1, ipv4.ProtocolNumber, tcpip.AddrFrom4(peerIP), tcpip.LinkAddress(peerMAC[:])); e != nil {
		t.Fatal(e)
	}
	ln, err := gonet.ListenTCP(st, tcpip.FullAddress{NIC: 1, Port: 80}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return l, st, ln
}

// TestRxGRO: a batch's in-order segments of one flow reach the stack's
// TCP as one segment (the link's GRO), and the stream arrives whole and
// in order — also when a batch misses a segment that a later batch
// brings, and when a batch mixes two flows. Nothing is held past the
// batch's flushRx.
func TestRxGRO(t *testing.T) {
	l, st, ln := linkStack(t)
	d := l.dispatcherOf()

	// seg is a TCP segment from the peer's port to 80 with window win.
	win := uint16(65535)
	seg := func(port uint16, seq, ack uint32, flags header.TCPFlags, payload []byte) []byte {
		f := make([]byte, 14+20+20+len(payload))
		copy(f[0:], svcMAC[:])
		copy(f[6:], peerMAC[:])
		f[12], f[13] = 0x08, 0x00
		ip := header.IPv4(f[14:])
		ip.Encode(&header.IPv4Fields{TotalLength: uint16(40 + len(payload)), TTL: 64, Protocol: 6, SrcAddr: tcpip.AddrFrom4(peerIP), DstAddr: tcpip.AddrFrom4(svcIP)})
		ip.SetChecksum(^ip.CalculateChecksum())
		tc := header.TCP(f[34:])
		tc.Encode(&header.TCPFields{SrcPort: port, DstPort: 80, SeqNum: seq, AckNum: ack, DataOffset: 20, Flags: flags, WindowSize: win})
		copy(tc[20:], payload)
		xsum := header.PseudoHeaderChecksum(6, tcpip.AddrFrom4(peerIP), tcpip.AddrFrom4(svcIP), uint16(20+len(payload)))
		tc.SetChecksum(^checksum.Checksum(tc, xsum))
		return f
	}
	// synAck waits for the stack's SYN-ACK to port and returns its
	// sequence number.
	synAck := func(port uint16) uint32 {
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
			b, _ := l.takeTx(nil)
			for len(b) >= 4 {
				w := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
				n := int(w & abi.NICRecordLenMask)
				f := b[4 : 4+n]
				b = b[min((4+n+abi.NICRecordAlign-1)&^(abi.NICRecordAlign-1), len(b)):]
				if len(f) < 54 {
					continue
				}
				tc := header.TCP(f[34:])
				if tc.DestinationPort() == port && tc.Flags() == header.TCPFlagSyn|header.TCPFlagAck {
					return tc.SequenceNumber()
				}
			}
		}
		t.Fatalf("no SYN-ACK to port %d", port)
		return 0
	}
	type flow struct {
		port     uint16
		seq, ack uint32
		c        *gonet.TCPConn
		sent     []byte
	}
	open := func(port uint16) *flow {
		l.deliver(d, seg(port, 1000, 0, header.TCPFlagSyn, nil), false, true)
		l.flushRx()
		iss := synAck(port)
		l.deliver(d, seg(port, 1001, iss+1, header.TCPFlagAck, nil), false, true)
		l.flushRx()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return &flow{port: port, seq: 1001, ack: iss + 1, c: c.(*gonet.TCPConn)}
	}
	a := open(40001)
	b := open(40002)
	pay := func(f *flow, n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(len(f.sent) + i + int(f.port))
		}
		return p
	}
	// next is f's next segment of n bytes (sent: f's stream so far).
	next := func(f *flow, n int) []byte {
		p := pay(f, n)
		fr := seg(f.port, f.seq, f.ack, header.TCPFlagAck, p)
		f.seq += uint32(n)
		f.sent = append(f.sent, p...)
		return fr
	}
	check := func(f *flow, from int) {
		t.Helper()
		want := f.sent[from:]
		got := make([]byte, len(want))
		f.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(f.c, got); err != nil {
			t.Fatalf("port %d: read %d bytes: %v", f.port, len(want), err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("port %d: the stream differs from what was sent", f.port)
		}
	}
	segs := func() uint64 { return st.Stats().TCP.ValidSegmentsReceived.Value() }

	// Ten segments of one flow in one batch: one segment for TCP.
	before, from := segs(), len(a.sent)
	for i := 0; i < 10; i++ {
		l.deliver(d, next(a, 1448), false, true)
	}
	l.flushRx()
	if got := segs() - before; got != 1 {
		t.Errorf("ten in-order segments of one flow in a batch: TCP saw %d segments, want 1", got)
	}
	check(a, from)

	// Two flows interleaved, and a missing segment a later batch brings:
	// each flow whole and in order.
	fromA, fromB := len(a.sent), len(b.sent)
	before = segs()
	var held []byte
	for i := 0; i < 8; i++ {
		l.deliver(d, next(a, 1000), false, true)
		fr := next(b, 1000)
		if i == 3 {
			held = fr
			continue
		}
		l.deliver(d, fr, false, true)
	}
	l.flushRx()
	l.deliver(d, held, false, true)
	l.flushRx()
	if got := segs() - before; got > 4 {
		t.Errorf("two flows of eight segments, one gap: TCP saw %d segments, want at most 4", got)
	}
	check(a, fromA)
	check(b, fromB)

	// A segment whose checksum is wrong is dropped, not merged: the
	// stream is whole once it comes again, right. A frame with Ethernet
	// padding (a 1-byte segment, padded to 60 bytes) after two in order
	// goes up unmerged: the padding is not payload.
	fromA, fromB = len(a.sent), len(b.sent)
	l.deliver(d, next(a, 500), false, true)
	l.deliver(d, next(a, 500), false, true)
	good := next(a, 500)
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 0xff
	l.deliver(d, bad, false, true)
	l.deliver(d, next(a, 500), false, true)
	l.deliver(d, next(b, 1000), false, true)
	l.deliver(d, next(b, 1000), false, true)
	fr := next(b, 1)
	l.deliver(d, append(fr, make([]byte, 60-len(fr))...), true, true) // flagged: GRO checks nothing
	l.flushRx()
	l.deliver(d, good, false, true)
	l.deliver(d, next(b, 700), false, true) // nothing extra before it
	l.flushRx()
	check(a, fromA)
	check(b, fromB)

	// A window update right after data in one batch reaches TCP: the
	// data closes the window, the plain ACK after it opens it, and a
	// write goes out at once (merged into the data, the ACK's window
	// was lost until a zero-window probe, a second or more later).
	fromA = len(a.sent)
	win = 0
	l.deliver(d, next(a, 1000), false, true)
	win = 65535
	l.deliver(d, seg(a.port, a.seq, a.ack, header.TCPFlagAck, nil), false, true)
	l.flushRx()
	check(a, fromA)
	time.Sleep(20 * time.Millisecond)
	l.takeTx(nil) // the stack's ACKs so far
	if _, err := a.c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	sent := 0
	for end := time.Now().Add(500 * time.Millisecond); sent == 0 && time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		b, _ := l.takeTx(nil)
		for len(b) >= 4 {
			w := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
			n := int(w & abi.NICRecordLenMask)
			if f := b[4 : 4+n]; len(f) > 54 && header.TCP(f[34:]).DestinationPort() == a.port {
				sent += len(f) - 54
			}
			b = b[min((4+n+abi.NICRecordAlign-1)&^(abi.NICRecordAlign-1), len(b)):]
		}
	}
	if sent != 5 {
		t.Errorf("a write after a window update that followed data in one batch: %d bytes sent within 500 ms, want 5", sent)
	}
}
