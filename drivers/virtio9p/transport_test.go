package virtio9p

import (
	"encoding/binary"
	"math/rand"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"yolk/drivers/virtio"
)

// The transport against a device whose used entries are fuzzed: each
// request submitted completes exactly once — with the device's length, or
// with none (EIO) when the queue breaks — no other slot is touched, and a
// broken queue refuses new requests at once (virtio.ErrBroken: the kernel
// answers EIO) instead of taking them until the descriptors run out and
// every later request waits for Freed forever. A healthy queue has every
// descriptor free once all is answered.
//
// The device is plain memory: a virtio-mmio register block in a Go array
// (read and written with the mmio package's accesses, as on hardware),
// whose registers hold what the driver needs to read back (magic, version
// 2, device type 9, the features VERSION_1 and MOUNT_TAG in both halves,
// a queue of 8), and whose rings the test reads and writes as the device.

// tdev is the transport under test and its device.
type tdev struct {
	t     testing.TB
	regs  [0x200 / 8]uint64
	pages [][]byte
	tr    Transport

	used, lastAvail uint16 // the device's ring positions
}

// tdevQueue is the queue size the device offers: small, so that requests
// run out of descriptors often (a request takes 2 to 6).
const tdevQueue = 8

func (d *tdev) Page() (uintptr, uint64) {
	p := make([]byte, pageSize)
	d.pages = append(d.pages, p)
	a := uintptr(unsafe.Pointer(&p[0]))
	return a, uint64(a)
}

func (d *tdev) reg(off uintptr) *uint32 {
	return (*uint32)(unsafe.Add(unsafe.Pointer(&d.regs[0]), off))
}

func newTdev(t testing.TB) *tdev {
	d := &tdev{t: t}
	*d.reg(0x000) = virtio.MMIOMagic
	*d.reg(0x004) = 2
	*d.reg(0x008) = virtio.Type9P
	*d.reg(0x010) = FMountTag // and VIRTIO_F_VERSION_1: bit 0 of the high half
	*d.reg(0x034) = tdevQueue
	*d.reg(0x100) = 3 | 't'<<16 | 'a'<<24
	*d.reg(0x104) = 'g'
	dev, e := virtio.OpenMMIO(uintptr(unsafe.Pointer(&d.regs[0])))
	if e != virtio.OK {
		t.Fatalf("OpenMMIO: %v", e)
	}
	if e := OpenTransport(&d.tr, dev, d); e != virtio.OK {
		t.Fatalf("OpenTransport: %v", e)
	}
	if string(d.tr.Tag()) != "tag" || d.tr.q.Size() != tdevQueue {
		t.Fatalf("tag %q, queue of %d", d.tr.Tag(), d.tr.q.Size())
	}
	return d
}

// The queue's layout (drivers/virtio ring.go) for tdevQueue descriptors.
func (d *tdev) mem(off uintptr, n int) []byte {
	return bytesAt(uintptr(d.tr.q.DescAddr())+off, n) // the device's addresses are the CPU's here
}

const (
	tAvail = 16 * tdevQueue
	tUsed  = tAvail + 8 + 2*tdevQueue
)

func (d *tdev) availIdx() uint16 {
	return uint16(atomic.LoadUint32((*uint32)(unsafe.Pointer(&d.mem(tAvail, 4)[0]))) >> 16)
}
func (d *tdev) availEntry(i uint16) uint16 {
	return binary.LittleEndian.Uint16(d.mem(tAvail+4+2*uintptr(i%tdevQueue), 2))
}
func (d *tdev) usedEntry(i uint16) (id, length uint32) {
	b := d.mem(tUsed+4+8*uintptr(i%tdevQueue), 8)
	return binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
}
func (d *tdev) setUsed(idx uint16) {
	d.used = idx
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&d.mem(tUsed, 4)[0])), uint32(idx)<<16)
}
func (d *tdev) push(id, length uint32) {
	b := d.mem(tUsed+4+8*uintptr(d.used%tdevQueue), 8)
	binary.LittleEndian.PutUint32(b, id)
	binary.LittleEndian.PutUint32(b[4:], length)
	d.setUsed(d.used + 1)
}

// transportStats counts what the scripts did.
type transportStats struct {
	submitted, completed, empty, refused, broken, entries int
}

