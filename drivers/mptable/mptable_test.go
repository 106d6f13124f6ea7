package mptable

import (
	"encoding/binary"
	"math/rand"
	"os"
	"testing"
	"unsafe"

	"yolk/drivers/acpi"
)

// lowMem is the first MiB of a machine's physical memory; Read sees it at
// offset &buf[0].
type lowMem struct{ buf []byte }

func newLowMem() *lowMem { return &lowMem{buf: make([]byte, 1<<20)} }

func (l *lowMem) off() uintptr { return uintptr(unsafe.Pointer(&l.buf[0])) }

func (l *lowMem) read(ncpu, nio int) (Table, Error, []acpi.CPU, []acpi.IOAPIC) {
	cpus, ios := make([]acpi.CPU, ncpu), make([]acpi.IOAPIC, nio)
	r, e := Read(l.off(), cpus, ios)
	return r, e, cpus[:min(r.CPUs, ncpu)], ios[:min(r.IOAPICs, nio)]
}

// pointer writes a floating pointer at a naming the table at t.
func (l *lowMem) pointer(a, t uint32, def byte) {
	p := l.buf[a : a+16]
	copy(p, "_MP_")
	binary.LittleEndian.PutUint32(p[4:], t)
	p[8], p[9], p[10], p[11] = 1, 4, 0, def
	p[10] = -sum(p)
}

// table writes a configuration table at t with entries.
func (l *lowMem) table(t uint32, entries ...[]byte) []byte {
	b := make([]byte, headerLen)
	copy(b, "PCMP")
	b[6] = 4
	copy(b[8:], "TEST    ")
	binary.LittleEndian.PutUint32(b[36:], defaultLAPIC)
	n := 0
	for _, e := range entries {
		b = append(b, e...)
		n++
	}
	binary.LittleEndian.PutUint16(b[4:], uint16(len(b)))
	binary.LittleEndian.PutUint16(b[34:], uint16(n))
	b[7] = -sum(b)
	copy(l.buf[t:], b)
	return l.buf[t : t+uint32(len(b))]
}

func sum(b []byte) byte {
	var s byte
	for _, c := range b {
		s += c
	}
	return s
}

func fixSum(tab []byte) {
	tab[7] = 0
	tab[7] = -sum(tab)
}

func cpuEntry(id, flags byte) []byte {
	e := make([]byte, 20)
	e[0], e[1], e[2], e[3] = entryProcessor, id, 0x14, flags
	return e
}

