package virtio9p

import (
	"sync/atomic"

	"yolk/drivers/virtio"
)

// FMountTag is VIRTIO_9P_MOUNT_TAG: the configuration holds the tag.
const FMountTag = 1 << 0

// queueSize is the request queue's descriptors: its memory fits one page
// (virtio.QueueBytes(64) = 2192). A request takes 2 descriptors, 18 with
// a full data buffer; a request finding too few free waits (Freed).
const queueSize = 64

// MaxTag is the longest mount tag kept.
const MaxTag = 64

// Transport is one virtio-9p device: its request queue and which slot
// each chain in flight belongs to. Pointer-free. The caller serialises
// Submit and Interrupt (they share the queue) with its own lock.
type Transport struct {
	dev    virtio.Device
	q      virtio.Queue
	tag    [MaxTag]byte
	tagLen int
	slotOf [queueSize]uint8

	// busy holds the slots whose chain the device has, a bit each.
	busy uint32

	// Done[s] is 1 once slot s's reply is in, Len[s] its length; Freed is
	// bumped whenever descriptors come back (all atomic).
	Done  [Slots]uint32
	Len   [Slots]uint32
	Freed uint32
}

// OpenTransport initialises the 9p device d into t: VERSION_1 and the
// mount tag, the request queue in a page from m, DRIVER_OK. On an error
// the device is left failed and the transport error is returned.
func OpenTransport[M Mem](t *Transport, d virtio.Device, m M) virtio.Error {
	*t = Transport{}
	if d.Type() != virtio.Type9P {
		return virtio.ErrNoDevice
	}
	got, e := d.Negotiate(FMountTag)
	if e != virtio.OK {
		return e
	}
	t.dev = d
	if got&FMountTag != 0 {
		n := int(d.Config16(0))
		t.tagLen = min(n, MaxTag)
		d.ConfigBytes(2, t.tag[:t.tagLen])
	}
	size := d.QueueFit(0, queueSize)
	if size == 0 {
		d.Fail()
		return virtio.ErrNoQueue
	}
	va, pa := m.Page()
	if va == 0 {
		d.Fail()
		return virtio.ErrNoQueue
	}
	if e := t.q.Init(0, size, va, pa, false); e != virtio.OK {
		d.Fail()
		return e
	}
	if e := d.SetupQueue(&t.q); e != virtio.OK {
		d.Fail()
		return e
	}
	d.Ready()
	return virtio.OK
}

// Tag is the device's mount tag (empty if it gave none).
func (t *Transport) Tag() []byte { return t.tag[:t.tagLen] }

// IsPCI says which transport the device is behind.
func (t *Transport) IsPCI() bool { return t.dev.IsPCI() }

// Submit adds slot s's request as a chain — req (out bytes) and outData
// bytes of data pages device-readable; the reply page (ReplyHdr bytes of
// it when inData > 0) and inData bytes of data pages writable — and
// notifies the device. virtio.ErrFull: too few free descriptors now (wait
// for Freed to change and try again); virtio.ErrBroken: the device broke
// the queue, nothing will come back (EIO at once, as Linux's virtio
// transport).
func (t *Transport) Submit(s int, req, rep uint64, data *[DataPages]uint64, out, outData, inData int) virtio.Error {
	var b [2 + DataPages]virtio.Buffer
	n := 0
	b[n] = virtio.Buffer{Addr: req, Len: uint32(out)}
	n++
	n += pagesOf(b[n:], data, outData)
	nout := n
	hl := pageSize
	if inData > 0 {
		hl = ReplyHdr
	}
	b[n] = virtio.Buffer{Addr: rep, Len: uint32(hl)}
	n++
	n += pagesOf(b[n:], data, inData)
	head, e := t.q.Add(b[:n], nout)
	if e != virtio.OK {
		return e
	}
	atomic.StoreUint32(&t.Done[s], 0)
	t.slotOf[head] = uint8(s)
	t.busy |= 1 << s
	t.dev.Kick(&t.q)
	return virtio.OK
}

func pagesOf(b []virtio.Buffer, data *[DataPages]uint64, n int) int {
	i := 0
	for ; n > 0; i++ {
		l := min(n, pageSize)
		b[i] = virtio.Buffer{Addr: data[i], Len: uint32(l)}
		n -= l
	}
	return i
}

// Interrupt is the device's interrupt handler's work: it acknowledges the
// interrupt and marks every request the device answered done. It returns
// the slots completed, a bit each: each submitted request completes once.
func (t *Transport) Interrupt() uint32 {
	t.dev.Interrupt()
	var mask uint32
	for {
		head, l, ok := t.q.Next()
		if !ok {
			break
		}
		s := t.slotOf[head]
		atomic.StoreUint32(&t.Len[s], l)
		atomic.StoreUint32(&t.Done[s], 1)
		mask |= 1 << s
	}
	t.busy &^= mask
	if t.q.Broken() {
		// Nothing more will come back: every request the device still
		// has gets an empty reply (EIO).
		for s := range t.Done {
			if t.busy&(1<<s) != 0 {
				atomic.StoreUint32(&t.Len[s], 0)
				atomic.StoreUint32(&t.Done[s], 1)
				mask |= 1 << s
			}
		}
		t.busy = 0
	}
	if mask != 0 {
		atomic.AddUint32(&t.Freed, 1)
	}
	return mask
}

// Broken reports that the device returned a bad used entry.
func (t *Transport) Broken() bool { return t.q.Broken() }