// transportScript runs script b (see usedScript in drivers/virtio: the
// same kind of byte string) on a fresh transport and checks every step.
func transportScript(t testing.TB, b []byte, st *transportStats) {
	d := newTdev(t)
	tr := &d.tr
	type req struct {
		slot, descs int
		room        uint32
	}
	outstanding := map[uint16]req{} // the device's chains, by head
	var held []uint16               // heads the device has taken
	free := tdevQueue               // the oracle's free descriptors
	broken := false
	lastUsed := uint16(0)
	busy := uint32(0) // slots with a request out

	interrupt := func() {
		// What the transport must make of the used ring: the good
		// entries' slots complete with their lengths; at the first bad
		// entry the queue breaks and every request still out completes
		// with none.
		wantLen := map[int]uint32{}
		if !broken {
			for ; d.used != lastUsed; lastUsed++ {
				id, l := d.usedEntry(lastUsed)
				r, ok := outstanding[uint16(id)]
				if id >= tdevQueue || !ok || l > r.room {
					broken = true
					st.broken++
					break
				}
				wantLen[r.slot] = l
				delete(outstanding, uint16(id))
				free += r.descs
				busy &^= 1 << r.slot
			}
			if broken {
				for s := range Slots {
					if busy&(1<<s) != 0 {
						wantLen[s] = 0
					}
				}
				busy = 0
			}
		}
		var before [Slots]uint32
		for s := range Slots {
			before[s] = atomic.LoadUint32(&tr.Done[s])
		}
		freed := atomic.LoadUint32(&tr.Freed)
		mask := tr.Interrupt()
		for s := range Slots {
			l, want := wantLen[s]
			switch {
			case want != (mask&(1<<s) != 0):
				t.Fatalf("Interrupt: mask %#b, slot %d: want completed %v (broken %v)", mask, s, want, broken)
			case want && (tr.Done[s] != 1 || tr.Len[s] != l):
				t.Fatalf("slot %d: done %d, length %d; want 1, %d", s, tr.Done[s], tr.Len[s], l)
			case !want && tr.Done[s] != before[s]:
				t.Fatalf("slot %d, not answered: done went %d -> %d", s, before[s], tr.Done[s])
			}
			if want {
				st.completed++
				if l == 0 {
					st.empty++
				}
			}
		}
		if (atomic.LoadUint32(&tr.Freed) != freed) != (mask != 0) {
			t.Fatalf("Freed moved %v with mask %#b", atomic.LoadUint32(&tr.Freed) != freed, mask)
		}
		if tr.Broken() != broken {
			t.Fatalf("transport broken %v, want %v", tr.Broken(), broken)
		}
	}
	var data [DataPages]uint64
	for i := range data {
		data[i] = 0x10_0000 + uint64(i)*pageSize // the device never touches them
	}
	submit := func(s, out, outData, inData int) {
		descs := 1 + (outData+pageSize-1)/pageSize + 1 + (inData+pageSize-1)/pageSize
		room := uint32(pageSize)
		if inData > 0 {
			room = uint32(ReplyHdr + inData)
		}
		avail := d.availIdx()
		e := tr.Submit(s, 0x1000, 0x2000, &data, out, outData, inData)
		switch {
		case broken:
			if e != virtio.ErrBroken {
				t.Fatalf("Submit on a broken queue: %v, want %v at once", e, virtio.ErrBroken)
			}
			st.refused++
		case descs > free:
			if e != virtio.ErrFull {
				t.Fatalf("Submit of %d descriptors with %d free: %v", descs, free, e)
			}
		case e != virtio.OK:
			t.Fatalf("Submit of %d descriptors with %d free: %v", descs, free, e)
		default:
			if d.availIdx() != avail+1 {
				t.Fatalf("Submit published %d chains", d.availIdx()-avail)
			}
			h := d.availEntry(avail)
			if _, dup := outstanding[h]; dup || h >= tdevQueue {
				t.Fatalf("Submit's chain has head %d, outstanding or out of range", h)
			}
			outstanding[h] = req{s, descs, room}
			free -= descs
			busy |= 1 << s
			st.submitted++
		}
	}
	sc := script{b: b}
	for !sc.done() {
		switch sc.u8() % 8 {
		case 0, 1: // a request on a slot that has none out
			s := int(sc.u8()) % Slots
			out := 1 + int(sc.u8())
			outData := int(sc.u8()%3) * 3000
			inData := int(sc.u8()%4) * 2500
			if busy&(1<<s) == 0 {
				submit(s, out, outData, inData)
			}
		case 2: // the device takes what is published
			a := d.availIdx()
			if a-d.lastAvail > tdevQueue {
				d.lastAvail = a - tdevQueue
			}
			for ; d.lastAvail != a; d.lastAvail++ {
				held = append(held, d.availEntry(d.lastAvail))
			}
		case 3: // the device answers a chain it holds: a length that fits, or (255) one past the room
			i, l := int(sc.u8()), uint32(sc.u8())
			if len(held) == 0 {
				continue
			}
			i %= len(held)
			h := held[i]
			held = append(held[:i], held[i+1:]...)
			room := outstanding[h].room
			if l == 255 {
				l = room + 1
			} else {
				l = l * 37 % (room + 1)
			}
			d.push(uint32(h), l)
			st.entries++
		case 4: // any entry
			d.push(uint32(sc.u16()), sc.u32())
			st.entries++
		case 5: // idx moved by any amount
			d.setUsed(d.used + sc.u16())
		default: // the interrupt
			interrupt()
		}
	}
	interrupt()
	if broken {
		for s := range Slots {
			if e := tr.Submit(s, 0x1000, 0x2000, &data, 11, 0, 0); e != virtio.ErrBroken {
				t.Fatalf("Submit after the break: %v, want %v", e, virtio.ErrBroken)
			}
		}
		if m := tr.Interrupt(); m != 0 {
			t.Fatalf("a broken transport completed %#b again", m)
		}
		return
	}
	// The device answers everything out, well: every request completes
	// and every descriptor is free.
	for h, r := range outstanding {
		d.push(uint32(h), r.room)
	}
	interrupt()
	if busy != 0 || tr.busy != 0 || tr.q.Free() != tdevQueue || free != tdevQueue {
		t.Fatalf("after the last answer: slots out %#b (transport %#b), %d descriptors free", busy, tr.busy, tr.q.Free())
	}
}

