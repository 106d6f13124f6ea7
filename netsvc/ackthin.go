package netsvc

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// rxRec is one frame of a SysNICRecv batch: the frame, the NIC's
// checksum word (abi.NICRecordCsumOK) and whether a later pure ACK of
// its flow in the same batch makes it needless (thinAcks).
type rxRec struct {
	f      []byte
	csumOK bool
	skip   bool
}

// thinAcks marks the pure ACKs of a batch that the next frame of their
// flow in the batch, a pure ACK acknowledging more, supersedes. QEMU's
// user network acknowledges nearly every segment it takes, and a batch
// held about forty of one flow's ACKs: each cost the stack a pass
// (IP, the demultiplexer, the TCP processor, an attempt to send). TCP
// keeps what it needs from the last: an ACK is cumulative, the window is
// the newest, the congestion window grows by the segments acknowledged
// (not by the ACKs counted), and duplicate ACKs are never dropped (the
// later one must acknowledge more). Only plain ACKs are thinned: no
// payload, no flag but ACK, no option but timestamps; the superseding
// frame's checksum is checked here (a damaged ACK must not stand for
// others). At most len(thinFlows) flows a batch are followed; frames of
// others pass untouched.
func thinAcks(recs []rxRec) {
	var flows [thinFlows]thinFlow
	n := 0
	for i := len(recs) - 1; i >= 0; i-- {
		k, ack, plain, ok := ackKey(recs[i].f)
		if !ok {
			continue // not TCP: no flow of ours
		}
		j := 0
		for j < n && flows[j].key != k {
			j++
		}
		if j == n {
			if n == len(flows) {
				continue // untracked, untouched
			}
			n++
			flows[j].key = k
			flows[j].plain = false
		}
		fl := &flows[j]
		if plain && fl.plain && ack.LessThan(fl.ack) {
			recs[i].skip = true // fl still stands next for the earlier ones
			continue
		}
		fl.plain = plain && (recs[i].csumOK || tcpSumOK(recs[i].f))
		fl.ack = ack
	}
}

const thinFlows = 16

type thinFlow struct {
	key   flowKey
	plain bool // the flow's next frame (so far from the end) is a plain ACK
	ack   tcpSeq
}

type flowKey struct {
	src, dst tcpip.Address
	sp, dp   uint16
}

// tcpSeq compares TCP sequence numbers modulo 2³².
type tcpSeq uint32

func (a tcpSeq) LessThan(b tcpSeq) bool { return int32(a-b) < 0 }

// ackKey is frame's TCP flow and acknowledgement number, and whether
// it is a plain ACK (thinAcks); ok is false for a frame that is not a
// TCP segment tcpHeaders finds.
func ackKey(frame []byte) (k flowKey, ack tcpSeq, plain, ok bool) {
	const eth = header.EthernetMinimumSize
	h := tcpHeaders(frame)
	if h == 0 {
		return k, 0, false, false
	}
	var ipLen, segLen int
	switch header.Ethernet(frame).Type() {
	case header.IPv4ProtocolNumber:
		ip := header.IPv4(frame[eth:])
		k.src, k.dst = ip.SourceAddress(), ip.DestinationAddress()
		ipLen, segLen = int(ip.HeaderLength()), int(ip.TotalLength())-int(ip.HeaderLength())
	default:
		ip := header.IPv6(frame[eth:])
		k.src, k.dst = ip.SourceAddress(), ip.DestinationAddress()
		ipLen, segLen = header.IPv6MinimumSize, int(ip.PayloadLength())
	}
	tc := header.TCP(frame[eth+ipLen:])
	k.sp, k.dp = tc.SourcePort(), tc.DestinationPort()
	ack = tcpSeq(tc.AckNumber())
	off := int(tc.DataOffset())
	plain = tc.Flags() == header.TCPFlagAck && segLen == off && onlyTimestamps(tc[header.TCPMinimumSize:off])
	return k, ack, plain, true
}

// onlyTimestamps reports whether TCP options o hold nothing but
// timestamps, padding and the end.
func onlyTimestamps(o []byte) bool {
	for len(o) > 0 {
		switch o[0] {
		case header.TCPOptionEOL:
			return true
		case header.TCPOptionNOP:
			o = o[1:]
		case header.TCPOptionTS:
			if len(o) < header.TCPOptionTSLength || o[1] != header.TCPOptionTSLength {
				return false
			}
			o = o[header.TCPOptionTSLength:]
		default:
			return false
		}
	}
	return true
}

// tcpSumOK reports whether frame, a TCP segment tcpHeaders finds, has
// a right IPv4 header checksum (for IPv4) and TCP checksum over the
// bytes its IP length covers (a frame may have Ethernet padding).
func tcpSumOK(frame []byte) bool {
	const eth = header.EthernetMinimumSize
	var src, dst tcpip.Address
	var seg []byte
	switch header.Ethernet(frame).Type() {
	case header.IPv4ProtocolNumber:
		ip := header.IPv4(frame[eth:])
		tl, hl := int(ip.TotalLength()), int(ip.HeaderLength())
		if tl > len(frame)-eth || tl < hl || !ip.IsChecksumValid() {
			return false
		}
		src, dst, seg = ip.SourceAddress(), ip.DestinationAddress(), frame[eth+hl:eth+tl]
	case header.IPv6ProtocolNumber:
		ip := header.IPv6(frame[eth:])
		pl := int(ip.PayloadLength())
		if header.IPv6MinimumSize+pl > len(frame)-eth {
			return false
		}
		src, dst, seg = ip.SourceAddress(), ip.DestinationAddress(), frame[eth+header.IPv6MinimumSize:eth+header.IPv6MinimumSize+pl]
	default:
		return false
	}
	return checksum.Checksum(seg, header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(len(seg)))) == 0xffff
}
