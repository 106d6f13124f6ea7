package netsvc

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// sendOnly is a kernel whose NIC takes room more records (EAGAIN
// when room is 0) and remembers each call's frames.
type sendOnly struct {
	kernelCalls
	room  int
	calls [][][]byte
}

func (k *sendOnly) NICSendRecords(b []byte) (int, syscall.Errno) {
	var got [][]byte
	done := 0
	for done < len(b) && k.room > 0 {
		k.room--
		l := int(b[done]) | int(b[done+1])<<8
		got = append(got, bytes.Clone(b[done+4:done+4+l]))
		done += (4 + l + 3) &^ 3
	}
	if len(got) == 0 {
		return 0, unix.EAGAIN
	}
	k.calls = append(k.calls, got)
	return done, 0
}

func frameOf(size int, seed byte) []byte {
	f := make([]byte, size)
	for i := range f {
		f[i] = seed + byte(i)
	}
	return f
}

// write gives the link packets whose bytes are frames, a link header's
// worth in the link header and the rest as payload.
func write(t *testing.T, l *nicLink, frames ...[]byte) int {
	var pkts stack.PacketBufferList
	for _, f := range frames {
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 14, Payload: buffer.MakeWithData(f[14:])})
		copy(pkt.LinkHeader().Push(14), f[:14])
		pkts.PushBack(pkt)
	}
	n, e := l.WritePackets(pkts)
	if e != nil {
		t.Fatalf("WritePackets: %v", e)
	}
	pkts.DecRef()
	return n
}

// TestLinkTxBatch: the frames the stack writes leave in one system call
// per batch (the channel endpoint's path made one SysNICSend per frame),
// byte for byte and in order; a full transmit queue keeps the rest, which
// go first the next time; oversize packets and a full batch drop.
func TestLinkTxBatch(t *testing.T) {
	k := &sendOnly{room: 1000}
	s := &service{k: k, kick: make(chan struct{}, 1)}
	s.link = newNICLink(1500, tcpip.LinkAddress(svcMAC[:]), false, s.wake)
	var want [][]byte
	for i, size := range []int{14, 15, 60, 61, 62, 63, 1514, 1518, 100, 999} {
		want = append(want, frameOf(size, byte(i)))
	}
	if n := write(t, s.link, want[:3]...) + write(t, s.link, want[3:7]...) + write(t, s.link, want[7:]...); n != len(want) {
		t.Fatalf("WritePackets took %d of %d", n, len(want))
	}
	select {
	case <-s.kick:
	default:
		t.Fatal("WritePackets did not wake the loop")
	}
	if !s.framesOut() {
		t.Fatal("framesOut sent nothing")
	}
	if len(k.calls) != 1 || !equalFrames(k.calls[0], want) {
		t.Fatalf("sent in %d calls %v, want one call of the %d frames", len(k.calls), sizes(k.calls), len(want))
	}

	// The queue takes 4, then is full.
	k.calls, k.room = nil, 4
	write(t, s.link, want...)
	s.framesOut()
	k.room = 0
	s.framesOut()
	if s.txRetry == nil {
		t.Fatal("a full transmit queue set no retry")
	}
	more := frameOf(70, 99)
	write(t, s.link, more)
	k.room = 1000
	s.framesOut()
	if len(k.calls) != 3 || !equalFrames(k.calls[0], want[:4]) || !equalFrames(k.calls[1], want[4:]) || !equalFrames(k.calls[2], [][]byte{more}) {
		t.Fatalf("after a full queue: calls %v, want [4] [6] [1]", sizes(k.calls))
	}

	// Oversize, and more than a batch holds.
	k.calls, k.room = nil, 2*txMaxFrames
	big := make([]byte, 1519)
	if n := write(t, s.link, big); n != 0 || s.link.txDropped != 1 {
		t.Fatalf("a %d-byte frame: taken %d, dropped %d", len(big), n, s.link.txDropped)
	}
	var many [][]byte
	for i := 0; i < txMaxFrames+5; i++ {
		many = append(many, tcpFrame(8080, byte(i)))
	}
	if n := write(t, s.link, many...); n != txMaxFrames {
		t.Fatalf("%d frames of one flow: taken %d, want %d", len(many), n, txMaxFrames)
	}
	s.framesOut()
	if len(k.calls) != 1 || !equalFrames(k.calls[0], many[:txMaxFrames]) {
		t.Fatalf("a full batch: calls %v", sizes(k.calls))
	}
}

