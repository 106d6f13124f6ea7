package netsvc

import (
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/stack/gro"

	"yolk/kernel/abi"
)

// nicLink is the netstack's link endpoint on the NIC, in place of
// gVisor's channel endpoint under an Ethernet endpoint (docs/net.md, "The
// link endpoint"). It is an Ethernet link itself:
//
//   - Receive: the loop hands it the records of a SysNICRecv (many frames
//     a call); each frame is copied once, into a pooled chunk, its
//     Ethernet header consumed, and handed up in the round's goroutine
//     (rounds run one at a time: service.rounds) through gVisor's
//     receive offload (GRO): a batch's in-order TCP segments of one flow
//     go up as one packet, as Linux's GRO does (QEMU's user network and
//     a tap without offloads send 1,448-byte segments; each cost the
//     stack a pass of its own).
//   - Transmit: WritePackets (any goroutine of the stack) copies each
//     packet's bytes straight into a record of the transmit batch — no
//     clone of the packet, no view, nothing kept that the stack must
//     release later — and wakes the loop, which sends the whole batch
//     with one SysNICSendRecords (one notification of the device).
//   - Offloads: where the NIC takes them (NICInfo's Offload: virtio-net
//     behind a tap), the link says so to the stack as a host's GSO
//     (stack.HostGSOSupported): TCP leaves its checksum to the device
//     (a partial one, the pseudo-header's, as Linux's CHECKSUM_PARTIAL)
//     and hands down segments of up to 64 KiB, which go to the kernel
//     as one record with an offload header and to the device as one
//     descriptor chain; the host cuts them into frames. Everything else
//     (UDP, ICMP, a TCP reset without an endpoint) keeps its software
//     checksum and its MTU.
//
// At most txMaxFrames frames wait; beyond, WritePackets drops as a full
// device queue does (the channel endpoint dropped at 1024 too) — but only
// the frames of flows that already have txSparse waiting: a sparse flow
// (a health check's SYN-ACK or its answer, an ACK) still gets in, up to
// txHardMax, while bulk senders fill the queue, as fq_codel (Linux's
// usual qdisc) serves new and sparse flows ahead of the fat ones. Without
// it a check behind 20 bulk senders lost its SYN-ACK and waited for
// the netstack's 1 s retransmission.
type nicLink struct {
	mu         sync.RWMutex
	dispatcher stack.NetworkDispatcher
	mtu        uint32 // the IP MTU: the frame is 14 bytes more
	addr       tcpip.LinkAddress
	notify     func() // wakes the loop: frames to send
	offload    bool   // the NIC takes offload headers: host GSO
	// rxCsumOK is set while deliver hands the stack a frame the NIC
	// says needs no checksum check: Capabilities then has
	// CapabilityRXChecksumOffload, which the stack's NIC reads for each
	// frame it is given (and nowhere else) to set its
	// RXChecksumValidated — a per-frame answer, as Linux's
	// CHECKSUM_UNNECESSARY, not the whole link's.
	rxCsumOK atomic.Bool
	// gro coalesces a batch's segments (one round at a time only: from
	// deliver to the flush at the batch's end); up hands them to the
	// stack.
	gro gro.GRO
	up  rxUp

	txMu      sync.Mutex
	tx        []byte // records waiting for the loop
	txFrames  int
	txFlow    [txBuckets]uint16 // frames waiting, by flowBucket
	txDropped uint64
	// txLooking is set while the loop's round will still take the queue
	// (lookTx to the takeTx that finds it empty): a frame queued then
	// needs no kick, which would only make the loop run a round that
	// finds nothing.
	txLooking bool
}

const (
	txMaxFrames = 1024
	txHardMax   = txMaxFrames + 256
	// txMaxBytes is the bytes waiting past which only sparse flows get
	// in: 64 KiB segments fill it before the frames do. It is gVisor's
	// largest send buffer (4 MiB, tcp.MaxBufferSize): one
	// flow alone never loses a segment here (at 2 MiB a 32 MiB push lost
	// 8–39 segments, 45 frames' retransmission each, and ran at half
	// the speed).
	txMaxBytes  = 4 << 20
	txHardBytes = txMaxBytes + 512<<10
	gsoMaxSize  = 1 << 16 // the stack's segments, headers included, as Linux's gso_max_size
	txSparse    = 4       // frames a flow may have waiting and still get in past txMaxFrames
	txBuckets   = 1024    // flows told apart (a hash's buckets, as fq_codel's 1024)
)

