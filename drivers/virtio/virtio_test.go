package virtio

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

const netMAC = 1 << 5 // VIRTIO_NET_F_MAC, a device feature for the tests

func TestNegotiate(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			e := tr.open(t, FVersion1|FEventIdx|netMAC|1<<40, 256)
			e.v.status = StatusDriverOK | StatusFeaturesOK | StatusAcknowledge | StatusDriver // left by an earlier driver
			e.v.resetReads = 3
			got, err := e.d.Negotiate(FEventIdx | netMAC | FInOrder)
			if err != OK {
				t.Fatalf("Negotiate: %v", err)
			}
			if want := uint64(FVersion1 | FEventIdx | netMAC); got != want || e.v.accepted != want {
				t.Errorf("features %#x, device accepted %#x, want %#x", got, e.v.accepted, want)
			}
			if e.v.featuresWrittenOutside {
				t.Errorf("features written outside DRIVER..FEATURES_OK")
			}
			e.d.Ready()
			want := []uint8{0, 1, 3, 11, 15}
			if !slices.Equal(e.v.statusLog, want) {
				t.Errorf("status writes %v, want %v", e.v.statusLog, want)
			}
			if e.d.Status() != 15 {
				t.Errorf("status %#x", e.d.Status())
			}
		})
	}
}

func TestNegotiateRefused(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name+"/features", func(t *testing.T) {
			e := tr.open(t, FVersion1|netMAC, 256)
			e.v.refuse = true
			if _, err := e.d.Negotiate(netMAC); err != ErrFeaturesRefused {
				t.Fatalf("Negotiate = %v, want %v", err, ErrFeaturesRefused)
			}
			if e.v.status&StatusFailed == 0 {
				t.Errorf("status %#x: FAILED not set", e.v.status)
			}
		})
		t.Run(tr.name+"/version1", func(t *testing.T) {
			e := tr.open(t, netMAC, 256)
			if _, err := e.d.Negotiate(netMAC); err != ErrNoVersion1 {
				t.Fatalf("Negotiate = %v, want %v", err, ErrNoVersion1)
			}
			if e.v.status != StatusAcknowledge|StatusDriver|StatusFailed {
				t.Errorf("status %#x, want ACKNOWLEDGE|DRIVER|FAILED", e.v.status)
			}
		})
		t.Run(tr.name+"/reset", func(t *testing.T) {
			e := tr.open(t, FVersion1, 256)
			e.v.resetReads = resetSpins + 1
			if _, err := e.d.Negotiate(0); err != ErrResetTimeout {
				t.Fatalf("Negotiate = %v, want %v", err, ErrResetTimeout)
			}
		})
	}
}

func TestOpenMMIO(t *testing.T) {
	for _, tc := range []struct {
		magic, version, id uint32
		want               Error
	}{
		{MMIOMagic, 2, TypeNet, OK},
		{MMIOMagic, 1, TypeNet, ErrLegacy},
		{MMIOMagic, 3, TypeNet, ErrVersion},
		{MMIOMagic, 2, 0, ErrNoDevice},
		{0x12345678, 2, TypeNet, ErrMagic},
	} {
		b := newBus(t)
		v := newVdev(t, nil, FVersion1)
		b.add(mmioBase, MMIOSize, &mmioModel{v: v, magic: tc.magic, version: tc.version, deviceID: tc.id})
		d, err := OpenMMIO(mmioBase)
		if err != tc.want {
			t.Errorf("magic %#x version %d id %d: %v, want %v", tc.magic, tc.version, tc.id, err, tc.want)
		}
		if err == OK && (d.Type() != TypeNet || d.IsPCI() || d.ConfigLen() != 0x100) {
			t.Errorf("device %+v", d)
		}
		if len(v.statusLog) != 0 {
			t.Errorf("OpenMMIO wrote the status: %v", v.statusLog)
		}
	}
	if s := ErrLegacy.String(); !bytes.Contains([]byte(s), []byte("force-legacy=false")) {
		t.Errorf("ErrLegacy says %q: it should say how to get version 2", s)
	}
}

