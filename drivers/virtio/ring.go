package virtio

import (
	"sync/atomic"
	"unsafe"
)

// A split virtqueue (§2.7) of S descriptors (S a power of two, 2 to 32768)
// lives in one physically contiguous region of QueueBytes(S) bytes, 16-byte
// aligned, laid out by this package:
//
//	0          descriptor table   16·S  (addr le64, len le32, flags le16, next le16)
//	16S        available ring     4 + 2·S, then used_event (le16) and 2 bytes of padding
//	18S+8      used ring          4 + 8·S, then avail_event (le16) and 2 bytes of padding
//	26S+16     driver-only shadow 8·S   (per descriptor: next le16, chain length le16, writable bytes le32)
//	34S+16     end
//
// The device is told the first three addresses (§2.7: the descriptor table
// 16-byte, the available ring 2-byte and the used ring 4-byte aligned, all
// met). The two rings' flags and idx share one aligned 32-bit word (flags
// low, idx high: little-endian), and each event index is the low half of a
// 32-bit word, so every field both sides touch is read and written with a
// 32-bit sync/atomic access: the driver owns the available ring's word and
// used_event, the device the used ring's word and avail_event, so a 32-bit
// store never overwrites a half the other side writes. The shadow holds the
// free list's links and each outstanding chain's length and writable size,
// so neither freeing nor checking a used entry trusts memory the device can
// write.
const (
	descSize   = 16
	shadowSize = 8
	// MaxQueueSize is the largest split virtqueue (§2.7: Queue Size up to 32768).
	MaxQueueSize = 32768
)

// Descriptor flags (§2.7.5).
const (
	descNext  = 1
	descWrite = 2
)

// Ring flags (§2.7.6, §2.7.8).
const (
	availNoInterrupt = 1 // VRING_AVAIL_F_NO_INTERRUPT
	usedNoNotify     = 1 // VRING_USED_F_NO_NOTIFY
)

func availOff(s uintptr) uintptr      { return descSize * s }
func usedEventOff(s uintptr) uintptr  { return availOff(s) + 4 + 2*s }
func usedOff(s uintptr) uintptr       { return availOff(s) + 8 + 2*s }
func availEventOff(s uintptr) uintptr { return usedOff(s) + 4 + 8*s }
func shadowOff(s uintptr) uintptr     { return usedOff(s) + 8 + 8*s }

// QueueBytes is the size of the memory a queue of size descriptors needs
// (0 for a size Init refuses).
func QueueBytes(size uint16) uintptr {
	if !goodSize(size) {
		return 0
	}
	return shadowOff(uintptr(size)) + shadowSize*uintptr(size)
}

func goodSize(size uint16) bool { return size >= 2 && size&(size-1) == 0 }

// Buffer is one element of a chain: a physical address and a length.
type Buffer struct {
	Addr uint64
	Len  uint32
}

// Queue is the driver's side of one split virtqueue. It holds no Go
// pointers: a Queue may be a package-level variable or sit in memory the
// kernel owns. Its zero value is unusable; Init prepares it.
type Queue struct {
	virt       uintptr // the region, as the CPU sees it
	phys       uint64  // the region, as the device sees it
	notify     uintptr // the queue's notify register (Device.SetupQueue)
	size       uint16
	index      uint16 // queue number in the device
	freeHead   uint16 // first free descriptor (shadow links); meaningless when numFree is 0
	numFree    uint16
	availIdx   uint16 // the next available-ring slot, not yet published
	published  uint16 // the idx the device has been given
	lastUsed   uint16 // the next used-ring entry to harvest
	availFlags uint16
	eventIdx   bool // VIRTIO_F_EVENT_IDX negotiated
	notify32   bool // the notify register is 32 bits wide (virtio-mmio), else 16 (PCI)
	broken     bool
}

// Init prepares q as queue number index of size descriptors over the
// memory at virt (CPU) and phys (device), QueueBytes(size) bytes, which it
// zeroes. eventIdx says VIRTIO_F_EVENT_IDX was negotiated. The device
// learns of the queue through Device.SetupQueue.
func (q *Queue) Init(index, size uint16, virt uintptr, phys uint64, eventIdx bool) Error {
	if !goodSize(size) {
		return ErrQueueSize
	}
	if virt%16 != 0 || phys%16 != 0 {
		return ErrQueueAlign
	}
	*q = Queue{virt: virt, phys: phys, size: size, index: index, numFree: size, eventIdx: eventIdx}
	n := QueueBytes(size) // a multiple of 4: S is even
	for off := uintptr(0); off < n; off += 4 {
		*at[uint32](virt + off) = 0
	}
	for i := uint16(0); i < size; i++ {
		q.setShadowNext(i, i+1) // the last link is never followed: numFree bounds every walk
	}
	return OK
}

