// Package virtioblk is the virtio-blk driver (virtio 1.1 §5.2) over the
// shared transport of package virtio (virtio-mmio on microvm and arm64
// virt, modern PCI on pc and q35): the features VERSION_1, BLK_SIZE,
// SEG_MAX, SIZE_MAX, TOPOLOGY, FLUSH, RO, DISCARD and WRITE_ZEROES where
// the device offers them, the capacity and limits from its configuration,
// and requests — a header, the data, a status byte — kept in a fixed table
// of Slots slots, so that several tasks have requests in flight at once
// without waiting for each other. Each slot owns its header and its data
// pages: the data are copied between them and the caller's memory through
// the environment's Copy, so that a request the device answers late (after
// its timeout) can only ever write the slot's own pages, which stay the
// device's until it returns them.
//
// Completion is by interrupt: the kernel calls Interrupt from the device's
// handler, which marks each answered slot done and wakes its waiter. A
// request the device does not finish within Timeout ends in EIO with one
// line on the console; a device that returns a bad used entry breaks the
// queue, and every request then and later ends in EIO at once.
//
// What it does not do: find devices or route interrupts, block or wake
// (the Env type parameter does both), cache, reorder or merge requests,
// or allocate after Open (memory comes from the caller's Mem, once).
//
// Kernel-context: no heap allocation, no Go pointers stored (addresses are
// uintptr, device addresses uint64), no runtime scheduler calls, no fmt.
package virtioblk

import (
	"unsafe"

	"yolk/drivers/virtio"
)

// Feature bits (§5.2.3).
const (
	FSizeMax     = 1 << 1  // VIRTIO_BLK_F_SIZE_MAX: size_max bounds one segment
	FSegMax      = 1 << 2  // VIRTIO_BLK_F_SEG_MAX: seg_max bounds the data segments of a request
	FRO          = 1 << 5  // VIRTIO_BLK_F_RO: the device is read-only
	FBlkSize     = 1 << 6  // VIRTIO_BLK_F_BLK_SIZE: blk_size is the logical block size
	FFlush       = 1 << 9  // VIRTIO_BLK_F_FLUSH: VIRTIO_BLK_T_FLUSH works
	FTopology    = 1 << 10 // VIRTIO_BLK_F_TOPOLOGY: the physical block exponent
	FDiscard     = 1 << 13 // VIRTIO_BLK_F_DISCARD
	FWriteZeroes = 1 << 14 // VIRTIO_BLK_F_WRITE_ZEROES

	wanted = FSizeMax | FSegMax | FRO | FBlkSize | FFlush | FTopology | FDiscard | FWriteZeroes
)

// Request types (§5.2.6).
const (
	TIn          = 0
	TOut         = 1
	TFlush       = 4
	TDiscard     = 11
	TWriteZeroes = 13
)

// Status bytes (§5.2.6).
const (
	SOK     = 0
	SIOErr  = 1
	SUnsupp = 2
)

// The device configuration's fields (§5.2.4), by offset.
const (
	cfgCapacity     = 0
	cfgSizeMax      = 8
	cfgSegMax       = 12
	cfgBlkSize      = 20
	cfgPhysExp      = 24
	cfgMaxDiscard   = 36
	cfgMaxDiscSeg   = 40
	cfgMaxWZSectors = 48
)

const (
	// Slots is how many requests may be in flight at once.
	Slots = 32
	// DataPages is each slot's data buffer in pages: one request moves
	// at most MaxData bytes; larger transfers are split.
	DataPages = 16
	// Sector is the unit of the protocol's addresses (§5.2.6: 512 bytes,
	// whatever the logical block size).
	Sector = 512

	pageSize = 4096
	// MaxData is the most one request moves.
	MaxData = DataPages * pageSize
	// queueSize is the request queue's descriptors: its memory fits one
	// page. A request takes 2 descriptors and its data segments (one per
	// physically contiguous run of its pages); a request finding too
	// few free waits for some to come back.
	queueSize = 64
	// slotHdr is each slot's share of the header page: the 16-byte
	// header, a 16-byte discard or write-zeroes range, the status byte.
	slotHdr   = 64
	hdrRange  = 16
	hdrStatus = 32

	// DefaultTimeout is how long a request may take before it ends in
	// EIO (Linux's block layer waits 30 s before it aborts one).
	DefaultTimeout = 30e9
)

