// Package virtionet is the kernel's virtio-net driver (virtio 1.1 §5.1):
// it opens a network device over package virtio (virtio-mmio version 2 or
// modern PCI), keeps its receive queue full of page-backed buffers, moves
// what the device received into a ring of frames the kernel's network
// service drains (Recv, or RecvPeek, RecvSegment and RecvPop), and sends frames
// through a transmit queue (Send, or TxAlloc and TxCommit). It negotiates
// VIRTIO_F_VERSION_1, VIRTIO_NET_F_MAC, VIRTIO_NET_F_STATUS and the
// transmit offloads VIRTIO_NET_F_CSUM, HOST_TSO4 and HOST_TSO6 where the
// device offers all three (QEMU does behind a tap, not behind its user
// network): a frame sent may then leave its TCP checksum and its
// segmentation to the device, as its Hdr says, and be up to MaxGSOFrame
// bytes. Where the device also offers the receive offloads
// (VIRTIO_NET_F_GUEST_CSUM, GUEST_TSO4, GUEST_TSO6) with mergeable
// receive buffers (VIRTIO_NET_F_MRG_RXBUF), it takes them too: a frame
// received may then be up to MaxGSOFrame bytes (the host's coalesced TCP
// segments) spread over several buffers, and flagged RxCsumOK (its
// checksum verified or left partial by a sender that trusts it). One
// queue pair. Every frame carries the 12-byte virtio_net_hdr of
// VERSION_1 in front of it.
//
// What it does not do: find devices or route their interrupts (the kernel
// does, and calls Interrupt from the device's handler), lock (the caller
// serialises every call on one NIC with its own lock: the interrupt handler
// and the system calls run on different CPUs), block or wake anybody (the
// caller waits on its own queue when Recv finds nothing), or allocate:
// memory comes from the kernel's frame allocator through the Mem constraint
// at Open, once.
//
// Kernel-context: no heap allocation, no Go pointers stored (addresses are
// uintptr, device addresses uint64), no runtime scheduler calls; a NIC is a
// pointer-free value the kernel keeps in a package variable.
package virtionet

import (
	"unsafe"

	"yolk/drivers/virtio"
)

// Mem gives the driver memory: whole zeroed pages, each physically
// contiguous. A type-parameter constraint, never an interface value.
type Mem interface {
	// Page returns a zeroed 4 KiB page: the CPU's address and the
	// device's (physical) one; virt 0 when memory is exhausted.
	Page() (virt uintptr, phys uint64)
}

// Error is the outcome of an operation; OK is zero (a small code, not a Go
// error: returning one allocates nothing).
type Error uint8

const (
	OK           Error = iota
	ErrNotNet          // the device is not a network device
	ErrNoMAC           // the device offers no VIRTIO_NET_F_MAC
	ErrMemory          // no memory for the queues or buffers
	ErrTransport       // the transport refused (Transport says how)
	ErrSize            // Send: a frame shorter than an Ethernet header or longer than MaxFrame
	ErrFull            // Send: every transmit buffer is in flight
	ErrBroken          // the device returned a bad used entry; the NIC is unusable
	ErrHdr             // TxAlloc: an offload header the device cannot take (or was not offered)
	errCount
)

var errText = [...]string{
	OK:           "ok",
	ErrNotNet:    "not a virtio network device",
	ErrNoMAC:     "the device has no MAC address (no VIRTIO_NET_F_MAC)",
	ErrMemory:    "out of memory for the queues and buffers",
	ErrTransport: "virtio transport error",
	ErrSize:      "frame size out of range",
	ErrFull:      "transmit queue full",
	ErrBroken:    "device returned a bad used entry",
	ErrHdr:       "offload header refused",
}

func (e Error) String() string {
	if e < errCount {
		return errText[e]
	}
	return "unknown virtio-net error"
}

