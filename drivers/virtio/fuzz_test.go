package virtio

import (
	"encoding/binary"
	"math/rand"
	"sync/atomic"
	"testing"
	"time"
)

// The used ring is the device's to write: whatever it puts there — an ID
// out of range or naming no outstanding chain, a length past the chain's
// writable bytes, an idx moved by any amount, forwards or back — the
// driver must return only chains it has outstanding, each once, with a
// length that fits, keep every descriptor either free or in one chain, and
// once broken refuse new chains at once (ErrBroken) instead of running out
// of descriptors. usedScript drives a queue through a byte string of
// operations with an oracle kept apart from the queue's own bookkeeping;
// FuzzUsedEntries feeds it the fuzzer's strings, TestUsedEntriesRandom
// fixed-seed random ones.

// fuzzQueueSize is small, so that chains run out of descriptors often.
const fuzzQueueSize = 8

// script reads a byte string as operations and their arguments; past its
// end it reads zeros.
type script struct {
	b []byte
	i int
}

func (s *script) done() bool { return s.i >= len(s.b) }
func (s *script) u8() uint8 {
	if s.i >= len(s.b) {
		s.i++
		return 0
	}
	s.i++
	return s.b[s.i-1]
}
func (s *script) u16() uint16 { return uint16(s.u8()) | uint16(s.u8())<<8 }
func (s *script) u32() uint32 { return uint32(s.u16()) | uint32(s.u16())<<16 }

// usedStats counts what a script did, for the random test's bound.
type usedStats struct {
	entries, harvested, broken int
}

