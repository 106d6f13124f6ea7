package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"yolk/drivers/fdt"
)

func TestFATDiskRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("yolk"), 3<<20/4+123) // many clusters, a partial last one
	files := []FATFile{
		{Name: "kernel8.img", Data: big},
		{Name: "config.txt", Data: []byte("arm_64bit=1\n")},
		{Name: "empty", Data: nil},
		{Name: "fixup.dat", Data: []byte{0, 1, 2}},
	}
	disk, err := FATDisk("yolk", files)
	if err != nil {
		t.Fatal(err)
	}
	if len(disk)%(1<<20) != 0 || len(disk) < 64<<20 {
		t.Errorf("disk of %d bytes: want whole MiB, at least 64", len(disk))
	}
	le := binary.LittleEndian
	pe := disk[446:462]
	if disk[510] != 0x55 || disk[511] != 0xAA || pe[4] != 0x0E || le.Uint32(pe[8:]) != 2048 ||
		int(le.Uint32(pe[8:])+le.Uint32(pe[12:]))*512 != len(disk) {
		t.Errorf("partition entry % x: want type 0x0e from sector 2048 to the end", pe)
	}
	for _, other := range disk[462:510] {
		if other != 0 {
			t.Fatal("more than one partition entry")
		}
	}
	bs := disk[2048*512:]
	if string(bs[54:62]) != "FAT16   " || bs[510] != 0x55 || le.Uint16(bs[11:]) != 512 || le.Uint32(bs[28:]) != 2048 {
		t.Errorf("boot sector: type %q, bytes/sector %d, hidden %d", bs[54:62], le.Uint16(bs[11:]), le.Uint32(bs[28:]))
	}
	// FAT16 by the specification's rule: 4085 to 65524 clusters.
	spc, fatSz, total := int(bs[13]), int(le.Uint16(bs[22:])), int(le.Uint16(bs[19:]))
	if total == 0 {
		total = int(le.Uint32(bs[32:]))
	}
	clusters := (total - 1 - 2*fatSz - 32) / spc
	if clusters < 4085 || clusters > 65524 {
		t.Errorf("%d clusters: not FAT16", clusters)
	}
	got, err := FATFiles(disk)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(files) {
		t.Fatalf("%d files back, want %d", len(got), len(files))
	}
	for i := range files {
		if got[i].Name != files[i].Name || !bytes.Equal(got[i].Data, files[i].Data) {
			t.Errorf("file %d: %q (%d bytes), want %q (%d bytes)", i, got[i].Name, len(got[i].Data), files[i].Name, len(files[i].Data))
		}
	}
	for _, bad := range []string{"yolk-rpi3.dtb", "Kernel8.img", "a.b.c", "toolongname.txt", ""} {
		if _, err := FATDisk("x", []FATFile{{Name: bad}}); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	if _, err := FATFiles(make([]byte, 4096)); err == nil {
		t.Error("a disk without an MBR read")
	}
}

