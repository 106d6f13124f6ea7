package nvme

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// The model: guest RAM the driver reaches at its address and the
// controller at a made-up physical one, and an NVMe controller behind
// the package's register accessors — CAP, VS, CC, CSTS, AQA/ASQ/ACQ and
// the doorbells — that fetches submission entries when a tail doorbell
// is written, runs admin and NVM commands against a byte slice, walks
// the PRP entries as §4.3 says (and records their shapes), and posts
// completion entries with the phase bit, asserting its pin-based
// interrupt while a completion queue holds entries. Knobs make it hold
// commands (many in flight), drop some (timeouts), answer with an error
// status, ignore aborts, lose interrupts or report a fatal status.

const (
	ramPhys  = 0x2_0000_0000
	regsBase = 0xfebf_0000
)

type ram struct {
	buf   []uint64
	mem   []byte
	virt  uintptr
	pages []uint64 // free pages, physical, in a shuffled order
	mu    sync.Mutex
}

func newRAM(size int, seed int64) *ram {
	buf := make([]uint64, size/8)
	r := &ram{buf: buf, mem: unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), size), virt: uintptr(unsafe.Pointer(&buf[0]))}
	for p := 0; p < size/pageSize; p++ {
		r.pages = append(r.pages, ramPhys+uint64(p)*pageSize)
	}
	// Pages handed out in a shuffled order: a slot's bounce pages are not
	// contiguous, as a machine's free frames need not be.
	rand.New(rand.NewSource(seed)).Shuffle(len(r.pages), func(i, j int) { r.pages[i], r.pages[j] = r.pages[j], r.pages[i] })
	return r
}

// Page is the driver's Mem.
func (r *ram) Page() (uintptr, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pages) == 0 {
		return 0, 0
	}
	p := r.pages[len(r.pages)-1]
	r.pages = r.pages[:len(r.pages)-1]
	return r.virtOf(p), p
}

// contiguous takes n physically contiguous pages from the top of RAM
// (tests' buffers for RWPhys): they must still be free.
func (r *ram) contiguous(n int) (uintptr, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	top := ramPhys + uint64(len(r.mem)) - uint64(n)*pageSize
	kept := r.pages[:0]
	for _, p := range r.pages {
		if p < top {
			kept = append(kept, p)
		}
	}
	if len(r.pages)-len(kept) != n {
		panic("contiguous pages already handed out")
	}
	r.pages = kept
	return r.virtOf(top), top
}

func (r *ram) virtOf(phys uint64) uintptr { return r.virt + uintptr(phys-ramPhys) }

// at is the device's view of [phys, phys+n).
func (r *ram) at(phys uint64, n int) []byte {
	if phys < ramPhys || phys-ramPhys+uint64(n) > uint64(len(r.mem)) {
		panic(fmt.Sprintf("model: DMA at %#x+%d outside RAM", phys, n))
	}
	o := phys - ramPhys
	return r.mem[o : o+uint64(n)]
}

func (r *ram) word(phys uint64) *uint32 { return (*uint32)(unsafe.Pointer(&r.at(phys, 4)[0])) }

type sqm struct {
	base                uint64
	entries, head, tail uint16
	cqid                uint16
	live                bool
}

type cqm struct {
	base                uint64
	entries, head, tail uint16
	phase               uint32
	ien, live           bool
}

type pending struct {
	sqid uint16
	cmd  [16]uint32
}

