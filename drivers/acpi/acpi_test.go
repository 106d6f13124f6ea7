package acpi

import (
	"encoding/binary"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// image lays out firmware tables at made-up physical addresses from base.
type image struct {
	base uintptr
	buf  []byte
}

// add places b at the next 16-byte boundary and returns its physical address.
func (im *image) add(b []byte) uintptr {
	for len(im.buf)%16 != 0 {
		im.buf = append(im.buf, 0)
	}
	a := im.base + uintptr(len(im.buf))
	im.buf = append(im.buf, b...)
	return a
}

// bytes is the image's view of the table at physical address a, for
// corrupting it after it was built.
func (im *image) bytes(a uintptr) []byte { return im.buf[a-im.base:] }

// load copies the image into fresh memory that ends at an inaccessible page,
// so a read past the last table faults the test, and returns the offset
// that turns the image's physical addresses into addresses of that copy.
func (im *image) load(t *testing.T) uintptr {
	t.Helper()
	pg := os.Getpagesize()
	size := (len(im.buf) + pg - 1) / pg * pg
	m, err := syscall.Mmap(-1, 0, size+pg, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(m) })
	if err := syscall.Mprotect(m[size:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	start := size - len(im.buf)
	copy(m[start:], im.buf)
	return uintptr(unsafe.Pointer(&m[start])) - im.base
}

// fix sets b[i] so that the bytes of b sum to zero.
func fix(b []byte, i int) {
	b[i] = 0
	var s byte
	for _, c := range b {
		s += c
	}
	b[i] = -s
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// sdt is a table with a standard header and a correct checksum.
func sdt(sig string, rev byte, body []byte) []byte {
	b := cat([]byte(sig), le32(uint32(hdrLen+len(body))), []byte{rev, 0}, []byte("YOLK  YOLKTEST"), le32(1), []byte("TEST"), le32(1), body)
	fix(b, 9)
	return b
}

// rsdp is an RSDP of revision rev (an XSDP if rev >= 2) with both checksums.
func rsdp(rev byte, rsdt uint32, xsdt uint64) []byte {
	b := cat([]byte("RSD PTR "), []byte{0}, []byte("YOLK  "), []byte{rev}, le32(rsdt))
	fix(b[:rsdpLen], 8)
	if rev >= 2 {
		b = cat(b, le32(xsdpLen), le64(xsdt), []byte{0, 0, 0, 0})
		fix(b, 32)
	}
	return b
}

func rsdt(tables ...uintptr) []byte {
	var body []byte
	for _, t := range tables {
		body = append(body, le32(uint32(t))...)
	}
	return sdt("RSDT", 1, body)
}

func xsdt(tables ...uintptr) []byte {
	var body []byte
	for _, t := range tables {
		body = append(body, le64(uint64(t))...)
	}
	return sdt("XSDT", 1, body)
}

func madt(rev byte, lapic, flags uint32, entries ...[]byte) []byte {
	return sdt("APIC", rev, cat(le32(lapic), le32(flags), cat(entries...)))
}

func lapicEntry(uid, id byte, flags uint32) []byte { return cat([]byte{0, 8, uid, id}, le32(flags)) }

func x2apicEntry(id, flags, uid uint32) []byte {
	return cat([]byte{9, 16, 0, 0}, le32(id), le32(flags), le32(uid))
}

func ioapicEntry(id byte, addr, gsi uint32) []byte {
	return cat([]byte{1, 12, id, 0}, le32(addr), le32(gsi))
}

func overrideEntry(addr uint64) []byte { return cat([]byte{5, 12, 0, 0}, le64(addr)) }

// isoEntry is an Interrupt Source Override (type 2), which ReadMADT skips.
func isoEntry(src byte, gsi uint32) []byte {
	return cat([]byte{2, 10, 0, src}, le32(gsi), []byte{0, 0})
}

const lapicBase = 0xfee00000

// pc is a PC-like image: RSDP revision 0, an RSDT listing a FACP and the
// MADT, which comes last so that the image ends with it.
type pc struct {
	*image
	rsdp, facp, rsdt, madt uintptr
}

func machine(madtTable []byte) pc {
	m := pc{image: &image{base: 0xe0000}}
	m.rsdp = m.add(make([]byte, rsdpLen))
	m.facp = m.add(sdt("FACP", 6, make([]byte, 20)))
	m.rsdt = m.add(make([]byte, hdrLen+8))
	m.madt = m.add(madtTable)
	copy(m.bytes(m.rsdt), rsdt(m.facp, m.madt))
	copy(m.bytes(m.rsdp), rsdp(0, uint32(m.rsdt), 0))
	return m
}

func read(t *testing.T, im *image, rp uintptr, ncpu, nio int) (MADT, Error, []CPU, []IOAPIC) {
	t.Helper()
	cpus, ios := make([]CPU, ncpu), make([]IOAPIC, nio)
	r, e := ReadMADT(rp, im.load(t), cpus, ios)
	return r, e, cpus[:min(r.CPUs, ncpu)], ios[:min(r.IOAPICs, nio)]
}

func TestRSDT(t *testing.T) {
	m := machine(madt(3, lapicBase, flagPCATCompat,
		lapicEntry(0, 0, FlagEnabled),
		ioapicEntry(2, 0xfec00000, 0),
		isoEntry(0, 2),
		lapicEntry(1, 2, FlagEnabled),
		lapicEntry(2, 4, 0), // disabled: not started, not counted
		lapicEntry(3, 6, FlagEnabled|1<<7),
		ioapicEntry(3, 0xfec01000, 24),
	))
	r, e, cpus, ios := read(t, m.image, m.rsdp, 8, 4)
	if e != OK {
		t.Fatalf("ReadMADT: %v", e)
	}
	want := MADT{LAPICAddr: lapicBase, PCATCompat: true, CPUs: 3, Disabled: 1, IOAPICs: 2}
	if r != want {
		t.Errorf("got %+v, want %+v", r, want)
	}
	wantCPUs := []CPU{{APICID: 0, UID: 0, Flags: 1}, {APICID: 2, UID: 1, Flags: 1}, {APICID: 6, UID: 3, Flags: 0x81}}
	if !reflect.DeepEqual(cpus, wantCPUs) {
		t.Errorf("CPUs %+v, want %+v", cpus, wantCPUs)
	}
	wantIO := []IOAPIC{{2, 0xfec00000, 0}, {3, 0xfec01000, 24}}
	if !reflect.DeepEqual(ios, wantIO) {
		t.Errorf("IO APICs %+v, want %+v", ios, wantIO)
	}
	if a, e := Find(m.rsdp, m.load(t), "FACP"); e != OK || a != m.facp {
		t.Errorf(`Find("FACP") = %#x, %v; want %#x, ok`, a, e, m.facp)
	}
}

// TestXSDT has an RSDP of revision 2 whose RSDT leads to another MADT: the
// XSDT must win, and its 64-bit entries must be read whole (in the second
// run the tables sit above 4 GiB, where there is no RSDT).
func TestXSDT(t *testing.T) {
	for _, base := range []uintptr{0xe0000, 0x1_0000_0000} {
		im := &image{base: base}
		rp := im.add(make([]byte, xsdpLen))
		var decoy uintptr
		if base < 1<<32 {
			decoy = im.add(rsdt(im.add(madt(5, lapicBase, 0, lapicEntry(0, 0, FlagEnabled)))))
		}
		mt := im.add(madt(5, lapicBase, 0,
			x2apicEntry(0x100, FlagEnabled, 7),
			x2apicEntry(0x101, 0, 8),                 // disabled
			x2apicEntry(0x102, FlagOnlineCapable, 9), // hot-pluggable: usable
			lapicEntry(4, 3, FlagEnabled|FlagOnlineCapable),
		))
		xt := im.add(xsdt(0, mt)) // a null entry is skipped
		copy(im.bytes(rp), rsdp(2, uint32(decoy), uint64(xt)))
		r, e, cpus, _ := read(t, im, rp, 8, 0)
		if e != OK {
			t.Fatalf("base %#x: ReadMADT: %v", base, e)
		}
		want := []CPU{
			{APICID: 0x100, UID: 7, Flags: FlagEnabled, X2APIC: true},
			{APICID: 0x102, UID: 9, Flags: FlagOnlineCapable, X2APIC: true},
			{APICID: 3, UID: 4, Flags: FlagEnabled | FlagOnlineCapable},
		}
		if !reflect.DeepEqual(cpus, want) || r.Disabled != 1 || r.PCATCompat {
			t.Errorf("base %#x: got %+v %+v, want %+v, 1 disabled", base, r, cpus, want)
		}
	}
}

// TestTopOfAddressSpace: a table whose length would carry its end past 2^64
// is refused before it is read (the image ends with it, so reading on
// would fault the test).
func TestTopOfAddressSpace(t *testing.T) {
	im := &image{base: ^uintptr(0) - 0xfff}
	rp := im.add(make([]byte, xsdpLen))
	xt := im.add(make([]byte, hdrLen+8))
	mt := im.add(madt(5, lapicBase, 0, lapicEntry(0, 0, FlagEnabled)))
	b := im.bytes(mt)
	binary.LittleEndian.PutUint32(b[4:], 0x2000)
	fix(b, 9)
	copy(im.bytes(xt), xsdt(mt))
	copy(im.bytes(rp), rsdp(2, 0, uint64(xt)))
	if _, e := ReadMADT(rp, im.load(t), nil, nil); e != ErrTableLength {
		t.Errorf("got %v, want %v", e, ErrTableLength)
	}
}

// TestOnlineCapableNeedsRevision5: before ACPI 6.3 flag bit 1 was reserved.
func TestOnlineCapableNeedsRevision5(t *testing.T) {
	for rev, usable := range map[byte]int{4: 1, 5: 2} {
		m := machine(madt(rev, lapicBase, 0, lapicEntry(0, 0, FlagEnabled), x2apicEntry(300, FlagOnlineCapable, 1)))
		r, e, _, _ := read(t, m.image, m.rsdp, 4, 0)
		if e != OK || r.CPUs != usable || r.Disabled != 2-usable {
			t.Errorf("MADT revision %d: %+v, %v; want %d usable", rev, r, e, usable)
		}
	}
}

func TestLocalAPICAddressOverride(t *testing.T) {
	m := machine(madt(5, lapicBase, 0, lapicEntry(0, 0, FlagEnabled), overrideEntry(0x1_2345_6000)))
	r, e, _, _ := read(t, m.image, m.rsdp, 1, 0)
	if e != OK || r.LAPICAddr != 0x1_2345_6000 {
		t.Errorf("LAPICAddr %#x, %v; want 0x123456000", r.LAPICAddr, e)
	}
}

// TestTooMany: the arrays fill up, the counts stay exact, and the error says
// so.
func TestTooMany(t *testing.T) {
	var entries [][]byte
	for i := range 70 {
		if i%10 == 0 {
			entries = append(entries, ioapicEntry(byte(i/10), 0xfec00000+uint32(i)*0x100, uint32(i)*24))
		}
		if i < 40 {
			entries = append(entries, lapicEntry(byte(i), byte(i), FlagEnabled))
		} else {
			entries = append(entries, x2apicEntry(uint32(i)<<4, FlagEnabled, uint32(i)))
		}
	}
	m := machine(madt(5, lapicBase, 0, entries...))
	r, e, cpus, ios := read(t, m.image, m.rsdp, 64, 8)
	if e != ErrTooManyCPUs || r.CPUs != 70 || len(cpus) != 64 || r.IOAPICs != 7 || len(ios) != 7 {
		t.Fatalf("%+v, %v; want 70 CPUs (64 stored), 7 IO APICs, %v", r, e, ErrTooManyCPUs)
	}
	for i, c := range cpus {
		id := uint32(i)
		if i >= 40 {
			id <<= 4
		}
		if c.APICID != id || c.UID != uint32(i) || c.X2APIC != (i >= 40) {
			t.Errorf("cpus[%d] = %+v, want APIC ID %#x, UID %d", i, c, id, i)
		}
	}
	if r, e, _, _ := read(t, m.image, m.rsdp, 70, 7); e != OK || r.CPUs != 70 {
		t.Errorf("arrays just big enough: %+v, %v; want 70 CPUs, ok", r, e)
	}
	if r, e, _, _ := read(t, m.image, m.rsdp, 69, 7); e != ErrTooManyCPUs || r.CPUs != 70 {
		t.Errorf("one CPU short: %+v, %v; want 70 CPUs, %v", r, e, ErrTooManyCPUs)
	}
	if r, e, _, ios := read(t, m.image, m.rsdp, 70, 3); e != ErrTooManyIOAPICs || r.IOAPICs != 7 || ios[2].GSIBase != 480 {
		t.Errorf("%+v, %v, %+v; want 7 IO APICs (3 stored), %v", r, e, ios, ErrTooManyIOAPICs)
	}
	if r, e := ReadMADT(m.rsdp, m.load(t), nil, nil); e != ErrTooManyCPUs || r.CPUs != 70 {
		t.Errorf("no arrays: %+v, %v; want 70 CPUs, %v", r, e, ErrTooManyCPUs)
	}
}

// TestBroken corrupts one thing at a time in a valid machine.
func TestBroken(t *testing.T) {
	good := madt(5, lapicBase, 0, lapicEntry(0, 0, FlagEnabled), ioapicEntry(1, 0xfec00000, 0))
	setLen := func(b []byte, n uint32) []byte {
		binary.LittleEndian.PutUint32(b[4:], n)
		fix(b, 9)
		return b
	}
	for _, tc := range []struct {
		name    string
		madt    []byte
		corrupt func(m *pc)
		want    Error
	}{
		{"no RSDP", good, func(m *pc) { m.rsdp = 0 }, ErrNoRSDP},
		{"RSDP signature", good, func(m *pc) { m.bytes(m.rsdp)[3] = 'p' }, ErrRSDPSignature},
		{"RSDP checksum", good, func(m *pc) { m.bytes(m.rsdp)[8]++ }, ErrRSDPChecksum},
		{"RSDT signature", good, func(m *pc) {
			b := m.bytes(m.rsdt)[:hdrLen+8]
			b[0] = 'X'
			fix(b, 9)
		}, ErrRootSignature},
		{"RSDT checksum", good, func(m *pc) { m.bytes(m.rsdt)[hdrLen]++ }, ErrTableChecksum},
		{"RSDT partial entry", good, func(m *pc) { setLen(m.bytes(m.rsdt)[:hdrLen+7], hdrLen+7) }, ErrTableLength},
		{"RSDT shorter than a header", good, func(m *pc) { setLen(m.bytes(m.rsdt)[:hdrLen+8], hdrLen-4) }, ErrTableLength},
		{"MADT checksum", good, func(m *pc) { m.bytes(m.madt)[madtHdrLen+3]++ }, ErrTableChecksum},
		{"no MADT", good, func(m *pc) { copy(m.bytes(m.madt), "APIX") }, ErrNotFound},
		// Lengths are checked before the bytes are read: the image ends
		// with the MADT, so reading past it would fault the test.
		{"MADT longer than 1 MiB", setLen(madt(5, lapicBase, 0), maxTableLen+1), nil, ErrTableLength},
		{"MADT length 4 GiB", setLen(madt(5, lapicBase, 0), 0xffffffff), nil, ErrTableLength},
		{"MADT shorter than a header", setLen(madt(5, lapicBase, 0), hdrLen-1), nil, ErrTableLength},
		{"MADT without its fields", sdt("APIC", 5, make([]byte, 4)), nil, ErrTableLength},
		{"entry of length 0", madt(5, lapicBase, 0, lapicEntry(0, 0, 1), []byte{0x42, 0}), nil, ErrMADTEntry},
		{"entry past the end", madt(5, lapicBase, 0, lapicEntry(0, 0, 1), []byte{0x42, 3}), nil, ErrMADTEntry},
		{"half an entry header", madt(5, lapicBase, 0, lapicEntry(0, 0, 1), []byte{0}), nil, ErrMADTEntry},
		{"short local APIC entry", madt(5, lapicBase, 0, []byte{0, 6, 0, 0, 1, 0}), nil, ErrMADTEntry},
		{"short IO APIC entry", madt(5, lapicBase, 0, []byte{1, 8, 0, 0, 0, 0, 0xc0, 0xfe}), nil, ErrMADTEntry},
		{"short override entry", madt(5, lapicBase, 0, []byte{5, 8, 0, 0, 0, 0, 0xe0, 0xfe}), nil, ErrMADTEntry},
		{"short x2APIC entry", madt(5, lapicBase, 0, cat([]byte{9, 12, 0, 0}, le32(1), le32(1))), nil, ErrMADTEntry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := machine(tc.madt)
			if tc.corrupt != nil {
				tc.corrupt(&m)
			}
			if _, e := ReadMADT(m.rsdp, m.load(t), make([]CPU, 4), nil); e != tc.want {
				t.Errorf("got %v, want %v", e, tc.want)
			}
		})
	}
}

func TestBrokenXSDP(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(b []byte)
		want    Error
	}{
		{"extended checksum", func(b []byte) { b[33] = 1 }, ErrRSDPChecksum},
		{"length below 36", func(b []byte) { b[20] = 35; fix(b, 32) }, ErrRSDPLength},
		{"length absurd", func(b []byte) { b[22] = 1; fix(b, 32) }, ErrRSDPLength},
		{"XSDT signature", func(b []byte) {}, ErrRootSignature},
	} {
		im := &image{base: 0x80000}
		rp := im.add(make([]byte, xsdpLen))
		rt := im.add(rsdt(im.add(madt(5, lapicBase, 0, lapicEntry(0, 0, FlagEnabled)))))
		b := rsdp(2, 0, uint64(rt)) // an RSDT where the XSDT should be
		tc.corrupt(b)
		copy(im.bytes(rp), b)
		if _, e := ReadMADT(rp, im.load(t), nil, nil); e != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, e, tc.want)
		}
	}
}

