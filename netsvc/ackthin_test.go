package netsvc

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// ackFrame is an IPv4 TCP segment from the peer's port sp to 80, padded
// to Ethernet's 60 bytes as a NIC delivers short frames.
func ackFrame(sp uint16, ack uint32, flags header.TCPFlags, opts, payload []byte) []byte {
	tl := 20 + 20 + len(opts) + len(payload)
	f := make([]byte, max(14+tl, 60))
	copy(f[0:], svcMAC[:])
	copy(f[6:], peerMAC[:])
	f[12], f[13] = 0x08, 0x00
	ip := header.IPv4(f[14:])
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(tl), TTL: 64, Protocol: 6, SrcAddr: tcpip.AddrFrom4(peerIP), DstAddr: tcpip.AddrFrom4(svcIP)})
	ip.SetChecksum(^ip.CalculateChecksum())
	tc := header.TCP(f[34 : 14+tl])
	tc.Encode(&header.TCPFields{SrcPort: sp, DstPort: 80, SeqNum: 7, AckNum: ack, DataOffset: uint8(20 + len(opts)), Flags: flags, WindowSize: 512})
	copy(tc[20:], opts)
	copy(tc[20+len(opts):], payload)
	xsum := header.PseudoHeaderChecksum(6, tcpip.AddrFrom4(peerIP), tcpip.AddrFrom4(svcIP), uint16(len(tc)))
	tc.SetChecksum(^checksum.Checksum(tc, xsum))
	return f
}

// TestThinAcks: in a batch, a plain ACK goes when its flow's next frame
// is a plain ACK acknowledging more, and only then.
func TestThinAcks(t *testing.T) {
	ack := header.TCPFlagAck
	ts := []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}
	sack := []byte{1, 1, 5, 10, 0, 0, 0x10, 0, 0, 0, 0x20, 0}
	bad := ackFrame(1, 900, ack, nil, nil)
	bad[len(bad)-7] ^= 1 // in the TCP header's window: the checksum fails
	for _, c := range []struct {
		name   string
		frames [][]byte
		skip   string
	}{
		{"one flow's ACKs", [][]byte{ackFrame(1, 100, ack, nil, nil), ackFrame(1, 200, ack, nil, nil), ackFrame(1, 300, ack, nil, nil)}, "yyn"},
		{"with timestamps", [][]byte{ackFrame(1, 100, ack, ts, nil), ackFrame(1, 200, ack, ts, nil)}, "yn"},
		{"duplicates stay", [][]byte{ackFrame(1, 100, ack, nil, nil), ackFrame(1, 100, ack, nil, nil), ackFrame(1, 100, ack, nil, nil)}, "nnn"},
		{"an older one after", [][]byte{ackFrame(1, 300, ack, nil, nil), ackFrame(1, 200, ack, nil, nil)}, "nn"},
		{"across the wrap", [][]byte{ackFrame(1, 0xffffff00, ack, nil, nil), ackFrame(1, 0x10, ack, nil, nil)}, "yn"},
		{"two flows interleaved", [][]byte{ackFrame(1, 100, ack, nil, nil), ackFrame(2, 100, ack, nil, nil), ackFrame(1, 200, ack, nil, nil), ackFrame(2, 200, ack, nil, nil)}, "yynn"},
		{"data between", [][]byte{ackFrame(1, 100, ack, nil, nil), ackFrame(1, 200, ack|header.TCPFlagPsh, nil, []byte("x")), ackFrame(1, 300, ack, nil, nil)}, "nnn"},
		{"data after", [][]byte{ackFrame(1, 100, ack, nil, nil), ackFrame(1, 200, ack, nil, []byte("data"))}, "nn"},
		{"SACK stays", [][]byte{ackFrame(1, 100, ack, sack, nil), ackFrame(1, 200, ack, nil, nil)}, "nn"},
		{"SACK supersedes nothing", [][]byte{ackFrame(1, 100, ack, nil, nil), ackFrame(1, 200, ack, sack, nil)}, "nn"},
		{"FIN", [][]byte{ackFrame(1, 100, ack, nil, nil), ackFrame(1, 200, ack|header.TCPFlagFin, nil, nil)}, "nn"},
		{"a damaged ACK stands for none", [][]byte{ackFrame(1, 100, ack, nil, nil), bad}, "nn"},
		{"not TCP between", [][]byte{ackFrame(1, 100, ack, nil, nil), arpFrame(), ackFrame(1, 200, ack, nil, nil)}, "ynn"},
	} {
		recs := make([]rxRec, len(c.frames))
		for i, f := range c.frames {
			recs[i].f = f
		}
		thinAcks(recs)
		got := ""
		for _, r := range recs {
			got += map[bool]string{true: "y", false: "n"}[r.skip]
		}
		if got != c.skip {
			t.Errorf("%s: skipped %s, want %s", c.name, got, c.skip)
		}
	}

	// Past thinFlows flows, the others pass untouched.
	var recs []rxRec
	for round := uint32(1); round <= 2; round++ {
		for p := uint16(1); p <= thinFlows+4; p++ {
			recs = append(recs, rxRec{f: ackFrame(p, 100*round, ack, nil, nil)})
		}
	}
	thinAcks(recs)
	skipped := 0
	for _, r := range recs {
		if r.skip {
			skipped++
		}
	}
	if skipped != thinFlows {
		t.Errorf("%d flows of two ACKs each: %d skipped, want %d", thinFlows+4, skipped, thinFlows)
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