func newNICLink(mtu uint32, addr tcpip.LinkAddress, offload bool, notify func()) *nicLink {
	l := &nicLink{mtu: mtu, addr: addr, notify: notify, offload: offload}
	l.up.l = l
	l.gro.Init(true)
	l.gro.Dispatcher = &l.up
	return l
}

// SupportedGSO is the host's GSO (the device's) where the NIC takes
// offload headers, gVisor's own elsewhere: its TCP sender then keeps
// and sends segments of up to 64 KiB and cuts them into frames only as
// they leave (sendTCPBatch), not one segment a frame through its send
// loop. The stack asks when it makes a TCP endpoint.
func (l *nicLink) SupportedGSO() stack.SupportedGSO {
	if l.offload {
		return stack.HostGSOSupported
	}
	return stack.GVisorGSOSupported
}

// GSOMaxSize is the largest segment the stack hands down.
func (l *nicLink) GSOMaxSize() uint32 { return gsoMaxSize }

var _ stack.GSOEndpoint = (*nicLink)(nil)

// MTU is the largest IP packet.
func (l *nicLink) MTU() uint32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mtu
}

func (l *nicLink) SetMTU(mtu uint32) {
	l.mu.Lock()
	l.mtu = mtu
	l.mu.Unlock()
}

func (*nicLink) MaxHeaderLength() uint16 { return header.EthernetMinimumSize }

func (l *nicLink) LinkAddress() tcpip.LinkAddress {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.addr
}

func (l *nicLink) SetLinkAddress(a tcpip.LinkAddress) {
	l.mu.Lock()
	l.addr = a
	l.mu.Unlock()
}

func (l *nicLink) Capabilities() stack.LinkEndpointCapabilities {
	if l.rxCsumOK.Load() {
		return stack.CapabilityResolutionRequired | stack.CapabilityRXChecksumOffload
	}
	return stack.CapabilityResolutionRequired
}

func (l *nicLink) Attach(d stack.NetworkDispatcher) {
	l.mu.Lock()
	l.dispatcher = d
	l.mu.Unlock()
}

func (l *nicLink) IsAttached() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.dispatcher != nil
}

func (*nicLink) Wait()                                   {}
func (*nicLink) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareEther }
func (*nicLink) Close()                                  {}
func (*nicLink) SetOnCloseAction(func())                 {}

// AddHeader writes the Ethernet header, as gVisor's Ethernet endpoint.
func (*nicLink) AddHeader(pkt *stack.PacketBuffer) {
	eth := header.Ethernet(pkt.LinkHeader().Push(header.EthernetMinimumSize))
	eth.Encode(&header.EthernetFields{
		SrcAddr: pkt.EgressRoute.LocalLinkAddress,
		DstAddr: pkt.EgressRoute.RemoteLinkAddress,
		Type:    pkt.NetworkProtocolNumber,
	})
}

func (*nicLink) ParseHeader(pkt *stack.PacketBuffer) bool {
	_, ok := pkt.LinkHeader().Consume(header.EthernetMinimumSize)
	return ok
}

