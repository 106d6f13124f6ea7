package virtioblk

import (
	"bytes"
	"math/rand"
	"sync"
	"testing"
	"unsafe"

	"yolk/drivers/virtioblk/blkmodel"
)

const allFeatures = FSizeMax | FSegMax | FBlkSize | FFlush | FTopology | FDiscard | FWriteZeroes

func addr(b []byte) uintptr {
	heapMu.Lock()                  // tests call it from many goroutines
	heapOnly = append(heapOnly, b) // b's array escapes: on the heap
	heapMu.Unlock()
	return uintptr(unsafe.Pointer(&b[0]))
}

func pattern(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func TestOpenInfo(t *testing.T) {
	m := newModel(t, 2048, allFeatures|FRO, map[uint32]uint32{cfgSegMax: 4, cfgSizeMax: 8192, cfgBlkSize: 512, cfgPhysExp: 3, cfgMaxDiscard: 64, cfgMaxDiscSeg: 1, cfgMaxWZSectors: 128})
	in := m.k.Info()
	if in.Sectors != 2048 || in.BlockSize != 512 || in.PhysBlock != 4096 || !in.ReadOnly || !in.Flush {
		t.Errorf("info %+v", *in)
	}
	if in.MaxDiscard != 64 || in.MaxZeroes != 128 {
		t.Errorf("discard %d, write zeroes %d", in.MaxDiscard, in.MaxZeroes)
	}
	if in.MaxTransfer != 4*4096 { // seg_max 4 pages of at most 4096 (size_max 8192 is more)
		t.Errorf("max transfer %d", in.MaxTransfer)
	}
	if got := m.DriverFeatures(); got&^uint32(wanted) != 0 && got&^uint32(wanted) != 1 {
		t.Errorf("driver features %#x: more than wanted", got)
	}
	b := make([]byte, 512)
	if e := m.k.RW(0, addr(b), 512, true); e != EROFS {
		t.Errorf("write to a read-only disk: %d, want EROFS", e)
	}
	if e := m.k.RW(0, addr(b), 512, false); e != 0 {
		t.Errorf("read from a read-only disk: %d", e)
	}
}

func TestReadWriteFlushDiscard(t *testing.T) {
	m := newModel(t, 4096, allFeatures, map[uint32]uint32{cfgMaxDiscard: 1 << 20, cfgMaxDiscSeg: 1, cfgMaxWZSectors: 1 << 20})
	for _, c := range []struct {
		sector uint64
		n      int
	}{{0, 512}, {7, 4096}, {100, MaxData}, {300, 3*MaxData + 1024}, {4096 - 8, 4096}} {
		w := pattern(int64(c.sector), c.n)
		if e := m.k.RW(c.sector, addr(w), c.n, true); e != 0 {
			t.Fatalf("write %d bytes at %d: %d", c.n, c.sector, e)
		}
		if !bytes.Equal(m.Disk[c.sector*Sector:c.sector*Sector+uint64(c.n)], w) {
			t.Fatalf("disk does not hold what was written at %d", c.sector)
		}
		r := make([]byte, c.n)
		if e := m.k.RW(c.sector, addr(r), c.n, false); e != 0 || !bytes.Equal(r, w) {
			t.Fatalf("read back %d bytes at %d: %d, equal %v", c.n, c.sector, e, bytes.Equal(r, w))
		}
	}
	if e := m.k.Flush(); e != 0 {
		t.Fatalf("flush: %d", e)
	}
	if e := m.k.Discard(100, 8, false); e != 0 {
		t.Fatalf("discard: %d", e)
	}
	if e := m.k.Discard(7, 8, true); e != 0 {
		t.Fatalf("write zeroes: %d", e)
	}
	if !bytes.Equal(m.Disk[100*Sector:108*Sector], make([]byte, 8*Sector)) || !bytes.Equal(m.Disk[7*Sector:15*Sector], make([]byte, 8*Sector)) {
		t.Errorf("discard and write zeroes left data")
	}
	var flush, disc, wz int
	for _, s := range m.seen() {
		switch s {
		case TFlush:
			flush++
		case TDiscard:
			disc++
		case TWriteZeroes:
			wz++
		}
	}
	if flush != 1 || disc != 1 || wz != 1 {
		t.Errorf("requests seen: %d flush, %d discard, %d write zeroes", flush, disc, wz)
	}
	// Out of range and misaligned.
	b := make([]byte, 1024)
	for _, c := range []struct {
		sector uint64
		n      int
	}{{4095, 1024}, {4096, 512}, {0, 100}, {1 << 62, 512}} {
		if e := m.k.RW(c.sector, addr(b), c.n, false); e != EINVAL {
			t.Errorf("read %d at %d: %d, want EINVAL", c.n, c.sector, e)
		}
	}
}

func TestNoFlushNoDiscard(t *testing.T) {
	m := newModel(t, 64, 0, nil)
	if e := m.k.Flush(); e != 0 {
		t.Errorf("flush without FLUSH: %d", e)
	}
	if e := m.k.Discard(0, 8, false); e != EOPNOTSUPP {
		t.Errorf("discard without DISCARD: %d", e)
	}
	if n := len(m.seen()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// Many requests in flight at once: the device answers only when it holds
// eight, last first; each task gets its own data.
func TestManyInFlight(t *testing.T) {
	m := newModel(t, 1<<14, allFeatures, nil)
	m.set(func(d *blkmodel.Device) { d.Hold = 8 })
	var wg sync.WaitGroup
	errs := make([]Errno, 32)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			w := pattern(int64(g), 4096)
			if e := m.k.RW(uint64(g)*64, addr(w), 4096, true); e != 0 {
				errs[g] = e
				return
			}
		}(g)
	}
	wg.Wait()
	m.set(func(d *blkmodel.Device) { d.Hold = 1 })
	for g := 0; g < 32; g++ {
		if errs[g] != 0 {
			t.Fatalf("writer %d: %d", g, errs[g])
		}
		r := make([]byte, 4096)
		if e := m.k.RW(uint64(g)*64, addr(r), 4096, false); e != 0 || !bytes.Equal(r, pattern(int64(g), 4096)) {
			t.Fatalf("reader %d: %d", g, e)
		}
	}
	if m.k.Stats.Requests != 64 {
		t.Errorf("%d requests, want 64", m.k.Stats.Requests)
	}
	m.k.env.Lock()
	free := m.k.free
	m.k.env.Unlock()
	if free != 1<<Slots-1 || m.k.q.Free() != m.k.q.Size() {
		t.Errorf("slots %#x, %d of %d descriptors free", free, m.k.q.Free(), m.k.q.Size())
	}
}

// TestPipelined: one RW of Pipe requests has them all in flight at once
// (the model answers only when Pipe wait, last first), and its reads
// land in order; a failing request among them fails the call once the
// others are answered, and every slot comes back. (Requests of a page:
// Pipe of MaxData would not fit the queue's descriptors unless the
// slots' pages are physically contiguous.)
func TestPipelined(t *testing.T) {
	m := newModel(t, 1<<14, allFeatures, map[uint32]uint32{cfgSegMax: 1, cfgSizeMax: 4096})
	m.k.Timeout = 2e9 // one at a time, the first would never be answered
	m.set(func(d *blkmodel.Device) { d.Hold = Pipe })
	n := Pipe * 4096
	w := pattern(3, n)
	if e := m.k.RW(64, addr(w), n, true); e != 0 {
		t.Fatalf("write of %d requests held together: %d", Pipe, e)
	}
	r := make([]byte, n)
	if e := m.k.RW(64, addr(r), n, false); e != 0 || !bytes.Equal(r, w) {
		t.Fatalf("read of %d requests held together: %d, equal %v", Pipe, e, bytes.Equal(r, w))
	}
	if m.k.Stats.Requests != 2*Pipe {
		t.Errorf("%d requests, want %d", m.k.Stats.Requests, 2*Pipe)
	}
	m.set(func(d *blkmodel.Device) {
		d.Hold = 1
		d.Status = func(typ uint32, sector uint64) uint8 {
			if sector == 64+2*4096/Sector {
				return SIOErr
			}
			return SOK
		}
	})
	if e := m.k.RW(64, addr(r), n, false); e != EIO {
		t.Errorf("read with its third request failing: %d, want EIO", e)
	}
	m.k.env.Lock()
	free := m.k.free
	m.k.env.Unlock()
	if free != 1<<Slots-1 || m.k.q.Free() != m.k.q.Size() {
		t.Errorf("slots %#x, %d of %d descriptors free", free, m.k.q.Free(), m.k.q.Size())
	}
}

// statusOf fails flushes as unsupported and sector 8 as an I/O error.
func statusOf(typ uint32, sector uint64) uint8 {
	switch {
	case typ == TFlush:
		return SUnsupp
	case sector == 8:
		return SIOErr
	}
	return SOK
}

func TestStatusErrors(t *testing.T) {
	m := newModel(t, 64, allFeatures, nil)
	m.set(func(d *blkmodel.Device) { d.Status = statusOf })
	b := make([]byte, 512)
	if e := m.k.RW(8, addr(b), 512, false); e != EIO {
		t.Errorf("IOERR: %d, want EIO", e)
	}
	if e := m.k.Flush(); e != EOPNOTSUPP {
		t.Errorf("UNSUPP: %d, want EOPNOTSUPP", e)
	}
	if e := m.k.RW(0, addr(b), 512, false); e != 0 {
		t.Errorf("a good request after errors: %d", e)
	}
	if m.k.Stats.Errors != 1 {
		t.Errorf("%d errors counted", m.k.Stats.Errors)
	}
}

// A bad used entry breaks the queue: that request and every later one
// end in EIO at once.
func TestBadUsedEntry(t *testing.T) {
	m := newModel(t, 64, allFeatures, nil)
	b := make([]byte, 512)
	m.set(func(d *blkmodel.Device) { d.BadUsed = true })
	if e := m.k.RW(0, addr(b), 512, false); e != EIO {
		t.Fatalf("request answered by a bad entry: %d, want EIO", e)
	}
	if !m.k.Broken() {
		t.Fatal("queue not broken")
	}
	for i := 0; i < 3; i++ {
		if e := m.k.RW(0, addr(b), 512, true); e != EIO {
			t.Fatalf("request after the break: %d, want EIO", e)
		}
	}
	if e := m.k.Flush(); e != EIO {
		t.Fatalf("flush after the break: %d, want EIO", e)
	}
}

// A device that never answers: EIO after the timeout, the slot kept
// (the device still has its pages); the answer coming late frees it.
func TestTimeout(t *testing.T) {
	m := newModel(t, 64, allFeatures, nil)
	m.k.Timeout = 20e6
	m.set(func(d *blkmodel.Device) { d.Silent = true })
	b := make([]byte, 512)
	if e := m.k.RW(0, addr(b), 512, false); e != EIO {
		t.Fatalf("unanswered request: %d, want EIO", e)
	}
	m.k.env.Lock()
	lost, free := m.k.lost, m.k.free
	m.k.env.Unlock()
	if lost != 1 || free&1 != 0 || m.k.Stats.Timeouts != 1 {
		t.Fatalf("lost %#x free %#x timeouts %d", lost, free, m.k.Stats.Timeouts)
	}
	// Another request uses another slot, and works once the device answers.
	m.set(func(d *blkmodel.Device) { d.Silent = false })
	if e := m.k.RW(1, addr(b), 512, false); e != 0 {
		t.Fatalf("request after a timeout: %d", e)
	}
	m.k.env.Lock()
	lost, free = m.k.lost, m.k.free
	m.k.env.Unlock()
	if lost != 0 || free != 1<<Slots-1 || m.k.Stats.Late != 1 {
		t.Fatalf("after the late answer: lost %#x free %#x late %d", lost, free, m.k.Stats.Late)
	}
}

// heapOnly keeps the buffers this file reaches through uintptrs on the
// heap: a goroutine's stack is copied when it grows, and a uintptr into
// the old copy is not updated (a test in drivers/vgatext failed so in CI).
var (
	heapOnly []any
	heapMu   sync.Mutex
)
