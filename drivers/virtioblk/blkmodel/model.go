// Package blkmodel is a virtio-blk device for hosted tests (of the driver,
// drivers/virtioblk, and of the block layer above it, kernel/blk): a
// virtio-mmio version 2 register block in plain memory (a Go array the
// driver reads and writes with the mmio package's accesses, as on
// hardware; both feature halves read the same register, so the bits
// offered are mirrored: bit 0 — BARRIER, never accepted — stands for
// VERSION_1), its configuration at 0x100, and its request queue served by
// a goroutine that finds the rings where the driver told the registers
// they are and acts on a disk image in a byte slice.
//
// Hosted tests only: it allocates, starts goroutines and may not be
// linked into an image.
package blkmodel

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"yolk/drivers/virtio"
)

// Request types and status bytes (virtio 1.1 §5.2.6).
const (
	TIn, TOut, TFlush, TDiscard, TWriteZeroes = 0, 1, 4, 11, 13
	SOK, SIOErr, SUnsupp                      = 0, 1, 2

	// QueueMax is the queue size the device offers.
	QueueMax = 64
	sector   = 512
	pageSize = 4096
)

// Device is the model. Set its knobs under Mu.
type Device struct {
	regs  [0x200 / 8]uint64
	pages [][]byte
	Disk  []byte

	Mu      sync.Mutex
	Status  func(typ uint32, sector uint64) uint8 // the status to answer with (nil: OK)
	Hold    int                                   // answer only once this many requests wait, last first
	Silent  bool                                  // take requests and answer none until it is cleared
	BadUsed bool                                  // answer the next request with an entry naming no chain
	Seen    []uint32                              // the request types, in order
	MaxWait int                                   // the most requests held at once

	lastAvail, used uint16
	stop, done      chan struct{}
	Errorf          func(format string, args ...any)
}

// New is a disk of sectors 512-byte sectors offering features (and
// VERSION_1), with the configuration's 32-bit fields set by cfg (offset →
// value). Its registers are at Base.
func New(sectors uint64, features uint32, cfg map[uint32]uint32) *Device {
	m := &Device{Disk: make([]byte, sectors*sector)}
	*m.reg(0x000) = virtio.MMIOMagic
	*m.reg(0x004) = 2
	*m.reg(0x008) = virtio.TypeBlock
	*m.reg(0x010) = features | 1
	*m.reg(0x034) = QueueMax
	*m.reg(0x100) = uint32(sectors)
	*m.reg(0x104) = uint32(sectors >> 32)
	for off, v := range cfg {
		*m.reg(0x100 + uintptr(off)) = v
	}
	return m
}

// Base is the register block's address (virtio.OpenMMIO).
func (m *Device) Base() uintptr { return uintptr(unsafe.Pointer(&m.regs[0])) }

// Page is the driver's memory (its Mem): a zeroed page whose device
// address is its CPU address.
func (m *Device) Page() (uintptr, uint64) {
	p := make([]byte, pageSize)
	m.pages = append(m.pages, p)
	a := uintptr(unsafe.Pointer(&p[0]))
	return a, uint64(a)
}

// DriverFeatures are the features the driver accepted (the low half).
func (m *Device) DriverFeatures() uint32 { return *m.reg(0x020) }

// Serve starts answering requests once the driver has set the queue up;
// interrupt is called after each answer (the driver's Interrupt). Stop
// ends it.
func (m *Device) Serve(interrupt func()) {
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go m.serve(interrupt)
}

// Stop ends Serve's goroutine.
func (m *Device) Stop() {
	close(m.stop)
	<-m.done
}

func (m *Device) reg(off uintptr) *uint32 {
	return (*uint32)(unsafe.Add(unsafe.Pointer(&m.regs[0]), off))
}

func (m *Device) reg64(off uintptr) uint64 { return uint64(*m.reg(off)) | uint64(*m.reg(off + 4))<<32 }

// at converts a device address (here the CPU's) to a pointer without the
// conversion vet flags.
func at[T any](a uint64) *T { p := uintptr(a); return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&p))) }