// WritePackets queues each packet as a record of the transmit batch and
// wakes the loop.
func (l *nicLink) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	n := 0
	l.txMu.Lock()
	for _, pkt := range pkts.AsSlice() {
		size := pkt.Size()
		hdr, hl := l.offloadHdr(pkt)
		if l.txFrames >= txHardMax || len(l.tx) >= txHardBytes || size > abi.NICMaxFrame && hl == 0 || size > abi.NICMaxGSOFrame {
			l.txDropped++
			continue // as the channel endpoint: a full queue drops
		}
		rec := (abi.NICRecordAlign + hl + size + abi.NICRecordAlign - 1) &^ (abi.NICRecordAlign - 1)
		off := len(l.tx)
		word := uint32(size)
		if hl != 0 {
			word |= abi.NICRecordOffload
		}
		l.tx = append(l.tx, byte(word), byte(word>>8), byte(word>>16), byte(word>>24))
		l.tx = append(l.tx, hdr[:hl]...)
		vl, skip := pkt.AsViewList() // AsSlices would allocate a slice a packet
		for v := vl.Front(); v != nil; v = v.Next() {
			b := v.AsSlice()
			k := min(skip, len(b))
			skip -= k
			l.tx = append(l.tx, b[k:]...)
		}
		b := flowBucket(l.tx[off+4+hl:])
		if (l.txFrames >= txMaxFrames || len(l.tx) >= txMaxBytes) && l.txFlow[b] >= txSparse {
			l.tx = l.tx[:off]
			l.txDropped++
			continue
		}
		for len(l.tx) < off+rec {
			l.tx = append(l.tx, 0)
		}
		l.txFlow[b]++
		l.txFrames++
		n++
	}
	kick := n > 0 && !l.txLooking
	l.txMu.Unlock()
	if kick {
		l.notify()
	}
	return n, nil // what was dropped is not an error, as the channel endpoint says
}

// offloadHdr is pkt's offload header (abi.NICOffloadLen bytes, as
// gVisor's fdbased endpoint writes virtio_net_hdr for a tap) and its
// length: 0 for a packet that asks for no offload, or on a NIC without.
func (l *nicLink) offloadHdr(pkt *stack.PacketBuffer) (h [abi.NICOffloadLen]byte, n int) {
	g := &pkt.GSOOptions
	if !l.offload || g.Type == stack.GSONone || !g.NeedsCsum {
		return h, 0
	}
	put16 := func(o int, v uint16) { h[o], h[o+1] = byte(v), byte(v>>8) }
	h[0] = 1 // NEEDS_CSUM
	// The checksummed bytes start past the headers as written (an IPv6
	// extension header or IPv4 options would move them), not at gVisor's
	// L3HdrLen, which assumes the minimum.
	put16(6, uint16(len(pkt.LinkHeader().Slice())+len(pkt.NetworkHeader().Slice())))
	put16(8, g.CsumOffset)
	if pkt.Data().Size() > int(g.MSS) {
		switch g.Type {
		case stack.GSOTCPv4:
			h[1] = 1
		case stack.GSOTCPv6:
			h[1] = 4
		default:
			return h, 0
		}
		put16(2, uint16(pkt.HeaderSize()))
		put16(4, g.MSS)
	}
	return h, abi.NICOffloadLen
}

// takeTx gives the loop the records waiting (appended to buf, which it
// gets back empty the next time) and their count.
func (l *nicLink) takeTx(buf []byte) ([]byte, int) {
	l.txMu.Lock()
	b, n := l.tx, l.txFrames
	l.tx, l.txFrames = buf[:0], 0
	l.txFlow = [txBuckets]uint16{}
	if n == 0 {
		l.txLooking = false // from here on a frame queued kicks the loop
	}
	l.txMu.Unlock()
	return b, n
}

// lookTx says the loop's round has begun and will take the queue before
// it ends (takeTx until it finds the queue empty).
func (l *nicLink) lookTx() {
	l.txMu.Lock()
	l.txLooking = true
	l.txMu.Unlock()
}

// flowBucket is the bucket of frame's flow: a hash of its IPv4 or IPv6
// addresses, protocol and (TCP, UDP) ports; of its EtherType for the rest
// (ARP).
func flowBucket(frame []byte) int {
	if len(frame) < header.EthernetMinimumSize {
		return 0
	}
	h := uint32(2166136261) // FNV-1a
	mix := func(b []byte) {
		for _, c := range b {
			h = (h ^ uint32(c)) * 16777619
		}
	}
	mix(frame[12:14])
	ip := frame[header.EthernetMinimumSize:]
	var ports []byte
	switch {
	case frame[12] == 0x08 && frame[13] == 0x00 && len(ip) >= header.IPv4MinimumSize:
		mix(ip[9:10])  // protocol
		mix(ip[12:20]) // addresses
		if ihl := int(ip[0]&0xf) * 4; ip[9] == 6 || ip[9] == 17 {
			ports = ip[min(ihl, len(ip)):]
		}
	case frame[12] == 0x86 && frame[13] == 0xdd && len(ip) >= header.IPv6MinimumSize:
		mix(ip[6:7])  // next header
		mix(ip[8:40]) // addresses
		if ip[6] == 6 || ip[6] == 17 {
			ports = ip[40:]
		}
	}
	if len(ports) >= 4 {
		mix(ports[:4])
	}
	return int(h % txBuckets)
}

