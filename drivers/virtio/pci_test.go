package virtio

import (
	"encoding/binary"
	"math/rand"
	"slices"
	"testing"
)

func ecam(t *testing.T) (*pciSpace, PCIConfig) {
	b := newBus(t)
	s := newPCISpace(t)
	b.add(ecamBase, 1<<20, s)
	return s, PCIConfig{ECAM: ecamBase}
}

func TestPCICaps(t *testing.T) {
	s, c := ecam(t)
	bdf := BDF(0, 3, 0)
	buildVirtioFn(s.fn(bdf), 0x1041, standardCaps)
	caps, err := c.Caps(bdf)
	if err != OK {
		t.Fatalf("Caps: %v", err)
	}
	want := PCICaps{
		Common:    PCIStruct{BAR: 4, Offset: 0, Length: 0x1000, Addr: bar4Addr},
		ISR:       PCIStruct{BAR: 4, Offset: 0x1000, Length: 0x1000, Addr: bar4Addr + 0x1000},
		Device:    PCIStruct{BAR: 1, Offset: 0, Length: 0x100, Addr: bar1Addr},
		Notify:    PCIStruct{BAR: 4, Offset: 0x3000, Length: 0x1000, Addr: bar4Addr + 0x3000},
		NotifyMul: notifyMul,
	}
	if caps != want {
		t.Errorf("Caps =\n%+v, want\n%+v", caps, want)
	}
}

