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
	n := &NIC{present: true, features: f, size: queueSize}
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

// fillRing makes every slot but free ones hold a waiting one-slot frame
// of 0xab bytes (the ring's memory all 0xab), from slot 7 on.
func fillRing(n *NIC, free int) {
	for i := range n.ring {
		b := bytesAt(n.ring[i], bufSize)
		for j := range b {
			b[j] = 0xab
		}
		n.ringLen[i] = 100
	}
	n.ringR = 7
	n.ringW = n.ringR + uint32(RingFrames-free)
}

// waitingIntact reports whether every waiting slot still holds 0xab.
func waitingIntact(n *NIC, from, to uint32) bool {
	for c := from; c != to; c++ {
		for _, x := range bytesAt(n.ring[c%RingFrames], bufSize) {
			if x != 0xab {
				return false
			}
		}
	}
	return true
}

// With one slot free a frame past an Ethernet frame's size (a backend
// without offloads may fill the whole page) is dropped without a byte
// written into the waiting frames, which the service may be copying
// without the lock; with the receive offloads the ring takes a frame
// only while the largest fits, and never writes past its free slots.
func TestRxRingEdge(t *testing.T) {
	n := rxNIC(t, FMAC)
	d := &rxDevice{n: n}
	fillRing(n, 1)
	r, w := n.ringR, n.ringW
	d.deliver(seq(3000, 1), 0, pageSize)
	if got := n.harvest(); got != 0 || n.Stats().Dropped != 1 || !waitingIntact(n, r, w) {
		t.Fatalf("a 3000-byte frame, one slot free: taken %d, dropped %d, waiting frames intact %v; want 0, 1, true", got, n.Stats().Dropped, waitingIntact(n, r, w))
	}
	d.deliver(seq(MaxFrame, 2), 0, pageSize)
	if got := n.harvest(); got != 1 || !waitingIntact(n, r, w) || n.ringW != w+1 {
		t.Fatalf("an Ethernet frame, one slot free: taken %d, intact %v", got, waitingIntact(n, r, w))
	}

	n = rxNIC(t, FMAC|FRxOffload)
	d = &rxDevice{n: n}
	fillRing(n, maxSlots-1)
	r, w = n.ringR, n.ringW
	d.deliver(seq(60, 3), 0, pageSize)
	if got := n.harvest(); got != 0 {
		t.Fatalf("%d slots free (under the largest frame's %d): harvest took %d", maxSlots-1, maxSlots, got)
	}
	n.RecvPop() // one more free: room for the largest
	r++
	if got := n.harvest(); got != 1 || !waitingIntact(n, r, w) {
		t.Fatalf("room for the largest frame: taken %d, waiting frames intact %v", got, waitingIntact(n, r, w))
	}
	for range RingFrames - maxSlots { // the waiting ones, then the new
		n.RecvPop()
	}
	if l, _, ok := n.RecvPeek(); !ok || l != 60 {
		t.Fatalf("after the waiting frames: RecvPeek %d %v, want the 60-byte frame", l, ok)
	}
	fillRing(n, maxSlots)
	r, w = n.ringR, n.ringW
	d.deliver(seq(MaxGSOFrame, 4), 0, pageSize)
	if got := n.harvest(); got != 1 || !waitingIntact(n, r, w) {
		t.Fatalf("the largest frame into the last %d slots: taken %d, waiting frames intact %v", maxSlots, got, waitingIntact(n, r, w))
	}
}