// deliver gives the stack one received frame (copied: frame is the
// caller's again at once) through GRO, which may hold it until flushRx;
// csumOK: the NIC says its transport checksum need not be checked
// (abi.NICRecordCsumOK). The word rides with the packet
// (RXChecksumValidated, which GRO also sets for the segments it checked
// and merged) to rxUp, and reaches the stack through Capabilities while
// the stack takes the packet (rxCsumOK), which holds only because
// rounds, one at a time, alone call deliver and flushRx and gVisor reads that
// capability nowhere but where it takes a packet
// (TestRXChecksumCapabilityReaders checks the module in use). As Linux's
// CHECKSUM_UNNECESSARY, it covers the transport checksum only: an IPv4
// header's own checksum, which gVisor would skip with it too, is checked
// here first (a frame whose header fails goes up unflagged, and GRO or
// the stack drops it).
func (l *nicLink) deliver(d stack.NetworkDispatcher, frame []byte, csumOK, gro bool) {
	if csumOK && !ipv4HeaderOK(frame) {
		csumOK = false
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: rxBuffer(frame)})
	defer pkt.DecRef()
	hdr, ok := pkt.LinkHeader().Consume(header.EthernetMinimumSize)
	if !ok {
		return
	}
	eth := header.Ethernet(hdr)
	switch dst := eth.DestinationAddress(); {
	case dst == header.EthernetBroadcastAddress:
		pkt.PktType = tcpip.PacketBroadcast
	case header.IsMulticastEthernetAddress(dst):
		pkt.PktType = tcpip.PacketMulticast
	case dst == l.LinkAddress():
		pkt.PktType = tcpip.PacketHost
	default:
		pkt.PktType = tcpip.PacketOtherHost
	}
	pkt.NetworkProtocolNumber = eth.Type()
	l.up.d = d
	if gro && groFrame(frame, csumOK) {
		pkt.RXChecksumValidated = true
		l.gro.Enqueue(pkt) // holds a reference to what it keeps
		return
	}
	// Anything else goes up at once, behind what GRO holds.
	l.gro.Flush()
	pkt.RXChecksumValidated = csumOK
	l.up.DeliverNetworkPacket(pkt.NetworkProtocolNumber, pkt)
}

// groFrame reports whether frame is a TCP segment GRO may take: it
// carries payload (GRO keeps the first segment's header: an ACK merged
// into the data before it would lose its window, so GRO sees data
// only), its IPv4 header has no options (GRO passes those up at once,
// ahead of the flow's segments it holds), its IP length is the frame's
// (no Ethernet padding, which GRO would count as payload), and its
// checksums are right: the NIC vouches for the TCP one (csumOK, which
// deliver has already withdrawn for a wrong IPv4 header checksum), or
// tcpSumOK checks both. GRO is given checked segments only: its own
// check of an unchecked one sums from the wrong offset (gVisor's
// PacketData.ChecksumAtOffset counts from the start of the buffer,
// before the consumed link header, so every segment failed it and none
// was merged) — the check here is the one the stack would have made,
// moved.
func groFrame(frame []byte, csumOK bool) bool {
	const eth = header.EthernetMinimumSize
	if h := tcpHeaders(frame); h == 0 || h == len(frame) {
		return false
	}
	switch header.Ethernet(frame).Type() {
	case header.IPv4ProtocolNumber:
		ip := header.IPv4(frame[eth:])
		if ip.HeaderLength() != header.IPv4MinimumSize || int(ip.TotalLength()) != len(frame)-eth {
			return false
		}
	default: // IPv6, TCP right after the fixed header (tcpHeaders)
		if header.IPv6MinimumSize+int(header.IPv6(frame[eth:]).PayloadLength()) != len(frame)-eth {
			return false
		}
	}
	return csumOK || tcpSumOK(frame)
}

