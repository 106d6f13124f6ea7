package virtionet

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"

	"yolk/drivers/virtio"
)

// rxNIC is a NIC whose receive queue, buffers and ring are Go memory
// (device addresses equal to the CPU's), with features f, its receive
// queue full of buffers as Open leaves it.
func rxNIC(t *testing.T, f uint64) *NIC {
	t.Helper()
	n := &NIC{present: true, features: f}
	qmem := make([]byte, virtio.QueueBytes(queueSize)+16)
	qa := (uintptr(unsafe.Pointer(&qmem[0])) + 15) &^ 15
	if e := n.rx.Init(rxQueue, queueSize, qa, uint64(qa), false); e != virtio.OK {
		t.Fatal(e)
	}
	bufs := make([]byte, queueSize*pageSize)
	for i := range queueSize {
		a := uintptr(unsafe.Pointer(&bufs[i*pageSize]))
		if e := n.postRx(a, uint64(a)); e != virtio.OK {
			t.Fatal(e)
		}
	}
	n.rx.Publish()
	// The device asks for no notifications (the used ring's NO_NOTIFY):
	// harvest's Kick publishes and writes no register.
	*at[uint16](qa + 16*queueSize + 8 + 2*queueSize) = 1
	ring := make([]byte, RingFrames*bufSize)
	for i := range n.ring {
		n.ring[i] = uintptr(unsafe.Pointer(&ring[i*bufSize]))
	}
	t.Cleanup(func() { _, _, _ = qmem[0], bufs[0], ring[0] })
	return n
}

// rxDevice plays the device's side of the receive queue: it fills the
// available buffers in order and makes them used.
type rxDevice struct {
	n               *NIC
	availR, usedIdx uint16
}

// deliver puts frame in as the device does, behind a header with flags,
// in buffers of at most per bytes each (the header in the first): one if
// the NIC did not take mergeable buffers. It returns false when too few
// buffers are available.
func (d *rxDevice) deliver(frame []byte, flags uint8, per int) bool {
	n := d.n
	base := uintptr(n.rx.DescAddr())
	avail := base + 16*queueSize
	used := base + 16*queueSize + 8 + 2*queueSize
	hdr := make([]byte, HdrLen)
	hdr[0] = flags
	data := append(hdr, frame...)
	var heads []uint16
	var lens []uint32
	for len(data) > 0 {
		if d.availR == *at[uint16](avail + 2) {
			return false
		}
		h := *at[uint16](avail + 4 + 2*uintptr(d.availR%queueSize))
		d.availR++
		p := base + 16*uintptr(h)
		k := min(len(data), per, int(*at[uint32](p + 8)))
		copy(bytesAt(uintptr(*at[uint64](p)), k), data[:k])
		data = data[k:]
		heads, lens = append(heads, h), append(lens, uint32(k))
		if n.features&FMrgRxbuf == 0 {
			break
		}
	}
	if n.features&FMrgRxbuf != 0 {
		binary.LittleEndian.PutUint16(bytesAt(uintptr(*at[uint64](base + 16*uintptr(heads[0]))), HdrLen)[10:], uint16(len(heads)))
	}
	for i, h := range heads {
		e := used + 4 + 8*uintptr(d.usedIdx%queueSize)
		*at[uint32](e), *at[uint32](e + 4) = uint32(h), lens[i]
		d.usedIdx++
	}
	*at[uint16](used + 2) = d.usedIdx
	return true
}

// take takes every frame from the ring.
func take(n *NIC) (frames [][]byte, flags []uint8) {
	for {
		l, fl, ok := n.RecvPeek()
		if !ok {
			return
		}
		var f []byte
		for i := 0; ; i++ {
			s := n.RecvSegment(l, i)
			if s == nil {
				break
			}
			f = append(f, s...)
		}
		frames, flags = append(frames, f), append(flags, fl)
		n.RecvPop()
	}
}

func seq(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*13)
	}
	return b
}