// tcpFrame is an IPv4 TCP frame of 64 bytes from the guest's port to the
// host's 40000, its last byte b.
func tcpFrame(port uint16, b byte) []byte {
	f := make([]byte, 64)
	f[12], f[13] = 0x08, 0x00
	ip := f[14:]
	ip[0], ip[9] = 0x45, 6
	copy(ip[12:], []byte{10, 0, 2, 15, 10, 0, 2, 2})
	ip[20], ip[21], ip[22], ip[23] = byte(port>>8), byte(port), 40000>>8, 40000&0xff
	f[63] = b
	return f
}

// TestLinkTxSparseFlows: past txMaxFrames, a flow with txSparse frames
// waiting loses its next, while a flow with fewer (a health check's
// SYN-ACK behind bulk senders) still gets in, up to txHardMax; the
// buckets start empty again with the next batch.
func TestLinkTxSparseFlows(t *testing.T) {
	k := &sendOnly{room: 4 * txMaxFrames}
	s := &service{k: k, kick: make(chan struct{}, 1)}
	s.link = newNICLink(1500, tcpip.LinkAddress(svcMAC[:]), false, s.wake)
	// Bulk: 32 flows fill the queue.
	for i := 0; i < txMaxFrames; i++ {
		if write(t, s.link, tcpFrame(uint16(1000+i%32), byte(i))) != 1 {
			t.Fatalf("bulk frame %d refused below txMaxFrames", i)
		}
	}
	if write(t, s.link, tcpFrame(1000, 0)) != 0 {
		t.Fatal("a bulk flow's frame past txMaxFrames was taken")
	}
	// A sparse flow (one whose bucket no bulk flow shares): txSparse
	// frames in, the next refused.
	bulk := map[int]bool{}
	for i := 0; i < 32; i++ {
		bulk[flowBucket(tcpFrame(uint16(1000+i), 0))] = true
	}
	port := uint16(8080)
	for bulk[flowBucket(tcpFrame(port, 0))] {
		port++
	}
	for i := 0; i < txSparse; i++ {
		if write(t, s.link, tcpFrame(port, byte(i))) != 1 {
			t.Fatalf("a sparse flow's frame %d refused past txMaxFrames", i)
		}
	}
	if write(t, s.link, tcpFrame(port, 9)) != 0 {
		t.Fatal("a flow with txSparse frames waiting got another in past txMaxFrames")
	}
	// Many new flows: in up to txHardMax, not beyond.
	taken := 0
	for p := 20000; p < 20000+2*txBuckets*txSparse; p++ {
		taken += write(t, s.link, tcpFrame(uint16(p), 0))
	}
	if got := s.link.txFrames; got != txHardMax {
		t.Fatalf("after many sparse flows %d frames wait, want the hard bound %d (%d taken)", got, txHardMax, taken)
	}
	s.framesOut()
	if len(k.calls) != 1 || len(k.calls[0]) != txHardMax {
		t.Fatalf("calls %v, want one of %d", sizes(k.calls), txHardMax)
	}
	// The next batch: the bulk flow gets in again.
	if write(t, s.link, tcpFrame(1000, 1)) != 1 {
		t.Fatal("a bulk flow's frame refused in a new batch")
	}
}

func equalFrames(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sizes(calls [][][]byte) [][]int {
	var r [][]int
	for _, c := range calls {
		var s []int
		for _, f := range c {
			s = append(s, len(f))
		}
		r = append(r, s)
	}
	return r
}

// discard is a kernel whose NIC takes every frame.
type discard struct{ kernelCalls }

func (discard) NICSendRecords(b []byte) (int, syscall.Errno) { return len(b), 0 }
func (discard) NICSend([]byte) syscall.Errno                 { return 0 }

// txPacket is a 1514-byte frame as the stack hands it to a link: the
// Ethernet header in the link header, the rest as payload.
func txPacket(payload []byte) *stack.PacketBuffer {
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 14, Payload: buffer.MakeWithData(payload)})
	pkt.LinkHeader().Push(14)
	return pkt
}

// BenchmarkLinkTx: the transmit path per frame, from the stack's
// WritePackets to the kernel call, batches of batch frames: the link
// endpoint's (records, one call a batch).
func BenchmarkLinkTx(b *testing.B) {
	for _, batch := range []int{1, 16} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := &service{k: discard{}, kick: make(chan struct{}, 1)}
			s.link = newNICLink(1500, tcpip.LinkAddress(svcMAC[:]), false, s.wake)
			payload := make([]byte, 1500)
			b.SetBytes(1514)
			b.ReportAllocs()
			for i := 0; i < b.N; i += batch {
				var pkts stack.PacketBufferList
				for range batch {
					pkts.PushBack(txPacket(payload))
				}
				s.link.WritePackets(pkts)
				pkts.DecRef()
				s.framesOut()
			}
		})
	}
}