// flushRx hands the stack what GRO holds: the loop calls it at the end
// of each batch of frames.
func (l *nicLink) flushRx() { l.gro.Flush() }

// rxUp is GRO's dispatcher: it hands a packet to the stack with the
// checksum word GRO or the NIC gave it (pkt.RXChecksumValidated, which
// the stack's NIC would overwrite from Capabilities).
type rxUp struct {
	l *nicLink
	d stack.NetworkDispatcher
}

func (u *rxUp) DeliverNetworkPacket(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	ok := pkt.RXChecksumValidated
	if ok {
		u.l.rxCsumOK.Store(true)
	}
	u.d.DeliverNetworkPacket(proto, pkt)
	if ok {
		u.l.rxCsumOK.Store(false)
	}
}

func (u *rxUp) DeliverLinkPacket(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	u.d.DeliverLinkPacket(proto, pkt)
}

// rxBuffer copies frame into a buffer for the stack. A TCP segment with
// splitMin bytes of payload or more gets its headers and its payload in
// chunks of their own: gVisor's IPv4 and IPv6 layers hold a view of the
// network header (a second reference to its chunk) while they ask for
// the header's bytes again, and a chunk shared so is copied whole, copy
// on write, with the payload in it (64 KiB for the host's coalesced
// segments). A chunk of the headers alone costs about a hundred bytes.
func rxBuffer(frame []byte) buffer.Buffer {
	if h := tcpHeaders(frame); h > 0 && len(frame)-h >= splitMin {
		b, payload := buffer.MakeWithData(frame[:h]), buffer.MakeWithData(frame[h:])
		b.Merge(&payload) // not Append, which fills the headers' chunk first
		return b
	}
	return buffer.MakeWithData(frame)
}

const splitMin = 512

// tcpHeaders is the length of frame's Ethernet, IP and TCP headers if
// it is a TCP segment over IPv4 (not a fragment) or IPv6 (no extension
// headers) whose headers it holds whole; else 0.
func tcpHeaders(frame []byte) int {
	const eth = header.EthernetMinimumSize
	if len(frame) < eth+header.IPv4MinimumSize {
		return 0
	}
	var l int
	switch header.Ethernet(frame).Type() {
	case header.IPv4ProtocolNumber:
		ip := header.IPv4(frame[eth:])
		hl := int(ip.HeaderLength())
		if ip.Protocol() != uint8(header.TCPProtocolNumber) || ip.More() || ip.FragmentOffset() != 0 || hl < header.IPv4MinimumSize {
			return 0
		}
		l = eth + hl
	case header.IPv6ProtocolNumber:
		if len(frame) < eth+header.IPv6MinimumSize || header.IPv6(frame[eth:]).NextHeader() != uint8(header.TCPProtocolNumber) {
			return 0
		}
		l = eth + header.IPv6MinimumSize
	default:
		return 0
	}
	if len(frame) < l+header.TCPMinimumSize {
		return 0
	}
	off := int(header.TCP(frame[l:]).DataOffset())
	if off < header.TCPMinimumSize || len(frame) < l+off {
		return 0
	}
	return l + off
}

// ipv4HeaderOK reports whether frame is not IPv4, or its IPv4 header's
// checksum is right.
func ipv4HeaderOK(frame []byte) bool {
	if len(frame) < header.EthernetMinimumSize+header.IPv4MinimumSize || header.Ethernet(frame).Type() != header.IPv4ProtocolNumber {
		return true
	}
	ip := header.IPv4(frame[header.EthernetMinimumSize:])
	hl := int(ip.HeaderLength())
	if hl < header.IPv4MinimumSize || len(ip) < hl {
		return true // malformed: gVisor's own parsing drops it
	}
	return ip.IsChecksumValid()
}

// dispatcherOf is the stack's dispatcher (nil before the NIC exists).
func (l *nicLink) dispatcherOf() stack.NetworkDispatcher {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.dispatcher
}

var _ stack.LinkEndpoint = (*nicLink)(nil)