// Feature bits of a network device (§5.1.3).
const (
	FCsum      = 1 << 0  // VIRTIO_NET_F_CSUM: the device completes a partial checksum (NEEDS_CSUM)
	FGuestCsum = 1 << 1  // VIRTIO_NET_F_GUEST_CSUM: frames received may say their checksum is valid or partial
	FMAC       = 1 << 5  // VIRTIO_NET_F_MAC: the MAC address is in the configuration
	FGuestTSO4 = 1 << 7  // VIRTIO_NET_F_GUEST_TSO4: frames received may be coalesced TCP over IPv4
	FGuestTSO6 = 1 << 8  // VIRTIO_NET_F_GUEST_TSO6: the same over IPv6
	FHostTSO4  = 1 << 11 // VIRTIO_NET_F_HOST_TSO4: the device segments TCP over IPv4
	FHostTSO6  = 1 << 12 // VIRTIO_NET_F_HOST_TSO6: the device segments TCP over IPv6
	FMrgRxbuf  = 1 << 15 // VIRTIO_NET_F_MRG_RXBUF: a frame received may take several buffers
	FStatus    = 1 << 16 // VIRTIO_NET_F_STATUS: the link status is in the configuration

	// FOffload is the transmit offloads used together (Offload).
	FOffload = FCsum | FHostTSO4 | FHostTSO6
	// FRxOffload is the receive offloads, asked for only together and
	// only from a device that offers them all (RxOffload).
	FRxOffload = FGuestCsum | FGuestTSO4 | FGuestTSO6 | FMrgRxbuf
)

// RxCsumOK is the flag of a received frame whose checksum the stack need
// not check (virtio_net_hdr's DATA_VALID or NEEDS_CSUM).
const RxCsumOK = 1

// Received virtio_net_hdr flags (§5.1.6.4).
const (
	hdrDataValid = 2 // VIRTIO_NET_HDR_F_DATA_VALID
)

// Hdr is a sent frame's virtio_net_hdr (§5.1.6) without num_buffers: what
// the device is to do for it. The zero Hdr asks nothing.
type Hdr struct {
	Flags      uint8  // HdrNeedsCsum or 0
	GSOType    uint8  // GSONone, GSOTCPv4, GSOTCPv6
	HdrLen     uint16 // the Ethernet, IP and TCP headers' bytes (GSO)
	GSOSize    uint16 // the payload bytes of each segment (GSO: the MSS)
	CsumStart  uint16 // where the checksummed bytes start (NEEDS_CSUM)
	CsumOffset uint16 // where, from CsumStart, the checksum goes
}

// Hdr's flags and GSO types.
const (
	HdrNeedsCsum = 1 // VIRTIO_NET_HDR_F_NEEDS_CSUM
	GSONone      = 0
	GSOTCPv4     = 1
	GSOTCPv6     = 4
)

// check reports whether the device, with features f, takes h for a frame
// of l bytes: only what was negotiated, a checksum field inside the frame
// past the Ethernet header, segmentation only with the checksum's offload
// (§5.1.6.2: the driver MUST set NEEDS_CSUM with a GSO type), and a frame
// no longer than an Ethernet frame unless it is segmented.
func (h *Hdr) check(l int, f uint64) bool {
	switch {
	case h.Flags&^HdrNeedsCsum != 0:
		return false
	case h.Flags == 0 && (h.GSOType != GSONone || h.CsumStart|h.CsumOffset != 0):
		return false
	case h.Flags != 0 && (f&FCsum == 0 || h.CsumStart < MinFrame || int(h.CsumStart)+int(h.CsumOffset)+2 > l):
		return false
	}
	switch h.GSOType {
	case GSONone:
		return l <= MaxFrame && h.GSOSize == 0 && h.HdrLen == 0
	case GSOTCPv4:
		return f&FHostTSO4 != 0 && h.GSOSize != 0 && int(h.HdrLen) <= l && l <= MaxGSOFrame
	case GSOTCPv6:
		return f&FHostTSO6 != 0 && h.GSOSize != 0 && int(h.HdrLen) <= l && l <= MaxGSOFrame
	}
	return false
}

// The device configuration (§5.1.4).
const (
	cfgMAC    = 0
	cfgStatus = 6
	linkUp    = 1 // VIRTIO_NET_S_LINK_UP
)

