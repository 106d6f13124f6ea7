package virtio

import (
	"encoding/binary"
	"runtime"
	"sync"
	"testing"
)

// TestConcurrentDevice runs the device side in its own goroutine, polling
// the available ring as a device's own thread would, while the driver adds,
// kicks and harvests. Under -race this checks the ring's memory ordering
// in Go's model: the descriptors, ring entries and buffer contents are
// plain accesses on both sides, ordered only by the atomic idx words, so a
// missing or misplaced release/acquire shows as a data race.
func TestConcurrentDevice(t *testing.T) {
	for _, events := range []bool{false, true} {
		name := "flags"
		if events {
			name = "eventidx"
		}
		t.Run(name, func(t *testing.T) {
			e := mmioEnv(t, FVersion1|FEventIdx, 64)
			want := uint64(0)
			if events {
				want = FEventIdx
			}
			const size = 8
			q := e.start(want, size)[0]
			_, bufPhys := e.r.alloc(size*16, 16)
			buf := func(d uint16) (uint64, []byte) {
				o := bufPhys - e.r.phys + 16*uint64(d)
				return bufPhys + 16*uint64(d), e.r.mem[o : o+16]
			}
			const total = 20000
			var wg sync.WaitGroup
			done := make(chan struct{})
			wg.Add(1)
			go func() { // the device: each chain is one 8-byte out buffer and one 8-byte in buffer
				defer wg.Done()
				for {
					h, segs, ok := e.dev.pop(0)
					if !ok {
						select {
						case <-done:
							return
						default:
						}
						runtime.Gosched()
						continue
					}
					if len(segs) != 2 || segs[0].write || !segs[1].write {
						t.Errorf("chain %d: %+v", h, segs)
						return
					}
					in, _ := e.r.slice(segs[0].addr, 8)
					out, _ := e.r.slice(segs[1].addr, 8)
					binary.LittleEndian.PutUint64(out, binary.LittleEndian.Uint64(in)*3+1)
					e.dev.push(0, h, 8)
				}
			}()
			seq := map[uint16]uint64{}
			sent, got := 0, 0
			for got < total {
				for sent < total && q.Free() >= 2 {
					d := q.freeHead
					outAddr, outB := buf(d)
					inAddr, _ := buf(q.shadowNext(d))
					binary.LittleEndian.PutUint64(outB[:8], uint64(sent))
					h, err := q.Add([]Buffer{{outAddr, 8}, {inAddr, 8}}, 1)
					if err != OK || h != d {
						t.Fatalf("Add = %d, %v", h, err)
					}
					seq[h] = uint64(sent)
					sent++
				}
				e.d.Kick(q)
				for {
					h, n, ok := q.Next()
					if !ok {
						break
					}
					_, inB := buf(q.shadowNext(h)) // the chain's second descriptor is still linked from its head
					if v := binary.LittleEndian.Uint64(inB[:8]); n != 8 || v != seq[h]*3+1 {
						t.Fatalf("chain %d: %d bytes, %d; want %d", h, n, v, seq[h]*3+1)
					}
					delete(seq, h)
					got++
				}
				if q.Broken() {
					t.Fatal("broken")
				}
				runtime.Gosched()
			}
			close(done)
			wg.Wait()
			checkFreeList(t, q)
			t.Logf("%d chains, %d notifications", total, len(e.v.notified))
		})
	}
}
