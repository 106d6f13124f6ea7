package boot_test

import (
	"encoding/binary"
	"syscall"
	"testing"
	"unsafe"

	"yolk/boot"
	_ "yolk/kernel" // the entry code jumps to the kernel's start64: the test binary links it
)

// lowBase is where the test builds its Multiboot2 information and
// modules: below 4 GiB, as a loader does (module tags hold 32-bit
// addresses).
const lowBase = 0x30000000

// lowMem maps n bytes of anonymous memory at lowBase and returns it.
func lowMem(t *testing.T, n uintptr) []byte {
	t.Helper()
	const mapFixedNoReplace = 0x100000 // MAP_FIXED_NOREPLACE
	got, _, e := syscall.Syscall6(syscall.SYS_MMAP, lowBase, n, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|mapFixedNoReplace, ^uintptr(0), 0)
	if e != 0 || got != lowBase {
		t.Fatalf("mapping test memory at %#x: %v (got %#x)", lowBase, e, got)
	}
	t.Cleanup(func() { syscall.Syscall(syscall.SYS_MUNMAP, lowBase, n, 0) })
	return unsafe.Slice(*(**byte)(unsafe.Pointer(&got)), n)
}

// mbi builds Multiboot2 information in b: 8-byte aligned tags after the
// 8-byte header, ending with the end tag.
type mbi struct {
	b   []byte
	off int
}

func (m *mbi) tag(typ uint32, payload []byte) {
	le := binary.LittleEndian
	le.PutUint32(m.b[m.off:], typ)
	le.PutUint32(m.b[m.off+4:], uint32(8+len(payload)))
	copy(m.b[m.off+8:], payload)
	m.off = (m.off + 8 + len(payload) + 7) &^ 7
}

func (m *mbi) end() {
	m.tag(0, nil)
	binary.LittleEndian.PutUint32(m.b, uint32(m.off))
}

func module(start, end uint32, name string) []byte {
	p := binary.LittleEndian.AppendUint32(nil, start)
	p = binary.LittleEndian.AppendUint32(p, end)
	return append(append(p, name...), 0)
}

func mmapTag(regions ...boot.MemRegion) []byte {
	le := binary.LittleEndian
	p := le.AppendUint32(nil, 24) // entry size
	p = le.AppendUint32(p, 0)     // entry version
	for _, r := range regions {
		p = le.AppendUint64(p, r.Addr)
		p = le.AppendUint64(p, r.Size)
		p = le.AppendUint32(p, r.Type)
		p = le.AppendUint32(p, 0)
	}
	return p
}

// bytesAt is the n bytes at address p (memory the test owns or boot's
// arrays).
func bytesAt(p uintptr, n int) []byte {
	return unsafe.Slice(*(**byte)(unsafe.Pointer(&p)), n)
}

// cstring is the NUL-terminated string at p.
// fbTag is a framebuffer tag's payload (without color information).
func fbTag(addr uint64, pitch, width, height uint32, bpp, typ uint8) []byte {
	le := binary.LittleEndian
	p := le.AppendUint64(nil, addr)
	p = le.AppendUint32(p, pitch)
	p = le.AppendUint32(p, width)
	p = le.AppendUint32(p, height)
	return append(p, bpp, typ, 0, 0)
}

func cstring(p uintptr) string {
	n := 0
	for bytesAt(p, n+1)[n] != 0 {
		n++
	}
	return string(bytesAt(p, n))
}