// Errno is a Linux error number; 0 is success.
type Errno uint32

const (
	EIO        Errno = 5
	EFAULT     Errno = 14
	EINVAL     Errno = 22
	ENOSPC     Errno = 28
	EROFS      Errno = 30
	EOPNOTSUPP Errno = 95
)

// Mem gives the driver memory: whole zeroed pages. A type-parameter
// constraint, never an interface value.
type Mem interface {
	// Page returns a zeroed 4 KiB page: the CPU's address and the
	// device's; virt 0 when memory is exhausted.
	Page() (virt uintptr, phys uint64)
}

// Env is the disk's environment. A type-parameter constraint.
type Env interface {
	// Lock and Unlock guard the queue and the slots; Interrupt takes
	// them too (the kernel runs it with interrupts off).
	Lock()
	Unlock()
	// Wait blocks while *addr == val, until the monotonic time deadline
	// (ns, 0: none); it reports whether the deadline passed. Before
	// tasks run it polls the device (Interrupt) instead.
	Wait(addr *uint32, val uint32, deadline int64) (timedOut bool)
	// Wake wakes the waiters on addr.
	Wake(addr *uint32)
	// Now is the monotonic clock, ns.
	Now() int64
	// Copy copies n bytes from src to dst, one of them a caller's
	// buffer (the program's memory, which another thread may unmap
	// while a request waits); false if that faulted.
	Copy(dst, src uintptr, n int) bool
	// Note starts a line on the console (with the kernel's prefix);
	// Log and LogDec go on with it.
	Note(s string)
	Log(s string)
	LogDec(v int64)
}

// Info is what a disk is: its size, block sizes, limits and features.
type Info struct {
	Sectors      uint64 // capacity in 512-byte sectors
	BlockSize    uint32 // logical block size (BLKSSZGET), 512 unless BLK_SIZE says
	PhysBlock    uint32 // physical block size (BLKPBSZGET)
	ReadOnly     bool
	Flush        bool   // FLUSH negotiated: writes may sit in a cache until Flush
	MaxDiscard   uint32 // sectors one discard may cover; 0: no DISCARD
	MaxZeroes    uint32 // sectors one write-zeroes may cover; 0: no WRITE_ZEROES
	MaxTransfer  uint32 // bytes one request moves
	Features     uint64 // negotiated
	QueueEntries uint16
}

// Disk is one virtio-blk device. Pointer-free; its zero value is no disk
// (Open).
type Disk[E Env] struct {
	env  E
	dev  virtio.Device
	q    virtio.Queue
	info Info
	// Timeout bounds each request (ns): DefaultTimeout after Open.
	Timeout int64
	// Name is the disk's name for the console's reports (vda ...).
	Name [8]byte

	slotOf [queueSize]uint8 // the slot each chain in flight belongs to, by head
	segMax uint32           // data segments a request may have
	segLen uint32           // bytes one segment may have

	hdr      uintptr // the header page: slot s's at hdr+s*slotHdr
	hdrPhys  uint64
	data     [Slots][DataPages]uintptr
	dataPhys [Slots][DataPages]uint64

	free    uint32 // slots no request holds, a bit each
	busy    uint32 // slots whose chain the device has
	lost    uint32 // slots whose request timed out: the device still has their chain
	freeSeq uint32 // bumped when a slot or descriptors come back (atomic)
	// Done[s] is 1 once slot s's request is answered; Len[s] is the
	// bytes the device wrote (0: none, the queue broke). Atomic.
	Done [Slots]uint32
	Len  [Slots]uint32

	Stats Stats
}

