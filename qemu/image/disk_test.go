package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"2G": 2 << 30, "1GiB": 1 << 30, "512M": 512 << 20, "64m": 64 << 20, "4096": 4096, "1T": 1 << 40, "3K": 3 << 10} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "-1G", "1.5G", "2X", "0", "99999999T"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

// TestDiskGRUBConfig: each token one single-quoted word after the kernel,
// "--" between the environment and the arguments; what GRUB would pass
// altered is refused.
func TestDiskGRUBConfig(t *testing.T) {
	cfg, err := DiskGRUBConfig([]string{"USER=gopher", "yolk.net=10.0.2.15/24,10.0.2.2"}, []string{"-exit", "7", "hello disk", "$x"}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nserial --unit=0 --speed=115200 --word=8 --parity=no --stop=1\n",
		"\nterminal_output serial console\n",
		"\nmultiboot2 /boot/yolk.elf 'USER=gopher' 'yolk.net=10.0.2.15/24,10.0.2.2' '--' '-exit' '7' 'hello disk' '$x'\n",
		"\nmodule2 /boot/initrd yolk.initrd\nboot\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("grub.cfg lacks %q:\n%s", want, cfg)
		}
	}
	if !strings.HasSuffix(cfg, "\nhalt\n") {
		t.Errorf("grub.cfg does not power off when the boot fails:\n%s", cfg)
	}
	if cfg, _ := DiskGRUBConfig(nil, nil, false); !strings.Contains(cfg, "\nmultiboot2 /boot/yolk.elf '--'\n") || strings.Contains(cfg, "module2") {
		t.Errorf("no environment, arguments or archive:\n%s", cfg)
	}
	for _, c := range []struct{ env, args []string }{
		{nil, []string{`a"b`}}, {nil, []string{`a\b`}}, {nil, []string{"it's"}}, {nil, []string{"a\tb"}},
		{nil, []string{"a\nb"}}, {nil, []string{""}}, {[]string{"NOEQUALS"}, nil}, {[]string{"=x"}, nil}, {[]string{`K=a"b`}, nil},
	} {
		if _, err := DiskGRUBConfig(c.env, c.args, false); err == nil {
			t.Errorf("DiskGRUBConfig(%q, %q): no error", c.env, c.args)
		}
	}
}