// BenchmarkChannelTx is the same through gVisor's channel endpoint, as
// the service sent before its link endpoint: the queue's clone of each
// packet, a view of it, one SysNICSend each.
func BenchmarkChannelTx(b *testing.B) {
	for _, batch := range []int{1, 16} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			k := discard{}
			link := channel.New(1024, 1514, tcpip.LinkAddress(svcMAC[:]))
			payload := make([]byte, 1500)
			b.SetBytes(1514)
			b.ReportAllocs()
			for i := 0; i < b.N; i += batch {
				var pkts stack.PacketBufferList
				for range batch {
					pkts.PushBack(txPacket(payload))
				}
				link.WritePackets(pkts)
				pkts.DecRef()
				for {
					pkt := link.Read()
					if pkt == nil {
						break
					}
					v := pkt.ToView()
					k.NICSend(v.AsSlice())
					v.Release()
					pkt.DecRef()
				}
			}
		})
	}
}

// rxFrame is an Ethernet frame of an IPv4 or IPv6 TCP segment with
// opts bytes of TCP options and payload bytes of payload.
func rxFrame(v6 bool, opts, payload int, fragment bool) []byte {
	tl := header.TCPMinimumSize + opts
	var ip []byte
	if v6 {
		ip = make([]byte, header.IPv6MinimumSize+tl+payload)
		header.IPv6(ip).Encode(&header.IPv6Fields{PayloadLength: uint16(tl + payload), TransportProtocol: header.TCPProtocolNumber, HopLimit: 64,
			SrcAddr: tcpip.AddrFrom16([16]byte{0xfe, 0x80, 15: 1}), DstAddr: tcpip.AddrFrom16([16]byte{0xfe, 0x80, 15: 2})})
	} else {
		ip = make([]byte, header.IPv4MinimumSize+tl+payload)
		f := &header.IPv4Fields{TotalLength: uint16(len(ip)), Protocol: uint8(header.TCPProtocolNumber), TTL: 64,
			SrcAddr: tcpip.AddrFrom4([4]byte{10, 0, 2, 2}), DstAddr: tcpip.AddrFrom4([4]byte{10, 0, 2, 15})}
		if fragment {
			f.Flags = header.IPv4FlagMoreFragments
		}
		header.IPv4(ip).Encode(f)
	}
	hl := len(ip) - tl - payload
	header.TCP(ip[hl:]).Encode(&header.TCPFields{SrcPort: 1, DstPort: 2, DataOffset: uint8(tl), Flags: header.TCPFlagAck, WindowSize: 1000})
	for i := range payload {
		ip[hl+tl+i] = byte(i)
	}
	eth := make([]byte, header.EthernetMinimumSize, header.EthernetMinimumSize+len(ip))
	typ := header.IPv4ProtocolNumber
	if v6 {
		typ = header.IPv6ProtocolNumber
	}
	header.Ethernet(eth).Encode(&header.EthernetFields{Type: typ})
	return append(eth, ip...)
}

// TestRxBufferSplit: a TCP segment with a payload reaches the stack with
// its headers (Ethernet, IP, TCP with its options) in a view of their own
// and the payload in another; anything else (a fragment, a short
// payload, a frame cut inside its headers, UDP) stays one view. The
// bytes are the frame's either way.
func TestRxBufferSplit(t *testing.T) {
	udp := rxFrame(false, 0, 1000, false)
	header.IPv4(udp[header.EthernetMinimumSize:]).Encode(&header.IPv4Fields{TotalLength: 1040, Protocol: uint8(header.UDPProtocolNumber), TTL: 64})
	for _, c := range []struct {
		name  string
		frame []byte
		head  int // the first view's length; 0: one view
	}{
		{"IPv4, 12 bytes of options", rxFrame(false, 12, 1448, false), 14 + 20 + 32},
		{"IPv6", rxFrame(true, 0, 60000, false), 14 + 40 + 20},
		{"IPv4, a fragment", rxFrame(false, 0, 1448, true), 0},
		{"IPv4, a short payload", rxFrame(false, 0, splitMin-1, false), 0},
		{"IPv4, cut in its options", rxFrame(false, 40, 0, false)[:14+20+30], 0},
		{"IPv4 UDP", udp, 0},
	} {
		b := rxBuffer(c.frame)
		views := b.AsViewList()
		n := 0
		for v := views.Front(); v != nil; v = v.Next() {
			n++
		}
		switch {
		case c.head == 0 && n != 1:
			t.Errorf("%s: %d views, want 1", c.name, n)
		case c.head != 0 && (n != 2 || views.Front().Size() != c.head):
			t.Errorf("%s: %d views, the first of %d bytes; want 2, the first %d", c.name, n, views.Front().Size(), c.head)
		}
		if !bytes.Equal(b.Flatten(), c.frame) {
			t.Errorf("%s: the buffer's bytes differ from the frame's", c.name)
		}
		b.Release()
	}
}
