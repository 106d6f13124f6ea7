// Package virtionet is the kernel's virtio-net driver (virtio 1.1 §5.1):
// it opens a network device over package virtio (virtio-mmio version 2 or
// modern PCI), keeps its receive queue full of page-backed buffers, moves
// what the device received into a ring of frames the kernel's network
// service drains (Recv, or many at once with RecvRecords), and sends frames
// through a transmit queue (Send). It negotiates VIRTIO_F_VERSION_1,
// VIRTIO_NET_F_MAC and VIRTIO_NET_F_STATUS only: no offloads (QEMU's user
// network has none; checksums are the protocol stack's, in software), no
// mergeable buffers, one queue pair. Every frame carries the 12-byte
// virtio_net_hdr of VERSION_1 in front of it, all zero on transmit.
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
}

func (e Error) String() string {
	if e < errCount {
		return errText[e]
	}
	return "unknown virtio-net error"
}

// Feature bits of a network device (§5.1.3).
const (
	FMAC    = 1 << 5  // VIRTIO_NET_F_MAC: the MAC address is in the configuration
	FStatus = 1 << 16 // VIRTIO_NET_F_STATUS: the link status is in the configuration
)

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

	bufSize   = 2048 // a receive or transmit buffer: HdrLen+MaxFrame fits; two per page
	pageSize  = 4096
	queueSize = 64 // descriptors per queue: the queue's memory fits one page (virtio.QueueBytes)

	// RingFrames is how many received frames the ring holds until
	// the service takes them; while it is full the device keeps the
	// frames it received in its buffers (harvest).
	RingFrames = 512
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

	// Receive buffers, indexed by the head descriptor the chain holding
	// them was added as.
	rxVirt [queueSize]uintptr
	rxPhys [queueSize]uint64

	// Transmit buffers: txVirt/txPhys by slot, txSlot by the head of the
	// chain in flight, txFree a stack of idle slots.
	txVirt  [queueSize]uintptr
	txPhys  [queueSize]uint64
	txSlot  [queueSize]uint16
	txFree  [queueSize]uint16
	txNFree int
	txPut   int // frames Put since the last Kick

	// The ring of received frames: slot i's bytes at ring[i] (bufSize
	// each), its length at ringLen[i]; frames ringR..ringW-1 (counts,
	// modulo RingFrames) are waiting.
	ring         [RingFrames]uintptr
	ringLen      [RingFrames]uint16
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
	got, e := d.Negotiate(FMAC | FStatus)
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
	// Buffers: receive and transmit, two per page.
	for i := 0; i < int(size); i += 2 {
		rv, rp, ok1 := halves(m)
		tv, tp, ok2 := halves(m)
		if !ok1 || !ok2 {
			n.dev.Fail()
			*n = NIC{}
			return ErrMemory
		}
		for j := 0; j < 2; j++ {
			if e := n.postRx(rv[j], rp[j]); e != virtio.OK {
				return n.fail(e, te)
			}
			n.txVirt[i+j], n.txPhys[i+j] = tv[j], tp[j]
			n.txFree[n.txNFree] = uint16(i + j)
			n.txNFree++
		}
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
	b := [1]virtio.Buffer{{Addr: pa, Len: bufSize}}
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
// buffers, while the ring has room: with the ring full the frames stay
// in the device's used buffers, the device stops taking frames from its
// backend (QEMU queues them, as a NIC's full ring makes the peer wait)
// instead of their being dropped, and Recv and RecvRecords harvest
// again as they make room (no interrupt comes for buffers already
// used).
func (n *NIC) harvest() int {
	got, posted := 0, false
	for n.ringW-n.ringR < RingFrames {
		head, l, ok := n.rx.Next()
		if !ok {
			break
		}
		va, pa := n.rxVirt[head], n.rxPhys[head]
		fl := int(l) - HdrLen
		switch {
		case fl < MinFrame || fl > MaxFrame:
			n.stats.Dropped++
		default:
			s := n.ringW % RingFrames
			copy(bytesAt(n.ring[s], fl), bytesAt(va+HdrLen, fl))
			n.ringLen[s] = uint16(fl)
			n.ringW++
			n.stats.RxFrames++
			got++
		}
		if n.postRx(va, pa) != virtio.OK {
			n.broken = true // the descriptor Next freed is gone: cannot happen on a sound queue
		}
		posted = true
	}
	if n.rx.Broken() {
		n.broken = true
	}
	if posted {
		n.dev.Kick(&n.rx)
	}
	return got
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
	n.ringLen[s] = uint16(len(frame))
	n.ringW++
	n.stats.RxFrames++
	return true
}

// Pending is the number of received frames waiting in the ring.
func (n *NIC) Pending() int { return int(n.ringW - n.ringR) }

// Recv takes the oldest received frame out of the ring into p: the
// frame's length, truncated to len(p) in the copy (the rest of the frame
// is dropped), and false when the ring is empty.
func (n *NIC) Recv(p []byte) (int, bool) {
	if n.ringR == n.ringW {
		return 0, false
	}
	s := n.ringR % RingFrames
	l := int(n.ringLen[s])
	copy(p, bytesAt(n.ring[s], l))
	n.ringR++
	n.refill()
	return l, true
}

// refill harvests the frames left in used buffers while the ring was
// full, now that it has room.
func (n *NIC) refill() {
	if n.present && n.queues {
		n.harvest()
	}
}

// RecordAlign is the alignment of each record RecvRecords writes.
const RecordAlign = 4

// RecvRecords takes as many received frames out of the ring as fit in p,
// each as a record: its length as a little-endian uint32, the frame, then
// padding to a multiple of RecordAlign. It returns the bytes used and the
// frames taken (0, 0 when the ring is empty or the first frame does not
// fit: len(p) >= 4+MaxFrame always takes one).
func (n *NIC) RecvRecords(p []byte) (used, frames int) {
	for n.ringR != n.ringW {
		s := n.ringR % RingFrames
		l := int(n.ringLen[s])
		rec := (4 + l + RecordAlign - 1) &^ (RecordAlign - 1)
		if used+rec > len(p) {
			break
		}
		r := p[used : used+rec]
		r[0], r[1], r[2], r[3] = byte(l), byte(l>>8), 0, 0
		copy(r[4:], bytesAt(n.ring[s], l))
		clear(r[4+l:])
		n.ringR++
		used += rec
		frames++
	}
	if frames > 0 {
		n.refill()
	}
	return used, frames
}

// reclaim takes back the transmit buffers the device is done with.
func (n *NIC) reclaim() {
	for {
		head, _, ok := n.tx.Next()
		if !ok {
			break
		}
		n.txFree[n.txNFree] = n.txSlot[head]
		n.txNFree++
	}
	if n.tx.Broken() {
		n.broken = true
	}
}

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
	if !n.present || n.broken {
		return ErrBroken
	}
	if len(frame) < MinFrame || len(frame) > MaxFrame {
		return ErrSize
	}
	if n.txNFree == 0 {
		n.reclaim()
	}
	if n.txNFree == 0 {
		n.stats.TxFull++
		return ErrFull
	}
	n.txNFree--
	slot := n.txFree[n.txNFree]
	b := bytesAt(n.txVirt[slot], HdrLen+len(frame))
	clear(b[:HdrLen])
	copy(b[HdrLen:], frame)
	d := [1]virtio.Buffer{{Addr: n.txPhys[slot], Len: uint32(len(b))}}
	head, e := n.tx.Add(d[:], 1)
	if e != virtio.OK {
		n.txNFree++
		n.broken = n.tx.Broken()
		return ErrFull
	}
	n.txSlot[head] = slot
	n.stats.TxFrames++
	n.txPut++
	return OK
}

// Kick tells the device about the frames Put added since the last Kick
// (nothing if there were none).
func (n *NIC) Kick() {
	if n.txPut > 0 {
		n.txPut = 0
		n.dev.Kick(&n.tx)
	}
}