// Size is the number of descriptors; Index the queue's number.
func (q *Queue) Size() uint16  { return q.size }
func (q *Queue) Index() uint16 { return q.index }

// DescAddr, DriverAddr and DeviceAddr are the physical addresses of the
// descriptor table, the available ring and the used ring, as the device is
// told them.
func (q *Queue) DescAddr() uint64 { return q.phys }
func (q *Queue) DriverAddr() uint64 {
	return q.phys + uint64(availOff(uintptr(q.size)))
}
func (q *Queue) DeviceAddr() uint64 {
	return q.phys + uint64(usedOff(uintptr(q.size)))
}

// Free is the number of free descriptors.
func (q *Queue) Free() uint16 { return q.numFree }

// Broken reports that the device returned a bad used entry (an ID that is
// not an outstanding chain's head, or more bytes than the chain could
// take); Next returns nothing after that and Add refuses (ErrBroken), so
// no request waits for a device that will not answer it. The chains
// outstanding then stay the device's: only a device reset and Init
// recover.
func (q *Queue) Broken() bool { return q.broken }

// Add puts a chain on the available ring: bufs[:out] for the device to
// read, bufs[out:] for it to write, in that order. It returns the chain's
// head descriptor, which Next returns when the device is done with the
// chain (drivers index their own bookkeeping by it). The device does not
// see the chain until Publish (or Device.Kick). bufs is only read. A
// broken queue refuses every chain (ErrBroken, as Linux's virtqueue_add
// gives EIO), before it could run out of descriptors and leave its
// callers waiting for ones that never come back.
func (q *Queue) Add(bufs []Buffer, out int) (head uint16, err Error) {
	if q.broken {
		return 0, ErrBroken
	}
	n := len(bufs)
	if n == 0 || out < 0 || out > n {
		return 0, ErrChain
	}
	if n > int(q.numFree) {
		return 0, ErrFull
	}
	var total, writable uint64
	for i := range bufs {
		total += uint64(bufs[i].Len)
		if i >= out {
			writable += uint64(bufs[i].Len)
		}
	}
	if total >= 1<<32 {
		return 0, ErrChain
	}
	head = q.freeHead
	d := head
	for i := range bufs {
		flags := uint16(0)
		if i >= out {
			flags |= descWrite
		}
		next, link := q.shadowNext(d), uint16(0)
		if i < n-1 {
			flags |= descNext
			link = next
		} else {
			q.freeHead = next
		}
		p := q.virt + descSize*uintptr(d)
		*at[uint64](p) = bufs[i].Addr
		*at[uint32](p + 8) = bufs[i].Len
		*at[uint16](p + 12) = flags
		*at[uint16](p + 14) = link
		d = next
	}
	q.numFree -= uint16(n)
	q.setShadowChain(head, uint16(n), uint32(writable))
	slot := uintptr(q.availIdx & (q.size - 1))
	*at[uint16](q.virt + availOff(uintptr(q.size)) + 4 + 2*slot) = head
	q.availIdx++
	return head, OK
}

// Publish makes the chains added since the last Publish visible to the
// device (the available ring's idx, a release store after the entries) and
// says whether the device wants a notification for them: not if it asked
// for none (the used ring's NO_NOTIFY flag) or, with VIRTIO_F_EVENT_IDX,
// if the avail_event it wrote lies outside the chains just published
// (§2.7.10). The read comes after the store (storeAvailWord), so a device
// that clears NO_NOTIFY or moves avail_event and then looks at idx cannot
// be missed by both.
func (q *Queue) Publish() (notify bool) {
	old, new := q.published, q.availIdx
	if old == new {
		return false
	}
	q.published = new
	q.storeAvailWord()
	if q.eventIdx {
		event := uint16(atomic.LoadUint32(at[uint32](q.virt + availEventOff(uintptr(q.size)))))
		return needEvent(event, new, old)
	}
	return uint16(atomic.LoadUint32(at[uint32](q.virt+usedOff(uintptr(q.size)))))&usedNoNotify == 0
}

// needEvent is vring_need_event (§2.7.10): whether moving an index from
// old to new passes event, modulo 2^16.
func needEvent(event, new, old uint16) bool { return new-event-1 < new-old }