const (
	// HdrLen is virtio_net_hdr's size with VERSION_1 (§5.1.6: num_buffers
	// included, always).
	HdrLen = 12
	// MTU is the largest IP packet a frame carries (the device's
	// VIRTIO_NET_F_MTU is not negotiated: Ethernet's).
	MTU = 1500
	// MaxFrame is the largest frame Send takes and Recv returns:
	// Ethernet's header, a VLAN tag and MTU bytes (no frame check
	// sequence: the device adds and strips it).
	MaxFrame = 14 + 4 + MTU
	// MinFrame is an Ethernet header.
	MinFrame = 14
	// MaxGSOFrame is the largest frame the device segments (with
	// Offload): an Ethernet header and the largest IPv6 packet without
	// jumbograms (an IPv4 one is shorter).
	MaxGSOFrame = 14 + 40 + 65535

	bufSize   = 2048 // a slot of the ring of received frames (a larger frame takes consecutive slots)
	pageSize  = 4096 // a receive buffer: HdrLen+MaxFrame fits
	queueSize = 64   // descriptors per queue: the queue's memory fits one page (virtio.QueueBytes)

	// txPages is the transmit buffers' pages: a frame takes as many
	// whole pages as HdrLen and its bytes need (one for an Ethernet
	// frame, 17 for the largest segmented one), one descriptor each.
	txPages    = 2 * queueSize
	txMaxChain = (HdrLen + MaxGSOFrame + pageSize - 1) / pageSize

	// RingFrames is how many received frames the ring holds until
	// the service takes them (Ethernet frames: a coalesced one takes a
	// slot per bufSize bytes); while it is full the device keeps the
	// frames it received in its buffers (harvest).
	RingFrames = 512
	maxSlots   = (MaxGSOFrame + bufSize - 1) / bufSize // the slots of the largest frame
)

// Queue numbers (§5.1.2): receiveq1, transmitq1.
const (
	rxQueue = 0
	txQueue = 1
)

// Stats are a NIC's counters.
type Stats struct {
	RxFrames, TxFrames uint64 // frames received into the ring; frames given to the device
	Dropped            uint64 // received frames dropped: the ring was full, or the frame was runt or oversize
	Interrupts         uint64 // Interrupt calls
	TxFull             uint64 // Send found every transmit buffer in flight
}

// NIC is one virtio network device: its transport, queues, buffers and the
// ring of received frames. Pointer-free; its zero value is no NIC (Open).
type NIC struct {
	dev      virtio.Device
	rx, tx   virtio.Queue
	features uint64
	mac      [6]byte
	size     uint16 // descriptors per queue

	// Receive buffers (a page each), indexed by the head descriptor the
	// chain holding them was added as.
	rxVirt [queueSize]uintptr
	rxPhys [queueSize]uint64

	// Transmit buffers: pages, txVirt/txPhys by index, txFree a stack
	// of idle ones; a frame's pages are linked by txNext from its first,
	// which txFirst holds by the head of the chain in flight.
	txVirt  [txPages]uintptr
	txPhys  [txPages]uint64
	txNext  [txPages]uint16
	txFree  [txPages]uint16
	txNFree int
	txFirst [queueSize]uint16
	txPut   int // frames committed since the last Kick

	// The ring of received frames: slot i's bytes at ring[i] (bufSize
	// each); a frame takes the slots its bytes fill, from the one that
	// holds its length (ringLen) and flags (ringFlag); slots
	// ringR..ringW-1 (counts, modulo RingFrames) are waiting.
	ring         [RingFrames]uintptr
	ringLen      [RingFrames]uint32
	ringFlag     [RingFrames]uint8
	ringR, ringW uint32

	stats   Stats
	broken  bool
	present bool
	queues  bool // the queues are the device's (not a test's ring alone): refill harvests
}

func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

func bytesAt(a uintptr, n int) []byte { return unsafe.Slice(at[byte](a), n) }

// halves takes a page from m and returns its two bufSize halves' CPU and
// device addresses.
func halves[M Mem](m M) (v [2]uintptr, p [2]uint64, ok bool) {
	va, pa := m.Page()
	if va == 0 {
		return v, p, false
	}
	return [2]uintptr{va, va + bufSize}, [2]uint64{pa, pa + bufSize}, true
}