func TestQueueInit(t *testing.T) {
	r := newRAM(1 << 20)
	virt, phys := r.alloc(uint64(QueueBytes(8)), 16)
	var q Queue
	for _, tc := range []struct {
		size   uint16
		v      uintptr
		p      uint64
		expect Error
	}{
		{0, virt, phys, ErrQueueSize}, {1, virt, phys, ErrQueueSize}, {6, virt, phys, ErrQueueSize},
		{8, virt + 8, phys, ErrQueueAlign}, {8, virt, phys + 4, ErrQueueAlign}, {8, virt, phys, OK},
	} {
		if err := q.Init(0, tc.size, tc.v, tc.p, false); err != tc.expect {
			t.Errorf("Init(size %d, %#x, %#x) = %v, want %v", tc.size, tc.v-virt, tc.p-phys, err, tc.expect)
		}
	}
	if QueueBytes(8) != 34*8+16 || QueueBytes(32768) != 34*32768+16 || QueueBytes(3) != 0 {
		t.Errorf("QueueBytes: %d %d %d", QueueBytes(8), QueueBytes(32768), QueueBytes(3))
	}
	if q.DescAddr() != phys || q.DriverAddr() != phys+128 || q.DeviceAddr() != phys+128+8+16 {
		t.Errorf("addresses %#x %#x %#x", q.DescAddr()-phys, q.DriverAddr()-phys, q.DeviceAddr()-phys)
	}
	if q.Free() != 8 {
		t.Errorf("Free = %d", q.Free())
	}
	checkFreeList(t, &q)
}

func TestSetupQueue(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			e := tr.open(t, FVersion1, 256, 64, 0)
			if _, err := e.d.Negotiate(0); err != OK {
				t.Fatal(err)
			}
			if m := e.d.QueueMax(0); m != 256 {
				t.Errorf("QueueMax(0) = %d", m)
			}
			if m := e.d.QueueMax(2); m != 0 {
				t.Errorf("QueueMax(2) = %d", m)
			}
			if m := e.d.QueueMax(5); m != 0 {
				t.Errorf("QueueMax(5) = %d", m)
			}
			for _, c := range [][3]uint16{{0, 64, 64}, {0, 1000, 256}, {0, 100, 64}, {1, 128, 64}, {2, 64, 0}} {
				if got := e.d.QueueFit(c[0], c[1]); got != c[2] {
					t.Errorf("QueueFit(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
				}
			}
			mk := func(index, size uint16) *Queue {
				virt, phys := e.r.alloc(uint64(QueueBytes(size)), 4096)
				q := new(Queue)
				if err := q.Init(index, size, virt, phys, false); err != OK {
					t.Fatal(err)
				}
				return q
			}
			q0, q1 := mk(0, 128), mk(1, 64)
			if err := e.d.SetupQueue(mk(1, 128)); err != ErrQueueSize {
				t.Errorf("queue 1 of 128 (max 64): %v", err)
			}
			if err := e.d.SetupQueue(mk(2, 16)); err != ErrNoQueue {
				t.Errorf("queue 2 (max 0): %v", err)
			}
			if err := e.d.SetupQueue(mk(7, 16)); err != ErrNoQueue {
				t.Errorf("queue 7 (none): %v", err)
			}
			for _, q := range []*Queue{q0, q1} {
				if err := e.d.SetupQueue(q); err != OK {
					t.Fatalf("SetupQueue(%d): %v", q.Index(), err)
				}
				vq := e.v.queues[q.Index()]
				if !vq.ready || vq.size != q.Size() || vq.desc != q.DescAddr() || vq.driver != q.DriverAddr() || vq.device != q.DeviceAddr() {
					t.Errorf("queue %d as the device has it: %+v; want size %d at %#x %#x %#x",
						q.Index(), vq, q.Size(), q.DescAddr(), q.DriverAddr(), q.DeviceAddr())
				}
				if vq.desc%16 != 0 || vq.driver%2 != 0 || vq.device%4 != 0 {
					t.Errorf("queue %d misaligned: %#x %#x %#x", q.Index(), vq.desc, vq.driver, vq.device)
				}
			}
			if err := e.d.SetupQueue(q0); err != ErrQueueInUse {
				t.Errorf("queue 0 twice: %v", err)
			}
			e.d.Ready()
			e.d.Notify(q1)
			e.d.Notify(q0)
			if !slices.Equal(e.v.notified, []uint16{1, 0}) {
				t.Errorf("notifications %v", e.v.notified)
			}
		})
	}
}