// storeAvailWord and storeUsedEvent write with an atomic swap, not a
// store: the driver reads the device's side next (Publish: avail_event
// or NO_NOTIFY; EnableInterrupts: the used index), and the store must be
// visible first, the full barrier of §2.7.13's "mb". Go's store is one on
// amd64 (XCHG) and orders a later load on Arm's cores (STLR, then LDAR),
// but not under QEMU's TCG emulating arm64 on an x86 host, where it can
// wait in the host's store buffer while the load reads (sync/twa's
// UnlockSlot has the measurement): a request published while the device
// went idle would get no notification. A swap is a locked instruction
// there.
func (q *Queue) storeAvailWord() {
	atomic.SwapUint32(at[uint32](q.virt+availOff(uintptr(q.size))), uint32(q.published)<<16|uint32(q.availFlags))
}

// Pending reports whether the device has returned chains Next has not yet
// harvested (always false once the queue is broken).
func (q *Queue) Pending() bool {
	return !q.broken && q.usedIdx() != q.lastUsed
}

func (q *Queue) usedIdx() uint16 {
	return uint16(atomic.LoadUint32(at[uint32](q.virt+usedOff(uintptr(q.size)))) >> 16)
}

// Next harvests one chain the device has finished with: its head (as Add
// returned it) and the number of bytes the device wrote into its writable
// buffers. The chain's descriptors are free again. ok is false when there
// is none, or when the queue is broken: an entry naming a descriptor that
// heads no outstanding chain, or claiming more bytes than the chain's
// writable buffers hold, breaks the queue instead of corrupting the free
// list.
func (q *Queue) Next() (head uint16, length uint32, ok bool) {
	if q.broken {
		return 0, 0, false
	}
	if q.usedIdx() == q.lastUsed { // acquire: the entry and the buffers' contents are read after
		return 0, 0, false
	}
	e := q.virt + usedOff(uintptr(q.size)) + 4 + 8*uintptr(q.lastUsed&(q.size-1))
	id, length := *at[uint32](e), *at[uint32](e + 4)
	if id >= uint32(q.size) {
		q.broken = true
		return 0, 0, false
	}
	head = uint16(id)
	n, writable := q.shadowChain(head)
	if n == 0 || length > writable {
		q.broken = true
		return 0, 0, false
	}
	last := head
	for i := uint16(1); i < n; i++ {
		last = q.shadowNext(last)
	}
	if q.numFree > 0 {
		q.setShadowNext(last, q.freeHead)
	}
	q.freeHead = head
	q.numFree += n
	q.setShadowChain(head, 0, 0)
	q.lastUsed++
	return head, length, true
}

// DisableInterrupts asks the device not to interrupt for this queue (used
// buffer notifications): the available ring's NO_INTERRUPT flag, or with
// VIRTIO_F_EVENT_IDX a used_event half the index space away, which no
// device with at most 32768 chains outstanding reaches. It is a hint: an
// interrupt already on its way still comes.
func (q *Queue) DisableInterrupts() {
	q.availFlags |= availNoInterrupt
	if q.eventIdx {
		q.storeUsedEvent(q.lastUsed + 0x8000)
		return
	}
	q.storeAvailWord()
}

// EnableInterrupts asks for an interrupt when the device returns the next
// chain (used_event at the next entry with VIRTIO_F_EVENT_IDX, else the
// flag cleared), then reports whether chains were already returned: if so,
// the caller harvests them itself, since the device may have returned them
// before it saw the request and will not interrupt for them.
func (q *Queue) EnableInterrupts() (pending bool) {
	q.availFlags &^= availNoInterrupt
	if q.eventIdx {
		q.storeUsedEvent(q.lastUsed)
	} else {
		q.storeAvailWord()
	}
	return q.Pending()
}

func (q *Queue) storeUsedEvent(v uint16) {
	atomic.SwapUint32(at[uint32](q.virt+usedEventOff(uintptr(q.size))), uint32(v))
}

// The shadow: per descriptor, the free list's link, and for a chain's
// head its length and writable bytes (0 length: not an outstanding head).
func (q *Queue) shadow(d uint16) uintptr {
	return q.virt + shadowOff(uintptr(q.size)) + shadowSize*uintptr(d)
}
func (q *Queue) shadowNext(d uint16) uint16   { return *at[uint16](q.shadow(d)) }
func (q *Queue) setShadowNext(d, next uint16) { *at[uint16](q.shadow(d)) = next }
func (q *Queue) shadowChain(d uint16) (uint16, uint32) {
	p := q.shadow(d)
	return *at[uint16](p + 2), *at[uint32](p + 4)
}
func (q *Queue) setShadowChain(d, n uint16, writable uint32) {
	p := q.shadow(d)
	*at[uint16](p + 2) = n
	*at[uint32](p + 4) = writable
}

// at converts an address to a pointer without a uintptr-to-pointer
// conversion that vet would flag (as package mmio does).
func at[T any](a uintptr) *T { return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }
