package fdt

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// The DTBs in testdata are QEMU's own (see testdata/README), gzipped
// because QEMU pads each to 1 MiB.
func dtb(t testing.TB, name string) []byte {
	t.Helper()
	fh, err := os.Open(filepath.Join("testdata", name+".dtb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	z, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// load copies b into fresh memory that ends at an inaccessible page, so a
// read past the end faults the test, and returns its address. The memory is
// unmapped when the test ends.
func load(t testing.TB, b []byte) uintptr {
	t.Helper()
	m := guarded(t, b)
	return uintptr(unsafe.Pointer(unsafe.SliceData(m)))
}

// guarded is load's copy of b.
func guarded(t testing.TB, b []byte) []byte {
	t.Helper()
	pg := os.Getpagesize()
	size := (len(b) + pg - 1) / pg * pg
	m, err := syscall.Mmap(-1, 0, size+pg, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(m) })
	if err := syscall.Mprotect(m[size:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	start := size - len(b)
	copy(m[start:], b)
	return m[start:size:size]
}

func open(t testing.TB, b []byte) FDT {
	t.Helper()
	f, e := Open(load(t, b), uintptr(len(b)))
	if e != OK {
		t.Fatalf("Open: %v", e)
	}
	return f
}

type virtCase struct {
	name    string
	gic     int
	cpus    int
	mem     uint64
	conduit Conduit
}

// QEMU virt's fixed memory map (hw/arm/virt.c base_memmap).
var virtCases = []virtCase{
	{"virt-gicv2-smp1-128M", 2, 1, 128 << 20, ConduitHVC},
	{"virt-gicv2-smp4-1G", 2, 4, 1 << 30, ConduitHVC},
	{"virt-gicv3-smp1-512M", 3, 1, 512 << 20, ConduitHVC},
	{"virt-gicv3-smp4-6G", 3, 4, 6 << 30, ConduitHVC},
	{"virt-gicv3-el2-smp2-2G", 3, 2, 2 << 30, ConduitSMC},
}

func TestVirt(t *testing.T) {
	for _, vc := range virtCases {
		t.Run(vc.name, func(t *testing.T) {
			f := open(t, dtb(t, vc.name))
			if f.TotalSize != 1<<20 {
				t.Errorf("TotalSize %#x, want 1 MiB", f.TotalSize)
			}

			var mem [4]Range
			n, e := f.Memory(mem[:])
			if e != OK || n != 1 || mem[0] != (Range{0x40000000, vc.mem}) {
				t.Errorf("Memory = %d %v %#x, want 1 range at 0x40000000 of %#x", n, e, mem[:n], vc.mem)
			}
			if n, e := f.Memory(nil); e != ErrTooMany || n != 1 {
				t.Errorf("Memory(nil) = %d %v, want 1 ErrTooMany", n, e)
			}
			if n, e := f.Reserved(mem[:]); e != OK || n != 0 {
				t.Errorf("Reserved = %d %v, want none", n, e)
			}

			u, e := f.PL011()
			if e != OK || u != (UART{Base: 0x09000000, Size: 0x1000, IRQ: 33}) {
				t.Errorf("PL011 = %+v %v, want 0x09000000 size 0x1000 SPI 1 (ID 33)", u, e)
			}

			g, e := f.GIC()
			want := GIC{Version: 2, Dist: 0x08000000, DistSize: 0x10000, CPU: 0x08010000, CPUSize: 0x10000, InterruptCells: 3}
			if vc.gic == 3 {
				want = GIC{Version: 3, Dist: 0x08000000, DistSize: 0x10000, Redist: 0x080A0000, RedistSize: 0xF60000, InterruptCells: 3}
			}
			if e != OK || g != want {
				t.Errorf("GIC = %+v %v, want %+v", g, e, want)
			}

			tm, e := f.Timer()
			flags := uint32(4) // level high
			if vc.gic == 2 {
				flags |= (1<<vc.cpus - 1) << 8 // GICv2 PPI CPU mask
			}
			wantT := Timer{SecurePhys: Interrupt{29, flags}, Phys: Interrupt{30, flags}, Virt: Interrupt{27, flags}, HypPhys: Interrupt{26, flags}}
			if e != OK || tm != wantT {
				t.Errorf("Timer = %+v %v, want %+v", tm, e, wantT)
			}

			if c, e := f.PSCI(); e != OK || c != vc.conduit {
				t.Errorf("PSCI = %v %v, want %v", c, e, vc.conduit)
			}

			var cpus [8]CPU
			n, e = f.CPUs(cpus[:])
			if e != OK || n != vc.cpus {
				t.Fatalf("CPUs = %d %v, want %d", n, e, vc.cpus)
			}
			for i := 0; i < n; i++ {
				if cpus[i].MPIDR != uint64(i) {
					t.Errorf("cpu %d: MPIDR %#x", i, cpus[i].MPIDR)
				}
				var buf [16]byte
				l := f.Name(cpus[i].Node, buf[:])
				if got, want := string(buf[:l]), "cpu@"+string(rune('0'+i)); got != want {
					t.Errorf("cpu %d: node %q, want %q", i, got, want)
				}
			}
			if n, e := f.CPUs(cpus[:1]); n != vc.cpus || (vc.cpus > 1) != (e == ErrTooMany) {
				t.Errorf("CPUs into 1 = %d %v", n, e)
			}
		})
	}
}

func TestFind(t *testing.T) {
	f := open(t, dtb(t, "virt-gicv2-smp4-1G"))
	for _, tc := range []struct {
		path string
		name string
		e    Error
	}{
		{"/", "", OK},
		{"/cpus", "cpus", OK},
		{"/cpus/", "cpus", OK},
		{"/cpus/cpu@2", "cpu@2", OK},
		{"/cpus/cpu", "cpu@0", OK},
		{"/cpus/cpu-map/socket0/cluster0/core3", "core3", OK},
		{"/memory", "memory@40000000", OK},
		{"/memory@40000000", "memory@40000000", OK},
		{"/memory@40000001", "", ErrNotFound},
		{"/intc/v2m", "v2m@8020000", OK},
		{"/v2m", "", ErrNotFound}, // not at the root
		{"/cpus/cpu@4", "", ErrNotFound},
		{"/nosuch/cpus", "", ErrNotFound},
		{"cpus", "", ErrNotFound},
		{"", "", ErrNotFound},
	} {
		n, _, e := f.Find(tc.path)
		if e != tc.e {
			t.Errorf("Find(%q) = %v, want %v", tc.path, e, tc.e)
			continue
		}
		if e != OK {
			continue
		}
		var buf [64]byte
		if got := string(buf[:f.Name(n, buf[:])]); got != tc.name {
			t.Errorf("Find(%q) = node %q, want %q", tc.path, got, tc.name)
		}
	}
	// The cells Find returns are those of the parent: /cpus has 1/0.
	if _, c, _ := f.Find("/cpus/cpu@1"); c != (Cells{1, 0}) {
		t.Errorf("cells of /cpus/cpu@1's parent = %v, want {1 0}", c)
	}
	if _, c, _ := f.Find("/memory"); c != (Cells{2, 2}) {
		t.Errorf("cells of the root = %v, want {2 2}", c)
	}
}

func TestWalkVisitsAll(t *testing.T) {
	f := open(t, dtb(t, "virt-gicv3-smp4-6G"))
	it := f.Walk()
	count, maxd, virtio := 0, 0, 0
	for {
		n, e := f.Next(&it)
		if e == ErrNotFound {
			break
		}
		if e != OK {
			t.Fatal(e)
		}
		count++
		maxd = max(maxd, it.Depth())
		if f.Compatible(n, "virtio,mmio") {
			virtio++
		}
	}
	if virtio != 32 || maxd != 6 {
		t.Errorf("walk: %d nodes, depth %d, %d virtio,mmio; want 32 virtio (hw/arm/virt.c NUM_VIRTIO_TRANSPORTS) and depth 6 (cpu-map)", count, maxd, virtio)
	}
	if _, e := f.Next(&it); e != ErrNotFound {
		t.Errorf("Next after the end = %v", e)
	}
}

// builder lays out a blob by hand, token by token, for trees QEMU does not
// make and for malformed ones.
type builder struct {
	st, str bytes.Buffer
}

func (b *builder) u32(v uint32) { binary.Write(&b.st, binary.BigEndian, v) }
func (b *builder) pad() {
	for b.st.Len()%4 != 0 {
		b.st.WriteByte(0)
	}
}
func (b *builder) begin(name string) { b.u32(tokBeginNode); b.st.WriteString(name + "\x00"); b.pad() }
func (b *builder) end()              { b.u32(tokEndNode) }
func (b *builder) prop(name string, v []byte) {
	b.u32(tokProp)
	b.u32(uint32(len(v)))
	b.u32(uint32(b.str.Len()))
	b.str.WriteString(name + "\x00")
	b.st.Write(v)
	b.pad()
}
func (b *builder) propU32(name string, vs ...uint32) {
	var v bytes.Buffer
	for _, x := range vs {
		binary.Write(&v, binary.BigEndian, x)
	}
	b.prop(name, v.Bytes())
}
func (b *builder) propStr(name string, s ...string) {
	var v []byte
	for _, x := range s {
		v = append(append(v, x...), 0)
	}
	b.prop(name, v)
}

func (b *builder) blob(rsv ...Range) []byte {
	b.u32(tokEnd)
	var out bytes.Buffer
	rsvOff := uint32(hdrLen)
	rsvLen := uint32(16 * (len(rsv) + 1))
	stOff := rsvOff + rsvLen
	strOff := stOff + uint32(b.st.Len())
	total := strOff + uint32(b.str.Len())
	for _, v := range []uint32{Magic, total, stOff, strOff, rsvOff, 17, 16, 0, uint32(b.str.Len()), uint32(b.st.Len())} {
		binary.Write(&out, binary.BigEndian, v)
	}
	for _, r := range append(rsv, Range{}) {
		binary.Write(&out, binary.BigEndian, r.Base)
		binary.Write(&out, binary.BigEndian, r.Size)
	}
	out.Write(b.st.Bytes())
	out.Write(b.str.Bytes())
	return out.Bytes()
}

// A board-like tree: 1-cell addresses, two memory nodes (one with two
// ranges, one disabled), stdout through an alias with options, two
// PL011s of which the console is the second, devices on a /soc bus whose
// "ranges" maps the bus addresses 0x7e000000 to the CPU's 0x3f000000 (as
// on a Raspberry Pi 3), a second-level bus, a bus without "ranges", and
// 2-cell CPU regs with Aff3.
func boardBlob() []byte {
	var b builder
	b.begin("")
	b.propU32("#address-cells", 1)
	b.propU32("#size-cells", 1)
	b.begin("aliases")
	b.propStr("serial1", "/soc/serial@7e201000")
	b.end()
	b.begin("chosen")
	b.propStr("stdout-path", "serial1:115200n8")
	b.end()
	b.begin("memory@0")
	b.propStr("device_type", "memory")
	b.propU32("reg", 0, 0x3b400000, 0x40000000, 0x40000000)
	b.end()
	b.begin("memory@80000000")
	b.propStr("device_type", "memory")
	b.propStr("status", "disabled")
	b.propU32("reg", 0x80000000, 0x1000)
	b.end()
	b.begin("soc")
	b.propU32("#address-cells", 1)
	b.propU32("#size-cells", 1)
	b.propU32("ranges", 0x7e000000, 0x3f000000, 0x01000000, 0x40000000, 0x40000000, 0x100000)
	b.begin("serial@7e100000")
	b.propStr("compatible", "arm,pl011", "arm,primecell")
	b.propU32("reg", 0x7e100000, 0x100)
	b.end()
	b.begin("serial@7e201000")
	b.propStr("compatible", "arm,pl011", "arm,primecell")
	b.propU32("reg", 0x7e201000, 0x200)
	b.propU32("interrupts", 0, 57, 4)
	b.end()
	b.begin("intc@40041000")
	b.propStr("compatible", "arm,gic-400")
	b.propU32("#interrupt-cells", 3)
	b.propU32("reg", 0x40041000, 0x1000, 0x40042000, 0x2000)
	b.end()
	b.begin("sub")
	b.propU32("#address-cells", 1)
	b.propU32("#size-cells", 1)
	b.propU32("ranges", 0, 0x7e300000, 0x1000)
	b.begin("dev@10")
	b.propU32("reg", 0x10, 0x8, 0x1000, 0x8)
	b.end()
	b.end()
	b.begin("nobus")
	b.propU32("#address-cells", 1)
	b.propU32("#size-cells", 1)
	b.begin("dev@20")
	b.propU32("reg", 0x20, 0x8)
	b.end()
	b.end()
	b.end()
	b.begin("psci")
	b.u32(tokNop)
	b.propStr("method", "smc")
	b.end()
	b.begin("cpus")
	b.propU32("#address-cells", 2)
	b.propU32("#size-cells", 0)
	b.begin("cpu@0")
	b.propStr("device_type", "cpu")
	b.propU32("reg", 0, 0)
	b.end()
	b.begin("cpu@100000000")
	b.propStr("device_type", "cpu")
	b.propU32("reg", 1, 0x00010203)
	b.end()
	b.begin("cpu@2")
	b.propStr("device_type", "cpu")
	b.propStr("status", "disabled")
	b.propU32("reg", 0, 2)
	b.end()
	b.end()
	b.end()
	return b.blob(Range{0x3b400000, 0x100000})
}

func TestBoard(t *testing.T) {
	f := open(t, boardBlob())
	var r [4]Range
	if n, e := f.Memory(r[:]); e != OK || n != 2 || r[0] != (Range{0, 0x3b400000}) || r[1] != (Range{0x40000000, 0x40000000}) {
		t.Errorf("Memory = %d %v %#x", n, e, r[:n])
	}
	if n, e := f.Reserved(r[:]); e != OK || n != 1 || r[0] != (Range{0x3b400000, 0x100000}) {
		t.Errorf("Reserved = %d %v %#x", n, e, r[:n])
	}
	if u, e := f.PL011(); e != OK || u != (UART{Base: 0x3f201000, Size: 0x200, IRQ: 89}) {
		t.Errorf("PL011 = %+v %v, want the stdout-path alias's serial@7e201000 at 0x3f201000, SPI 57", u, e)
	}
	if g, e := f.GIC(); e != OK || g != (GIC{Version: 2, Dist: 0x40041000, DistSize: 0x1000, CPU: 0x40042000, CPUSize: 0x2000, InterruptCells: 3}) {
		t.Errorf("GIC = %+v %v (through the second range, identity)", g, e)
	}
	if c, e := f.PSCI(); e != OK || c != ConduitSMC {
		t.Errorf("PSCI = %v %v", c, e)
	}
	var cpus [4]CPU
	if n, e := f.CPUs(cpus[:]); e != OK || n != 2 || cpus[0].MPIDR != 0 || cpus[1].MPIDR != 0x1_00010203 {
		t.Errorf("CPUs = %d %v %+v", n, e, cpus[:n])
	}
	if _, e := f.Timer(); e != ErrNotFound {
		t.Errorf("Timer without a timer node = %v, want ErrNotFound", e)
	}

	// Two levels of translation: 0x10 on /soc/sub is 0x7e300010 on
	// /soc, 0x3f300010 for the CPU; 0x1000 is past sub's window.
	it, e := f.FindIter("/soc/sub/dev")
	if e != OK {
		t.Fatal(e)
	}
	if a, n, e := f.RegAt(&it, 0); e != OK || a != 0x3f300010 || n != 8 {
		t.Errorf("RegAt(sub/dev, 0) = %#x %#x %v", a, n, e)
	}
	if _, _, e := f.RegAt(&it, 1); e != ErrNotFound {
		t.Errorf("RegAt outside the bus window = %v", e)
	}
	if _, _, e := f.RegAt(&it, 2); e != ErrNotFound {
		t.Errorf("RegAt past the last entry = %v", e)
	}
	it, _ = f.FindIter("/soc/nobus/dev@20")
	if _, _, e := f.RegAt(&it, 0); e != ErrNotFound {
		t.Errorf("RegAt under a bus without ranges = %v, want ErrNotFound", e)
	}
}

func TestMalformedHeader(t *testing.T) {
	good := dtb(t, "virt-gicv2-smp1-128M")
	set := func(off int, v uint32) []byte {
		b := bytes.Clone(good)
		binary.BigEndian.PutUint32(b[off:], v)
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		lim  int // bytes readable; -1: all
		e    Error
	}{
		{"empty", nil, 0, ErrTruncated},
		{"short", good[:39], -1, ErrTruncated},
		{"magic", set(0, 0xfeedd00d), -1, ErrMagic},
		{"little-endian magic", set(0, 0xedfe0dd0), -1, ErrMagic},
		{"version 15", set(20, 15), -1, ErrVersion},
		{"last compatible 18", set(24, 18), -1, ErrVersion},
		{"totalsize beyond region", good, 1<<20 - 1, ErrTruncated},
		{"totalsize below header", set(4, 39), -1, ErrHeader},
		{"struct offset misaligned", set(8, 0x41), -1, ErrHeader},
		{"struct offset in header", set(8, 0), -1, ErrHeader},
		{"struct past totalsize", set(8, 1<<20), -1, ErrHeader},
		{"struct size past totalsize", set(36, 1<<20), -1, ErrHeader},
		{"struct size wraps", set(36, 0xfffffffc), -1, ErrHeader},
		{"strings size past totalsize", set(32, 1<<20), -1, ErrHeader},
		{"strings offset wraps", set(12, 0xffffffff), -1, ErrHeader},
	} {
		lim := tc.lim
		if lim < 0 {
			lim = len(tc.b)
		}
		addr := uintptr(1) // never read: the length checks come first
		if len(tc.b) > 0 {
			addr = load(t, tc.b)
		}
		if _, e := Open(addr, uintptr(lim)); e != tc.e {
			t.Errorf("%s: Open = %v, want %v", tc.name, e, tc.e)
		}
	}
	if _, e := Open(0, 100); e != ErrNoBlob {
		t.Errorf("Open(0) = %v", e)
	}
}

// queryAll runs every look-up; it must return, and not fault.
func queryAll(f *FDT) {
	var r [8]Range
	var c [8]CPU
	f.Memory(r[:])
	f.Reserved(r[:])
	f.PL011()
	f.GIC()
	f.Timer()
	f.PSCI()
	f.CPUs(c[:])
	f.Find("/cpus/cpu@1")
	if it, e := f.FindIter("/pl011"); e == OK {
		f.RegAt(&it, 0)
	}
	it := f.Walk()
	for i := 0; i < 1<<16; i++ {
		if _, e := f.Next(&it); e != OK {
			return
		}
	}
	panic("walk did not end")
}

// A blob cut anywhere, with totalsize cut to match, is an error or a
// shorter tree; never a read past the end (load's guard page) or a hang.
func TestTruncated(t *testing.T) {
	good := dtb(t, "virt-gicv3-smp4-6G")
	end := int(binary.BigEndian.Uint32(good[12:]) + binary.BigEndian.Uint32(good[32:]))
	for n := 0; n <= end; n += 1 + n/64 {
		b := bytes.Clone(good[:n])
		if n >= 8 {
			binary.BigEndian.PutUint32(b[4:], uint32(n))
		}
		f, e := Open(load(t, b), uintptr(n))
		if e != OK {
			continue
		}
		queryAll(&f)
	}
}

// Random corruption of the structure and strings blocks never faults.
func TestCorrupted(t *testing.T) {
	good := dtb(t, "virt-gicv2-smp4-1G")
	end := int(binary.BigEndian.Uint32(good[12:]) + binary.BigEndian.Uint32(good[32:]))
	good = good[:end]
	binary.BigEndian.PutUint32(good[4:], uint32(end))
	rng := rand.New(rand.NewSource(1))
	buf := guarded(t, good)
	addr := uintptr(unsafe.Pointer(&buf[0]))
	for i := 0; i < 2000; i++ {
		copy(buf, good)
		for k := 0; k < 1+rng.Intn(8); k++ {
			o := hdrLen + rng.Intn(end-hdrLen)
			switch rng.Intn(3) {
			case 0:
				buf[o] = byte(rng.Intn(256))
			case 1:
				buf[o] = 0xff
			case 2:
				buf[o&^3+3] = byte(rng.Intn(10)) // a plausible token
			}
		}
		f, e := Open(addr, uintptr(end))
		if e != OK {
			t.Fatalf("Open: %v", e)
		}
		queryAll(&f)
	}
}

func TestStructureErrors(t *testing.T) {
	// Unbalanced: END_NODE at depth 0.
	var b builder
	b.begin("")
	b.end()
	b.end()
	f := open(t, b.blob())
	it := f.Walk()
	if _, e := f.Next(&it); e != OK {
		t.Fatal(e)
	}
	if _, e := f.Next(&it); e != ErrStructure {
		t.Errorf("extra END_NODE: %v", e)
	}

	// Two roots.
	b = builder{}
	b.begin("")
	b.end()
	b.begin("")
	b.end()
	f = open(t, b.blob())
	if _, _, e := f.Find("/x"); e != ErrStructure {
		t.Errorf("second root: %v", e)
	}

	// Deeper than MaxDepth.
	b = builder{}
	for i := 0; i <= MaxDepth; i++ {
		b.begin("n")
	}
	for i := 0; i <= MaxDepth; i++ {
		b.end()
	}
	f = open(t, b.blob())
	if _, e := f.Memory(nil); e != ErrDepth {
		t.Errorf("deep tree: %v", e)
	}

	// A property whose length runs past the block.
	b = builder{}
	b.begin("")
	b.u32(tokProp)
	b.u32(1000)
	b.u32(0)
	b.end()
	f = open(t, b.blob())
	if _, e := f.PSCI(); e != ErrStructure {
		t.Errorf("long property: %v", e)
	}

	// #address-cells 3 on a reg that must fit 64 bits.
	b = builder{}
	b.begin("")
	b.propU32("#address-cells", 3)
	b.begin("memory")
	b.propStr("device_type", "memory")
	b.propU32("reg", 0, 0, 0, 1)
	b.end()
	b.end()
	f = open(t, b.blob())
	if _, e := f.Memory(nil); e != ErrCells {
		t.Errorf("3 address cells: %v", e)
	}

	// A reg whose length is not a whole number of entries.
	b = builder{}
	b.begin("")
	b.begin("memory")
	b.propStr("device_type", "memory")
	b.propU32("reg", 0, 0x1000, 0, 1) // default cells 2+1: 4 is not a whole entry
	b.end()
	b.end()
	f = open(t, b.blob())
	if _, e := f.Memory(nil); e != ErrValue {
		t.Errorf("ragged reg: %v", e)
	}

	// An unknown PSCI method, and a non-terminated one.
	for _, m := range [][]byte{[]byte("svc\x00"), []byte("hvc")} {
		b = builder{}
		b.begin("")
		b.begin("psci")
		b.prop("method", m)
		b.end()
		b.end()
		f = open(t, b.blob())
		if c, e := f.PSCI(); e != ErrValue || c != ConduitNone {
			t.Errorf("method %q: %v %v", m, c, e)
		}
	}
}

func FuzzOpen(f *testing.F) {
	for _, vc := range virtCases[:2] {
		b := dtb(f, vc.name)
		end := binary.BigEndian.Uint32(b[12:]) + binary.BigEndian.Uint32(b[32:])
		b = b[:end]
		binary.BigEndian.PutUint32(b[4:], end)
		f.Add(b)
	}
	f.Add(boardBlob())
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		d, e := Open(load(t, b), uintptr(len(b)))
		if e == OK {
			queryAll(&d)
		}
	})
}

func TestIterParentBounds(t *testing.T) {
	f := open(t, boardBlob())
	it := f.Walk()
	if c := it.Parent(); c != defaultCells {
		t.Errorf("Parent before Next = %v", c)
	}
	for {
		if _, e := f.Next(&it); e != OK {
			break
		}
	}
	if c := it.Parent(); c != defaultCells || it.Depth() != 0 {
		t.Errorf("Parent after the end = %v at depth %d", c, it.Depth())
	}
}

// The look-ups run before the runtime: they must not allocate.
func TestNoAllocation(t *testing.T) {
	f := open(t, dtb(t, "virt-gicv3-el2-smp2-2G"))
	var r [4]Range
	var c [8]CPU
	allocs := testing.AllocsPerRun(10, func() {
		f.Memory(r[:])
		f.Reserved(r[:])
		f.CPUs(c[:])
		f.GIC()
		f.Timer()
		f.PSCI()
		f.PL011()
		f.Find("/cpus/cpu@1")
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run", allocs)
	}
}

// QEMU virt lists 32 virtio-mmio transports from 0x0a000000, 0x200 apart,
// SPI 16 upward (GIC IDs 48...), level-triggered; NextDevice finds them all
// in document order and then reports the end.
func TestNextDeviceVirtioMMIO(t *testing.T) {
	for _, vc := range virtCases {
		t.Run(vc.name, func(t *testing.T) {
			f := open(t, dtb(t, vc.name))
			it := f.Walk()
			seen := map[uint64]uint32{}
			for {
				d, e := f.NextDevice(&it, "virtio,mmio")
				if e == ErrNotFound {
					break
				}
				if e != OK {
					t.Fatalf("NextDevice: %v", e)
				}
				if d.Size != 0x200 || d.Base < 0x0a000000 || d.Base >= 0x0a000000+32*0x200 || d.Base%0x200 != 0 {
					t.Errorf("device at %#x size %#x", d.Base, d.Size)
				}
				if want := uint32(48 + (d.Base-0x0a000000)/0x200); d.IRQ != want || d.IRQFlags&0xf != 1 && d.IRQFlags&0xf != 4 {
					t.Errorf("device at %#x: IRQ %d flags %#x, want %d", d.Base, d.IRQ, d.IRQFlags, want)
				}
				seen[d.Base] = d.IRQ
			}
			if len(seen) != 32 {
				t.Errorf("found %d virtio-mmio transports, want 32", len(seen))
			}
			if _, e := f.NextDevice(&it, "virtio,mmio"); e != ErrNotFound {
				t.Errorf("after the end: %v, want ErrNotFound", e)
			}
		})
	}
}

// TestPowerKey: QEMU virt's /gpio-keys/poweroff is pin 3 of the PL061 at
// 0x9030000 (SPI 7, level high); the Raspberry Pi's tree has none.
func TestPowerKey(t *testing.T) {
	for _, vc := range virtCases {
		f := open(t, dtb(t, vc.name))
		want := GPIOKey{Controller: Device{Base: 0x9030000, Size: 0x1000, IRQ: 32 + 7, IRQFlags: 4}, Pin: 3}
		if k, e := f.PowerKey(); e != OK || k != want {
			t.Errorf("%s: PowerKey = %+v %v, want %+v", vc.name, k, e, want)
		}
	}
	f := open(t, boardBlob())
	if k, e := f.PowerKey(); e != ErrNotFound {
		t.Errorf("board: PowerKey = %+v %v, want ErrNotFound", k, e)
	}
}
