package netsvc

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// rxRec is one frame of a SysNICRecv batch: the frame, the NIC's
// checksum word (abi.NICRecordCsumOK), and what scanBatch found: that a
// later ACK of its flow makes it needless (skip), or that it must not
// be merged by GRO into its flow's frame before it (noGRO).
type rxRec struct {
	f      []byte
	csumOK bool
	skip   bool
	noGRO  bool
	tcp    bool // a TCP segment (scanBatch)
}

// scanBatch looks at a batch's TCP frames flow by flow, from the last to
// the first.
//
// Thinning: it marks skip on a plain ACK (no payload, no flag but ACK,
// no option but timestamps) that lies between two frames of its flow
// in the batch — one before it acknowledging less, and a plain ACK after
// it acknowledging more. QEMU's user network acknowledges nearly every
// segment it takes, and a batch held about forty of one flow's ACKs:
// each cost the stack a pass (IP, the demultiplexer, the TCP processor,
// an attempt to send). TCP keeps what it needs from the ACK after: an ACK
// is cumulative, the newest window stands, and the congestion window
// grows by the segments acknowledged, not by the ACKs counted. A
// duplicate ACK (the same number as the frame before it, or the first
// of its flow in the batch, which may repeat the last batch's) is never
// dropped. The superseding frame's checksums are checked here (a
// damaged ACK must not stand for others).
//
// GRO: it marks noGRO on a frame whose window differs from the frame of
// its flow before it, so that GRO, which keeps the first segment's TCP
// header, does not merge the new window away.
//
// At most len(thinFlows) flows a batch are followed; frames of others
// pass untouched. It returns the count of TCP segments not skipped.
func scanBatch(recs []rxRec) (segs int) {
	var flows [thinFlows]thinFlow
	n := 0
	for i := len(recs) - 1; i >= 0; i-- {
		k, seg, ok := ackKey(recs[i].f)
		if !ok {
			continue // not TCP: no flow of ours
		}
		recs[i].tcp = true
		j := 0
		for j < n && flows[j].key != k {
			j++
		}
		if j == n {
			if n == len(flows) {
				continue // untracked, untouched
			}
			n++
			flows[j] = thinFlow{key: k, next: -1}
		}
		fl := &flows[j]
		if nx := fl.next; nx >= 0 {
			// i is the frame before nx in its flow.
			if fl.superseded && seg.ack.LessThan(fl.seg.ack) {
				recs[nx].skip = true
			}
			if seg.win != fl.seg.win {
				recs[nx].noGRO = true
			}
		}
		// Is i superseded by nx, the next frame of its flow? nx's word
		// stands for i's if it is a plain ACK acknowledging more, and
		// either checked or itself superseded by a checked one.
		sup := false
		if seg.plain && fl.next >= 0 && fl.seg.plain && seg.ack.LessThan(fl.seg.ack) {
			sup = recs[fl.next].skip || fl.superseded || sumOK(recs[fl.next])
		}
		fl.next, fl.seg, fl.superseded = i, seg, sup
	}
	for _, r := range recs {
		if r.tcp && !r.skip {
			segs++
		}
	}
	return segs
}

// sumOK reports whether rec's frame, a TCP segment, has right checksums
// (or the NIC's word for its transport checksum).
func sumOK(rec rxRec) bool { return rec.csumOK && ipv4HeaderOK(rec.f) || tcpSumOK(rec.f) }

const thinFlows = 16

type thinFlow struct {
	key        flowKey
	next       int     // the flow's frame after the one being looked at (-1: none yet)
	seg        tcpInfo // next's
	superseded bool    // next is a plain ACK a later checked one supersedes
}

type tcpInfo struct {
	ack   tcpSeq
	win   uint16
	plain bool
}

type flowKey struct {
	src, dst tcpip.Address
	sp, dp   uint16
}

// tcpSeq compares TCP sequence numbers modulo 2³².
type tcpSeq uint32

func (a tcpSeq) LessThan(b tcpSeq) bool { return int32(a-b) < 0 }

// ackKey is frame's TCP flow, acknowledgement number, window and
// whether it is a plain ACK (scanBatch); ok is false for a frame that is
// not a TCP segment tcpHeaders finds.
func ackKey(frame []byte) (k flowKey, seg tcpInfo, ok bool) {
	const eth = header.EthernetMinimumSize
	if tcpHeaders(frame) == 0 {
		return k, seg, false
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
	off := int(tc.DataOffset())
	seg = tcpInfo{ack: tcpSeq(tc.AckNumber()), win: tc.WindowSize(),
		plain: tc.Flags() == header.TCPFlagAck && segLen == off && onlyTimestamps(tc[header.TCPMinimumSize:off])}
	return k, seg, true
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
