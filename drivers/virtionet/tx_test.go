package virtionet

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"

	"yolk/drivers/virtio"
)

// txNIC is a NIC whose transmit queue and pages are Go memory (device
// addresses equal to the CPU's), with features f: what a test plays the
// device against.
func txNIC(t *testing.T, f uint64) (*NIC, []byte) {
	t.Helper()
	n := &NIC{present: true, features: f, size: queueSize}
	qmem := make([]byte, virtio.QueueBytes(queueSize)+16)
	qa := (uintptr(unsafe.Pointer(&qmem[0])) + 15) &^ 15
	if e := n.tx.Init(txQueue, queueSize, qa, uint64(qa), false); e != virtio.OK {
		t.Fatal(e)
	}
	pages := make([]byte, txPages*pageSize)
	for i := range txPages {
		a := uintptr(unsafe.Pointer(&pages[i*pageSize]))
		n.txVirt[i], n.txPhys[i] = a, uint64(a)
		n.txFree[n.txNFree] = uint16(i)
		n.txNFree++
	}
	t.Cleanup(func() { _, _ = qmem[0], pages[0] })
	return n, qmem
}

// avail reads the heads the driver published, from index from on.
func avail(n *NIC, from uint16) []uint16 {
	base := n.tx.DescAddr() + 16*uint64(queueSize) // the available ring
	idx := *at[uint16](uintptr(base) + 2)
	var heads []uint16
	for i := from; i != idx; i++ {
		heads = append(heads, *at[uint16](uintptr(base) + 4 + 2*uintptr(i%queueSize)))
	}
	return heads
}

// chain reads the bytes of the descriptor chain from head, as the device
// would, and checks that no descriptor is device-writable.
func chain(t *testing.T, n *NIC, head uint16) (b []byte, descs int) {
	t.Helper()
	d := head
	for {
		p := uintptr(n.tx.DescAddr()) + 16*uintptr(d)
		addr, l := *at[uint64](p), *at[uint32](p + 8)
		flags, next := *at[uint16](p + 12), *at[uint16](p + 14)
		if flags&2 != 0 {
			t.Fatalf("descriptor %d is device-writable", d)
		}
		b = append(b, bytesAt(uintptr(addr), int(l))...)
		descs++
		if flags&1 == 0 {
			return b, descs
		}
		d = next
	}
}

// use returns heads to the driver as the device does (used ring entries).
func use(n *NIC, heads []uint16) {
	base := uintptr(n.tx.DescAddr()) + 16*queueSize + 8 + 2*queueSize // the used ring
	idx := *at[uint16](base + 2)
	for _, h := range heads {
		*at[uint32](base + 4 + 8*uintptr(idx%queueSize)) = uint32(h)
		idx++
	}
	*at[uint16](base + 2) = idx
}

// A segmented frame goes out as one chain of whole pages: the header the
// caller asked for, then its bytes; the pages come back when the device
// has used it.
func TestTxGSOChain(t *testing.T) {
	n, _ := txNIC(t, FMAC|FOffload)
	h := Hdr{Flags: HdrNeedsCsum, GSOType: GSOTCPv4, HdrLen: 66, GSOSize: 1448, CsumStart: 34, CsumOffset: 16}
	frame := make([]byte, 14+20+32+64000)
	for i := range frame {
		frame[i] = byte(i * 7)
	}
	tb, e := n.TxAlloc(h, len(frame))
	if e != OK {
		t.Fatalf("TxAlloc: %v", e)
	}
	for i, off := 0, 0; off < len(frame); i++ {
		s := n.TxSegment(tb, i)
		if len(s) == 0 {
			t.Fatalf("segment %d empty at %d of %d bytes", i, off, len(frame))
		}
		off += copy(s, frame[off:])
	}
	if e := n.TxCommit(tb); e != OK {
		t.Fatalf("TxCommit: %v", e)
	}
	n.tx.Publish()
	heads := avail(n, 0)
	if len(heads) != 1 {
		t.Fatalf("%d chains published, want 1", len(heads))
	}
	b, descs := chain(t, n, heads[0])
	want := (HdrLen + len(frame) + pageSize - 1) / pageSize
	if descs != want {
		t.Errorf("%d descriptors, want %d (one a page)", descs, want)
	}
	hdr := []byte{HdrNeedsCsum, GSOTCPv4, 66, 0, 0xa8, 0x05, 34, 0, 16, 0, 0, 0}
	if !bytes.Equal(b[:HdrLen], hdr) {
		t.Errorf("header % x, want % x", b[:HdrLen], hdr)
	}
	if !bytes.Equal(b[HdrLen:], frame) {
		t.Errorf("the chain's %d bytes after the header are not the frame's %d", len(b)-HdrLen, len(frame))
	}
	if n.txNFree != txPages-want {
		t.Errorf("%d pages idle, want %d", n.txNFree, txPages-want)
	}
	use(n, heads)
	n.reclaim()
	if n.txNFree != txPages || n.tx.Free() != queueSize {
		t.Errorf("after use: %d pages and %d descriptors idle, want all (%d, %d)", n.txNFree, n.tx.Free(), txPages, queueSize)
	}
}