// fill writes a recognisable pattern for chain k, buffer i.
func pattern(k, i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(k*7 + i*13 + j)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			e := tr.open(t, FVersion1, 256, 256)
			qs := e.start(0, 16, 16)
			q := qs[1]
			type sent struct {
				head     uint16
				out, in  [][]byte
				inPhys   []uint64
				outPhys  []uint64
				inLength uint32
			}
			var chains []sent
			// Chains: 1 out; 1 in; 2 out + 3 in; 3 out.
			for k, shape := range [][2]int{{1, 0}, {0, 1}, {2, 3}, {3, 0}} {
				var bufs []Buffer
				var s sent
				for i := 0; i < shape[0]+shape[1]; i++ {
					n := 16 + 3*i
					_, phys := e.r.alloc(uint64(n), 8)
					data := e.r.mem[phys-e.r.phys : phys-e.r.phys+uint64(n)]
					if i < shape[0] {
						copy(data, pattern(k, i, n))
						s.out = append(s.out, data)
						s.outPhys = append(s.outPhys, phys)
					} else {
						s.in = append(s.in, data)
						s.inPhys = append(s.inPhys, phys)
						s.inLength += uint32(n)
					}
					bufs = append(bufs, Buffer{phys, uint32(n)})
				}
				head, err := q.Add(bufs, shape[0])
				if err != OK {
					t.Fatalf("Add %v: %v", shape, err)
				}
				s.head = head
				chains = append(chains, s)
			}
			if q.Free() != 16-10 {
				t.Errorf("Free = %d after 10 descriptors", q.Free())
			}
			if _, _, ok := e.dev.pop(1); ok {
				t.Fatalf("device saw a chain before it was published")
			}
			if !e.d.Kick(q) {
				t.Fatalf("Kick did not notify")
			}
			if !slices.Equal(e.v.notified, []uint16{1}) {
				t.Fatalf("notifications %v", e.v.notified)
			}
			if e.d.Kick(q) {
				t.Errorf("Kick with nothing new notified")
			}
			// The device answers in reverse order: writes into the in buffers what it read from the out ones.
			var popped [][]seg
			var heads []uint16
			for {
				h, segs, ok := e.dev.pop(1)
				if !ok {
					break
				}
				heads = append(heads, h)
				popped = append(popped, segs)
			}
			if len(popped) != len(chains) {
				t.Fatalf("device popped %d chains", len(popped))
			}
			for k, c := range chains {
				segs := popped[k]
				if heads[k] != c.head || len(segs) != len(c.out)+len(c.in) {
					t.Fatalf("chain %d: head %d, %d buffers; want %d, %d", k, heads[k], len(segs), c.head, len(c.out)+len(c.in))
				}
				for i, s := range segs {
					wantAddr, wantWrite := uint64(0), i >= len(c.out)
					if wantWrite {
						wantAddr = c.inPhys[i-len(c.out)]
					} else {
						wantAddr = c.outPhys[i]
					}
					if s.addr != wantAddr || s.write != wantWrite || s.len != uint32(16+3*i) {
						t.Errorf("chain %d buffer %d: %+v", k, i, s)
					}
				}
			}
			for k := len(chains) - 1; k >= 0; k-- {
				c := chains[k]
				written := uint32(0)
				for i, in := range c.in {
					copy(in, fmt.Sprintf("chain %d in %d", k, i))
					written += uint32(len(in))
				}
				e.dev.push(1, c.head, written)
			}
			if e.v.queues[1].interrupts != 4 || e.d.Interrupt() != IntUsed || e.d.Interrupt() != 0 {
				t.Errorf("interrupts %d, ISR not acknowledged", e.v.queues[1].interrupts)
			}
			for k := len(chains) - 1; k >= 0; k-- {
				c := chains[k]
				head, n, ok := q.Next()
				if !ok || head != c.head || n != c.inLength {
					t.Fatalf("Next = %d, %d, %v; want chain %d: %d, %d", head, n, ok, k, c.head, c.inLength)
				}
				for i, in := range c.in {
					if want := fmt.Sprintf("chain %d in %d", k, i); string(in[:len(want)]) != want {
						t.Errorf("chain %d in %d holds %q", k, i, in)
					}
				}
				checkFreeList(t, q)
			}
			if _, _, ok := q.Next(); ok || q.Pending() || q.Free() != 16 {
				t.Errorf("after the last chain: ok %v, pending %v, free %d", ok, q.Pending(), q.Free())
			}
			if qs[0].Pending() || len(e.v.notified) != 1 {
				t.Errorf("queue 0 touched")
			}
		})
	}
}