// Open initialises the network device d (opened by virtio.OpenMMIO or
// OpenPCI) into n: features, the MAC, both queues and their buffers from m
// (one page per queue, 64 pages for buffers and the ring: about 270 KiB),
// the receive queue filled, then DRIVER_OK. On an error the device is left
// FAILED (or reset) and n is no NIC; transport errors are in *te.
func Open[M Mem](n *NIC, d virtio.Device, m M, te *virtio.Error) Error {
	*n = NIC{}
	*te = virtio.OK
	if d.Type() != virtio.TypeNet {
		return ErrNotNet
	}
	want := uint64(FMAC | FStatus | FOffload)
	if d.Features()&FRxOffload == FRxOffload {
		want |= FRxOffload
	}
	got, e := d.Negotiate(want)
	if e != virtio.OK {
		*te = e
		return ErrTransport
	}
	if got&FMAC == 0 {
		d.Fail()
		return ErrNoMAC
	}
	n.dev, n.features = d, got
	n.dev.ConfigBytes(cfgMAC, n.mac[:])

	size := uint16(queueSize)
	for _, q := range [2]uint16{rxQueue, txQueue} {
		if max := n.dev.QueueMax(q); max == 0 {
			return n.fail(virtio.ErrNoQueue, te)
		} else if max < size {
			size = max
		}
	}
	if size&(size-1) != 0 { // a device maximum that is no power of two
		for size&(size-1) != 0 {
			size &= size - 1
		}
	}
	n.size = size
	for i, q := range [2]*virtio.Queue{&n.rx, &n.tx} {
		va, pa := m.Page()
		if va == 0 {
			n.dev.Fail()
			*n = NIC{}
			return ErrMemory
		}
		if e := q.Init(uint16(i), size, va, pa, false); e != virtio.OK {
			return n.fail(e, te)
		}
		if e := n.dev.SetupQueue(q); e != virtio.OK {
			return n.fail(e, te)
		}
	}
	// Buffers: receive and transmit, whole pages.
	for range size {
		va, pa := m.Page()
		if va == 0 {
			n.dev.Fail()
			*n = NIC{}
			return ErrMemory
		}
		if e := n.postRx(va, pa); e != virtio.OK {
			return n.fail(e, te)
		}
	}
	for i := range txPages {
		va, pa := m.Page()
		if va == 0 {
			n.dev.Fail()
			*n = NIC{}
			return ErrMemory
		}
		n.txVirt[i], n.txPhys[i] = va, pa
		n.txFree[n.txNFree] = uint16(i)
		n.txNFree++
	}
	for i := 0; i < RingFrames; i += 2 {
		v, _, ok := halves(m)
		if !ok {
			n.dev.Fail()
			*n = NIC{}
			return ErrMemory
		}
		n.ring[i], n.ring[i+1] = v[0], v[1]
	}
	// Transmitted buffers are reclaimed by Send: no interrupts for them.
	n.tx.DisableInterrupts()
	n.dev.Ready()
	n.dev.Kick(&n.rx)
	n.present, n.queues = true, true
	return OK
}

func (n *NIC) fail(e virtio.Error, te *virtio.Error) Error {
	n.dev.Fail()
	*n = NIC{}
	*te = e
	return ErrTransport
}

// postRx adds the receive buffer at va/pa to the receive queue (published
// by the next Kick).
func (n *NIC) postRx(va uintptr, pa uint64) virtio.Error {
	b := [1]virtio.Buffer{{Addr: pa, Len: pageSize}}
	head, e := n.rx.Add(b[:], 0)
	if e != virtio.OK {
		return e
	}
	n.rxVirt[head], n.rxPhys[head] = va, pa
	return virtio.OK
}

// Present reports whether n is an open device.
func (n *NIC) Present() bool { return n.present }

// MAC is the device's hardware address.
func (n *NIC) MAC() [6]byte { return n.mac }

// IsPCI says which transport the device is behind.
func (n *NIC) IsPCI() bool { return n.dev.IsPCI() }

// Offload reports whether the device takes frames whose Hdr leaves the
// TCP checksum and segmentation to it (FOffload negotiated).
func (n *NIC) Offload() bool {
	return n.features&FOffload == FOffload && n.size >= txMaxChain // a queue too small for the largest chain: no segments
}

// RxOffload reports whether frames received may be coalesced (up to
// MaxGSOFrame bytes) and flagged RxCsumOK (FRxOffload negotiated).
func (n *NIC) RxOffload() bool { return n.features&FRxOffload == FRxOffload }

// LinkUp reads the link status (up when the device does not report it).
func (n *NIC) LinkUp() bool {
	if n.features&FStatus == 0 {
		return n.present
	}
	return n.present && n.dev.Config16(cfgStatus)&linkUp != 0
}

