//go:build !arm64

package gic

import (
	"fmt"
	"testing"
)

// model is a GIC's registers as far as the driver can observe them: plain
// registers, write-1-to-set/clear enables, a distributor CTLR that reports
// a pending write for a few reads after each write, a banked ITARGETSR0,
// per-frame GICR_TYPER and a GICR_WAKER that takes a few reads to wake.
type model struct {
	t        *testing.T
	r32      map[uintptr]uint32
	r64      map[uintptr]uint64
	enabled  map[uint32]bool // enable bits, by ISENABLER address*32+bit (the driver only writes them)
	log      []string
	rwp      int // reads of GICD_CTLR that still show RWP
	rwpReads int
	wakeIn   int // reads of GICR_WAKER after ProcessorSleep clears before ChildrenAsleep does
	iar      []uint32
	eoir     []uint32
}

const (
	distBase   = 0x08000000
	cpuBase    = 0x08010000
	redistBase = 0x080A0000
)

func newModel(t *testing.T) *model {
	m := &model{t: t, r32: map[uintptr]uint32{}, r64: map[uintptr]uint64{}, enabled: map[uint32]bool{}}
	read32, write32, read64, write64 = m.read32, m.write32, m.read64, m.write64
	sys.mpidr, sys.sre, sys.pmr, sys.bpr1, sys.ctlr, sys.igrpen1 = 0, 0, 0, 0, 0, 0
	sys.sreLocked, sys.iar, sys.eoir, sys.sgi1r = false, nil, nil, nil
	version, lines = 0, 0
	return m
}

func isEnableReg(off uintptr) (set bool, ok bool) {
	switch {
	case off >= gicdISENABLER && off < gicdISENABLER+0x80:
		return true, true
	case off >= gicdICENABLER && off < gicdICENABLER+0x80:
		return false, true
	}
	return false, false
}

// frame splits an address into the register frame it is in and the offset.
func frame(a uintptr) (uintptr, uintptr) {
	switch {
	case a >= redistBase:
		f := redistBase + (a-redistBase)&^0xFFFF
		return f, a - f
	case a >= cpuBase:
		return cpuBase, a - cpuBase
	}
	return distBase, a - distBase
}

func (m *model) read32(a uintptr) uint32 {
	f, off := frame(a)
	if f == distBase && off == gicdCTLR {
		m.rwpReads++
		if m.rwp > 0 {
			m.rwp--
			return m.r32[a] | gicdCTLRRWP
		}
	}
	if f == cpuBase && off == giccIAR {
		if len(m.iar) == 0 {
			return Spurious
		}
		v := m.iar[0]
		m.iar = m.iar[1:]
		return v
	}
	if f >= redistBase && off == gicrWAKER && m.r32[a]&gicrWAKERSleep == 0 && m.r32[a]&gicrWAKERChildSleep != 0 {
		if m.wakeIn == 0 {
			m.r32[a] &^= gicrWAKERChildSleep
		} else {
			m.wakeIn--
		}
	}
	return m.r32[a]
}

func (m *model) write32(a uintptr, v uint32) {
	f, off := frame(a)
	m.log = append(m.log, fmt.Sprintf("%#x=%#x", a, v))
	if f == distBase && off == gicdCTLR {
		m.rwp = 3
	}
	if f == cpuBase && off == giccEOIR {
		m.eoir = append(m.eoir, v)
		return
	}
	if set, ok := isEnableReg(off); ok && f != cpuBase {
		base := f + off&^0x80 // the ISENABLER address for both
		for b := uint32(0); b < 32; b++ {
			if v&(1<<b) != 0 {
				m.enabled[uint32(base)*32+b] = set
			}
		}
		return
	}
	m.r32[a] = v
}

func (m *model) read64(a uintptr) uint64 { return m.r64[a] }
func (m *model) write64(a uintptr, v uint64) {
	m.r64[a] = v
	m.log = append(m.log, fmt.Sprintf("%#x=%#x", a, v))
}

func (m *model) isEnabled(frameBase uintptr, id uint32) bool {
	return m.enabled[uint32(frameBase+gicdISENABLER+uintptr(id/32*4))*32+id%32]
}