// usedScript runs script b on a fresh queue of fuzzQueueSize descriptors
// (virtio-mmio, no event index) and checks the invariants after every
// step; at the end it drains the queue (a device that answers everything
// correctly) and checks that every descriptor is free again, or, if the
// queue broke, that it still refuses and lost none.
func usedScript(t *testing.T, b []byte, st *usedStats) {
	e := &env{t: t, b: newBus(t), r: newRAM(64 << 10)}
	e.v = newVdev(t, e.r, FVersion1, 16)
	e.dev = &ringDev{t: t, v: e.v, r: e.r}
	e.b.add(mmioBase, MMIOSize, &mmioModel{v: e.v, magic: MMIOMagic, version: 2, deviceID: TypeNet})
	d, err := OpenMMIO(mmioBase)
	if err != OK {
		t.Fatalf("OpenMMIO: %v", err)
	}
	e.d = d
	q := e.start(0, fuzzQueueSize)[0]
	vq := &e.v.queues[0]
	_, bufPhys := e.r.alloc(4096, 16)

	type chain struct{ n, writable uint32 }
	outstanding := map[uint16]chain{} // the driver's chains not yet harvested, by head
	var held []uint16                 // chains the device has taken and not returned
	broken := false                   // the oracle's view: a bad entry was harvested
	lastUsed := uint16(0)             // entries harvested

	// write puts a used entry (id, length) in the device's next slot and
	// moves idx past it.
	write := func(id, length uint32) {
		slot := vq.device + 4 + 8*uint64(vq.used%vq.size)
		w, _ := e.r.slice(slot, 8)
		binary.LittleEndian.PutUint32(w, id)
		binary.LittleEndian.PutUint32(w[4:], length)
		vq.used++
		atomic.StoreUint32(e.r.word(vq.device), uint32(vq.used)<<16)
		st.entries++
	}
	// harvest calls Next until it returns nothing, checking each answer
	// against the entry it must have read.
	harvest := func() {
		for range 2 * 65536 {
			want := "none"
			var id, length uint32
			if !broken && vq.used != lastUsed {
				w, _ := e.r.slice(vq.device+4+8*uint64(lastUsed%vq.size), 8)
				id, length = binary.LittleEndian.Uint32(w), binary.LittleEndian.Uint32(w[4:])
				c, ok := outstanding[uint16(id)]
				if id < fuzzQueueSize && ok && length <= c.writable {
					want = "chain"
				} else {
					want = "break"
				}
			}
			h, n, ok := q.Next()
			switch want {
			case "none":
				if ok || q.Broken() != broken {
					t.Fatalf("Next = %d, %d, %v (broken %v) with nothing to harvest (broken %v)", h, n, ok, q.Broken(), broken)
				}
				return
			case "break":
				if ok || !q.Broken() {
					t.Fatalf("Next = %d, %d, %v (broken %v) for the bad entry id %d length %d", h, n, ok, q.Broken(), id, length)
				}
				broken = true
				st.broken++
				return
			}
			if !ok || uint32(h) != id || n != length {
				t.Fatalf("Next = %d, %d, %v; want the entry %d, %d", h, n, ok, id, length)
			}
			delete(outstanding, h)
			lastUsed++
			st.harvested++
		}
		t.Fatalf("Next did not run dry")
	}
	add := func(n int, out int, lens []uint32) {
		bufs := make([]Buffer, n)
		writable := uint32(0)
		for i := range bufs {
			bufs[i] = Buffer{bufPhys + uint64(i)*64, lens[i]}
			if i >= out {
				writable += lens[i]
			}
		}
		free := q.Free()
		h, err := q.Add(bufs, out)
		switch {
		case broken:
			if err != ErrBroken {
				t.Fatalf("Add on a broken queue: %v, want %v at once", err, ErrBroken)
			}
		case n > int(free):
			if err != ErrFull {
				t.Fatalf("Add of %d with %d free: %v", n, free, err)
			}
		case err != OK:
			t.Fatalf("Add of %d with %d free: %v", n, free, err)
		default:
			if _, dup := outstanding[h]; dup || h >= fuzzQueueSize {
				t.Fatalf("Add gave head %d, outstanding already or out of range", h)
			}
			outstanding[h] = chain{uint32(n), writable}
		}
	}
	// take is the device taking the published chains' heads. A device
	// that returned chains it never took lets the driver reuse their
	// descriptors and publish more than the ring holds: it skips what
	// was overwritten.
	take := func() {
		availIdx := uint16(atomic.LoadUint32(e.r.word(vq.driver)) >> 16)
		if availIdx-vq.lastAvail > vq.size {
			vq.lastAvail = availIdx - vq.size
		}
		for ; vq.lastAvail != availIdx; vq.lastAvail++ {
			held = append(held, e.dev.le16(vq.driver+4+2*uint64(vq.lastAvail%vq.size)))
		}
	}
	s := &script{b: b}
	for !s.done() {
		switch op := s.u8() % 8; op {
		case 0, 1: // the driver adds a chain of 1 to 5 buffers
			n := 1 + int(s.u8()%5)
			out := int(s.u8()) % (n + 1)
			lens := make([]uint32, n)
			for i := range lens {
				lens[i] = uint32(s.u8()%64) + 1
			}
			add(n, out, lens)
		case 2: // the driver publishes
			e.d.Kick(q)
		case 3: // the device takes what is published
			take()
		case 4: // the device returns a chain it holds: a length that fits, or (255) one past its room
			i, l := int(s.u8()), uint32(s.u8())
			if len(held) == 0 {
				continue
			}
			i %= len(held)
			h := held[i]
			held = append(held[:i], held[i+1:]...)
			room := outstanding[h].writable
			if l == 255 {
				l = room + 1
			}
			write(uint32(h), l%(room+1))
		case 5: // the device writes any entry
			write(s.u32()%(2*fuzzQueueSize+1)|uint32(s.u8()&0x80)<<24, s.u32())
		case 6: // the device moves idx by any amount without writing entries
			vq.used += s.u16()
			atomic.StoreUint32(e.r.word(vq.device), uint32(vq.used)<<16)
		case 7: // the driver harvests
			harvest()
		}
		if q.Pending() && broken {
			t.Fatalf("Pending on a broken queue")
		}
		checkFreeList(t, q)
	}
	harvest()
	if broken {
		// Refused at once, however many descriptors are free; the
		// outstanding chains stay the device's, none lost.
		if _, err := q.Add([]Buffer{{bufPhys, 1}}, 0); err != ErrBroken {
			t.Fatalf("Add after the break: %v, want %v", err, ErrBroken)
		}
		if _, _, ok := q.Next(); ok || q.Pending() {
			t.Fatalf("a broken queue still returns chains")
		}
		checkFreeList(t, q)
		if int(q.Free())+func() (k int) {
			for _, c := range outstanding {
				k += int(c.n)
			}
			return
		}() != fuzzQueueSize {
			t.Fatalf("free %d and %d chains outstanding do not add up to %d", q.Free(), len(outstanding), fuzzQueueSize)
		}
		return
	}
	// A device that behaves from now on returns every chain outstanding
	// (at most the ring's size): each comes back once and every
	// descriptor is free.
	e.d.Kick(q)
	for h, c := range outstanding {
		write(uint32(h), c.writable)
	}
	harvest()
	if broken {
		t.Fatalf("the queue broke on good entries")
	}
	if len(outstanding) != 0 || q.Free() != fuzzQueueSize {
		t.Fatalf("after the drain: %d chains outstanding, %d descriptors free of %d", len(outstanding), q.Free(), fuzzQueueSize)
	}
	checkFreeList(t, q)
}