// Broken reports that the device returned a bad used entry: the NIC no
// longer receives or sends.
func (n *NIC) Broken() bool { return n.broken }

// Stats returns the counters.
func (n *NIC) Stats() Stats { return n.stats }

// Interrupt is the device's interrupt handler's work: it reads and
// acknowledges the interrupt status (deasserting the line), then moves
// every frame the device received into the ring and gives each buffer
// back to the device. It returns how many frames it added to the ring.
func (n *NIC) Interrupt() int {
	if !n.present {
		return 0
	}
	n.stats.Interrupts++
	n.dev.Interrupt()
	return n.harvest()
}

// harvest moves received frames into the ring and re-posts their
// buffers, while the ring has room for the largest frame: with the ring
// full the frames stay in the device's used buffers, the device stops
// taking frames from its backend (QEMU queues them, as a NIC's full ring
// makes the peer wait) instead of their being dropped, and Recv and
// RecvPop harvest again as they make room (no interrupt
// comes for buffers already used). With mergeable buffers a frame is the
// used buffers its first one's num_buffers says, which the device makes
// used together (§5.1.6.4).
func (n *NIC) harvest() int {
	got, posted := 0, false
	// need is the slots the largest frame takes, limit its bytes: a
	// frame is copied into the ring only up to limit (past it, it is
	// dropped), so the copy never reaches a slot still waiting — a
	// backend without offloads may still fill a whole page.
	need, limit := uint32(1), MaxFrame
	if n.RxOffload() {
		need, limit = maxSlots, MaxGSOFrame
	}
	for RingFrames-(n.ringW-n.ringR) >= need {
		head, l, ok := n.rx.Next()
		if !ok {
			break
		}
		va := n.rxVirt[head]
		nb := uint16(1)
		flags := *at[byte](va)
		if n.features&FMrgRxbuf != 0 && l >= HdrLen {
			nb = *at[uint16](va + 10)
		}
		fl := int(l) - HdrLen
		good := l >= HdrLen && l <= pageSize && nb >= 1
		s := n.ringW % RingFrames
		if good && fl <= limit {
			n.ringCopy(0, bytesAt(va+HdrLen, fl))
		}
		n.repost(head, &posted)
		for k := uint16(1); k < nb && good; k++ {
			h, lk, ok := n.rx.Next()
			if !ok { // the device said more buffers than it used
				n.broken = true
				good = false
				break
			}
			if lk > pageSize {
				good = false
			} else if fl+int(lk) <= limit {
				n.ringCopy(fl, bytesAt(n.rxVirt[h], int(lk)))
			}
			fl += int(lk)
			n.repost(h, &posted)
		}
		switch {
		case !good || fl < MinFrame || fl > limit:
			n.stats.Dropped++
		default:
			n.ringLen[s] = uint32(fl)
			n.ringFlag[s] = 0
			if n.features&FGuestCsum != 0 && flags&(HdrNeedsCsum|hdrDataValid) != 0 {
				n.ringFlag[s] = RxCsumOK
			}
			n.ringW += uint32(slots(fl))
			n.stats.RxFrames++
			got++
		}
	}
	if n.rx.Broken() {
		n.broken = true
	}
	if posted {
		n.dev.Kick(&n.rx)
	}
	return got
}

// slots is how many ring slots a frame of l bytes takes.
func slots(l int) int { return max(1, (l+bufSize-1)/bufSize) }

// ringCopy copies b to the frame being received (at slot ringW) from its
// byte off on, across its slots.
func (n *NIC) ringCopy(off int, b []byte) {
	for len(b) > 0 {
		s := (n.ringW + uint32(off/bufSize)) % RingFrames
		k := copy(bytesAt(n.ring[s]+uintptr(off%bufSize), bufSize-off%bufSize), b)
		b, off = b[k:], off+k
	}
}

// repost gives receive buffer head back to the device.
func (n *NIC) repost(head uint16, posted *bool) {
	if n.postRx(n.rxVirt[head], n.rxPhys[head]) != virtio.OK {
		n.broken = true // the descriptor Next freed is gone: cannot happen on a sound queue
	}
	*posted = true
}