type model struct {
	mu   sync.Mutex
	t    *testing.T
	r    *ram
	capv uint64
	cc   uint32
	csts uint32
	aqa  uint32
	asq  uint64
	acq  uint64
	sq   [MaxQueues + 2]sqm
	cq   [MaxQueues + 2]cqm

	disk      []byte
	lbads     uint8 // the namespace's block size, log2
	nsze      uint64
	inactive2 bool // namespace 2 exists, inactive (Identify returns zeros)

	// Knobs.
	mdts        uint8
	vwc         bool
	oncs        uint16
	grant       int  // queue pairs granted (0: as many as asked)
	readyAfter  int  // CSTS reads before RDY follows CC.EN (-1: never)
	hold        bool // I/O commands wait in held until released
	noIRQ       bool // completions do not assert the interrupt
	ignoreAbort bool
	fatalAt     int               // CSTS.CFS sets when this many commands are dropped
	rdyLinger   int               // CSTS reads after CC.EN clears before RDY follows
	dropLBA     map[uint64]bool   // I/O commands at these LBAs never complete on their own
	errLBA      map[uint64]uint32 // and these complete with this status (SCT<<8|SC)

	// What it saw.
	outstanding [MaxQueues + 2][65536]bool // command identifiers in flight, per SQ
	held        []pending
	dropped     []pending
	inFlight    int
	maxInFlight int
	shapes      map[string]int
	flushes     int
	dsm         int
	aborts      int
	ccWrites    []uint32
	setupOrder  []string
	wantQueues  int
	readyWait   int
	stray       int
}

func newModel(t *testing.T, r *ram, sectors int) *model {
	m := &model{t: t, r: r, lbads: 9, mdts: 5, vwc: true, oncs: 1 << 2,
		dropLBA: map[uint64]bool{}, errLBA: map[uint64]uint32{}, shapes: map[string]int{}}
	// MQES 1023, CQR, TO 20 (10 s), DSTRD 1 (8-byte stride), CSS NVM, MPSMIN 0.
	m.capv = 1023 | 1<<16 | 20<<24 | 1<<32 | 1<<37
	m.disk = make([]byte, sectors*512)
	m.nsze = uint64(sectors*512) >> m.lbads
	// Firmware left it enabled: Open must reset it first.
	m.cc, m.csts = ccEnable, cstsRDY
	return m
}

func (m *model) stride() uint64 { return 4 << (m.capv >> 32 & 0xf) }

func (m *model) read(off uintptr) uint32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch off {
	case regCAP:
		return uint32(m.capv)
	case regCAP + 4:
		return uint32(m.capv >> 32)
	case regVS:
		return 0x10400
	case regCC:
		return m.cc
	case regCSTS:
		if m.cc&ccEnable == 0 && m.rdyLinger > 0 {
			if m.rdyLinger--; m.rdyLinger == 0 {
				m.csts &^= cstsRDY
			}
		}
		if m.cc&ccEnable != 0 && m.csts&cstsRDY == 0 && m.readyAfter >= 0 {
			if m.readyWait++; m.readyWait > m.readyAfter {
				m.csts |= cstsRDY
			}
		}
		return m.csts
	case regAQA:
		return m.aqa
	}
	m.t.Errorf("model: read of register %#x", off)
	return 0
}