func (m *model) want32(a uintptr, want uint32) {
	m.t.Helper()
	if got := m.r32[a]; got != want {
		m.t.Errorf("register %#x = %#x, want %#x", a, got, want)
	}
}

func TestIDSpaces(t *testing.T) {
	for id, want := range map[uint32]string{0: "SGI", 15: "SGI", 16: "PPI", 27: "PPI", 31: "PPI", 32: "SPI", 1019: "SPI", 1020: "", 1023: "", 8192: ""} {
		got := ""
		switch {
		case IsSGI(id):
			got += "SGI"
		case IsPPI(id):
			got += "PPI"
		}
		if IsSPI(id) {
			got += "SPI"
		}
		if got != want {
			t.Errorf("ID %d: %q, want %q", id, got, want)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	newModel(t)
	if e := Init(Config{Version: 4, Dist: distBase, CPU: cpuBase, Redist: redistBase}); e != ErrVersion {
		t.Errorf("version 4: %v", e)
	}
	if e := Init(Config{Version: 2, Dist: distBase}); e != ErrBadConfig {
		t.Errorf("v2 without CPU interface: %v", e)
	}
	if e := Init(Config{Version: 3, Dist: distBase}); e != ErrBadConfig {
		t.Errorf("v3 without redistributors: %v", e)
	}
	if _, e := InitCPU(); e != ErrNotInit {
		t.Errorf("InitCPU before Init: %v", e)
	}
}

func TestV2(t *testing.T) {
	m := newModel(t)
	m.r32[distBase+gicdTYPER] = 2                  // ITLinesNumber 2: 96 IDs
	m.r32[distBase+gicdITARGETSR+28] = 0x04000000  // we are CPU interface 2 (the byte of ID 31)
	m.r32[distBase+gicdIPRIORITYR+28] = 0x11223344 // IDs 28-31, to see Enable keep neighbours
	if e := Init(Config{Version: 2, Dist: distBase, CPU: cpuBase}); e != OK {
		t.Fatal(e)
	}
	if Lines() != 96 || Version() != 2 {
		t.Errorf("Lines %d Version %d", Lines(), Version())
	}
	if m.log[0] != "0x8000000=0x0" || m.r32[distBase+gicdCTLR] != 1 {
		t.Errorf("distributor not disabled first and enabled last: first %s, CTLR %#x", m.log[0], m.r32[distBase+gicdCTLR])
	}
	for id := uintptr(32); id < 96; id += 4 {
		m.want32(distBase+gicdIPRIORITYR+id, 0xA0A0A0A0)
		m.want32(distBase+gicdITARGETSR+id, 0x04040404)
	}
	if _, ok := m.r32[distBase+gicdITARGETSR+96]; ok {
		t.Error("Init wrote ITARGETSR beyond the implemented lines")
	}
	m.r32[distBase+gicdIPRIORITYR+28] = 0x11223344
	c, e := InitCPU()
	if e != OK || c.Target != 4 {
		t.Fatalf("InitCPU = %+v %v", c, e)
	}
	m.want32(cpuBase+giccPMR, 0xFF)
	m.want32(cpuBase+giccCTLR, 1)
	m.r32[distBase+gicdIPRIORITYR+28] = 0x11223344

	Enable(c, 30, 0x80) // the non-secure physical timer
	m.want32(distBase+gicdIPRIORITYR+28, 0x11803344)
	if !m.isEnabled(distBase, 30) || m.isEnabled(distBase, 31) {
		t.Error("Enable(30) did not set exactly bit 30 of ISENABLER0")
	}
	Enable(c, 33, 0x40)
	m.want32(distBase+gicdIPRIORITYR+32, 0xA0A040A0)
	if !m.isEnabled(distBase, 33) {
		t.Error("SPI 33 not enabled")
	}
	Disable(c, 33)
	if m.isEnabled(distBase, 33) || !m.isEnabled(distBase, 30) {
		t.Error("Disable(33) wrong")
	}
	SetEdge(c, 33, true)
	m.want32(distBase+gicdICFGR+8, 1<<3)
	SetEdge(c, 33, false)
	m.want32(distBase+gicdICFGR+8, 0)
	Route(41, 0x02)
	m.want32(distBase+gicdITARGETSR+40, 0x04040204)

	// A uniprocessor GICv2 reads ITARGETSR as zero: target mask 1.
	m.r32[distBase+gicdITARGETSR+28] = 0
	if c, _ := InitCPU(); c.Target != 1 {
		t.Errorf("uniprocessor target %#x, want 1", c.Target)
	}

	SendSGI(0x02, 5)
	m.want32(distBase+gicdSGIR, 0x00020005)
	SendSGIOthers(1)
	m.want32(distBase+gicdSGIR, 0x01000001)

	m.iar = []uint32{3<<10 | 5, 30}
	for _, want := range []uint32{5, 30, Spurious} {
		iar := Ack()
		if ID(iar) != want {
			t.Errorf("Ack: ID %d, want %d", ID(iar), want)
		}
		if want != Spurious {
			EOI(iar)
		}
	}
	if fmt.Sprint(m.eoir) != fmt.Sprint([]uint32{3<<10 | 5, 30}) {
		t.Errorf("EOIR got %#x: the SGI's source CPU bits must be written back", m.eoir)
	}
}

func TestSGIR(t *testing.T) {
	if v := SGIR(0x81, 0x1F); v != 0x00810000|0xF {
		t.Errorf("SGIR = %#x", v)
	}
}

func TestSGI1R(t *testing.T) {
	for _, tc := range []struct {
		t    Target
		id   uint32
		want uint64
	}{
		{0, 1, 0x0000_0000_0100_0001},
		{0x103, 7, 0x0000_0000_0701_0008},           // Aff1 1, Aff0 3
		{0x12_0034_5613, 15, 0x0012_1034_0F56_0008}, // Aff3 0x12, Aff2 0x34, Aff1 0x56, Aff0 19: RS 1, bit 3
		{0xFF_00FF_FFFF, 0, 0x00FF_F0FF_00FF_8000},  // all ones: RS 15, bit 15
	} {
		if got := SGI1R(tc.t, tc.id); got != tc.want {
			t.Errorf("SGI1R(%#x, %d) = %#x, want %#x", tc.t, tc.id, got, tc.want)
		}
	}
	if a := Affinity(0x8000_0012_8034_5613); a != 0x12345613 {
		t.Errorf("Affinity = %#x (MPIDR's U/MT bits must not leak)", a)
	}
}

// v3 sets up a GICv3 model with four redistributors: CPUs 0.0.0.0,
// 0.0.0.1 (with GICv4 VLPI frames: 256 KiB), 0.0.1.0 and 1.0.0.2 (last).
func v3(t *testing.T, mpidr uint64) *model {
	m := newModel(t)
	sys.mpidr = mpidr
	m.r32[distBase+gicdTYPER] = 1
	frames := []struct {
		off  uintptr
		aff  uint64
		bits uint64
	}{{0, 0, 0}, {0x20000, 1, gicrTYPERVLPIS}, {0x60000, 0x100, 0}, {0x80000, 0x01000002, gicrTYPERLast}}
	for _, f := range frames {
		m.r64[redistBase+f.off+gicrTYPER] = f.aff<<32 | f.bits
		m.r32[redistBase+f.off+gicrWAKER] = gicrWAKERSleep | gicrWAKERChildSleep
	}
	if e := Init(Config{Version: 3, Dist: distBase, Redist: redistBase, RedistSize: 0xF60000}); e != OK {
		t.Fatal(e)
	}
	return m
}

func TestV3Init(t *testing.T) {
	m := v3(t, 0x8000_0100) // MPIDR bit 31 (RES1) set, Aff1 1
	if m.rwpReads < 4 || m.rwp != 0 {
		t.Errorf("Init read GICD_CTLR %d times, %d RWP reads left: it must wait for RWP", m.rwpReads, m.rwp)
	}
	if got := m.r32[distBase+gicdCTLR]; got != 0x13 {
		t.Errorf("GICD_CTLR = %#x, want ARE_NS|EnableGrp1A|EnableGrp1 (0x13)", got)
	}
	if Lines() != 64 {
		t.Errorf("Lines = %d", Lines())
	}
	for id := uintptr(32); id < 64; id++ {
		if got := m.r64[distBase+gicdIROUTER+id*8]; got != 0x100 {
			t.Fatalf("IROUTER%d = %#x, want the boot CPU's affinity 0x100", id, got)
		}
	}
	m.want32(distBase+gicdIGROUPR+4, 0xFFFFFFFF)
	Route(40, 0x01_0000_0002)
	if got := m.r64[distBase+gicdIROUTER+40*8]; got != 0x01_0000_0002 {
		t.Errorf("Route: IROUTER40 = %#x", got)
	}
}

func TestV3CPU(t *testing.T) {
	for _, tc := range []struct {
		mpidr uint64
		rd    uintptr
	}{{0x8000_0000, 0}, {0x8000_0001, 0x20000}, {0x8000_0100, 0x60000}, {0x01_8000_0002, 0x80000}} {
		m := v3(t, tc.mpidr)
		m.wakeIn = 2
		c, e := InitCPU()
		if e != OK {
			t.Fatalf("MPIDR %#x: %v", tc.mpidr, e)
		}
		rd := redistBase + tc.rd
		if c.rd != rd || c.Target != Target(tc.mpidr&^0x8000_0000) {
			t.Errorf("MPIDR %#x: redistributor %#x target %#x, want %#x", tc.mpidr, c.rd, c.Target, rd)
		}
		if w := m.r32[rd+gicrWAKER]; w != 0 {
			t.Errorf("GICR_WAKER = %#x after wake", w)
		}
		m.want32(rd+gicrSGIBase+gicdIGROUPR, 0xFFFFFFFF)
		m.want32(rd+gicrSGIBase+gicdIPRIORITYR+24, 0xA0A0A0A0)
		if sys.sre&1 == 0 || sys.pmr != 0xFF || sys.igrpen1 != 1 || sys.ctlr != 0 {
			t.Errorf("ICC: SRE %#x PMR %#x IGRPEN1 %d CTLR %#x", sys.sre, sys.pmr, sys.igrpen1, sys.ctlr)
		}
		Enable(c, 27, 0x40) // the virtual timer
		if !m.isEnabled(rd+gicrSGIBase, 27) || m.isEnabled(distBase, 27) {
			t.Error("a PPI must be enabled in the CPU's SGI frame, not the distributor")
		}
		m.want32(rd+gicrSGIBase+gicdIPRIORITYR+24, 0x40A0A0A0)
	}
}

func TestZeroCPUWritesNothing(t *testing.T) {
	m := v3(t, 0x8000_0000)
	m.log = nil
	Enable(CPU{}, 27, 0x40)
	Disable(CPU{}, 27)
	SetEdge(CPU{}, 27, true)
	if len(m.log) != 0 {
		t.Errorf("a PPI for a CPU InitCPU did not return wrote %v", m.log)
	}
	Enable(CPU{}, 40, 0x40) // an SPI needs no CPU
	if !m.isEnabled(distBase, 40) {
		t.Error("SPI 40 not enabled")
	}
}

func TestV3CPUErrors(t *testing.T) {
	v3(t, 0x8000_0003) // no such redistributor: the walk stops at Last
	if _, e := InitCPU(); e != ErrNoRedist {
		t.Errorf("unknown affinity: %v", e)
	}
	v3(t, 0x8000_0000)
	sys.sreLocked = true
	if _, e := InitCPU(); e != ErrSRE {
		t.Errorf("SRE locked by EL2: %v", e)
	}
	EnableSREAtEL2()
	if _, e := InitCPU(); e != OK {
		t.Errorf("after EnableSREAtEL2: %v", e)
	}
}

func TestV3AckSGI(t *testing.T) {
	v3(t, 0x8000_0000)
	sys.iar = []uint64{27, 3}
	for _, want := range []uint32{27, 3, Spurious} {
		iar := Ack()
		if ID(iar) != want {
			t.Errorf("Ack = %d, want %d", ID(iar), want)
		}
		if want != Spurious {
			EOI(iar)
		}
	}
	if fmt.Sprint(sys.eoir) != "[27 3]" {
		t.Errorf("EOIR1 writes %v", sys.eoir)
	}
	SendSGI(0x103, 7)
	SendSGIOthers(2)
	if fmt.Sprintf("%#x", sys.sgi1r) != "[0x7010008 0x10002000000]" {
		t.Errorf("SGI1R writes %#x", sys.sgi1r)
	}
}