// Inject puts frame in the ring of received frames as if the device had
// delivered it (a test's malformed frames): false, and counted as
// dropped, when the ring is full or the frame runt or oversize, as
// harvest drops them.
func (n *NIC) Inject(frame []byte) bool {
	if !n.present || len(frame) < MinFrame || len(frame) > MaxFrame || n.ringW-n.ringR == RingFrames {
		n.stats.Dropped++
		return false
	}
	s := n.ringW % RingFrames
	copy(bytesAt(n.ring[s], len(frame)), frame)
	n.ringLen[s], n.ringFlag[s] = uint32(len(frame)), 0
	n.ringW += uint32(slots(len(frame)))
	n.stats.RxFrames++
	return true
}

// Pending reports whether received frames wait in the ring (the slots
// they take).
func (n *NIC) Pending() int { return int(n.ringW - n.ringR) }

// RecvPeek is the oldest received frame's length and flags (RxCsumOK);
// false when the ring is empty. Its bytes are RecvSegment's until
// RecvPop.
func (n *NIC) RecvPeek() (l int, flags uint8, ok bool) {
	if n.ringR == n.ringW {
		return 0, 0, false
	}
	s := n.ringR % RingFrames
	return int(n.ringLen[s]), n.ringFlag[s], true
}

// RecvSegment is piece i of the oldest frame (l bytes, from RecvPeek):
// a slot's bytes, the last cut at the frame's end; nil past it. Its
// reader may run without the caller's lock while it alone takes frames:
// harvest writes only slots past ringW.
func (n *NIC) RecvSegment(l, i int) []byte {
	if i*bufSize >= l {
		return nil
	}
	s := (n.ringR + uint32(i)) % RingFrames
	return bytesAt(n.ring[s], min(bufSize, l-i*bufSize))
}

// RecvPop drops the oldest frame from the ring (taken) and harvests
// what the room lets in.
func (n *NIC) RecvPop() {
	if n.ringR == n.ringW {
		return
	}
	n.ringR += uint32(slots(int(n.ringLen[n.ringR%RingFrames])))
	n.refill()
}

// Recv takes the oldest received frame out of the ring into p: the
// frame's length, truncated to len(p) in the copy (the rest of the frame
// is dropped), and false when the ring is empty.
func (n *NIC) Recv(p []byte) (int, bool) {
	if n.ringR == n.ringW {
		return 0, false
	}
	l, _, _ := n.RecvPeek()
	for i, off := 0, 0; off < min(l, len(p)); i++ {
		off += copy(p[off:], n.RecvSegment(l, i))
	}
	n.RecvPop()
	return l, true
}

// refill harvests the frames left in used buffers while the ring was
// full, now that it has room.
func (n *NIC) refill() {
	if n.present && n.queues {
		n.harvest()
	}
}

// reclaim takes back the transmit buffers the device is done with.
func (n *NIC) reclaim() {
	for {
		head, _, ok := n.tx.Next()
		if !ok {
			break
		}
		n.freeChain(n.txFirst[head], txMaxChain)
	}
	if n.tx.Broken() {
		n.broken = true
	}
}

// freeChain gives back the pages linked from page p: at most limit (a
// bound on the walk, whatever the links say).
func (n *NIC) freeChain(p uint16, limit uint16) {
	for k := uint16(0); k < limit && n.txNFree < txPages; k++ {
		n.txFree[n.txNFree] = p
		n.txNFree++
		nx := n.txNext[p]
		if nx == noPage {
			return
		}
		p = nx
	}
}

const noPage = 0xffff

// Send copies frame (an Ethernet frame without its check sequence:
// MinFrame to MaxFrame bytes) into a transmit buffer behind a zero
// virtio_net_hdr and gives it to the device. ErrFull when every buffer is
// in flight (the device has not sent them yet): try again later.
func (n *NIC) Send(frame []byte) Error {
	e := n.Put(frame)
	if e == OK {
		n.Kick()
	}
	return e
}

// Put is Send without telling the device: the frame waits in the
// transmit queue until Kick, so that a batch of frames costs the device
// one notification (a VM exit under a hypervisor) instead of one each.
func (n *NIC) Put(frame []byte) Error {
	t, e := n.TxAlloc(Hdr{}, len(frame))
	if e != OK {
		return e
	}
	for i, off := 0, 0; off < len(frame); i++ {
		off += copy(n.TxSegment(t, i), frame[off:])
	}
	return n.TxCommit(t)
}