// script reads a byte string as operations and their arguments; past its
// end it reads zeros.
type script struct {
	b []byte
	i int
}

func (s *script) done() bool { return s.i >= len(s.b) }
func (s *script) u8() uint8 {
	s.i++
	if s.i > len(s.b) {
		return 0
	}
	return s.b[s.i-1]
}
func (s *script) u16() uint16 { return uint16(s.u8()) | uint16(s.u8())<<8 }
func (s *script) u32() uint32 { return uint32(s.u16()) | uint32(s.u16())<<16 }

// tOps writes scripts for the seeds.
type tOps []byte

func (o tOps) submit(s, outData, inData int) tOps {
	return append(o, 0, byte(s), 40, byte(outData), byte(inData))
}
func (o tOps) take() tOps                { return append(o, 2) }
func (o tOps) answer(i int, l byte) tOps { return append(o, 3, byte(i), l) }
func (o tOps) entry(id uint16, l uint32) tOps {
	return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint16(append(o, 4), id), l)
}
func (o tOps) jump(n uint16) tOps { return binary.LittleEndian.AppendUint16(append(o, 5), n) }
func (o tOps) interrupt() tOps    { return append(o, 6) }

var transportSeeds = []tOps{
	tOps{}.submit(0, 0, 1).take().answer(0, 9).interrupt(),                                        // a read answered
	tOps{}.submit(0, 0, 0).submit(1, 2, 3).take().answer(1, 1).answer(0, 2).interrupt(),           // two, out of order
	tOps{}.submit(0, 0, 3).take().answer(0, 255).interrupt().submit(1, 0, 0).submit(0, 0, 0),      // too long: broken, then refused
	tOps{}.submit(0, 0, 0).submit(1, 0, 0).take().entry(7, 0).interrupt().submit(2, 0, 0),         // no head: both out fail once
	tOps{}.submit(0, 2, 3).submit(1, 2, 3).submit(2, 0, 0).interrupt(),                            // out of descriptors: ErrFull
	tOps{}.submit(0, 0, 0).take().answer(0, 1).interrupt().jump(0xffff).interrupt(),               // a harvested entry again
	tOps{}.submit(0, 0, 0).submit(1, 0, 0).take().jump(2).interrupt(),                             // idx ahead over stale entries
	tOps{}.submit(0, 0, 0).take().entry(0, 1).entry(0, 1).interrupt().submit(0, 0, 0).interrupt(), // the same chain twice
}

func FuzzTransportUsed(f *testing.F) {
	for _, s := range transportSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var st transportStats
		transportScript(t, b, &st)
	})
}

// TestTransportRandom runs fixed-seed random scripts until 10^5 used
// entries have reached the transport: a device that mostly answers well,
// with a bad entry, an idx jump or a length past the room now and then
// (never in every fourth script, which ends with all answered).
func TestTransportRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	var st transportStats
	start := time.Now()
	scripts := 0
	for ; st.entries < 100_000; scripts++ {
		var o tOps
		clean := scripts%4 == 0
		for range 32 + rng.Intn(1024) {
			r := rng.Intn(1000)
			if clean && r >= 990 {
				r = 0
			}
			switch {
			case r < 300:
				o = append(o, 0, byte(rng.Intn(Slots)), byte(rng.Intn(256)), byte(rng.Intn(3)), byte(rng.Intn(4)))
			case r < 450:
				o = o.take()
			case r < 750:
				l := byte(rng.Intn(255))
				if !clean && rng.Intn(200) == 0 {
					l = 255
				}
				o = o.answer(rng.Intn(256), l)
			case r < 990:
				o = o.interrupt()
			case r < 995:
				o = o.entry(uint16(rng.Intn(2*tdevQueue)), rng.Uint32()>>rng.Intn(32))
			default:
				o = o.jump(uint16(rng.Intn(1 << 16)))
			}
		}
		transportScript(t, o, &st)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d scripts, %d used entries: %d requests, %d completed (%d with no reply: EIO), %d refused by a broken queue, %d queues broken, in %v",
		scripts, st.entries, st.submitted, st.completed, st.empty, st.refused, st.broken, time.Since(start).Round(time.Millisecond))
	if st.broken == 0 || st.refused == 0 || st.completed < st.submitted/2 {
		t.Errorf("the scripts did not reach every path")
	}
}
