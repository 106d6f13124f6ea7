package nettest

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"yolk/kernel/abi"
)

// The device's side of the transmit offloads (abi.NICRecordOffload), as
// virtio-net behind a tap does them: a partial TCP checksum completed, a
// TCP segment of up to 64 KiB cut into frames of gso_size payload bytes,
// each with its own IP length, IPv4 identification, sequence number and
// checksums, FIN and PSH only on the last. Each segment's checksum is
// made from the partial one the sender left at csum_start+csum_offset,
// its length changed to the segment's (as Linux's tcp_gso_segment does),
// never computed afresh: a wrong offset or partial sum gives a wrong
// checksum, which the receiver refuses. A header the kernel would refuse
// gives false.

// offloadHdr is a record's offload header.
type offloadHdr struct {
	flags, gsoType                         uint8
	hdrLen, gsoSize, csumStart, csumOffset uint16
}

func parseOffload(b []byte) offloadHdr {
	u := func(o int) uint16 { return binary.LittleEndian.Uint16(b[o:]) }
	return offloadHdr{flags: b[0], gsoType: b[1], hdrLen: u(2), gsoSize: u(4), csumStart: u(6), csumOffset: u(8)}
}

// segment applies h to frame and returns the frames the device sends.
func segment(h offloadHdr, frame []byte) ([][]byte, bool) {
	if h.flags&^1 != 0 || h.flags == 0 && h.gsoType != 0 {
		return nil, false
	}
	if h.flags != 0 && (h.csumStart < 14 || int(h.csumStart)+int(h.csumOffset)+2 > len(frame)) {
		return nil, false
	}
	if h.gsoType == 0 {
		if len(frame) > abi.NICMaxFrame {
			return nil, false
		}
		if h.flags != 0 {
			finishCsum(frame, h)
		}
		return [][]byte{frame}, true
	}
	v6 := h.gsoType == 4
	if h.gsoType != 1 && !v6 || h.gsoSize == 0 || int(h.hdrLen) > len(frame) || len(frame) > abi.NICMaxGSOFrame {
		return nil, false
	}
	hl, mss := int(h.hdrLen), int(h.gsoSize)
	ipOff, tcpOff := 14, int(h.csumStart)
	if tcpOff+header.TCPMinimumSize > hl {
		return nil, false
	}
	seq0 := binary.BigEndian.Uint32(frame[tcpOff+4:])
	flags0 := frame[tcpOff+13]
	csumAt := int(h.csumStart) + int(h.csumOffset)
	partial := binary.BigEndian.Uint16(frame[csumAt:])
	oldLen := uint16(len(frame) - int(h.csumStart))
	var out [][]byte
	for off := hl; off < len(frame); off += mss {
		end := min(off+mss, len(frame))
		f := make([]byte, 0, hl+end-off)
		f = append(append(f, frame[:hl]...), frame[off:end]...)
		ip, tcp := f[ipOff:], header.TCP(f[tcpOff:])
		tcp.SetSequenceNumber(seq0 + uint32(off-hl))
		if end < len(frame) {
			tcp.SetFlags(flags0 &^ uint8(header.TCPFlagFin|header.TCPFlagPsh))
		}
		if v6 {
			header.IPv6(ip).SetPayloadLength(uint16(len(f) - ipOff - header.IPv6MinimumSize))
		} else {
			h4 := header.IPv4(ip)
			h4.SetTotalLength(uint16(len(f) - ipOff))
			h4.SetID(h4.ID() + uint16(len(out)))
			h4.SetChecksum(0)
			h4.SetChecksum(^h4.CalculateChecksum())
		}
		p := checksum.Combine(checksum.Combine(partial, ^oldLen), uint16(len(f)-int(h.csumStart)))
		binary.BigEndian.PutUint16(f[csumAt:], p)
		finishCsum(f, h)
		out = append(out, f)
	}
	return out, true
}

// finishCsum completes frame's partial checksum: the sum of the bytes
// from csum_start, the field's partial sum among them, folded and
// inverted into the field.
func finishCsum(frame []byte, h offloadHdr) {
	at := int(h.csumStart) + int(h.csumOffset)
	sum := checksum.Checksum(frame[h.csumStart:], 0)
	binary.BigEndian.PutUint16(frame[at:], ^sum)
}