func TestPCICapsMalformed(t *testing.T) {
	mod := func(f func([]capSpec) []capSpec) []capSpec { return f(slices.Clone(standardCaps)) }
	for _, tc := range []struct {
		name string
		caps []capSpec
		edit func(f *[4096]byte)
		want Error
	}{
		{"no list", standardCaps, func(f *[4096]byte) { f[cfgStatus] = 0 }, ErrNoCapList},
		{"empty list", nil, nil, ErrNoCommon},
		{"loop", mod(func(c []capSpec) []capSpec { c[5].next = 0x50; return c }), nil, ErrCapList},
		{"self loop", mod(func(c []capSpec) []capSpec { c[1].next = 0x50; return c }), nil, ErrCapList},
		{"pointer into the header", mod(func(c []capSpec) []capSpec { c[2].next = 0x20; return c }), nil, ErrCapList},
		{"pointer at the end", mod(func(c []capSpec) []capSpec { c[5].next = 0xfc; return c }), func(f *[4096]byte) { f[0xfc], f[0xfe] = capVendor, 16 }, ErrCapList},
		{"vendor capability past the end", mod(func(c []capSpec) []capSpec { c[5].next = 0xf8; return c }), func(f *[4096]byte) { f[0xf8], f[0xfa] = capVendor, 16 }, ErrCapList},
		{"short vendor capability", mod(func(c []capSpec) []capSpec { c[2].len = 12; return c }), nil, ErrCapList},
		{"short notify capability", mod(func(c []capSpec) []capSpec { c[4].len = 16; return c }), nil, ErrCapList},
		{"no common", mod(func(c []capSpec) []capSpec { c[1].typ = 8; return c }), nil, ErrNoCommon},
		{"common in a reserved BAR", mod(func(c []capSpec) []capSpec { c[1].bar = 6; return c }), nil, ErrNoCommon},
		{"common too short", mod(func(c []capSpec) []capSpec { c[1].size = 0x20; return c }), nil, ErrNoCommon},
		{"no notify", mod(func(c []capSpec) []capSpec { c[3].next = 0x98; return c }), nil, ErrNoNotify},
		{"no ISR", mod(func(c []capSpec) []capSpec { c[1].next = 0x70; return c }), nil, ErrNoISR},
		{"BAR unassigned", standardCaps, func(f *[4096]byte) {
			binary.LittleEndian.PutUint32(f[cfgBAR0+16:], 0xc)
			binary.LittleEndian.PutUint32(f[cfgBAR0+20:], 0)
		}, ErrBARUnassigned},
		{"I/O BAR", standardCaps, func(f *[4096]byte) { binary.LittleEndian.PutUint32(f[cfgBAR0+4:], 0xc001) }, ErrIOBAR},
		{"64-bit BAR 5", mod(func(c []capSpec) []capSpec { c[3].bar = 5; return c }), func(f *[4096]byte) {
			binary.LittleEndian.PutUint32(f[cfgBAR0+20:], 0xfe000004)
		}, ErrBARRange},
		{"structure past 2^64", mod(func(c []capSpec) []capSpec { c[3].offset = 0xffff_f000; return c }), func(f *[4096]byte) {
			binary.LittleEndian.PutUint32(f[cfgBAR0+4:], 0xfe000004)
			binary.LittleEndian.PutUint32(f[cfgBAR0+8:], 0xffffffff)
		}, ErrBARRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := ecam(t)
			bdf := BDF(0, 3, 0)
			f := s.fn(bdf)
			buildVirtioFn(f, 0x1041, tc.caps)
			if tc.edit != nil {
				tc.edit(f)
			}
			if _, err := c.Caps(bdf); err != tc.want {
				t.Errorf("Caps = %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("first of each type wins", func(t *testing.T) {
		s, c := ecam(t)
		bdf := BDF(0, 3, 0)
		caps := mod(func(c []capSpec) []capSpec {
			c[5] = capSpec{at: 0x98, next: 0, id: capVendor, len: 16, typ: capCommon, bar: 4, offset: 0x8000, size: 0x1000}
			c[0].next = 0xa8 // a reserved-BAR common first: skipped
			return append(c, capSpec{at: 0xa8, next: 0x50, id: capVendor, len: 16, typ: capCommon, bar: 7, offset: 0x9000, size: 0x1000})
		})
		buildVirtioFn(s.fn(bdf), 0x1041, caps)
		got, err := c.Caps(bdf)
		if err != OK || got.Common.Offset != 0 {
			t.Errorf("Caps = %v, common at %#x; want the first valid one at 0", err, got.Common.Offset)
		}
	})
}

// TestPCICapsRandom: any configuration space at all ends the walk.
func TestPCICapsRandom(t *testing.T) {
	s, c := ecam(t)
	bdf := BDF(0, 5, 0)
	f := s.fn(bdf)
	rng := rand.New(rand.NewSource(7))
	counts := map[Error]int{}
	for i := 0; i < 20000; i++ {
		rng.Read(f[:256])
		f[cfgStatus] |= statusCaps
		if i%2 == 0 { // half the time, plant plausible vendor capabilities
			for p := 0x40; p < 0xf0; p += 20 {
				f[p] = capVendor
				f[p+2] = uint8(16 + rng.Intn(8))
				f[p+3] = uint8(1 + rng.Intn(5))
				f[p+4] = uint8(rng.Intn(7))
			}
		}
		_, err := c.Caps(bdf)
		counts[err]++
	}
	t.Logf("outcomes: %v", counts)
}

func TestPCIEnumerate(t *testing.T) {
	s, c := ecam(t)
	put := func(bdf uint16, vendor, device, subsys uint16, header uint8) {
		f := s.fn(bdf)
		binary.LittleEndian.PutUint16(f[0:], vendor)
		binary.LittleEndian.PutUint16(f[2:], device)
		binary.LittleEndian.PutUint16(f[cfgSubsystem:], subsys)
		f[cfgHeaderType] = header
	}
	put(BDF(0, 0, 0), 0x8086, 0x29c0, 0, 0)       // host bridge
	put(BDF(0, 1, 0), VendorVirtio, 0x1000, 1, 0) // transitional net
	put(BDF(0, 2, 0), 0x8086, 0x2918, 0, 0x80)    // multifunction, not virtio
	put(BDF(0, 2, 3), VendorVirtio, 0x1049, 9, 0) // modern 9p, function 3
	put(BDF(0, 3, 0), VendorVirtio, 0x1041, 0, 0) // modern net
	put(BDF(0, 3, 1), VendorVirtio, 0x1042, 0, 0) // function 1 of a single-function device: not scanned
	put(BDF(0, 4, 0), VendorVirtio, 0x1110, 0, 0) // the vendor's, but not a virtio device ID
	put(BDF(0, 31, 0), VendorVirtio, 0x1044, 0, 0)
	var out [8]PCIFunction
	n, err := c.Virtio(0, out[:])
	want := []PCIFunction{
		{BDF(0, 1, 0), 0x1000, TypeNet},
		{BDF(0, 2, 3), 0x1049, Type9P},
		{BDF(0, 3, 0), 0x1041, TypeNet},
		{BDF(0, 31, 0), 0x1044, TypeEntropy},
	}
	if err != OK || !slices.Equal(out[:n], want) {
		t.Errorf("Virtio = %v, %v; want %v", out[:n], err, want)
	}
	n, err = c.Virtio(0, out[:1])
	if n != 4 || err != ErrTooMany || out[0] != want[0] {
		t.Errorf("Virtio into 1 = %d, %v, %v", n, err, out[0])
	}
	if _, err := OpenPCI(c, BDF(0, 0, 0), 0); err != ErrNotVirtio {
		t.Errorf("OpenPCI(host bridge) = %v", err)
	}
	if _, err := OpenPCI(c, BDF(0, 9, 0), 0); err != ErrNoDevice {
		t.Errorf("OpenPCI(nothing) = %v", err)
	}
}

// TestPCINextVirtio walks bus 0 as QEMU pc lays out the set that once
// lost two disks: a NIC, three 9p devices, six virtio-blk disks with an
// NVMe controller among them — ten virtio functions, more than the
// boot's table of 8 held — and a multi-function device with a virtio
// function in each of its 8 functions. The walk finds every one.
func TestPCINextVirtio(t *testing.T) {
	s, c := ecam(t)
	put := func(bdf uint16, vendor, device uint16, header uint8) {
		f := s.fn(bdf)
		binary.LittleEndian.PutUint16(f[0:], vendor)
		binary.LittleEndian.PutUint16(f[2:], device)
		f[cfgHeaderType] = header
	}
	var want []PCIFunction
	virtioAt := func(dev, fn uint8, device uint16, header uint8) {
		put(BDF(0, dev, fn), VendorVirtio, device, header)
		want = append(want, PCIFunction{BDF(0, dev, fn), device, uint32(device - 0x1040)})
	}
	put(BDF(0, 0, 0), 0x8086, 0x1237, 0)    // host bridge
	put(BDF(0, 1, 0), 0x8086, 0x7000, 0x80) // PIIX3 ISA bridge, multi-function
	put(BDF(0, 1, 1), 0x8086, 0x7010, 0)    // its IDE
	virtioAt(2, 0, 0x1041, 0)               // net
	for dev := uint8(3); dev <= 5; dev++ {
		virtioAt(dev, 0, 0x1049, 0) // 9p
	}
	for dev := uint8(6); dev <= 12; dev++ {
		if dev == 9 {
			put(BDF(0, dev, 0), 0x1b36, 0x0010, 0) // NVMe
			continue
		}
		virtioAt(dev, 0, 0x1042, 0) // blk
	}
	for fn := uint8(0); fn < 8; fn++ {
		virtioAt(20, fn, 0x1042, 0x80)
	}
	virtioAt(31, 0, 0x1044, 0)
	var got []PCIFunction
	for i, f := c.NextVirtio(0, 0); i >= 0; i, f = c.NextVirtio(0, i+1) {
		if int(f.BDF) != i {
			t.Errorf("index %d for %+v", i, f)
		}
		got = append(got, f)
	}
	if !slices.Equal(got, want) {
		t.Errorf("NextVirtio found %d: %v\nwant %d: %v", len(got), got, len(want), want)
	}
	if i, f := c.NextVirtio(0, 32*8); i != -1 || f != (PCIFunction{}) {
		t.Errorf("NextVirtio past the bus = %d, %v", i, f)
	}
	var out [8]PCIFunction
	if n, err := c.Virtio(0, out[:]); n != len(want) || err != ErrTooMany || !slices.Equal(out[:], want[:8]) {
		t.Errorf("Virtio into 8 = %d, %v, %v", n, err, out)
	}
}

func TestOpenPCI(t *testing.T) {
	e := pciEnv(t, FVersion1, 256)
	f := e.space.fn(BDF(0, pciDev, 0))
	if cmd := binary.LittleEndian.Uint16(f[cfgCommand:]); cmd&(cmdMemory|cmdBusMaster) != cmdMemory|cmdBusMaster {
		t.Errorf("command register %#x: memory and bus master not enabled", cmd)
	}
	if !e.d.IsPCI() || e.d.Type() != TypeNet || e.d.ConfigLen() != 0x100 {
		t.Errorf("device %+v", e.d)
	}
	// The notify structure too short for queue 0's offset.
	e.d.notifyLen = 1
	if _, err := e.d.Negotiate(0); err != OK {
		t.Fatal(err)
	}
	virt, phys := e.r.alloc(uint64(QueueBytes(8)), 16)
	var q Queue
	q.Init(0, 8, virt, phys, false)
	if err := e.d.SetupQueue(&q); err != ErrNotifyRange {
		t.Errorf("SetupQueue with a short notify structure: %v", err)
	}
}

// TestPCINextClassBAR: the function walk other drivers use (the NVMe
// controller is found by its class code), a 64-bit BAR and Enable.
func TestPCINextClassBAR(t *testing.T) {
	s, c := ecam(t)
	put := func(bdf uint16, class uint32, header uint8) *[4096]byte {
		f := s.fn(bdf)
		binary.LittleEndian.PutUint16(f[0:], 0x1b36)
		binary.LittleEndian.PutUint32(f[cfgClass:], class<<8|2)
		f[cfgHeaderType] = header
		return f
	}
	put(BDF(0, 0, 0), 0x060000, 0)
	put(BDF(0, 2, 0), 0x020000, 0x80)
	put(BDF(0, 2, 5), 0x010802, 0)
	put(BDF(0, 3, 1), 0x010802, 0) // function 1 of a single-function device: not there
	f := put(BDF(0, 4, 0), 0x010802, 0)
	binary.LittleEndian.PutUint32(f[cfgBAR0:], 0xfebf0004) // 64-bit memory
	binary.LittleEndian.PutUint32(f[cfgBAR0+4:], 0x80)
	var got []uint16
	for i := c.Next(0, 0); i >= 0; i = c.Next(0, i+1) {
		got = append(got, uint16(i))
	}
	if want := []uint16{0, 2<<3 | 0, 2<<3 | 5, 4 << 3}; !slices.Equal(got, want) {
		t.Errorf("Next walk %v, want %v", got, want)
	}
	if cl := c.Class(BDF(0, 2, 5)); cl != 0x010802 {
		t.Errorf("Class %#x", cl)
	}
	if a, e := c.BAR(BDF(0, 4, 0), 0); a != 0x80_febf_0000 || e != OK {
		t.Errorf("BAR %#x, %v", a, e)
	}
	if _, e := c.BAR(BDF(0, 2, 5), 0); e != ErrBARUnassigned {
		t.Errorf("unassigned BAR: %v", e)
	}
	c.Enable(BDF(0, 4, 0))
	if cmd := c.Read16(BDF(0, 4, 0), cfgCommand); cmd != cmdMemory|cmdBusMaster {
		t.Errorf("command %#x", cmd)
	}
}