// Headers the device was not offered, or that would have it write
// outside the frame, are refused; so is a frame past an Ethernet frame's
// size that is not segmented.
func TestTxHdrChecks(t *testing.T) {
	csum := Hdr{Flags: HdrNeedsCsum, CsumStart: 34, CsumOffset: 16}
	gso := Hdr{Flags: HdrNeedsCsum, GSOType: GSOTCPv6, HdrLen: 86, GSOSize: 1428, CsumStart: 54, CsumOffset: 16}
	for _, c := range []struct {
		name string
		f    uint64
		h    Hdr
		l    int
		want Error
	}{
		{"plain", FMAC, Hdr{}, 60, OK},
		{"plain too long", FMAC | FOffload, Hdr{}, MaxFrame + 1, ErrSize},
		{"csum not offered", FMAC, csum, 100, ErrHdr},
		{"csum", FMAC | FCsum, csum, 100, OK},
		{"csum past the frame", FMAC | FCsum, csum, 51, ErrHdr},
		{"csum in the Ethernet header", FMAC | FCsum, Hdr{Flags: HdrNeedsCsum, CsumStart: 2}, 100, ErrHdr},
		{"unknown flag", FMAC | FOffload, Hdr{Flags: 2}, 100, ErrHdr},
		{"gso", FMAC | FOffload, gso, 30000, OK},
		{"gso not offered", FMAC | FCsum | FHostTSO4, gso, 30000, ErrHdr},
		{"gso without csum", FMAC | FOffload, Hdr{GSOType: GSOTCPv4, HdrLen: 66, GSOSize: 1448}, 30000, ErrHdr},
		{"gso size 0", FMAC | FOffload, Hdr{Flags: 1, GSOType: GSOTCPv4, HdrLen: 66, CsumStart: 34, CsumOffset: 16}, 30000, ErrHdr},
		{"gso udp", FMAC | FOffload, Hdr{Flags: 1, GSOType: 3, HdrLen: 42, GSOSize: 1000, CsumStart: 34, CsumOffset: 6}, 30000, ErrHdr},
		{"gso too long", FMAC | FOffload, gso, MaxGSOFrame + 1, ErrSize},
		{"gso largest", FMAC | FOffload, gso, MaxGSOFrame, OK},
	} {
		n, _ := txNIC(t, c.f)
		tb, e := n.TxAlloc(c.h, c.l)
		if e != c.want {
			t.Errorf("%s: TxAlloc = %v, want %v", c.name, e, c.want)
			continue
		}
		if e == OK {
			n.TxDrop(tb)
			if n.txNFree != txPages {
				t.Errorf("%s: %d pages idle after TxDrop, want %d", c.name, n.txNFree, txPages)
			}
		}
	}
}

// With every page or descriptor in flight TxAlloc says ErrFull; the
// device's used entries make room again, and no page is lost or given
// out twice.
func TestTxFullAndBack(t *testing.T) {
	n, _ := txNIC(t, FMAC|FOffload)
	gso := Hdr{Flags: HdrNeedsCsum, GSOType: GSOTCPv4, HdrLen: 66, GSOSize: 1448, CsumStart: 34, CsumOffset: 16}
	sizes := []int{60, 40000, 1514, MaxGSOFrame, 200, 9000}
	var from uint16
	for round := range 5 {
		sent := 0
		for i := 0; ; i++ {
			l := sizes[i%len(sizes)]
			h := Hdr{}
			if l > MaxFrame {
				h = gso
			}
			tb, e := n.TxAlloc(h, l)
			if e == ErrFull {
				break
			}
			if e != OK {
				t.Fatalf("round %d: TxAlloc(%d) = %v", round, l, e)
			}
			binary.LittleEndian.PutUint32(n.TxSegment(tb, 0), uint32(round<<16|i))
			if e := n.TxCommit(tb); e != OK {
				t.Fatalf("round %d: TxCommit = %v", round, e)
			}
			sent++
		}
		n.tx.Publish()
		heads := avail(n, from)
		from += uint16(len(heads))
		if len(heads) != sent || sent == 0 {
			t.Fatalf("round %d: %d chains published, %d sent", round, len(heads), sent)
		}
		seen := map[uintptr]bool{}
		for k, h := range heads {
			b, _ := chain(t, n, h)
			if got := binary.LittleEndian.Uint32(b[HdrLen:]); got != uint32(round<<16|k) {
				t.Fatalf("round %d: chain %d holds frame %x", round, k, got)
			}
			for d := h; ; {
				p := uintptr(n.tx.DescAddr()) + 16*uintptr(d)
				a := uintptr(*at[uint64](p))
				if seen[a] {
					t.Fatalf("round %d: page %x in two chains", round, a)
				}
				seen[a] = true
				if *at[uint16](p + 12)&1 == 0 {
					break
				}
				d = *at[uint16](p + 14)
			}
		}
		use(n, heads)
		n.reclaim()
		if n.txNFree != txPages || n.tx.Free() != queueSize {
			t.Fatalf("round %d: %d pages, %d descriptors idle after use; want %d, %d", round, n.txNFree, n.tx.Free(), txPages, queueSize)
		}
	}
}

// A transmit queue with fewer descriptors than the largest chain needs
// offers no segmentation (Offload false), and a frame that would need
// more is refused at once (ErrSize), not left waiting for room that
// never comes.
func TestTxSmallQueue(t *testing.T) {
	n, _ := txNIC(t, FMAC|FOffload)
	if !n.Offload() {
		t.Fatal("a 64-descriptor queue: Offload false")
	}
	n.size = 16
	if n.Offload() {
		t.Error("a 16-descriptor queue: Offload true")
	}
	gso := Hdr{Flags: HdrNeedsCsum, GSOType: GSOTCPv4, HdrLen: 66, GSOSize: 1448, CsumStart: 34, CsumOffset: 16}
	if _, e := n.TxAlloc(gso, MaxGSOFrame); e != ErrSize {
		t.Errorf("a 17-page frame on a 16-descriptor queue: %v, want ErrSize", e)
	}
	if tb, e := n.TxAlloc(gso, 60000); e != OK {
		t.Errorf("a 15-page frame on a 16-descriptor queue: %v, want OK", e)
	} else {
		n.TxDrop(tb)
	}
}