func ioapicEntry(id, flags byte, addr uint32) []byte {
	e := []byte{entryIOAPIC, id, 0x11, flags, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(e[4:], addr)
	return e
}

func busEntry(id byte) []byte { return []byte{entryBus, id, 'I', 'S', 'A', ' ', ' ', ' '} }

func intEntry(typ, irq, apic byte) []byte { return []byte{typ, 0, 0, 0, 0, irq, apic, irq} }

// firecracker is the table Firecracker's mptable.rs writes for n CPUs at
// 0x9FC00: processors 0..n-1 (the first the bootstrap one), the ISA bus,
// the IO APIC (ID n+1), an interrupt source per IRQ 0-23 and the two
// local interrupts.
func firecracker(l *lowMem, n int) {
	var entries [][]byte
	for i := 0; i < n; i++ {
		f := byte(cpuEnabled)
		if i == 0 {
			f |= cpuBootstrap
		}
		entries = append(entries, cpuEntry(byte(i), f))
	}
	io := byte(n + 1)
	entries = append(entries, busEntry(0), ioapicEntry(io, ioapicEnabled, defaultIOAPIC))
	for irq := byte(0); irq < 24; irq++ {
		entries = append(entries, intEntry(entryIOInt, irq, io))
	}
	entries = append(entries, intEntry(entryLocalInt, 0, 0), intEntry(entryLocalInt, 1, 0xFF))
	l.pointer(0x9FC00, 0x9FC10, 0)
	l.table(0x9FC10, entries...)
}

func TestFirecracker(t *testing.T) {
	for _, n := range []int{1, 2, 4, 32} {
		l := newLowMem()
		firecracker(l, n)
		r, e, cpus, ios := l.read(64, 8)
		if e != OK || r.Pointer != 0x9FC00 || r.CPUs != n || r.IOAPICs != 1 || r.BootCPU != 0 || r.LAPICAddr != defaultLAPIC {
			t.Fatalf("%d CPUs: %+v, %v", n, r, e)
		}
		for i, c := range cpus {
			if c.APICID != uint32(i) || c.Flags != acpi.FlagEnabled {
				t.Errorf("%d CPUs: CPU %d is %+v", n, i, c)
			}
		}
		if ios[0] != (acpi.IOAPIC{ID: byte(n + 1), Addr: defaultIOAPIC}) {
			t.Errorf("%d CPUs: IO APIC %+v", n, ios[0])
		}
	}
}

// TestQboot reads the table QEMU 7.2's microvm firmware wrote with
// acpi=off and -smp 2 (testdata: the floating pointer at 0x9FC00 and the
// table after it, dumped from the guest's memory).
func TestQboot(t *testing.T) {
	b, err := os.ReadFile("testdata/qboot-microvm-smp2.bin")
	if err != nil {
		t.Fatal(err)
	}
	l := newLowMem()
	copy(l.buf[0x9FC00:], b)
	r, e, cpus, ios := l.read(8, 8)
	if e != OK || r.CPUs != 2 || r.IOAPICs != 1 || r.BootCPU != 0 {
		t.Fatalf("%+v, %v", r, e)
	}
	if cpus[0].APICID != 0 || cpus[1].APICID != 1 || ios[0].Addr != 0xFEC00000 || ios[0].GSIBase != 0 {
		t.Errorf("CPUs %+v, IO APICs %+v", cpus, ios)
	}
}

func TestSearchAreas(t *testing.T) {
	for _, a := range []uint32{0x0, 0x3F0, 0x9FC00, 0x9FFF0, 0xF0000, 0xFFFF0, 0x9E000} {
		l := newLowMem()
		if a == 0x9E000 { // in the EBDA the BIOS data area names
			binary.LittleEndian.PutUint16(l.buf[0x40E:], 0x9E00)
		}
		tab := uint32(0x80000)
		l.pointer(a, tab, 0)
		l.table(tab, cpuEntry(3, cpuEnabled|cpuBootstrap), ioapicEntry(1, ioapicEnabled, 0xFEC01000))
		r, e, cpus, _ := l.read(4, 4)
		if e != OK || r.Pointer != uintptr(a) || r.CPUs != 1 || cpus[0].APICID != 3 || r.BootCPU != 3 {
			t.Errorf("pointer at %#x: %+v, %v", a, r, e)
		}
	}
	// Not on a 16-byte boundary, or outside the areas: not found.
	for _, a := range []uint32{0x9FC08, 0x50000, 0xA0000} {
		l := newLowMem()
		l.pointer(a, 0x80000, 0)
		l.table(0x80000, cpuEntry(0, cpuEnabled))
		if _, e, _, _ := l.read(4, 4); e != ErrNotFound {
			t.Errorf("pointer at %#x: %v, want %v", a, e, ErrNotFound)
		}
	}
}

func TestDefaultConfiguration(t *testing.T) {
	l := newLowMem()
	l.pointer(0xF0000, 0, 5)
	r, e, cpus, ios := l.read(4, 4)
	if e != OK || r.Default != 5 || r.CPUs != 2 || cpus[1].APICID != 1 || r.IOAPICs != 1 || ios[0].Addr != defaultIOAPIC {
		t.Errorf("%+v, %v, %+v, %+v", r, e, cpus, ios)
	}
}

func TestDisabledEntries(t *testing.T) {
	l := newLowMem()
	l.pointer(0x9FC00, 0x9FC10, 0)
	l.table(0x9FC10, cpuEntry(0, cpuEnabled|cpuBootstrap), cpuEntry(1, 0), cpuEntry(2, cpuEnabled),
		ioapicEntry(5, 0, 0xFEC00000), ioapicEntry(6, ioapicEnabled, 0xFEC10000), ioapicEntry(7, ioapicEnabled, 0xFEC20000))
	r, e, cpus, ios := l.read(4, 4)
	if e != OK || r.CPUs != 2 || cpus[0].APICID != 0 || cpus[1].APICID != 2 {
		t.Errorf("CPUs: %+v, %v, %+v", r, e, cpus)
	}
	if r.IOAPICs != 2 || ios[0].ID != 6 || ios[0].GSIBase != 0 || ios[1].ID != 7 || ios[1].GSIBase != 24 {
		t.Errorf("IO APICs: %+v", ios)
	}
}

func TestTooMany(t *testing.T) {
	l := newLowMem()
	firecracker(l, 8)
	r, e, cpus, _ := l.read(3, 4)
	if e != ErrTooManyCPUs || r.CPUs != 8 || len(cpus) != 3 || cpus[2].APICID != 2 {
		t.Errorf("%+v, %v, %+v", r, e, cpus)
	}
	if r, e, _, _ := l.read(8, 0); e != ErrTooManyIOAPICs || r.IOAPICs != 1 {
		t.Errorf("%+v, %v", r, e)
	}
}

func TestBroken(t *testing.T) {
	for _, c := range []struct {
		name   string
		break_ func(l *lowMem, tab []byte)
		want   Error
	}{
		{"no pointer", func(l *lowMem, _ []byte) { clear(l.buf[0x9FC00:0x9FC10]) }, ErrNotFound},
		{"pointer checksum", func(l *lowMem, _ []byte) { l.buf[0x9FC04]++ }, ErrPointer},
		{"pointer length", func(l *lowMem, _ []byte) { l.buf[0x9FC08], l.buf[0x9FC0A] = 2, l.buf[0x9FC0A]-1 }, ErrPointer},
		{"no table", func(l *lowMem, _ []byte) { l.pointer(0x9FC00, 0, 0) }, ErrPointer},
		{"signature", func(_ *lowMem, tab []byte) { tab[0] = 'X'; fixSum(tab) }, ErrTableSignature},
		{"table checksum", func(_ *lowMem, tab []byte) { tab[50]++ }, ErrTableChecksum},
		{"short length", func(_ *lowMem, tab []byte) { tab[4], tab[5] = 43, 0; fixSum(tab[:43]) }, ErrTableLength},
		{"unknown entry", func(_ *lowMem, tab []byte) { tab[headerLen] = 9; fixSum(tab) }, ErrEntry},
		{"cut entry", func(_ *lowMem, tab []byte) { tab[4] -= 4; fixSum(tab[:len(tab)-4]) }, ErrEntry},
	} {
		l := newLowMem()
		l.pointer(0x9FC00, 0x9FC10, 0)
		tab := l.table(0x9FC10, cpuEntry(0, cpuEnabled|cpuBootstrap), busEntry(0), ioapicEntry(2, ioapicEnabled, defaultIOAPIC),
			intEntry(entryIOInt, 4, 2), cpuEntry(1, cpuEnabled))
		c.break_(l, tab)
		if _, e, _, _ := l.read(4, 4); e != c.want {
			t.Errorf("%s: %v, want %v", c.name, e, c.want)
		}
	}
}

// TestRandomTables: mutated tables never make Read read outside the
// table or report more than it stored.
func TestRandomTables(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	l := newLowMem()
	for i := 0; i < 20000; i++ {
		clear(l.buf[0x9F000:0xA0000])
		firecracker(l, 1+rng.Intn(8))
		tab := l.buf[0x9FC10:0xA0000]
		n := int(binary.LittleEndian.Uint16(tab[4:]))
		for k := rng.Intn(6); k >= 0; k-- {
			tab[rng.Intn(n+8)] = byte(rng.Intn(256))
		}
		if rng.Intn(2) == 0 {
			fixSum(tab[:min(int(binary.LittleEndian.Uint16(tab[4:])), len(tab))])
		}
		r, e, cpus, ios := l.read(4, 2)
		if e == OK && (r.CPUs > 4 || r.IOAPICs > 2 || len(cpus) != r.CPUs || len(ios) != r.IOAPICs) {
			t.Fatalf("OK with %+v", r)
		}
	}
}

func TestErrorStrings(t *testing.T) {
	for e := OK; e <= ErrTooManyIOAPICs; e++ {
		if e.String() == "" || e.String() == Error(200).String() {
			t.Errorf("error %d has no text", e)
		}
	}
}