func (m *model) write(off uintptr, v uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch off {
	case regCC:
		m.ccWrites = append(m.ccWrites, v)
		was := m.cc
		m.cc = v
		if v&ccEnable == 0 {
			if m.rdyLinger == 0 {
				m.csts &^= cstsRDY
			}
			m.sq, m.cq = [MaxQueues + 2]sqm{}, [MaxQueues + 2]cqm{}
			m.held, m.dropped, m.inFlight = nil, nil, 0
			m.outstanding = [MaxQueues + 2][65536]bool{}
		} else if was&ccEnable == 0 {
			m.setupOrder = append(m.setupOrder, "enable")
			if v != ccIOCQES|ccIOSQES|ccEnable {
				m.t.Errorf("model: CC %#x", v)
			}
			m.readyWait = 0
			m.sq[0] = sqm{base: m.asq, entries: uint16(m.aqa&0xfff) + 1, live: true}
			m.cq[0] = cqm{base: m.acq, entries: uint16(m.aqa>>16&0xfff) + 1, phase: 1, ien: true, live: true}
		}
		return
	case regAQA:
		m.setupOrder = append(m.setupOrder, "aqa")
		m.aqa = v
		return
	case regASQ, regASQ + 4, regACQ, regACQ + 4:
		p := &m.asq
		if off >= regACQ {
			p = &m.acq
		}
		if off&4 == 0 {
			*p = *p&^0xffffffff | uint64(v)
			m.setupOrder = append(m.setupOrder, map[uintptr]string{regASQ: "asq", regACQ: "acq"}[off])
		} else {
			*p = *p&0xffffffff | uint64(v)<<32
		}
		return
	case regINTMS, regINTMC:
		return
	}
	if off < regDB || uint64(off-regDB)%m.stride() != 0 {
		m.t.Errorf("model: write of %#x to %#x", v, off)
		return
	}
	k := uint64(off-regDB) / m.stride()
	if m.cc&ccEnable == 0 || m.csts&cstsCFS != 0 {
		return // a disabled or dead controller ignores its doorbells
	}
	if k%2 == 1 {
		cq := &m.cq[k/2]
		if !cq.live || uint16(v) >= cq.entries {
			m.t.Errorf("model: CQ %d head doorbell %d", k/2, v)
			return
		}
		cq.head = uint16(v)
		return
	}
	sq := &m.sq[k/2]
	if !sq.live || uint16(v) >= sq.entries {
		m.t.Errorf("model: SQ %d tail doorbell %d", k/2, v)
		return
	}
	sq.tail = uint16(v)
	for sq.head != sq.tail {
		var p pending
		p.sqid = uint16(k / 2)
		for i := range p.cmd {
			p.cmd[i] = binary.LittleEndian.Uint32(m.r.at(sq.base+uint64(sq.head)*64+uint64(4*i), 4))
		}
		sq.head = (sq.head + 1) % sq.entries
		if m.outstanding[p.sqid][p.cmd[0]>>16] {
			m.t.Errorf("model: SQ %d: command identifier %d sent again while in flight", p.sqid, p.cmd[0]>>16)
		}
		m.outstanding[p.sqid][p.cmd[0]>>16] = true
		m.inFlight++
		m.maxInFlight = max(m.maxInFlight, m.inFlight)
		if p.sqid == 0 {
			m.admin(p)
			continue
		}
		lba := uint64(p.cmd[10]) | uint64(p.cmd[11])<<32
		switch {
		case m.dropLBA[lba] && p.cmd[0]&0xff != OpFlush:
			m.dropped = append(m.dropped, p)
			if len(m.dropped) == m.fatalAt {
				m.csts |= cstsCFS
			}
		case m.hold:
			m.held = append(m.held, p)
		default:
			m.nvm(p)
		}
	}
}

// post puts a completion for p on its queue's completion queue.
func (m *model) post(p pending, status, dw0 uint32) {
	m.inFlight--
	m.outstanding[p.sqid][p.cmd[0]>>16] = false
	sq := &m.sq[p.sqid]
	cq := &m.cq[sq.cqid]
	if !cq.live {
		m.t.Errorf("model: completion for SQ %d with no CQ", p.sqid)
		return
	}
	if (cq.tail+1)%cq.entries == cq.head {
		m.t.Errorf("model: CQ %d overflows", sq.cqid)
		return
	}
	e := cq.base + uint64(cq.tail)*16
	atomic.StoreUint32(m.r.word(e), dw0)
	atomic.StoreUint32(m.r.word(e+4), 0)
	atomic.StoreUint32(m.r.word(e+8), uint32(sq.head)|uint32(p.sqid)<<16)
	atomic.StoreUint32(m.r.word(e+12), p.cmd[0]>>16|cq.phase<<16|status<<17)
	if cq.tail = (cq.tail + 1) % cq.entries; cq.tail == 0 {
		cq.phase ^= 1
	}
}

// irq reports whether the pin-based interrupt is asserted.
func (m *model) irq() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.noIRQ {
		return false
	}
	for _, cq := range m.cq {
		if cq.live && cq.ien && cq.head != cq.tail {
			return true
		}
	}
	return false
}