// TestBuildDisk builds each format from real linker output and reads it
// back: the GPT (BIOS boot partition and ESP), the MBR's boot code
// (GRUB's boot.img pointing at the core image), the core image's
// blocklist, the ESP's files (GRUB's EFI image, grub.cfg with the command
// line, the kernel with its Multiboot2 header, the boot archive); the GCE
// archive's one entry, disk.raw, the same disk; qemu-img's view of the
// QCOW2.
func TestBuildDisk(t *testing.T) {
	if err := CheckDiskTools(DiskQCOW2); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	orig, err := os.ReadFile(testProgram(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	kernel := filepath.Join(dir, "kernel.elf")
	if err := os.WriteFile(kernel, orig, 0o755); err != nil {
		t.Fatal(err)
	}
	raw := filepath.Join(dir, "disk.raw")
	if err := BuildDisk(t.Context(), kernel, DiskOptions{Output: raw}); err == nil || !strings.Contains(err.Error(), "pvhEntry") {
		t.Fatalf("a kernel without yolk's entry: %v, want the missing symbol named", err)
	}
	if _, err := PatchMultiboot2(kernel, "main.entry32"); err != nil {
		t.Fatal(err)
	}
	patched, err := os.ReadFile(kernel)
	if err != nil {
		t.Fatal(err)
	}
	initrd := filepath.Join(dir, "files.tar")
	archive := bytes.Repeat([]byte("boot archive "), 1000)
	if err := os.WriteFile(initrd, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		opt  DiskOptions
		want string
	}{
		{DiskOptions{Format: "vmdk"}, `format "vmdk"`},
		{DiskOptions{Format: DiskGCE, Size: 1536 << 20}, "whole number of GiB"},
		{DiskOptions{Size: 1<<20 + 512}, "whole number of MiB"},
		{DiskOptions{Size: 32 << 20}, "too small"},
		{DiskOptions{Args: []string{`"`}}, "cannot carry"},
	} {
		c.opt.Output = raw
		if err := BuildDisk(t.Context(), kernel, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("BuildDisk(%+v): %v, want %q", c.opt, err, c.want)
		}
	}

	opt := DiskOptions{Output: raw, Size: 256 << 20, Env: []string{"USER=gopher"}, Args: []string{"hello disk"}, Initrd: initrd}
	if err := BuildDisk(t.Context(), kernel, opt); err != nil {
		t.Fatal(err)
	}
	if !IsGPTDisk(raw) || IsISO(raw) || IsQCOW2(raw) {
		t.Error("IsGPTDisk/IsISO/IsQCOW2 disagree on a raw disk")
	}
	f, err := os.Open(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	if st.Size() != 256<<20 {
		t.Errorf("disk of %d bytes, want 256 MiB", st.Size())
	}
	g, err := ParseGPT(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Partitions) != 2 || g.Partitions[0].Type != GPTTypeBIOSBoot || g.Partitions[0].First != biosBootFirst ||
		g.Partitions[1].Type != GPTTypeESP || g.Partitions[1].First != espFirst || g.Partitions[1].Last-espFirst+1 < minESPMiB<<11 {
		t.Fatalf("partitions %+v: want the BIOS boot partition at 2048, the ESP at 4096 (%d MiB at least)", g.Partitions, minESPMiB)
	}
	disk := make([]byte, 4<<20) // the MBR, GPT, core image and the ESP's start
	if _, err := f.ReadAt(disk, 0); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	boot, _ := os.ReadFile("/usr/lib/grub/i386-pc/boot.img")
	if le.Uint64(disk[bootKernelSector:]) != biosBootFirst || disk[bootDriveCheck] != 0x90 ||
		!bytes.Equal(disk[:bootKernelSector], boot[:bootKernelSector]) || !bytes.Equal(disk[0x68:bootCodeEnd], boot[0x68:bootCodeEnd]) {
		t.Error("the MBR's code is not boot.img pointing at sector 2048")
	}
	core := disk[biosBootFirst*sectorSize:]
	if bl := core[blocklistStart:sectorSize]; le.Uint64(bl) != biosBootFirst+1 || le.Uint16(bl[8:]) == 0 || le.Uint16(bl[10:]) != coreSegment {
		t.Errorf("core.img blocklist % x: want sector %d onwards, to segment %#x", bl, biosBootFirst+1, coreSegment)
	}
	files := map[string][]byte{}
	for _, name := range []string{DiskEFIBoot, DiskGRUBCfg, ISOKernel, ISOInitrd} {
		out := filepath.Join(dir, filepath.Base(name))
		cmd := exec.Command("mcopy", "-n", "-i", raw+"@@2M", "::"+name, out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("mcopy %s: %v\n%s", name, err, b)
		}
		files[name], _ = os.ReadFile(out)
	}
	if efi := files[DiskEFIBoot]; len(efi) < 1024 || string(efi[:2]) != "MZ" {
		t.Errorf("%s is not a PE image", DiskEFIBoot)
	}
	if !bytes.Equal(files[ISOKernel], patched) || !bytes.Equal(files[ISOInitrd], archive) {
		t.Error("the kernel or the boot archive on the ESP differs")
	}
	if cfg := string(files[DiskGRUBCfg]); !strings.Contains(cfg, "multiboot2 /boot/yolk.elf 'USER=gopher' '--' 'hello disk'\n") || !strings.Contains(cfg, "module2 /boot/initrd yolk.initrd\n") {
		t.Errorf("grub.cfg:\n%s", cfg)
	}
	if k, err := ExtractDiskKernel(t.Context(), raw, t.TempDir()); err != nil {
		t.Error(err)
	} else if b, _ := os.ReadFile(k); !bytes.Equal(b, patched) {
		t.Error("ExtractDiskKernel: a different kernel")
	}

	// GCE: the same disk (but for its random GUIDs) as disk.raw.
	gce := filepath.Join(dir, "disk.tar.gz")
	opt.Output, opt.Format, opt.Size = gce, DiskGCE, 1<<30
	if err := BuildDisk(t.Context(), kernel, opt); err != nil {
		t.Fatal(err)
	}
	gz, err := os.Open(gce)
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	hdr, err := tr.Next()
	if err != nil || hdr.Name != "disk.raw" || hdr.Size != 1<<30 || hdr.Format != tar.FormatGNU {
		t.Fatalf("GCE archive entry %+v, %v: want disk.raw, 1 GiB, GNU format", hdr, err)
	}
	head := make([]byte, len(disk))
	if _, err := io.ReadFull(tr, head); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(head[:bootCodeEnd], disk[:bootCodeEnd]) || string(head[sectorSize:sectorSize+8]) != "EFI PART" ||
		!bytes.Equal(head[biosBootFirst*sectorSize:espFirst*sectorSize], disk[biosBootFirst*sectorSize:espFirst*sectorSize]) {
		t.Error("disk.raw's boot code, GPT or core image differ from the raw disk's")
	}
	if n, err := io.Copy(io.Discard, tr); err != nil || n != 1<<30-4<<20 {
		t.Errorf("disk.raw: %d more bytes, %v", n, err)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("a second entry: %v", err)
	}

	// QCOW2.
	q := filepath.Join(dir, "disk.qcow2")
	opt.Output, opt.Format, opt.Size = q, DiskQCOW2, 256<<20
	if err := BuildDisk(t.Context(), kernel, opt); err != nil {
		t.Fatal(err)
	}
	if !IsQCOW2(q) || IsGPTDisk(q) {
		t.Error("the QCOW2 image lacks QCOW2's magic")
	}
	out, err := exec.Command("qemu-img", "info", q).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "file format: qcow2") || !strings.Contains(string(out), "virtual size: 256 MiB") {
		t.Errorf("qemu-img info: %v\n%s", err, out)
	}
}