// A TxBuf is a frame's transmit buffer between TxAlloc and TxCommit (or
// TxDrop): pages taken from the pool, the header written, the frame's
// bytes for the caller to copy into its segments.
type TxBuf struct {
	first uint16
	pages uint16
	len   int
}

// TxAlloc takes the transmit buffer for a frame of l bytes with header h
// and writes the header: ErrSize for a length out of range, ErrHdr for a
// header the device cannot take, ErrFull when too few pages or
// descriptors are idle (try again later). The caller fills the buffer's
// segments (TxSegment), which it may do without the lock that serialises
// the NIC's calls (a copy from a program that faults a page in), then
// commits it.
func (n *NIC) TxAlloc(h Hdr, l int) (TxBuf, Error) {
	if !n.present || n.broken {
		return TxBuf{}, ErrBroken
	}
	if l < MinFrame || l > MaxGSOFrame {
		return TxBuf{}, ErrSize
	}
	if !h.check(l, n.features) {
		if h.GSOType == GSONone && h.Flags == 0 && l > MaxFrame {
			return TxBuf{}, ErrSize
		}
		return TxBuf{}, ErrHdr
	}
	k := (HdrLen + l + pageSize - 1) / pageSize
	if k > int(n.size) {
		return TxBuf{}, ErrSize // more descriptors than the queue has: it would never fit
	}
	if n.txNFree < k || int(n.tx.Free()) < k {
		n.reclaim()
	}
	if n.txNFree < k || int(n.tx.Free()) < k {
		n.stats.TxFull++
		return TxBuf{}, ErrFull
	}
	t := TxBuf{pages: uint16(k), len: l}
	prev := uint16(noPage)
	for range k {
		n.txNFree--
		p := n.txFree[n.txNFree]
		n.txNext[p] = noPage
		if prev == noPage {
			t.first = p
		} else {
			n.txNext[prev] = p
		}
		prev = p
	}
	b := bytesAt(n.txVirt[t.first], HdrLen)
	b[0], b[1] = h.Flags, h.GSOType
	put16 := func(o int, v uint16) { b[o], b[o+1] = byte(v), byte(v>>8) }
	put16(2, h.HdrLen)
	put16(4, h.GSOSize)
	put16(6, h.CsumStart)
	put16(8, h.CsumOffset)
	put16(10, 0)
	return t, OK
}

// TxSegment is the i'th piece of t's frame bytes: the first page after
// the header, then whole pages, the last cut at the frame's end; nil past
// it.
func (n *NIC) TxSegment(t TxBuf, i int) []byte {
	p := t.first
	for range i {
		if p = n.txNext[p]; p == noPage {
			return nil
		}
	}
	start := i*pageSize - HdrLen // frame offset of page i's first byte
	if i == 0 {
		return bytesAt(n.txVirt[p]+HdrLen, min(pageSize-HdrLen, t.len))
	}
	if start >= t.len {
		return nil
	}
	return bytesAt(n.txVirt[p], min(pageSize, t.len-start))
}

// TxCommit gives t's frame to the device (published by the next Kick);
// ErrFull, with t's pages taken back, when another frame took the
// descriptors it needs since TxAlloc.
func (n *NIC) TxCommit(t TxBuf) Error {
	if !n.present || n.broken {
		n.TxDrop(t)
		return ErrBroken
	}
	var d [txMaxChain]virtio.Buffer
	p, left := t.first, HdrLen+t.len
	for i := range int(t.pages) {
		d[i] = virtio.Buffer{Addr: n.txPhys[p], Len: uint32(min(left, pageSize))}
		left -= pageSize
		p = n.txNext[p]
	}
	head, e := n.tx.Add(d[:t.pages], int(t.pages))
	if e != virtio.OK {
		n.TxDrop(t)
		n.broken = n.tx.Broken()
		if n.broken {
			return ErrBroken
		}
		n.stats.TxFull++
		return ErrFull
	}
	n.txFirst[head] = t.first
	n.stats.TxFrames++
	n.txPut++
	return OK
}

// TxDrop gives back the pages of t, which is not sent.
func (n *NIC) TxDrop(t TxBuf) { n.freeChain(t.first, t.pages) }

// Kick tells the device about the frames committed since the last Kick
// (nothing if there were none).
func (n *NIC) Kick() {
	if n.txPut > 0 {
		n.txPut = 0
		n.dev.Kick(&n.tx)
	}
}