func TestErrorStrings(t *testing.T) {
	seen := map[string]bool{}
	for e := OK; e <= ErrTooManyIOAPICs; e++ {
		s := e.String()
		if s == "" || seen[s] || s == Error(200).String() {
			t.Errorf("Error(%d).String() = %q: empty, repeated or unknown", e, s)
		}
		seen[s] = true
	}
}

// TestHostMADT parses the host's own MADT, behind a synthetic RSDP and
// RSDT, and checks that every CPU Linux runs here is among the usable ones.
func TestHostMADT(t *testing.T) {
	tbl, err := os.ReadFile("/sys/firmware/acpi/tables/APIC")
	if err != nil {
		t.Skipf("no host MADT: %v", err)
	}
	m := machine(tbl)
	r, e, cpus, ios := read(t, m.image, m.rsdp, 4096, 64)
	if e != OK {
		t.Fatalf("host MADT: %v", e)
	}
	t.Logf("host MADT: %+v\nCPUs %+v\nIO APICs %+v", r, cpus, ios)
	if r.CPUs == 0 || r.LAPICAddr == 0 {
		t.Errorf("no CPUs or no local APIC address: %+v", r)
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skipf("cannot cross-check: %v", err)
	}
	online := 0
	for line := range strings.Lines(string(info)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "apicid" {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
		if err != nil {
			t.Fatalf("/proc/cpuinfo: %q", line)
		}
		online++
		found := false
		for _, c := range cpus {
			found = found || c.APICID == uint32(id)
		}
		if !found {
			t.Errorf("Linux runs a CPU with APIC ID %d, which the MADT does not list as usable", id)
		}
	}
	if online > r.CPUs {
		t.Errorf("Linux runs %d CPUs, the MADT lists %d usable", online, r.CPUs)
	}
}