// release completes one held command, picked by rng; false if none.
func (m *model) release(rng *rand.Rand) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.held) == 0 {
		return false
	}
	i := rng.Intn(len(m.held))
	p := m.held[i]
	m.held = append(m.held[:i], m.held[i+1:]...)
	m.nvm(p)
	return true
}

// fatal sets CSTS.CFS: the controller stops.
func (m *model) fatal() {
	m.mu.Lock()
	m.csts |= cstsCFS
	m.mu.Unlock()
}

func (m *model) admin(p pending) {
	c := p.cmd
	prp1 := uint64(c[6]) | uint64(c[7])<<32
	qid, size := uint16(c[10]), uint16(c[10]>>16)+1
	switch c[0] & 0xff {
	case opIdentify:
		buf := m.r.at(prp1, pageSize)
		clear(buf)
		switch {
		case c[10] == cnsController:
			copy(buf[4:24], "YOLK0001            ")
			copy(buf[24:64], "yolk model controller                   ")
			copy(buf[64:72], "1.0     ")
			buf[77] = m.mdts
			binary.LittleEndian.PutUint32(buf[516:], 2)
			binary.LittleEndian.PutUint16(buf[520:], m.oncs)
			if m.vwc {
				buf[525] = 1
			}
		case c[10] == cnsNamespace && c[1] == 1:
			binary.LittleEndian.PutUint64(buf[0:], m.nsze)
			binary.LittleEndian.PutUint64(buf[8:], m.nsze)
			buf[25] = 1 // two formats
			binary.LittleEndian.PutUint32(buf[128:], 9<<16)
			binary.LittleEndian.PutUint32(buf[132:], 12<<16)
			if m.lbads == 12 {
				buf[26] = 1
			}
		}
		m.post(p, 0, 0)
	case opSetFeatures:
		if c[10]&0xff != featNumQueues {
			m.post(p, 2, 0) // invalid field
			return
		}
		m.wantQueues = int(c[11]&0xffff) + 1
		g := m.wantQueues
		if m.grant != 0 {
			g = m.grant
		}
		m.post(p, 0, uint32(g-1)|uint32(g-1)<<16)
	case opCreateCQ:
		if qid == 0 || int(qid) > MaxQueues || m.cq[qid].live || c[11]&1 == 0 {
			m.post(p, 0x101, 0) // invalid queue identifier
			return
		}
		m.cq[qid] = cqm{base: prp1, entries: size, phase: 1, ien: c[11]&2 != 0, live: true}
		m.post(p, 0, 0)
	case opCreateSQ:
		cqid := uint16(c[11] >> 16)
		if qid == 0 || int(qid) > MaxQueues || m.sq[qid].live || !m.cq[cqid].live || c[11]&1 == 0 {
			m.post(p, 0x101, 0)
			return
		}
		m.sq[qid] = sqm{base: prp1, entries: size, cqid: cqid, live: true}
		m.post(p, 0, 0)
	case opDeleteCQ:
		m.cq[qid].live = false
		m.post(p, 0, 0)
	case opAbort:
		m.aborts++
		sqid, cid := uint16(c[10]), c[10]>>16
		for i, d := range m.dropped {
			if d.sqid == sqid && d.cmd[0]>>16 == cid && !m.ignoreAbort {
				m.dropped = append(m.dropped[:i], m.dropped[i+1:]...)
				m.post(d, scAbortRequest, 0)
				m.post(p, 0, 0)
				return
			}
		}
		m.post(p, 0, 1) // not aborted
	default:
		m.post(p, scInvalidOp, 0)
	}
}