func mem(phys uint64, n int) []byte { return unsafe.Slice(at[byte](phys), n) }

func word(phys uint64) *uint32 { return at[uint32](phys) }

type req struct {
	head   uint16
	typ    uint32
	sector uint64
	data   [][]byte
	rng    []byte
	status []byte
}

func (m *Device) errorf(format string, args ...any) {
	if m.Errorf != nil {
		m.Errorf(format, args...)
	}
}

// pop takes the next available chain, if any.
func (m *Device) pop() (r req, ok bool) {
	desc, avail, size := m.reg64(0x080), m.reg64(0x090), uint64(*m.reg(0x038))
	if desc == 0 || size == 0 || uint16(atomic.LoadUint32(word(avail))>>16) == m.lastAvail {
		return r, false
	}
	r.head = binary.LittleEndian.Uint16(mem(avail+4+2*(uint64(m.lastAvail)%size), 2))
	m.lastAvail++
	var segs [][]byte
	for d := r.head; ; {
		e := mem(desc+16*uint64(d), 16)
		addr, l, fl, next := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint16(e[12:]), binary.LittleEndian.Uint16(e[14:])
		segs = append(segs, mem(addr, int(l)))
		if fl&1 == 0 {
			break
		}
		d = next
	}
	if len(segs) < 2 || len(segs[0]) != 16 || len(segs[len(segs)-1]) != 1 {
		m.errorf("malformed request: %d segments", len(segs))
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
func (m *Device) answer(r req, interrupt func()) {
	m.Mu.Lock()
	st := uint8(SOK)
	if m.Status != nil {
		st = m.Status(r.typ, r.sector)
	}
	bad := m.BadUsed
	m.BadUsed = false
	m.Mu.Unlock()
	written := uint32(1)
	off := r.sector * sector
	if st == SOK {
		switch r.typ {
		case TIn, TOut:
			for _, d := range r.data {
				if off+uint64(len(d)) > uint64(len(m.Disk)) {
					st = SIOErr
					break
				}
				if r.typ == TIn {
					copy(d, m.Disk[off:])
					written += uint32(len(d))
				} else {
					copy(m.Disk[off:], d)
				}
				off += uint64(len(d))
			}
		case TDiscard, TWriteZeroes:
			s, n := binary.LittleEndian.Uint64(r.rng), binary.LittleEndian.Uint32(r.rng[8:])
			clear(m.Disk[s*sector : (s+uint64(n))*sector])
		case TFlush:
		default:
			st = SUnsupp
		}
	}
	r.status[0] = st
	id := uint32(r.head)
	if bad {
		id = QueueMax + 5
	}
	used, size := m.reg64(0x0a0), uint64(*m.reg(0x038))
	e := mem(used+4+8*(uint64(m.used)%size), 8)
	binary.LittleEndian.PutUint32(e, id)
	binary.LittleEndian.PutUint32(e[4:], written)
	m.used++
	atomic.StoreUint32(word(used), uint32(m.used)<<16)
	interrupt()
}

func (m *Device) serve(interrupt func()) {
	defer close(m.done)
	var waiting, unanswered []req
	for {
		select {
		case <-m.stop:
			return
		default:
		}
		r, ok := m.pop()
		if !ok {
			time.Sleep(10 * time.Microsecond)
			continue
		}
		m.Mu.Lock()
		m.Seen = append(m.Seen, r.typ)
		silent, hold := m.Silent, m.Hold
		m.Mu.Unlock()
		if silent {
			unanswered = append(unanswered, r)
			continue
		}
		for _, u := range unanswered { // late answers first
			m.answer(u, interrupt)
		}
		unanswered = nil
		waiting = append(waiting, r)
		m.Mu.Lock()
		m.MaxWait = max(m.MaxWait, len(waiting))
		m.Mu.Unlock()
		if len(waiting) < hold {
			continue
		}
		for i := len(waiting) - 1; i >= 0; i-- {
			m.answer(waiting[i], interrupt)
		}
		waiting = waiting[:0]
	}
}
