package abi

// The network device's private calls: production calls for the network
// service (docs/net.md, "The NIC"), answered in every image — unlike the
// test calls above they are not gated by TestCalls. Without a NIC they
// return ENODEV (SysNICInfo reports Present 0).
const (
	SysNICInfo   = 0x1010 // copy NICInfo to a0
	SysNICSend   = 0x1011 // send the Ethernet frame of a1 bytes at a0 (no FCS): EINVAL outside [14, 1518] bytes, EAGAIN while the transmit queue is full
	SysNICRecv   = 0x1012 // move received frames into the a1 bytes at a0 as records (NICRecord*); returns the bytes written, EAGAIN when none waits (or another thread is taking them) — fewer than min(a1, 1 MiB) less the largest record only when no more waited (or a fault ended the copy: EFAULT if it took none), EINVAL if a1 cannot hold the largest record (NICRecordMax, NICRecordMaxGSO with NICOffloadRx)
	SysNICNotify = 0x1013 // a0: an eventfd the kernel adds 1 to whenever frames arrive (-1: none); EBADF if a0 is no eventfd
	SysNICInject = 0x1014 // test call (TestCalls): the frame of a1 bytes at a0 arrives as if received; EAGAIN if the ring is full, EINVAL outside [14, 1518]
	// SysNICSendRecords sends the frames in the a1 bytes at a0, as
	// records (NICRecord*), with one notification of the device; returns
	// the bytes of the records sent (fewer when the transmit queue
	// filled), EAGAIN when it was full at the first, EINVAL when the first
	// record is malformed (a length outside [14, 1518], or past
	// NICMaxGSOFrame with an offload header, or past a1; an offload header
	// the NIC refuses).
	SysNICSendRecords = 0x1015
)

// NICInfo is what SysNICInfo copies out. The address is the kernel
// option yolk.net=ADDR/PREFIX,GATEWAY[,DNS] (yolk run passes QEMU's user
// network's); Prefix 0 means none was given.
type NICInfo struct {
	Present uint32 // 1: a NIC is open
	LinkUp  uint32 // 1: the device reports its link up
	MAC     [6]byte
	PCI     uint8 // 1: behind PCI, 0: virtio-mmio
	Offload uint8 // NICOffloadTx: records sent may carry an offload header (NICRecordOffload); NICOffloadRx: records received may be coalesced frames and say NICRecordCsumOK
	MTU     uint32
	Prefix  uint32 // the address's prefix length
	Addr    [4]byte
	Gateway [4]byte
	DNS     [4]byte
	_       uint32
	// Counters: frames received into the kernel's ring and sent; frames
	// dropped on receive (ring full, runt or oversize); the device's
	// interrupts; sends refused with the transmit queue full.
	RxFrames, TxFrames, Dropped, Interrupts, TxFull uint64
}

// A SysNICRecv (and SysNICSendRecords) record: the frame's length as a little-endian uint32, the
// frame, then zero padding up to a multiple of NICRecordAlign. A buffer of
// NICRecordMax bytes always takes one frame.
//
// A record sent to a NIC whose NICInfo says Offload may set
// NICRecordOffload in its length word; NICOffloadLen bytes of offload
// header then come between the word and the frame: virtio_net_hdr's
// flags, gso_type, hdr_len, gso_size, csum_start and csum_offset (little
// endian, as the virtio specification's §5.1.6 lays them out) and two
// zero bytes — the device completes the TCP checksum (flags 1,
// NEEDS_CSUM) and segments the frame (gso_type 1 TCP over IPv4, 4 over
// IPv6), which may then be up to NICMaxGSOFrame bytes.
//
// With NICInfo's NICOffloadRx a record received may hold a frame of up
// to NICMaxGSOFrame bytes (TCP segments the host coalesced, their IP
// lengths the whole frame's) and have NICRecordCsumOK set in its length
// word: the frame's checksum was verified on the way, or left partial by
// a sender that trusts it (the host's own stack): the receiver need not
// check it.
const (
	NICOffloadTx     = 1
	NICOffloadRx     = 2
	NICRecordCsumOK  = 1 << 30
	NICRecordLenMask = 1<<24 - 1 // the length in a record's word
	NICRecordMaxGSO  = 4 + NICMaxGSOFrame + 3
	NICRecordAlign   = 4
	NICMaxFrame      = 1518 // Ethernet header, a VLAN tag, MTU 1500
	NICRecordMax     = 4 + NICMaxFrame + 2
	NICRecordOffload = 1 << 31
	NICOffloadLen    = 12
	NICMaxGSOFrame   = 14 + 40 + 65535 // an Ethernet header and the largest IPv6 packet
)
