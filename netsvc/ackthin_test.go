package netsvc

import (
	"bytes"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// ackFrame is an IPv4 TCP segment from the peer's port sp to 80 with
// window 512, padded to Ethernet's 60 bytes as a NIC delivers short
// frames.
func ackFrame(sp uint16, ack uint32, flags header.TCPFlags, opts, payload []byte) []byte {
	return winFrame(sp, ack, 512, flags, opts, payload)
}

func winFrame(sp uint16, ack uint32, win uint16, flags header.TCPFlags, opts, payload []byte) []byte {
	tl := 20 + 20 + len(opts) + len(payload)
	f := make([]byte, max(14+tl, 60))
	copy(f[0:], svcMAC[:])
	copy(f[6:], peerMAC[:])
	f[12], f[13] = 0x08, 0x00
	ip := header.IPv4(f[14:])
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(tl), TTL: 64, Protocol: 6, SrcAddr: tcpip.AddrFrom4(peerIP), DstAddr: tcpip.AddrFrom4(svcIP)})
	ip.SetChecksum(^ip.CalculateChecksum())
	tc := header.TCP(f[34 : 14+tl])
	tc.Encode(&header.TCPFields{SrcPort: sp, DstPort: 80, SeqNum: 7, AckNum: ack, DataOffset: uint8(20 + len(opts)), Flags: flags, WindowSize: win})
	copy(tc[20:], opts)
	copy(tc[20+len(opts):], payload)
	xsum := header.PseudoHeaderChecksum(6, tcpip.AddrFrom4(peerIP), tcpip.AddrFrom4(svcIP), uint16(len(tc)))
	tc.SetChecksum(^checksum.Checksum(tc, xsum))
	return f
}

// v6Frame is an IPv6 TCP segment from the peer's port sp to 80.
func v6Frame(sp uint16, ack uint32, payload []byte) []byte {
	pl := 20 + len(payload)
	f := make([]byte, 14+40+pl)
	copy(f[0:], svcMAC[:])
	copy(f[6:], peerMAC[:])
	f[12], f[13] = 0x86, 0xdd
	src, dst := tcpip.AddrFrom16(peerLL), tcpip.AddrFrom16(svcLL)
	header.IPv6(f[14:]).Encode(&header.IPv6Fields{PayloadLength: uint16(pl), TransportProtocol: header.TCPProtocolNumber, HopLimit: 64, SrcAddr: src, DstAddr: dst})
	tc := header.TCP(f[54:])
	tc.Encode(&header.TCPFields{SrcPort: sp, DstPort: 80, SeqNum: 7, AckNum: ack, DataOffset: 20, Flags: header.TCPFlagAck, WindowSize: 512})
	copy(tc[20:], payload)
	tc.SetChecksum(^checksum.Checksum(tc, header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(pl))))
	return f
}