func TestRPi3DeviceTree(t *testing.T) {
	b := RPi3DeviceTree("A=1 -- x")
	f, e := fdt.Open(uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != fdt.OK {
		t.Fatalf("Open: %v", e)
	}
	var ram [4]fdt.Range
	if n, e := f.Memory(ram[:]); e != fdt.OK || n != 1 || ram[0] != (fdt.Range{Base: 0, Size: 0x3c000000}) {
		t.Errorf("memory %v (%d, %v)", ram[:1], n, e)
	}
	var rsv [4]fdt.Range
	if n, e := f.Reserved(rsv[:]); e != fdt.OK || n != 2 || rsv[0] != (fdt.Range{Base: 0, Size: 0x1000}) || rsv[1] != (fdt.Range{Base: 0x3c000000, Size: 0x4000000}) {
		t.Errorf("reserved %v (%d, %v)", rsv[:2], n, e)
	}
	var cpus [8]fdt.CPU
	n, e := f.CPUs(cpus[:])
	if e != fdt.OK || n != 4 {
		t.Fatalf("%d CPUs, %v", n, e)
	}
	for i, c := range cpus[:4] {
		p, e := f.Prop(c.Node, "cpu-release-addr")
		a, e2 := f.Cells(p, 0, 2)
		if c.MPIDR != uint64(i) || e != fdt.OK || e2 != fdt.OK || a != 0xd8+8*uint64(i) {
			t.Errorf("cpu %d: MPIDR %#x, release address %#x", i, c.MPIDR, a)
		}
	}
	if u, e := f.PL011(); e != fdt.OK || u.Base != 0x3f201000 {
		t.Errorf("PL011 at %#x (%v)", u.Base, e)
	}
	chosen, _, e := f.Find("/chosen")
	if p, e2 := f.Prop(chosen, "bootargs"); e != fdt.OK || e2 != fdt.OK || !f.StringIs(p, "A=1 -- x") {
		t.Error("no /chosen/bootargs with the command line")
	}
}

func TestArmBranch(t *testing.T) {
	for _, c := range []struct {
		pc, target uint64
		want       uint32
	}{
		{0x80000, 0x80004, 0x14000001},
		{0x80000, 0x80000 + 0x20ab30, 0x14000000 | 0x20ab30/4},
		{0x80000, 0x7fffc, 0x17ffffff},
	} {
		if got := armBranch(c.pc, c.target); got != c.want {
			t.Errorf("B %#x at %#x: %#08x, want %#08x", c.target, c.pc, got, c.want)
		}
	}
}

// The card from a real build: kernel8.img is the image's memory from
// 0x80000 with a branch to the Pi entry in its first word, the FAT image
// holds the directory's files, the firmware comes from -firmware.
func TestBuildRPi3(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "card")
	res, err := Build(t.Context(), "yolk/examples/hello", Options{Output: filepath.Join(out, "kernel8.elf"), Arch: "arm64", Board: "rpi3", Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	fw := filepath.Join(dir, "fw")
	os.Mkdir(fw, 0o755)
	for _, name := range RPi3Firmware {
		os.WriteFile(filepath.Join(fw, name), []byte("firmware "+name), 0o644)
	}
	card, err := WriteRPi3(res.Output, out, RPi3Options{Cmdline: "-- hello", Firmware: fw})
	if err != nil {
		t.Fatal(err)
	}
	if len(card.MissingFirmware) != 0 || len(card.Files) != 7 {
		t.Errorf("files %v, missing %v", card.Files, card.MissingFirmware)
	}

	data, _ := os.ReadFile(res.Output)
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	_, entry, err := findEntrySymbol(f, []string{RPi3EntrySymbol})
	if err != nil {
		t.Fatal(err)
	}
	if f.Entry != entry {
		t.Errorf("e_entry %#x, want %s at %#x", f.Entry, RPi3EntrySymbol, entry)
	}
	img, _ := os.ReadFile(filepath.Join(out, "kernel8.img"))
	if w := binary.LittleEndian.Uint32(img); w != armBranch(RPi3LoadAddr, entry) {
		t.Errorf("first word %#08x, want B %#x", w, entry)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Filesz == 0 {
			continue
		}
		seg := data[p.Off : p.Off+p.Filesz]
		at := img[p.Paddr-RPi3LoadAddr:][:p.Filesz]
		if p.Off == 0 {
			seg, at = seg[4:], at[4:]
		}
		if !bytes.Equal(seg, at) {
			t.Errorf("segment at %#x differs in kernel8.img", p.Paddr)
		}
		if p.Paddr+p.Memsz > card.ImageEnd {
			t.Errorf("segment at %#x ends after ImageEnd %#x", p.Paddr, card.ImageEnd)
		}
	}

	disk, _ := os.ReadFile(card.Disk)
	files, err := FATFiles(disk)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, file := range files {
		names = append(names, file.Name)
		want, _ := os.ReadFile(filepath.Join(out, file.Name))
		if !bytes.Equal(file.Data, want) {
			t.Errorf("%s on the card differs from %s", file.Name, filepath.Join(out, file.Name))
		}
	}
	if got := strings.Join(names, " "); got != "kernel8.img config.txt cmdline.txt yolk.dtb bootcode.bin start.elf fixup.dat" {
		t.Errorf("card holds %s", got)
	}
	cfg, _ := os.ReadFile(filepath.Join(out, "config.txt"))
	for _, line := range []string{"arm_64bit=1", "kernel=kernel8.img", "kernel_address=0x80000", "device_tree=yolk.dtb", "enable_uart=1"} {
		if !strings.Contains(string(cfg), line+"\n") {
			t.Errorf("config.txt lacks %s", line)
		}
	}
	if c, _ := os.ReadFile(filepath.Join(out, "cmdline.txt")); string(c) != "yolk.start -- hello\n" {
		t.Errorf("cmdline.txt %q", c)
	}

	// An explicit firmware directory must hold every file.
	os.Remove(filepath.Join(fw, "start.elf"))
	if _, err := WriteRPi3(res.Output, out, RPi3Options{Firmware: fw}); err == nil || !strings.Contains(err.Error(), "start.elf") {
		t.Errorf("missing start.elf in -firmware: %v", err)
	}
	// Without one, and without Debian's: the card without firmware, and
	// the files named.
	if _, err := os.Stat(RPi3FirmwareDir); err != nil {
		c, err := WriteRPi3(res.Output, out, RPi3Options{})
		if err != nil || strings.Join(c.MissingFirmware, " ") != "bootcode.bin start.elf fixup.dat" {
			t.Errorf("no firmware: missing %v, %v", c.MissingFirmware, err)
		}
		if _, err := os.Stat(filepath.Join(out, "start.elf")); err == nil {
			t.Error("a stale start.elf stayed in the directory")
		}
		if h := MissingFirmwareHelp(c.MissingFirmware); !strings.Contains(h, "raspi-firmware") || !strings.Contains(h, "-firmware") {
			t.Errorf("help %q", h)
		}
	}
}

// An image linked for QEMU virt is not a kernel8.img.
func TestRPi3KernelRefusesVirtImage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "virt.elf")
	if _, err := Build(t.Context(), "yolk/examples/hello", Options{Output: out, Arch: "arm64", Stderr: io.Discard}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	if _, _, err := RPi3Kernel(data); err == nil || !strings.Contains(err.Error(), "-T 0x81000") {
		t.Errorf("virt image: %v", err)
	}
	if _, err := Build(t.Context(), "yolk/examples/hello", Options{Output: out, Arch: "amd64", Board: "rpi3", Stderr: io.Discard}); err == nil {
		t.Error("rpi3 built for amd64")
	}
}
