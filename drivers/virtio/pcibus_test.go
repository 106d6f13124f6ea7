package virtio

import (
	"encoding/binary"
	"testing"
)

// barSpace is configuration space whose functions' BARs behave as a
// device's do: the size bits read back as zero, an all-ones write reads
// back the size mask; and whose MSI-X Message Control may be written.
// BARs may be written only with memory decoding off.
type barSpace struct {
	*pciSpace
	sizes map[uint16][6]uint64 // per function: each BAR's size (a 64-bit BAR's in its low slot)
	msix  uint16               // the MSI-X capability's offset
}

func (s *barSpace) write(off uintptr, size int, x uint64) {
	bdf, reg := uint16(off>>12), off&0xfff
	f := s.fns[bdf]
	switch {
	case f != nil && reg >= cfgBAR0 && reg < cfgBAR0+24 && size == 4:
		if binary.LittleEndian.Uint16(f[cfgCommand:])&cmdMemory != 0 {
			s.t.Errorf("%#x: BAR %#x written with memory decoding on", bdf, reg)
		}
		i := (reg - cfgBAR0) / 4
		sz, high := s.sizes[bdf][i], false
		if sz == 0 && i > 0 && binary.LittleEndian.Uint32(f[reg-4:])&6 == 4 {
			sz, high = s.sizes[bdf][i-1], true // the high half of a 64-bit BAR
		}
		mask := ^(sz - 1)
		old := binary.LittleEndian.Uint32(f[reg:])
		v := uint32(x) & uint32(mask) &^ 0xf
		if high {
			v = uint32(x) & uint32(mask>>32)
		} else {
			v |= old & 0xf
		}
		if sz == 0 {
			v = 0
		}
		binary.LittleEndian.PutUint32(f[reg:], v)
	case f != nil && s.msix != 0 && reg == uintptr(s.msix)+2 && size == 2:
		binary.LittleEndian.PutUint16(f[reg:], uint16(x))
	default:
		s.pciSpace.write(off, size, x)
	}
}

// msixTable is an MSI-X table of n entries, each 4 dwords.
type msixTable struct {
	t *testing.T
	e [][4]uint32
}

func (m *msixTable) read(off uintptr, size int) uint64 { return uint64(m.e[off/16][off%16/4]) }
func (m *msixTable) write(off uintptr, size int, x uint64) {
	if size != 4 || off%4 != 0 {
		m.t.Errorf("MSI-X table: %d-byte write at %#x", size, off)
	}
	m.e[off/16][off%16/4] = uint32(x)
}

// vectorCommon is the common configuration with queue_msix_vector: a
// vector below entries is kept, any other reads back NoVector.
type vectorCommon struct {
	pciCommon
	entries uint16
	vectors map[uint16]uint16
}

func (c *vectorCommon) read(off uintptr, size int) uint64 {
	if off == pciQueueMSIXVector {
		if v, ok := c.vectors[c.v.sel]; ok {
			return uint64(v)
		}
		return NoVector
	}
	return c.pciCommon.read(off, size)
}

func (c *vectorCommon) write(off uintptr, size int, x uint64) {
	if off == pciQueueMSIXVector {
		c.v.queueWrite("vector")
		if uint16(x) >= c.entries {
			x = NoVector
		}
		c.vectors[c.v.sel] = uint16(x)
		return
	}
	c.pciCommon.write(off, size, x)
}

// TestPCIBusAssignMSIX: a function whose BARs nobody assigned (QEMU
// microvm, pcie=on, no firmware) beside one whose BAR already sits in
// the window. Open places the BARs after it, aligned, opens the device,
// points MSI-X entry 0 at the message and enables MSI-X; each queue gets
// vector 0.
func TestPCIBusAssignMSIX(t *testing.T) {
	e := newEnv(t, FVersion1, []uint16{8, 8})
	sp := &barSpace{pciSpace: newPCISpace(t), sizes: map[uint16][6]uint64{}, msix: 0x40}
	fn := BDF(0, pciDev, 0)
	f := sp.fn(fn)
	buildVirtioFn(f, 0x1041, standardCaps)
	binary.LittleEndian.PutUint32(f[cfgBAR0:], 1) // an I/O BAR: left alone
	binary.LittleEndian.PutUint32(f[cfgBAR0+4:], 0)
	binary.LittleEndian.PutUint32(f[cfgBAR0+16:], 0xc)
	binary.LittleEndian.PutUint32(f[cfgBAR0+20:], 0)
	binary.LittleEndian.PutUint16(f[0x42:], 3)     // MSI-X: 4 entries, off
	binary.LittleEndian.PutUint32(f[0x44:], 1)     // the table in BAR 1 at 0
	binary.LittleEndian.PutUint32(f[0x48:], 0x801) // the PBA after it
	sp.sizes[fn] = [6]uint64{0x20, 0x1000, 0, 0, 0x4000, 0}
	other := BDF(0, 1, 0)
	g := sp.fn(other)
	binary.LittleEndian.PutUint16(g[0:], 0x1b36)
	binary.LittleEndian.PutUint32(g[cfgBAR0:], 0xc0000000)
	sp.sizes[other] = [6]uint64{0x10000}
	e.b.add(ecamBase, 1<<20, sp)

	const win, bar1, bar4 = 0xc0000000, 0xc0010000, 0xc0014000
	tbl := &msixTable{t: t, e: make([][4]uint32, 4)}
	for i := range tbl.e {
		tbl.e[i][3] = 1
	}
	common := &vectorCommon{pciCommon: pciCommon{v: e.v}, entries: 4, vectors: map[uint16]uint16{}}
	e.b.add(physOff+bar1, 0x100, tbl)
	e.b.add(physOff+bar4, 0x1000, common)
	e.b.add(physOff+bar4+0x1000, 0x1000, &pciISR{v: e.v})
	e.b.add(physOff+bar4+0x3000, 0x1000, &pciNotify{v: e.v, mul: notifyMul})

	pb := PCIBus{Config: PCIConfig{ECAM: ecamBase}, PhysOff: physOff, Limit: 4 << 30,
		Window: NewWindow(win, 0x20000000), MSIAddr: 0xfee01000, MSIData: 0x4f}
	pb.Reserve()
	d, line, err := pb.Open(fn)
	if err != OK || line != 0 {
		t.Fatalf("Open: %v, line %d", err, line)
	}
	if got := binary.LittleEndian.Uint32(f[cfgBAR0+4:]); got != bar1 {
		t.Errorf("BAR 1 = %#x, want %#x", got, bar1)
	}
	if lo, hi := binary.LittleEndian.Uint32(f[cfgBAR0+16:]), binary.LittleEndian.Uint32(f[cfgBAR0+20:]); lo != bar4|0xc || hi != 0 {
		t.Errorf("BAR 4 = %#x:%#x, want %#x", hi, lo, bar4|0xc)
	}
	if got := binary.LittleEndian.Uint32(f[cfgBAR0:]); got != 1 {
		t.Errorf("the I/O BAR changed: %#x", got)
	}
	if got := binary.LittleEndian.Uint32(g[cfgBAR0:]); got != win {
		t.Errorf("the other function's BAR changed: %#x", got)
	}
	if tbl.e[0] != [4]uint32{0xfee01000, 0, 0x4f, 0} || tbl.e[1][3] != 1 {
		t.Errorf("MSI-X table %#x", tbl.e)
	}
	if ctl := binary.LittleEndian.Uint16(f[0x42:]); ctl&msixEnable == 0 || ctl&msixFuncMask != 0 {
		t.Errorf("MSI-X control %#x", ctl)
	}
	if cmd := binary.LittleEndian.Uint16(f[cfgCommand:]); cmd&(cmdMemory|cmdBusMaster) != cmdMemory|cmdBusMaster {
		t.Errorf("command %#x", cmd)
	}
	e.d = d
	e.start(FVersion1, 8, 8)
	if common.vectors[0] != 0 || common.vectors[1] != 0 {
		t.Errorf("queue vectors %v, want 0 each", common.vectors)
	}

	// A device with fewer table entries than the vector: refused.
	common.entries = 0
	if _, err := d.Negotiate(FVersion1); err != OK {
		t.Fatal(err)
	}
	q := new(Queue)
	virt, phys := e.r.alloc(uint64(QueueBytes(8)), 4096)
	q.Init(0, 8, virt, phys, false)
	if err := d.SetupQueue(q); err != ErrMSIXVector {
		t.Errorf("SetupQueue with the vector refused: %v, want ErrMSIXVector", err)
	}
}

// sink is registers that read 0 and take any write.
type sink struct{}

func (sink) read(off uintptr, size int) uint64     { return 0 }
func (sink) write(off uintptr, size int, x uint64) {}