// nvm runs an I/O command.
func (m *model) nvm(p pending) {
	c := p.cmd
	bs := uint64(1) << m.lbads
	lba := uint64(c[10]) | uint64(c[11])<<32
	if st, ok := m.errLBA[lba]; ok {
		m.post(p, st, 0)
		return
	}
	if c[1] != 1 {
		m.post(p, 0x0b, 0) // invalid namespace
		return
	}
	switch c[0] & 0xff {
	case OpFlush:
		m.flushes++
		m.post(p, 0, 0)
	case OpRead, OpWrite:
		nlb := uint64(c[12]&0xffff) + 1
		if lba+nlb > m.nsze {
			m.post(p, scLBARange, 0)
			return
		}
		n := int(nlb * bs)
		if m.mdts != 0 && n > pageSize<<m.mdts {
			m.t.Errorf("model: %d bytes over MDTS", n)
		}
		segs := m.prp(uint64(c[6])|uint64(c[7])<<32, uint64(c[8])|uint64(c[9])<<32, n)
		d := m.disk[lba*bs:]
		for _, s := range segs {
			if c[0]&0xff == OpRead {
				copy(m.r.at(s[0], int(s[1])), d)
			} else {
				copy(d, m.r.at(s[0], int(s[1])))
			}
			d = d[s[1]:]
		}
		m.post(p, 0, 0)
	case OpDSM:
		m.dsm++
		r := m.r.at(uint64(c[6])|uint64(c[7])<<32, 16*int(c[10]&0xff+1))
		for len(r) > 0 {
			n, s := binary.LittleEndian.Uint32(r[4:]), binary.LittleEndian.Uint64(r[8:])
			if c[11]&4 != 0 {
				clear(m.disk[s*bs : (s+uint64(n))*bs])
			}
			r = r[16:]
		}
		m.post(p, 0, 0)
	default:
		m.post(p, scInvalidOp, 0)
	}
}

// prp walks a command's PRP entries for n bytes (§4.3) and returns the
// segments (physical address, length), recording the shape.
func (m *model) prp(prp1, prp2 uint64, n int) [][2]uint64 {
	if prp1&3 != 0 {
		m.t.Errorf("model: PRP1 %#x not dword aligned", prp1)
	}
	first := min(uint64(n), pageSize-prp1%pageSize)
	segs := [][2]uint64{{prp1, first}}
	rest := uint64(n) - first
	shape := "1 page"
	switch {
	case rest == 0:
	case rest <= pageSize:
		shape = "2 pages"
		if prp2%pageSize != 0 {
			m.t.Errorf("model: PRP2 %#x not page aligned", prp2)
		}
		segs = append(segs, [2]uint64{prp2, rest})
	default:
		shape = "list"
		if prp2&7 != 0 {
			m.t.Errorf("model: PRP list %#x not qword aligned", prp2)
		}
		for e := prp2; rest > 0; e += 8 {
			if e%pageSize == pageSize-8 && rest > pageSize {
				e = binary.LittleEndian.Uint64(m.r.at(e, 8)) - 8 // the last entry chains to the next list page
				continue
			}
			a := binary.LittleEndian.Uint64(m.r.at(e, 8))
			if a%pageSize != 0 {
				m.t.Errorf("model: PRP list entry %#x not page aligned", a)
			}
			l := min(rest, pageSize)
			segs = append(segs, [2]uint64{a, l})
			rest -= l
		}
	}
	if prp1%pageSize != 0 {
		shape += ", unaligned"
	}
	m.shapes[shape]++
	return segs
}

// bus routes the package's register accessors to the model while a test
// runs.
func attach(t *testing.T, m *model) {
	r32, w32 := read32, write32
	read32 = func(a uintptr) uint32 { return m.read(regOff(t, a)) }
	write32 = func(a uintptr, v uint32) { m.write(regOff(t, a), v) }
	t.Cleanup(func() { read32, write32 = r32, w32 })
}

func regOff(t *testing.T, a uintptr) uintptr {
	if a < regsBase || a >= regsBase+RegsSize || a%4 != 0 {
		t.Fatalf("register access at %#x", a)
	}
	return a - regsBase
}