func TestAddErrors(t *testing.T) {
	r := newRAM(1 << 20)
	virt, phys := r.alloc(uint64(QueueBytes(4)), 16)
	var q Queue
	q.Init(0, 4, virt, phys, false)
	b := []Buffer{{0x1000, 1}, {0x2000, 2}, {0x3000, 3}, {0x4000, 4}, {0x5000, 5}}
	for _, tc := range []struct {
		bufs []Buffer
		out  int
		want Error
	}{
		{nil, 0, ErrChain}, {b[:2], 3, ErrChain}, {b[:2], -1, ErrChain}, {b, 5, ErrFull},
		{[]Buffer{{0, 1 << 31}, {0, 1 << 31}}, 2, ErrChain},
		{b[:3], 1, OK}, {b[:2], 0, ErrFull}, {b[:1], 1, OK}, {b[:1], 1, ErrFull},
	} {
		if _, err := q.Add(tc.bufs, tc.out); err != tc.want {
			t.Errorf("Add(%d buffers, out %d) = %v, want %v", len(tc.bufs), tc.out, err, tc.want)
		}
	}
	checkFreeList(t, &q)
}

// TestRandom runs a fixed-seed random mix of adds, kicks, out-of-order
// completions and harvests over both transports, long enough for the 16-bit
// ring indices to wrap (over 2^16 chains), checking the free list and every
// byte the device writes.
func TestRandom(t *testing.T) {
	for _, tr := range transports {
		for _, events := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/eventidx=%v", tr.name, events), func(t *testing.T) {
				want := uint64(0)
				if events {
					want = FEventIdx
				}
				e := tr.open(t, FVersion1|FEventIdx, 64)
				const size = 16
				q := e.start(want, size)[0]
				rng := rand.New(rand.NewSource(18))
				_, dataPhys := e.r.alloc(size*64, 8)
				slot := func(d uint16) (uint64, []byte) { // each descriptor has its own 64-byte buffer
					o := dataPhys - e.r.phys + uint64(d)*64
					return dataPhys + uint64(d)*64, e.r.mem[o : o+64]
				}
				type chain struct {
					n, out int
					lens   []uint32
					tag    byte
				}
				outstanding := map[uint16]chain{}
				var held []struct { // popped by the device, not yet returned
					head uint16
					segs []seg
				}
				added, harvested, kicks := 0, 0, 0
				armed := false       // interrupts enabled and nothing returned since
				const total = 70_000 // past 2^16: the indices wrap
				for added < total || len(outstanding) > 0 {
					switch op := rng.Intn(10); {
					case op < 4 && added < total: // add
						n := 1 + rng.Intn(4)
						if n > int(q.Free()) {
							if _, err := q.Add(make([]Buffer, n), 0); err != ErrFull {
								t.Fatalf("Add with %d free of %d: %v", q.Free(), n, err)
							}
							continue
						}
						c := chain{n: n, out: rng.Intn(n + 1), tag: byte(added)}
						// Descriptors come off the free list in order: ask which, to give each its own buffer.
						bufs := make([]Buffer, n)
						d := q.freeHead
						for i := range bufs {
							addr, _ := slot(d)
							l := uint32(1 + rng.Intn(64))
							bufs[i] = Buffer{addr, l}
							c.lens = append(c.lens, l)
							d = q.shadowNext(d)
						}
						head, err := q.Add(bufs, c.out)
						if err != OK {
							t.Fatalf("Add: %v", err)
						}
						if _, dup := outstanding[head]; dup {
							t.Fatalf("head %d handed out twice", head)
						}
						outstanding[head] = c
						added++
					case op < 5: // kick
						before := len(e.v.notified)
						notified := e.d.Kick(q)
						if notified != (len(e.v.notified) == before+1) {
							t.Fatalf("Kick said %v", notified)
						}
						if notified {
							kicks++
						}
					case op < 7: // the device takes what it sees
						for {
							h, segs, ok := e.dev.pop(0)
							if !ok {
								break
							}
							c, ok := outstanding[h]
							if !ok || len(segs) != c.n {
								t.Fatalf("device got head %d with %d buffers; outstanding %v", h, len(segs), ok)
							}
							for i, s := range segs {
								if s.len != c.lens[i] || s.write != (i >= c.out) {
									t.Fatalf("chain %d buffer %d: %+v, want len %d", h, i, s, c.lens[i])
								}
							}
							held = append(held, struct {
								head uint16
								segs []seg
							}{h, segs})
						}
					case op < 9: // the device returns a random held chain
						if len(held) == 0 {
							continue
						}
						i := rng.Intn(len(held))
						h := held[i]
						held = append(held[:i], held[i+1:]...)
						written := uint32(0)
						for _, s := range h.segs {
							if !s.write {
								continue
							}
							b, _ := e.r.slice(s.addr, s.len)
							w := uint32(rng.Intn(int(s.len) + 1))
							for j := range b[:w] {
								b[j] = outstanding[h.head].tag + byte(j)
							}
							written += w
							if w < s.len {
								break
							}
						}
						before := e.v.queues[0].interrupts
						e.dev.push(0, h.head, written)
						if armed && e.v.queues[0].interrupts != before+1 {
							t.Fatalf("a chain returned after EnableInterrupts raised no interrupt")
						}
						armed = false // the driver would be in its handler now
					case op == 9 && rng.Intn(4) == 0:
						q.DisableInterrupts()
						armed = false
					default: // harvest everything, then ask for an interrupt (again if one came meanwhile)
						for {
							head, n, ok := q.Next()
							if !ok {
								if q.EnableInterrupts() {
									continue
								}
								armed = true
								break
							}
							c, had := outstanding[head]
							if !had {
								t.Fatalf("Next returned head %d, not outstanding", head)
							}
							var in uint32
							for _, l := range c.lens[c.out:] {
								in += l
							}
							if n > in {
								t.Fatalf("Next: %d bytes written into %d", n, in)
							}
							delete(outstanding, head)
							harvested++
						}
						if q.Broken() {
							t.Fatalf("queue broken")
						}
					}
					if rng.Intn(64) == 0 {
						checkFreeList(t, q)
					}
					// Nothing may stall: if the driver cannot add and nothing is in flight on the device, flush.
					if added >= total && len(held) == 0 {
						e.d.Kick(q)
					}
				}
				checkFreeList(t, q)
				if q.Free() != size || harvested != total || e.v.queues[0].used != uint16(total%65536) {
					t.Errorf("free %d, harvested %d, device used idx %d", q.Free(), harvested, e.v.queues[0].used)
				}
				t.Logf("%d chains, %d notifications, %d interrupts (%d suppressed)", total, kicks, e.v.queues[0].interrupts, e.v.queues[0].suppressedInterrupts)
			})
		}
	}
}