// With the receive offloads a coalesced frame of up to MaxGSOFrame bytes
// spans many buffers (num_buffers in its first) and comes out of the ring
// whole, across slots; DATA_VALID and NEEDS_CSUM flag it RxCsumOK; every
// buffer goes back to the device; a full ring leaves frames with the
// device until the ring drains.
func TestRxMergeable(t *testing.T) {
	n := rxNIC(t, FMAC|FRxOffload)
	d := &rxDevice{n: n}
	want := [][]byte{seq(60, 1), seq(MaxGSOFrame, 2), seq(1514, 3), seq(bufSize, 4), seq(bufSize+1, 5), seq(30000, 6)}
	flags := []uint8{0, hdrDataValid, HdrNeedsCsum, 0, hdrDataValid, 0}
	wantFl := []uint8{0, RxCsumOK, RxCsumOK, 0, RxCsumOK, 0}
	for round := range 40 { // wraps the ring's slots and the queue many times
		for i, f := range want {
			if !d.deliver(f, flags[i], pageSize) {
				t.Fatalf("round %d: no buffers for frame %d: the NIC did not give them back", round, i)
			}
			if got := n.harvest(); got != 1 {
				t.Fatalf("round %d: frame %d: harvest took %d", round, i, got)
			}
		}
		got, gotFl := take(n)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d frames, want %d", round, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) || gotFl[i] != wantFl[i] {
				t.Fatalf("round %d: frame %d: %d bytes (equal %v), flags %d; want %d bytes, flags %d", round, i, len(got[i]), bytes.Equal(got[i], want[i]), gotFl[i], len(want[i]), wantFl[i])
			}
		}
		if n.rx.Free() != 0 || n.Stats().Dropped != 0 {
			t.Fatalf("round %d: %d descriptors not given back, %d dropped", round, n.rx.Free(), n.Stats().Dropped)
		}
	}
	// A full ring: the frames wait in the device's buffers, and come in
	// as the ring drains.
	big := seq(MaxGSOFrame, 9)
	in := 0
	for d.deliver(big, 0, pageSize) {
		in++
	}
	got := n.harvest()
	for got < in {
		fs, _ := take(n)
		for _, f := range fs {
			if !bytes.Equal(f, big) {
				t.Fatal("a frame from the full ring differs")
			}
		}
		k := n.harvest()
		if k == 0 && n.Pending() == 0 {
			t.Fatalf("%d frames of %d came in, then none", got, in)
		}
		got += k
	}
	take(n)
	if n.Stats().Dropped != 0 {
		t.Errorf("%d dropped", n.Stats().Dropped)
	}
}

// Without the receive offloads a frame is one buffer; one past an
// Ethernet frame's size is dropped, and so are flags the NIC did not ask
// for (no RxCsumOK).
func TestRxPlain(t *testing.T) {
	n := rxNIC(t, FMAC)
	d := &rxDevice{n: n}
	d.deliver(seq(100, 1), hdrDataValid, pageSize)
	d.deliver(seq(MaxFrame+1, 2), 0, pageSize)
	d.deliver(seq(MaxFrame, 3), 0, pageSize)
	d.deliver(seq(10, 4), 0, pageSize) // a runt
	if got := n.harvest(); got != 2 {
		t.Fatalf("harvest took %d, want 2", got)
	}
	fs, fl := take(n)
	if len(fs) != 2 || !bytes.Equal(fs[0], seq(100, 1)) || fl[0] != 0 || !bytes.Equal(fs[1], seq(MaxFrame, 3)) {
		t.Fatalf("frames %d, flags %v", len(fs), fl)
	}
	if n.Stats().Dropped != 2 || n.rx.Free() != 0 {
		t.Errorf("%d dropped (want 2), %d buffers not given back", n.Stats().Dropped, n.rx.Free())
	}
}

// A device that says a frame takes more buffers than it made used breaks
// the NIC, with nothing read past what it wrote.
func TestRxShortChain(t *testing.T) {
	n := rxNIC(t, FMAC|FRxOffload)
	d := &rxDevice{n: n}
	d.deliver(seq(100, 1), 0, pageSize)
	base := uintptr(n.rx.DescAddr())
	first := uintptr(*at[uint64](base + 16*uintptr(*at[uint16](base + 16*queueSize + 4))))
	binary.LittleEndian.PutUint16(bytesAt(first, HdrLen)[10:], 3)
	if got := n.harvest(); got != 0 || !n.Broken() {
		t.Errorf("harvest took %d, broken %v; want 0, true", got, n.Broken())
	}
}
