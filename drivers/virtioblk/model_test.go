package virtioblk

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"yolk/drivers/virtio"
)

// The model: a virtio-mmio version 2 block device in plain memory (a Go
// array read and written with the mmio package's accesses, as on
// hardware; both feature halves read the same register, so the bits
// offered are mirrored: bit 0 — BARRIER, never accepted — stands for
// VERSION_1), its configuration at 0x100, and its request queue served
// by a goroutine that reads the rings the driver wrote, through the
// addresses it told the registers, and acts on a disk image in a byte
// slice. The test's Mem gives pages whose device address is their CPU
// address.

const (
	mQueueMax = 64
	mAvail    = 16 * mQueueMax
	mUsed     = mAvail + 8 + 2*mQueueMax
)

type model struct {
	t     testing.TB
	regs  [0x200 / 8]uint64
	pages [][]byte
	disk  []byte
	k     Disk[tenv]

	mu      sync.Mutex
	status  func(typ uint32, sector uint64) uint8 // the status to answer with (nil: OK)
	hold    int                                   // answer only once this many requests are waiting, last first
	silent  bool                                  // never answer
	badUsed bool                                  // answer the next request with an entry naming no chain
	seen    []uint32                              // the request types, in order
	maxWait int                                   // the most requests the device held at once

	lastAvail, used uint16
	stop            chan struct{}
	done            chan struct{}
}

type tenv struct{ m *model }

func (e tenv) Lock()   { e.m.mu.Lock() }
func (e tenv) Unlock() { e.m.mu.Unlock() }
func (e tenv) Wait(addr *uint32, val uint32, deadline int64) bool {
	for atomic.LoadUint32(addr) == val {
		if deadline != 0 && e.Now() >= deadline {
			return true
		}
		time.Sleep(20 * time.Microsecond)
	}
	return false
}
func (tenv) Wake(*uint32) {}
func (tenv) Now() int64   { return time.Now().UnixNano() }
func (tenv) Log(string)   {}
func (tenv) Note(string)  {}
func (tenv) LogDec(int64) {}
func (tenv) Copy(dst, src uintptr, n int) bool {
	copy(unsafe.Slice(at[byte](dst), n), unsafe.Slice(at[byte](src), n))
	return true
}

func (m *model) Page() (uintptr, uint64) {
	p := make([]byte, pageSize)
	m.pages = append(m.pages, p)
	a := uintptr(unsafe.Pointer(&p[0]))
	return a, uint64(a)
}

func (m *model) reg(off uintptr) *uint32 {
	return (*uint32)(unsafe.Add(unsafe.Pointer(&m.regs[0]), off))
}

// newModel opens a disk of sectors sectors offering features (and
// VERSION_1), with the configuration's fields set by cfg.
func newModel(t testing.TB, sectors uint64, features uint32, cfg map[uint32]uint32) *model {
	m := &model{t: t, disk: make([]byte, sectors*Sector), stop: make(chan struct{}), done: make(chan struct{})}
	*m.reg(0x000) = virtio.MMIOMagic
	*m.reg(0x004) = 2
	*m.reg(0x008) = virtio.TypeBlock
	*m.reg(0x010) = features | 1
	*m.reg(0x034) = mQueueMax
	*m.reg(0x100) = uint32(sectors)
	*m.reg(0x104) = uint32(sectors >> 32)
	for off, v := range cfg {
		*m.reg(0x100 + uintptr(off)) = v
	}
	dev, e := virtio.OpenMMIO(uintptr(unsafe.Pointer(&m.regs[0])))
	if e != virtio.OK {
		t.Fatalf("OpenMMIO: %v", e)
	}
	if e := Open(&m.k, tenv{m}, dev, m); e != virtio.OK {
		t.Fatalf("Open: %v", e)
	}
	copy(m.k.Name[:], "vda")
	go m.serve()
	t.Cleanup(func() { close(m.stop); <-m.done })
	return m
}

func (m *model) mem(phys uint64, n int) []byte { return unsafe.Slice(at[byte](uintptr(phys)), n) }

func (m *model) q() uint64 { return m.k.q.DescAddr() }