// TestNotifySuppression: the device's NO_NOTIFY flag and, with
// VIRTIO_F_EVENT_IDX, its avail_event decide Kick; the driver's
// DisableInterrupts and EnableInterrupts decide the device's interrupts.
func TestNotifySuppression(t *testing.T) {
	t.Run("flags", func(t *testing.T) {
		e := mmioEnv(t, FVersion1, 16)
		q := e.start(0, 8)[0]
		add := func() {
			if _, err := q.Add([]Buffer{{ramPhys, 4}}, 1); err != OK {
				t.Fatal(err)
			}
		}
		e.dev.setNoNotify(0, true)
		add()
		if e.d.Kick(q) {
			t.Errorf("notified despite NO_NOTIFY")
		}
		if h, _, ok := e.dev.pop(0); !ok {
			t.Errorf("published chain not visible")
		} else {
			e.dev.push(0, h, 0)
		}
		e.dev.setNoNotify(0, false)
		add()
		if !e.d.Kick(q) {
			t.Errorf("not notified without NO_NOTIFY")
		}
		// Interrupt suppression.
		q.DisableInterrupts()
		h, _, _ := e.dev.pop(0)
		e.dev.push(0, h, 0)
		if e.v.queues[0].interrupts != 1 || e.v.queues[0].suppressedInterrupts != 1 {
			t.Errorf("interrupts %d, suppressed %d; want 1, 1", e.v.queues[0].interrupts, e.v.queues[0].suppressedInterrupts)
		}
		if !q.EnableInterrupts() {
			t.Errorf("EnableInterrupts did not report the chain returned meanwhile")
		}
		for _, _, ok := q.Next(); ok; _, _, ok = q.Next() {
		}
		if q.EnableInterrupts() {
			t.Errorf("EnableInterrupts reports pending on an empty ring")
		}
		add()
		e.d.Kick(q)
		h, _, _ = e.dev.pop(0)
		e.dev.push(0, h, 0)
		if e.v.queues[0].interrupts != 2 {
			t.Errorf("interrupts %d after EnableInterrupts; want 2", e.v.queues[0].interrupts)
		}
	})
	t.Run("eventidx", func(t *testing.T) {
		e := pciEnv(t, FVersion1|FEventIdx, 16)
		q := e.start(FEventIdx, 8)[0]
		e.dev.events = false // this test writes avail_event itself
		add := func(n int) {
			for range n {
				if _, err := q.Add([]Buffer{{ramPhys, 4}}, 1); err != OK {
					t.Fatal(err)
				}
			}
		}
		// The device asks to be notified when idx passes event: published idx goes old -> new.
		for _, tc := range []struct {
			event uint16
			n     int
			want  bool
		}{
			{0, 1, true},  // 0 -> 1 passes 0
			{5, 2, false}, // 1 -> 3
			{3, 1, true},  // 3 -> 4 passes 3
			{3, 1, false}, // 4 -> 5: already passed
			{6, 3, true},  // 5 -> 8 passes 6
		} {
			e.dev.setAvailEvent(0, tc.event)
			add(tc.n)
			if got := e.d.Kick(q); got != tc.want {
				t.Errorf("event %d, publishing %d: notified %v, want %v", tc.event, tc.n, got, tc.want)
			}
			for _, _, ok := e.dev.pop(0); ok; _, _, ok = e.dev.pop(0) {
			}
			for h := uint16(0); h < 8; h++ {
				if n, _ := q.shadowChain(h); n != 0 {
					e.dev.push(0, h, 0)
				}
			}
			for _, _, ok := q.Next(); ok; _, _, ok = q.Next() {
			}
		}
		// Wrap: event near 65535 with idx crossing 0.
		if !needEvent(0xffff, 2, 0xfffe) || needEvent(0xfffd, 2, 0xfffe) || !needEvent(1, 2, 0xfffe) || needEvent(2, 2, 0xfffe) {
			t.Errorf("needEvent across the wrap")
		}
		// used_event: DisableInterrupts puts it out of reach, EnableInterrupts at the next entry.
		e.dev.events = true
		intr := e.v.queues[0].interrupts
		q.DisableInterrupts()
		add(4)
		e.d.Kick(q)
		for h, _, ok := e.dev.pop(0); ok; h, _, ok = e.dev.pop(0) {
			e.dev.push(0, h, 0)
		}
		if e.v.queues[0].interrupts != intr {
			t.Errorf("%d interrupts with interrupts disabled", e.v.queues[0].interrupts-intr)
		}
		if !q.EnableInterrupts() {
			t.Errorf("EnableInterrupts missed 4 returned chains")
		}
		for _, _, ok := q.Next(); ok; _, _, ok = q.Next() {
		}
		if q.EnableInterrupts() {
			t.Errorf("pending after harvesting")
		}
		add(2)
		e.d.Kick(q)
		for h, _, ok := e.dev.pop(0); ok; h, _, ok = e.dev.pop(0) {
			e.dev.push(0, h, 0)
		}
		if got := e.v.queues[0].interrupts - intr; got != 1 {
			t.Errorf("%d interrupts for 2 chains with used_event at the first; want 1", got)
		}
	})
}