// TestPCIBusRefusals: what Open refuses, and the window's bounds.
func TestPCIBusRefusals(t *testing.T) {
	setup := func(t *testing.T) (*barSpace, *[4096]byte, PCIBus) {
		b := newBus(t)
		sp := &barSpace{pciSpace: newPCISpace(t), sizes: map[uint16][6]uint64{}, msix: 0x40}
		f := sp.fn(BDF(0, pciDev, 0))
		buildVirtioFn(f, 0x1041, standardCaps)
		sp.sizes[BDF(0, pciDev, 0)] = [6]uint64{0, 0x1000, 0, 0, 0x4000, 0}
		b.add(ecamBase, 1<<20, sp)
		b.add(physOff+bar1Addr, 0x100, &msixTable{t: t, e: make([][4]uint32, 4)})
		b.add(physOff+bar4Addr, 0x4000, sink{}) // a reset after a refusal writes the status

		return sp, f, PCIBus{Config: PCIConfig{ECAM: ecamBase}, PhysOff: physOff, Limit: 1 << 40}
	}
	t.Run("above the limit, no window", func(t *testing.T) {
		_, _, pb := setup(t)
		pb.Limit = 4 << 30
		if _, _, err := pb.Open(BDF(0, pciDev, 0)); err != ErrBARLimit {
			t.Errorf("Open = %v, want ErrBARLimit", err)
		}
	})
	t.Run("window too small", func(t *testing.T) {
		_, _, pb := setup(t)
		pb.Limit, pb.Window = 4<<30, NewWindow(0xc0000000, 0x2000)
		if _, _, err := pb.Open(BDF(0, pciDev, 0)); err != ErrBARWindow {
			t.Errorf("Open = %v, want ErrBARWindow", err)
		}
	})
	t.Run("no interrupt line", func(t *testing.T) {
		_, _, pb := setup(t)
		if _, _, err := pb.Open(BDF(0, pciDev, 0)); err != ErrNoIRQ {
			t.Errorf("Open = %v, want ErrNoIRQ", err)
		}
	})
	t.Run("INTx line", func(t *testing.T) {
		_, f, pb := setup(t)
		f[cfgIntLine] = 11
		if _, line, err := pb.Open(BDF(0, pciDev, 0)); err != OK || line != 11 {
			t.Errorf("Open = line %d, %v; want 11", line, err)
		}
	})
	t.Run("above the limit, moved into the window", func(t *testing.T) {
		// Cloud Hypervisor places 64-bit BARs above 4 GiB: BAR 4 moves
		// into the 32-bit window, its high half cleared; BAR 1, below
		// the limit, stays.
		_, f, pb := setup(t)
		f[cfgIntLine] = 11
		pb.Limit, pb.Window = 4<<30, NewWindow(0xc0000000, 0x20000000)
		d, _, err := pb.Open(BDF(0, pciDev, 0))
		lo, hi := binary.LittleEndian.Uint32(f[cfgBAR0+16:]), binary.LittleEndian.Uint32(f[cfgBAR0+20:])
		if err != OK || lo != 0xc000000c || hi != 0 || binary.LittleEndian.Uint32(f[cfgBAR0+4:]) != bar1Addr {
			t.Errorf("Open = %v; BAR 4 %#x:%#x, BAR 1 %#x", err, hi, lo, binary.LittleEndian.Uint32(f[cfgBAR0+4:]))
		}
		if d.regs != 0xc0000000+physOff {
			t.Errorf("common configuration at %#x, want the moved BAR's", d.regs)
		}
	})
	t.Run("no MSI-X", func(t *testing.T) {
		_, f, pb := setup(t)
		f[0x40] = 0x05 // MSI, not MSI-X
		pb.MSIAddr = 0xfee00000
		if _, _, err := pb.Open(BDF(0, pciDev, 0)); err != ErrNoMSIX {
			t.Errorf("Open = %v, want ErrNoMSIX", err)
		}
	})
	w := NewWindow(0x1000, 0x3000)
	if a, ok := w.take(0x800); !ok || a != 0x1000 {
		t.Errorf("take 0x800 = %#x %v", a, ok)
	}
	if a, ok := w.take(0x1000); !ok || a != 0x2000 {
		t.Errorf("take 0x1000 = %#x %v, want 0x2000 (aligned)", a, ok)
	}
	if _, ok := w.take(0x2000); ok {
		t.Errorf("take 0x2000 past the end succeeded")
	}
}