func (m *model) word(off uint64) *uint32 { return at[uint32](uintptr(m.q() + off)) }

type mreq struct {
	head   uint16
	typ    uint32
	sector uint64
	data   [][]byte // the data segments
	rng    []byte   // discard / write-zeroes range
	status []byte
}

// pop takes the next available chain, if any.
func (m *model) pop() (r mreq, ok bool) {
	if uint16(atomic.LoadUint32(m.word(mAvail))>>16) == m.lastAvail {
		return r, false
	}
	r.head = binary.LittleEndian.Uint16(m.mem(m.q()+mAvail+4+2*uint64(m.lastAvail%mQueueMax), 2))
	m.lastAvail++
	var segs [][]byte
	for d := r.head; ; {
		e := m.mem(m.q()+16*uint64(d), 16)
		addr, l, fl, next := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint16(e[12:]), binary.LittleEndian.Uint16(e[14:])
		segs = append(segs, m.mem(addr, int(l)))
		if fl&1 == 0 {
			break
		}
		d = next
	}
	if len(segs) < 2 || len(segs[0]) != 16 || len(segs[len(segs)-1]) != 1 {
		m.t.Errorf("malformed request: %d segments", len(segs))
		return r, false
	}
	r.typ = binary.LittleEndian.Uint32(segs[0])
	r.sector = binary.LittleEndian.Uint64(segs[0][8:])
	r.status = segs[len(segs)-1]
	r.data = segs[1 : len(segs)-1]
	if r.typ == TDiscard || r.typ == TWriteZeroes {
		r.rng, r.data = r.data[0], nil
	}
	return r, true
}

// answer carries r out and puts it on the used ring.
func (m *model) answer(r mreq) {
	m.mu.Lock()
	st := uint8(SOK)
	if m.status != nil {
		st = m.status(r.typ, r.sector)
	}
	bad := m.badUsed
	m.badUsed = false
	m.mu.Unlock()
	written := uint32(1)
	off := r.sector * Sector
	if st == SOK {
		switch r.typ {
		case TIn, TOut:
			for _, d := range r.data {
				if off+uint64(len(d)) > uint64(len(m.disk)) {
					st = SIOErr
					break
				}
				if r.typ == TIn {
					copy(d, m.disk[off:])
					written += uint32(len(d))
				} else {
					copy(m.disk[off:], d)
				}
				off += uint64(len(d))
			}
		case TDiscard, TWriteZeroes:
			s, n := binary.LittleEndian.Uint64(r.rng), binary.LittleEndian.Uint32(r.rng[8:])
			clear(m.disk[s*Sector : (s+uint64(n))*Sector])
		case TFlush:
		default:
			st = SUnsupp
		}
	}
	r.status[0] = st
	id := uint32(r.head)
	if bad {
		id = mQueueMax + 5
	}
	e := m.mem(m.q()+mUsed+4+8*uint64(m.used%mQueueMax), 8)
	binary.LittleEndian.PutUint32(e, id)
	binary.LittleEndian.PutUint32(e[4:], written)
	m.used++
	atomic.StoreUint32(m.word(mUsed), uint32(m.used)<<16)
	m.k.Interrupt()
}

func (m *model) serve() {
	defer close(m.done)
	var waiting, unanswered []mreq
	for {
		select {
		case <-m.stop:
			return
		default:
		}
		r, ok := m.pop()
		if ok {
			m.mu.Lock()
			m.seen = append(m.seen, r.typ)
			silent, hold := m.silent, m.hold
			m.mu.Unlock()
			if silent {
				unanswered = append(unanswered, r)
				continue
			}
			for _, u := range unanswered { // late answers first
				m.answer(u)
			}
			unanswered = nil
			waiting = append(waiting, r)
			m.maxWait = max(m.maxWait, len(waiting))
			if len(waiting) < hold {
				continue
			}
			for i := len(waiting) - 1; i >= 0; i-- {
				m.answer(waiting[i])
			}
			waiting = waiting[:0]
			continue
		}
		time.Sleep(10 * time.Microsecond)
	}
}