// TestBrokenDevice: used entries that name no outstanding chain, or claim
// more bytes than it holds, break the queue instead of the free list.
func TestBrokenDevice(t *testing.T) {
	for _, tc := range []struct {
		name    string
		id      func(h uint16) uint16
		written uint32
	}{
		{"id out of range", func(uint16) uint16 { return 9 }, 0},
		{"not outstanding", func(h uint16) uint16 { return h + 1 }, 0},
		{"too long", func(h uint16) uint16 { return h }, 17},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := mmioEnv(t, FVersion1, 16)
			q := e.start(0, 8)[0]
			h, err := q.Add([]Buffer{{ramPhys, 4}, {ramPhys + 64, 16}}, 1)
			if err != OK {
				t.Fatal(err)
			}
			e.d.Kick(q)
			e.dev.pop(0)
			e.dev.push(0, tc.id(h), tc.written)
			if _, _, ok := q.Next(); ok || !q.Broken() || q.Pending() {
				t.Errorf("Next accepted a bad entry (broken %v)", q.Broken())
			}
			checkFreeList(t, q)
			if q.Free() != 6 {
				t.Errorf("free %d", q.Free())
			}
		})
	}
}

func TestInterruptAndConfig(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			e := tr.open(t, FVersion1, 16)
			copy(e.v.config, []byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 1, 0, 0xdc, 0x05, 0, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88})
			var mac [6]byte
			e.v.genBumpOnConfigRead = 2 // the first pass sees a change
			e.d.ConfigBytes(0, mac[:])
			if mac != [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56} {
				t.Errorf("MAC %x", mac)
			}
			if e.d.Config8(6) != 1 || e.d.Config16(8) != 1500 || e.d.Config32(8) != 1500 || e.d.Config64(12) != 0x8877665544332211 {
				t.Errorf("config fields %#x %#x %#x %#x", e.d.Config8(6), e.d.Config16(8), e.d.Config32(8), e.d.Config64(12))
			}
			if e.d.Config16(7) != 0 || e.d.Config32(e.d.ConfigLen()-2) != 0 || e.d.Config8(e.d.ConfigLen()) != 0 {
				t.Errorf("misaligned or out-of-range config reads are not 0")
			}
			e.v.isr = IntUsed | IntConfig
			if got := e.d.Interrupt(); got != IntUsed|IntConfig || e.v.isr != 0 {
				t.Errorf("Interrupt = %d, ISR left %d", got, e.v.isr)
			}
			if got := e.d.Interrupt(); got != 0 {
				t.Errorf("second Interrupt = %d", got)
			}
		})
	}
}