// usedOps writes scripts for the seeds.
type usedOps []byte

func (o usedOps) add(out int, lens ...byte) usedOps {
	o = append(o, 0, byte(len(lens)-1), byte(out))
	for _, l := range lens {
		o = append(o, l-1)
	}
	return o
}
func (o usedOps) kick() usedOps                  { return append(o, 2) }
func (o usedOps) take() usedOps                  { return append(o, 3) }
func (o usedOps) ret(i int, length byte) usedOps { return append(o, 4, byte(i), length) }
func (o usedOps) entry(id uint32, high bool, length uint32) usedOps {
	f := byte(0)
	if high {
		f = 0x80
	}
	o = binary.LittleEndian.AppendUint32(append(o, 5), id)
	return binary.LittleEndian.AppendUint32(append(o, f), length)
}
func (o usedOps) jump(d uint16) usedOps { return binary.LittleEndian.AppendUint16(append(o, 6), d) }
func (o usedOps) harvest() usedOps      { return append(o, 7) }

// usedSeeds are scripts that reach each path: round trips, each kind of
// bad entry, idx jumps both ways, running out of descriptors, adds after
// a break.
var usedSeeds = []usedOps{
	usedOps{}.add(1, 8, 16).kick().take().ret(0, 16).harvest(),                             // one chain out and back
	usedOps{}.add(1, 8, 16).kick().take().ret(0, 17).harvest().add(0, 1),                   // a length past the chain's room, then an add
	usedOps{}.add(1, 8, 16).kick().take().entry(1, false, 0).harvest(),                     // an entry naming a descriptor inside the chain
	usedOps{}.add(0, 4).kick().take().entry(200, true, 0).harvest().add(0, 1).add(0, 1),    // an ID far out of range
	usedOps{}.add(0, 4).add(0, 4, 4, 4).add(0, 4, 4, 4, 4).add(0, 4).harvest(),             // full: the last add is refused
	usedOps{}.add(0, 4).kick().take().ret(0, 4).harvest().jump(0xffff).harvest(),           // idx back by one: a harvested entry again
	usedOps{}.add(0, 4).add(0, 4).kick().take().jump(2).harvest(),                          // idx ahead over entries never written
	usedOps{}.add(0, 4).kick().take().entry(0, false, 4).entry(0, false, 4).harvest(),      // the same chain returned twice
	usedOps{}.add(0, 4).add(0, 4).kick().take().ret(1, 4).ret(0, 0).harvest().add(0, 4, 4), // out of order, a length of 0
}

func FuzzUsedEntries(f *testing.F) {
	for _, s := range usedSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var st usedStats
		usedScript(t, b, &st)
	})
}

// TestUsedEntriesRandom runs fixed-seed random scripts until 10^5 used
// entries have gone through the driver: mostly what a working device does
// (so a queue lives long enough to run out of descriptors and reuse
// them), with a bad entry, an idx jump or a length past the room now and
// then, except in every fourth script, which the device answers well to
// the end.
func TestUsedEntriesRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	var st usedStats
	start := time.Now()
	scripts := 0
	for ; st.entries < 100_000; scripts++ {
		var o usedOps
		clean := scripts%4 == 0
		for range 64 + rng.Intn(2048) {
			r := rng.Intn(1000)
			if clean && r >= 990 {
				r = 0
			}
			switch {
			case r < 250:
				lens := make([]byte, 1+rng.Intn(4))
				for i := range lens {
					lens[i] = byte(1 + rng.Intn(64))
				}
				o = o.add(rng.Intn(len(lens)+1), lens...)
			case r < 350:
				o = o.kick()
			case r < 450:
				o = o.take()
			case r < 740:
				l := byte(rng.Intn(255))
				if !clean && rng.Intn(200) == 0 {
					l = 255
				}
				o = o.ret(rng.Intn(256), l)
			case r < 990:
				o = o.harvest()
			case r < 995:
				o = o.entry(uint32(rng.Intn(2*fuzzQueueSize)), rng.Intn(2) == 0, rng.Uint32()>>rng.Intn(32))
			default:
				o = o.jump(uint16(rng.Intn(1 << 16)))
			}
		}
		usedScript(t, o, &st)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d scripts, %d used entries, %d harvested, %d queues broken, in %v", scripts, st.entries, st.harvested, st.broken, time.Since(start).Round(time.Millisecond))
	if st.broken == 0 || st.harvested < st.entries/2 {
		t.Errorf("the scripts did not reach both paths: %d broken, %d of %d harvested", st.broken, st.harvested, st.entries)
	}
}