// Stats are a disk's counters.
type Stats struct {
	Requests, Errors, Timeouts, Late, Interrupts, QueueFull uint64
}

func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

// Open initialises the virtio-blk device d into k: the features, the
// configuration, the request queue and the slots' pages from m (a header
// page and DataPages per slot: about 2 MiB), then DRIVER_OK. On an error
// the device is left failed.
func Open[E Env, M Mem](k *Disk[E], env E, d virtio.Device, m M) virtio.Error {
	*k = Disk[E]{env: env, Timeout: DefaultTimeout}
	if d.Type() != virtio.TypeBlock {
		return virtio.ErrNoDevice
	}
	got, e := d.Negotiate(wanted)
	if e != virtio.OK {
		return e
	}
	k.dev = d
	in := &k.info
	in.Features = got
	in.Sectors = d.Config64(cfgCapacity)
	in.BlockSize = Sector
	if got&FBlkSize != 0 {
		if b := d.Config32(cfgBlkSize); b >= Sector && b <= pageSize && b&(b-1) == 0 {
			in.BlockSize = b
		}
	}
	in.PhysBlock = in.BlockSize
	if got&FTopology != 0 {
		if x := d.Config8(cfgPhysExp); x < 4 && in.BlockSize<<x <= pageSize {
			in.PhysBlock = in.BlockSize << x
		}
	}
	in.ReadOnly = got&FRO != 0
	in.Flush = got&FFlush != 0
	if got&FDiscard != 0 && d.Config32(cfgMaxDiscSeg) != 0 {
		in.MaxDiscard = d.Config32(cfgMaxDiscard)
	}
	if got&FWriteZeroes != 0 {
		in.MaxZeroes = d.Config32(cfgMaxWZSectors)
	}
	k.segMax, k.segLen = DataPages, pageSize
	if got&FSegMax != 0 {
		if s := d.Config32(cfgSegMax); s >= 1 && s < k.segMax {
			k.segMax = s
		}
	}
	if got&FSizeMax != 0 {
		if s := d.Config32(cfgSizeMax); s >= Sector && s < k.segLen {
			k.segLen = s &^ (Sector - 1)
		}
	}
	// Each page is a segment at most (runs are merged only up to segLen),
	// so this many bytes always fit the device's limits.
	in.MaxTransfer = min(k.segMax*k.segLen, MaxData)

	size := d.QueueFit(0, queueSize)
	in.QueueEntries = size
	if size == 0 {
		d.Fail()
		return virtio.ErrNoQueue
	}
	if size < 4 { // too small for a request with data
		d.Fail()
		return virtio.ErrQueueSize
	}
	va, pa := m.Page()
	if va == 0 {
		d.Fail()
		return virtio.ErrNoQueue
	}
	if e := k.q.Init(0, size, va, pa, false); e != virtio.OK {
		d.Fail()
		return e
	}
	if k.hdr, k.hdrPhys = m.Page(); k.hdr == 0 {
		d.Fail()
		return virtio.ErrNoQueue
	}
	for s := range k.data {
		for i := range k.data[s] {
			if k.data[s][i], k.dataPhys[s][i] = m.Page(); k.data[s][i] == 0 {
				d.Fail()
				return virtio.ErrNoQueue
			}
		}
	}
	if e := d.SetupQueue(&k.q); e != virtio.OK {
		d.Fail()
		return e
	}
	k.free = 1<<Slots - 1
	d.Ready()
	return virtio.OK
}

// Info is what the disk is.
func (k *Disk[E]) Info() *Info { return &k.info }

// IsPCI says which transport the device is behind.
func (k *Disk[E]) IsPCI() bool { return k.dev.IsPCI() }

// Broken reports that the device returned a bad used entry: every
// request fails (EIO).
func (k *Disk[E]) Broken() bool { return k.q.Broken() }