// TestParseMultiboot2 decodes what GRUB passes for a PC image: the memory
// map (adjacent entries of one type merged), the command line from the
// yolk.cmdline module rather than the loader's, the boot archive module,
// the ACPI 2.0 RSDP preferred to 1.0, an EGA text screen (not a graphics
// framebuffer); and everything the kernel reads
// later is copied out of the loader's memory.
func TestParseMultiboot2(t *testing.T) {
	mem := lowMem(t, 1<<16)
	const cmdAt, initrdAt = lowBase + 0x4000, lowBase + 0x8000
	copy(mem[0x4000:], `A="x y" -- arg`)
	copy(mem[0x8000:], "archive")

	rsdp1 := append([]byte("RSD PTR v1"), make([]byte, 10)...)
	rsdp2 := append([]byte("RSD PTR v2"), make([]byte, 26)...)
	m := &mbi{b: mem, off: 8}
	m.tag(1, []byte("loader words\x00"))
	m.tag(3, module(initrdAt, initrdAt+7, "yolk.initrd"))
	m.tag(14, rsdp1)
	m.tag(6, mmapTag(
		boot.MemRegion{Addr: 0, Size: 0x9fc00, Type: 1},
		boot.MemRegion{Addr: 0x9fc00, Size: 0x400, Type: 2},
		boot.MemRegion{Addr: 0x100000, Size: 0x700000, Type: 1},
		boot.MemRegion{Addr: 0x800000, Size: 0x800000, Type: 1}, // adjacent: merged
		boot.MemRegion{Addr: 0x1000000, Size: 0x1000, Type: 3},
	))
	m.tag(3, module(cmdAt, cmdAt+14, "yolk.cmdline"))
	m.tag(15, rsdp2)
	m.tag(99, []byte("unknown tags are skipped"))
	m.tag(8, fbTag(0xB8000, 160, 80, 25, 16, 2))
	m.end()

	var in boot.Info
	if !boot.ParseMultiboot2(lowBase, &in) {
		t.Fatal("ParseMultiboot2 = false")
	}
	want := []boot.MemRegion{{Addr: 0, Size: 0x9fc00, Type: 1}, {Addr: 0x9fc00, Size: 0x400, Type: 2},
		{Addr: 0x100000, Size: 0xf00000, Type: 1}, {Addr: 0x1000000, Size: 0x1000, Type: 3}}
	if in.MemEntries != len(want) {
		t.Fatalf("%d memory regions, want %d", in.MemEntries, len(want))
	}
	for i, w := range want {
		if r := in.Region(i); r != w {
			t.Errorf("region %d = %+v, want %+v", i, r, w)
		}
	}
	if in.Module != initrdAt || in.ModuleSize != 7 {
		t.Errorf("module %#x+%d, want the yolk.initrd module at %#x+7", in.Module, in.ModuleSize, initrdAt)
	}
	inLoader := func(a uintptr) bool { return a >= lowBase && a < lowBase+uintptr(len(mem)) }
	if inLoader(in.Cmdline) || inLoader(in.RSDP) || inLoader(in.MemMap) {
		t.Errorf("Info points into the loader's memory: cmdline %#x RSDP %#x map %#x", in.Cmdline, in.RSDP, in.MemMap)
	}
	if got := cstring(in.Cmdline); got != `A="x y" -- arg` {
		t.Errorf("command line %q, want the yolk.cmdline module's", got)
	}
	if got := string(bytesAt(in.RSDP, len(rsdp2))); got != string(rsdp2) {
		t.Errorf("RSDP %q, want the ACPI 2.0 tag's", got)
	}
	if in.Text != 0xB8000 || in.TextCols != 80 || in.TextRows != 25 || in.TextPitch != 160 {
		t.Errorf("text screen %#x %dx%d pitch %d, want 0xb8000 80x25 pitch 160", in.Text, in.TextCols, in.TextRows, in.TextPitch)
	}

	// Without the module, the loader's command line; the first other
	// module is the boot archive; ACPI 1.0 alone is used.
	clear(mem[:0x4000])
	m = &mbi{b: mem, off: 8}
	m.tag(6, mmapTag(boot.MemRegion{Addr: 0x100000, Size: 0x100000, Type: 1}))
	m.tag(1, []byte("x y\x00"))
	m.tag(3, module(initrdAt, initrdAt+3, "other"))
	m.tag(14, rsdp1)
	m.tag(8, fbTag(0xFD000000, 4096, 1024, 768, 32, 1)) // a graphics framebuffer: not text
	m.end()
	if !boot.ParseMultiboot2(lowBase, &in) {
		t.Fatal("ParseMultiboot2 = false")
	}
	if got := cstring(in.Cmdline); got != "x y" {
		t.Errorf("command line %q, want the loader's", got)
	}
	if in.Module != initrdAt || in.ModuleSize != 3 || in.MemEntries != 1 {
		t.Errorf("module %#x+%d, %d regions", in.Module, in.ModuleSize, in.MemEntries)
	}
	if got := string(bytesAt(in.RSDP, len(rsdp1))); got != string(rsdp1) {
		t.Errorf("RSDP %q, want the ACPI 1.0 tag's", got)
	}
	if in.Text != 0 {
		t.Errorf("a graphics framebuffer taken for a text screen at %#x", in.Text)
	}

	// No memory map: refused.
	clear(mem[:0x4000])
	m = &mbi{b: mem, off: 8}
	m.tag(1, []byte("x\x00"))
	m.end()
	if boot.ParseMultiboot2(lowBase, &in) {
		t.Error("information without a memory map accepted")
	}
}