// TestScanBatch: in a batch, a plain ACK goes when the frame of its flow
// before it acknowledges less and the one after it is a checked plain
// ACK acknowledging more, and only then; a frame whose window differs
// from the one before it in its flow is kept from GRO.
func TestScanBatch(t *testing.T) {
	ack := header.TCPFlagAck
	a := func(sp uint16, n uint32) []byte { return ackFrame(sp, n, ack, nil, nil) }
	ts := []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}
	sack := []byte{1, 1, 5, 10, 0, 0, 0x10, 0, 0, 0, 0x20, 0}
	bad := a(1, 900)
	bad[len(bad)-7] ^= 1 // in the TCP header's urgent pointer: the checksum fails
	badIP := a(1, 900)
	badIP[24] ^= 1 // the IPv4 header checksum fails
	data := func(n uint32, win uint16) []byte { return winFrame(1, n, win, ack, nil, []byte("data")) }
	for _, c := range []struct {
		name    string
		frames  [][]byte
		flagged int // index of a frame the NIC vouches for (-1: none)
		skip    string
		noGRO   string // "" if not checked
	}{
		{"one flow's ACKs", [][]byte{a(1, 100), a(1, 200), a(1, 300), a(1, 400)}, -1, "nyyn", ""},
		{"with timestamps", [][]byte{ackFrame(1, 100, ack, ts, nil), ackFrame(1, 200, ack, ts, nil), ackFrame(1, 300, ack, ts, nil)}, -1, "nyn", ""},
		{"duplicates stay", [][]byte{a(1, 100), a(1, 100), a(1, 100)}, -1, "nnn", ""},
		{"duplicates, then more", [][]byte{a(1, 100), a(1, 100), a(1, 200)}, -1, "nnn", ""},
		{"a repeat, then more", [][]byte{a(1, 100), a(1, 200), a(1, 200), a(1, 300)}, -1, "nnnn", ""},
		{"an older one after", [][]byte{a(1, 100), a(1, 300), a(1, 200)}, -1, "nnn", ""},
		{"across the wrap", [][]byte{a(1, 0xfffffe00), a(1, 0xffffff00), a(1, 0x10)}, -1, "nyn", ""},
		{"two flows interleaved", [][]byte{a(1, 100), a(2, 100), a(1, 200), a(2, 200), a(1, 300), a(2, 300)}, -1, "nnyynn", ""},
		{"data between", [][]byte{a(1, 100), data(200, 512), a(1, 300)}, -1, "nnn", ""},
		{"data before", [][]byte{data(100, 512), a(1, 200), a(1, 300)}, -1, "nyn", ""},
		{"SACK stays", [][]byte{a(1, 50), ackFrame(1, 100, ack, sack, nil), a(1, 200)}, -1, "nnn", ""},
		{"SACK supersedes nothing", [][]byte{a(1, 50), a(1, 100), ackFrame(1, 200, ack, sack, nil)}, -1, "nnn", ""},
		{"FIN", [][]byte{a(1, 50), a(1, 100), ackFrame(1, 200, ack|header.TCPFlagFin, nil, nil)}, -1, "nnn", ""},
		{"a damaged ACK stands for none", [][]byte{a(1, 50), a(1, 100), bad}, -1, "nnn", ""},
		{"the NIC's word covers TCP, not IP", [][]byte{a(1, 50), a(1, 100), badIP}, 2, "nnn", ""},
		{"the NIC's word", [][]byte{a(1, 50), a(1, 100), bad}, 2, "nyn", ""},
		{"not TCP between", [][]byte{a(1, 50), a(1, 100), arpFrame(), a(1, 200)}, -1, "nynn", ""},
		{"IPv6", [][]byte{v6Frame(1, 100, nil), v6Frame(1, 200, nil), v6Frame(1, 300, nil)}, -1, "nyn", ""},
		{"IPv6, a damaged one after", [][]byte{v6Frame(1, 100, nil), v6Frame(1, 200, nil), func() []byte { f := v6Frame(1, 300, nil); f[len(f)-1] ^= 1; return f }()}, -1, "nnn", ""},
		{"windows", [][]byte{data(1, 512), data(1, 512), data(1, 0), data(1, 0), winFrame(1, 1, 65535, ack, nil, nil)}, -1, "nnnnn", "nnyny"},
	} {
		recs := make([]rxRec, len(c.frames))
		for i, f := range c.frames {
			recs[i] = rxRec{f: f, csumOK: i == c.flagged}
		}
		segs := scanBatch(recs)
		skip, noGRO := "", ""
		for _, r := range recs {
			skip += map[bool]string{true: "y", false: "n"}[r.skip]
			noGRO += map[bool]string{true: "y", false: "n"}[r.noGRO]
		}
		if skip != c.skip {
			t.Errorf("%s: skipped %s, want %s", c.name, skip, c.skip)
		}
		if c.noGRO != "" && noGRO != c.noGRO {
			t.Errorf("%s: kept from GRO %s, want %s", c.name, noGRO, c.noGRO)
		}
		// Every TCP segment is marked so, damaged or not, and counted
		// unless skipped (a round yields for gVisor's TCP processors
		// after a few); ARP is neither.
		want := 0
		for i, r := range recs {
			tcp := !bytes.Equal(c.frames[i], arpFrame())
			if r.tcp != tcp {
				t.Errorf("%s: frame %d: tcp %v, want %v", c.name, i, r.tcp, tcp)
			}
			if tcp && c.skip[i] == 'n' {
				want++
			}
		}
		if segs != want {
			t.Errorf("%s: %d segments counted, want %d", c.name, segs, want)
		}
	}

	// Past thinFlows flows, the others pass untouched.
	var recs []rxRec
	for round := uint32(1); round <= 3; round++ {
		for p := uint16(1); p <= thinFlows+4; p++ {
			recs = append(recs, rxRec{f: a(p, 100*round)})
		}
	}
	scanBatch(recs)
	skipped := 0
	for _, r := range recs {
		if r.skip {
			skipped++
		}
	}
	if skipped != thinFlows {
		t.Errorf("%d flows of three ACKs each: %d skipped, want %d", thinFlows+4, skipped, thinFlows)
	}
}

// arpFrame is a broadcast ARP request.
func arpFrame() []byte {
	f := make([]byte, 60)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:], peerMAC[:])
	f[12], f[13] = 0x08, 0x06
	return f
}

// TestGroFrame: which segments GRO is given.
func TestGroFrame(t *testing.T) {
	payload := make([]byte, 100)
	good := winFrame(1, 1, 512, header.TCPFlagAck, nil, payload)
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1
	opts := bytes.Clone(good[:34]) // an IPv4 header with 4 bytes of options
	opts = append(opts, 1, 1, 1, 0)
	opts = append(opts, good[34:]...)
	ip := header.IPv4(opts[14:])
	ip.SetHeaderLength(24)
	ip.SetTotalLength(ip.TotalLength() + 4)
	ip.SetChecksum(0)
	ip.SetChecksum(^ip.CalculateChecksum())
	for _, c := range []struct {
		name   string
		f      []byte
		csumOK bool
		want   bool
	}{
		{"data", good, false, true},
		{"data, the NIC's word", good, true, true},
		{"a wrong checksum", bad, false, false},
		{"a wrong checksum, the NIC's word", bad, true, true},
		{"a plain ACK", ackFrame(1, 1, header.TCPFlagAck, nil, nil), false, false},
		{"a plain ACK with timestamps, unpadded", ackFrame(1, 1, header.TCPFlagAck, []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}, nil), true, false},
		{"padded", winFrame(1, 1, 512, header.TCPFlagAck, nil, []byte("x")), true, false},
		{"IPv4 options", opts, true, false},
		{"not TCP", arpFrame(), true, false},
		{"IPv6 data", v6Frame(1, 1, payload), false, true},
		{"IPv6 data, a wrong checksum", func() []byte { f := v6Frame(1, 1, payload); f[len(f)-1] ^= 1; return f }(), false, false},
		{"an IPv6 plain ACK", v6Frame(1, 1, nil), true, false},
	} {
		if got := groFrame(c.f, c.csumOK); got != c.want {
			t.Errorf("%s: groFrame %v, want %v", c.name, got, c.want)
		}
	}
}
