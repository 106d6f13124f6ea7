package image

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A cloud disk image (docs/disk-image.md): a GPT disk that boots a PC or
// a cloud VM with BIOS or UEFI through the same GRUB 2 as the PC ISO.
//
//	sector 0          protective MBR, its boot code GRUB's boot.img
//	1–33              GPT header and entries
//	2048–4095         BIOS boot partition: GRUB's i386-pc core image
//	4096–…            EFI system partition (FAT32): /EFI/BOOT/BOOTX64.EFI
//	                  (GRUB x86_64-efi), /boot/grub/grub.cfg,
//	                  /boot/yolk.elf, /boot/initrd
//	last 33           backup GPT
//
// Both GRUBs are made by grub-mkimage with every module they use built
// in, and read grub.cfg from the EFI system partition, which holds the
// kernel's command line as the multiboot2 command's arguments: a user
// changes it there (mtools, or the mounted partition) without rebuilding.

// Disk formats.
const (
	DiskRaw   = "raw"   // the disk itself
	DiskGCE   = "gce"   // disk.raw in a gzip'd old-GNU tar (GCE's image upload)
	DiskQCOW2 = "qcow2" // qemu-img's QCOW2
)

// DiskFormats are the formats BuildDisk writes, raw first.
var DiskFormats = []string{DiskRaw, DiskGCE, DiskQCOW2}

// Paths inside the EFI system partition.
const (
	DiskGRUBCfg = "/boot/grub/grub.cfg"
	DiskEFIBoot = "/EFI/BOOT/BOOTX64.EFI"
)

// Layout, in 512-byte sectors.
const (
	biosBootFirst = 2048
	biosBootLast  = 4095
	espFirst      = 4096
	minESPMiB     = 64 // FAT32 with 512-byte clusters needs more than 32 MiB
)

// DefaultDiskSize is BuildDisk's size when none is given: GCE wants a
// whole number of GiB.
const DefaultDiskSize = 1 << 30

// DiskInstallHint installs what BuildDisk runs, on Debian.
const DiskInstallHint = "apt-get update && apt-get install -y grub-common grub-pc-bin grub-efi-amd64-bin mtools qemu-utils"

// DiskTools are the programs and GRUB platform directories BuildDisk
// needs, each with its Debian package (qemu-img only for qcow2).
var DiskTools = []struct{ Path, Package string }{
	{"grub-mkimage", "grub-common"},
	{"mformat", "mtools"},
	{"mmd", "mtools"},
	{"mcopy", "mtools"},
	{"/usr/lib/grub/i386-pc/boot.img", "grub-pc-bin"},
	{"/usr/lib/grub/x86_64-efi", "grub-efi-amd64-bin"},
}

// CheckDiskTools reports which of DiskTools (and qemu-img for qcow2) are
// missing and how to install them.
func CheckDiskTools(format string) error {
	tools := DiskTools
	if format == DiskQCOW2 {
		tools = append(tools[:len(tools):len(tools)], struct{ Path, Package string }{"qemu-img", "qemu-utils"})
	}
	return checkTools("a disk image", tools, DiskInstallHint)
}

// grubModules are built into both GRUB images (nothing is loaded from
// the disk but grub.cfg, the kernel and its modules): the partition
// table and file system, the commands grub.cfg uses, and for BIOS the
// firmware's disk access.
var grubModules = []string{"part_gpt", "fat", "normal", "multiboot2", "serial", "terminal", "echo", "sleep", "halt", "boot", "test"}

// ParseSize reads a disk size: a number of bytes with an optional K, M, G
// or T suffix (powers of 1024; "iB" and "B" after it are accepted).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(s), "B"), "I")
	shift := 0
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KMGT", t[n-1]); i >= 0 {
			shift, t = 10*(i+1), t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v <= 0 || v > (1<<50)>>shift {
		return 0, fmt.Errorf("size %q: want a positive number of bytes with an optional K, M, G or T suffix (e.g. 2G)", s)
	}
	return v << shift, nil
}

// GRUBWord quotes a command-line token for grub.cfg, or says why GRUB
// cannot pass it to the kernel intact. GRUB 2.06 rebuilds the Multiboot2
// command line from its words: it puts double quotes around a word with
// a space and a backslash before every '"', '\' and '\”, and nothing
// around an empty word. The kernel's command line (qemu.Cmdline's
// grammar) reads a quoted token's '\"' and '\\' but takes any other
// backslash literally, so a word survives only without quotes,
// backslashes, tabs or line breaks, and not empty; spaces are fine.
func GRUBWord(tok string) (string, error) {
	if tok == "" {
		return "", errors.New("an empty word (GRUB drops it)")
	}
	if i := strings.IndexAny(tok, "'\"\\\t\r\n\x00"); i >= 0 {
		return "", fmt.Errorf("%q: GRUB's command line cannot carry %q (quotes, backslashes, tabs, line breaks: use yolk build -board pc, whose ISO carries the command line as a file)", tok, tok[i])
	}
	return "'" + tok + "'", nil // GRUB script: no expansion inside single quotes
}

// DiskGRUBConfig is a disk image's grub.cfg: GRUB's terminal on COM1 (as
// the PC ISO's), the kernel with env (KEY=VALUE) and args as its command
// line, the boot archive when initrd, and a power-off when loading
// fails.
func DiskGRUBConfig(env, args []string, initrd bool) (string, error) {
	words := []string{"multiboot2", "/boot/yolk.elf"}
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return "", fmt.Errorf("environment entry %q is not KEY=VALUE", kv)
		}
	}
	for _, tok := range append(append(env[:len(env):len(env)], "--"), args...) {
		w, err := GRUBWord(tok)
		if err != nil {
			return "", err
		}
		words = append(words, w)
	}
	var b strings.Builder
	b.WriteString("# yolk disk image (docs/disk-image.md). The kernel's command line is the multiboot2\n")
	b.WriteString("# line's words after the kernel: KEY=VALUE environment entries and kernel options\n")
	b.WriteString("# (yolk.net=ADDR/PREFIX,GATEWAY[,DNS], yolk.strace=1, ...), then --, then the\n")
	b.WriteString("# program's arguments. One word each, in single quotes; no quotes, backslashes or\n")
	b.WriteString("# tabs inside (GRUB re-quotes them and the kernel would see the backslashes).\n")
	b.WriteString("serial --unit=0 --speed=115200 --word=8 --parity=no --stop=1\n")
	b.WriteString("terminal_input serial console\n")
	b.WriteString("terminal_output serial console\n")
	b.WriteString(strings.Join(words, " ") + "\n")
	if initrd {
		fmt.Fprintf(&b, "module2 %s %s\n", ISOInitrd, initrdModule)
	}
	b.WriteString("boot\n")
	b.WriteString("echo \"GRUB could not boot the kernel (error above): power off in 10 s\"\n")
	b.WriteString("sleep 10\n")
	b.WriteString("halt\n")
	return b.String(), nil
}

// DiskOptions control BuildDisk.
type DiskOptions struct {
	Output string   // the file to write
	Format string   // DiskRaw (default), DiskGCE or DiskQCOW2
	Size   int64    // the disk's size in bytes (default DefaultDiskSize); a whole number of MiB (GiB for DiskGCE)
	Env    []string // KEY=VALUE entries and kernel options for grub.cfg
	Args   []string // the program's arguments for grub.cfg
	Initrd string   // boot archive (a ustar file); "" for none
}

// BuildDisk writes a disk image holding the amd64 kernel ELF image kernel
// (yolk build's output; the disk's copy gets a Multiboot2 header if it
// has none, as PatchMultiboot2 writes it), GRUB for BIOS and UEFI, and a
// grub.cfg with the command line.
func BuildDisk(ctx context.Context, kernel string, opt DiskOptions) error {
	if opt.Output == "" {
		return errors.New("BuildDisk needs an output path")
	}
	format := opt.Format
	if format == "" {
		format = DiskRaw
	}
	size := opt.Size
	if size == 0 {
		size = DefaultDiskSize
	}
	switch {
	case format != DiskRaw && format != DiskGCE && format != DiskQCOW2:
		return fmt.Errorf("disk format %q: want %s", format, strings.Join(DiskFormats, ", "))
	case format == DiskGCE && size%(1<<30) != 0:
		return fmt.Errorf("a GCE image's disk.raw is a whole number of GiB, not %d bytes", size)
	case size%(1<<20) != 0:
		return fmt.Errorf("the disk's size is a whole number of MiB, not %d bytes", size)
	}
	cfg, err := DiskGRUBConfig(opt.Env, opt.Args, opt.Initrd != "")
	if err != nil {
		return err
	}
	if err := CheckDiskTools(format); err != nil {
		return err
	}
	elf, err := os.ReadFile(kernel)
	if err != nil {
		return err
	}
	if FindMultiboot2(elf) < 0 {
		if elf, _, err = PatchMultiboot2Bytes(elf); err != nil {
			return fmt.Errorf("%s: %v", kernel, err)
		}
	}
	var initrd []byte
	if opt.Initrd != "" {
		if initrd, err = os.ReadFile(opt.Initrd); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "yolk-disk-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %v\n%s", name, err, strings.TrimSpace(log.String()))
		}
		return nil
	}

	// GRUB: the BIOS core image reads grub.cfg from the boot disk's
	// second partition, the EFI one from the partition it was loaded
	// from (both the ESP).
	core := filepath.Join(tmp, "core.img")
	if err := run("grub-mkimage", append([]string{"-O", "i386-pc", "-o", core, "-p", "(,gpt2)/boot/grub", "biosdisk"}, grubModules...)...); err != nil {
		return err
	}
	efi := filepath.Join(tmp, "bootx64.efi")
	if err := run("grub-mkimage", append([]string{"-O", "x86_64-efi", "-o", efi, "-p", "/boot/grub"}, grubModules...)...); err != nil {
		return err
	}
	coreImg, err := os.ReadFile(core)
	if err != nil {
		return err
	}
	bootImg, err := os.ReadFile("/usr/lib/grub/i386-pc/boot.img")
	if err != nil {
		return err
	}
	mbrCode, err := patchBootImg(bootImg, biosBootFirst)
	if err != nil {
		return err
	}
	if err := patchCoreImg(coreImg, biosBootFirst, biosBootLast-biosBootFirst+1); err != nil {
		return err
	}
	efiImg, err := os.ReadFile(efi)
	if err != nil {
		return err
	}

	// The EFI system partition.
	content := int64(len(efiImg) + len(elf) + len(initrd) + len(cfg))
	espMiB := max(minESPMiB, content*5/4>>20+8)
	espSectors := uint64(espMiB << 20 / sectorSize)
	diskSectors := uint64(size / sectorSize)
	if espFirst+espSectors+gptFirstUsable > diskSectors {
		return fmt.Errorf("a %d MiB disk is too small: the EFI system partition alone is %d MiB (-size %dM at least)",
			size>>20, espMiB, espMiB+3)
	}
	esp := filepath.Join(tmp, "esp.img")
	files := map[string][]byte{DiskEFIBoot: efiImg, DiskGRUBCfg: []byte(cfg), ISOKernel: elf}
	if opt.Initrd != "" {
		files[ISOInitrd] = initrd
	}
	if err := makeESP(esp, espSectors, files, run); err != nil {
		return err
	}

	// The disk.
	raw := opt.Output
	if format != DiskRaw {
		raw = filepath.Join(tmp, "disk.raw")
	}
	parts := []GPTPartition{
		{Type: GPTTypeBIOSBoot, GUID: NewGUID(), First: biosBootFirst, Last: biosBootLast, Name: "BIOS boot partition"},
		{Type: GPTTypeESP, GUID: NewGUID(), First: espFirst, Last: espFirst + espSectors - 1, Name: "EFI system partition"},
	}
	gpt, err := EncodeGPT(diskSectors, NewGUID(), parts, mbrCode)
	if err != nil {
		return err
	}
	if err := writeDisk(raw, size, gpt, coreImg, esp); err != nil {
		return err
	}
	switch format {
	case DiskGCE:
		return WriteGCETar(opt.Output, raw)
	case DiskQCOW2:
		return run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw, opt.Output)
	}
	return nil
}

// makeESP formats a FAT32 file system of sectors sectors at path (hidden
// sectors: its place on the disk) and copies files into it.
func makeESP(path string, sectors uint64, files map[string][]byte, run func(string, ...string) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = f.Truncate(int64(sectors) * sectorSize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := run("mformat", "-i", path, "-F", "-H", strconv.Itoa(espFirst), "-v", "YOLK-ESP", "::"); err != nil {
		return err
	}
	dirs := map[string]bool{}
	var mkdirs []string
	for name := range files {
		for d := filepath.ToSlash(filepath.Dir(name)); d != "/" && !dirs[d]; d = filepath.ToSlash(filepath.Dir(d)) {
			dirs[d] = true
			mkdirs = append(mkdirs, d)
		}
	}
	// Parents first: shorter paths.
	for n := 1; len(mkdirs) > 0; n++ {
		var now, later []string
		for _, d := range mkdirs {
			if strings.Count(d, "/") == n {
				now = append(now, "::"+d)
			} else {
				later = append(later, d)
			}
		}
		if len(now) > 0 {
			if err := run("mmd", append([]string{"-i", path}, now...)...); err != nil {
				return err
			}
		}
		mkdirs = later
	}
	src := filepath.Join(filepath.Dir(path), "esp-files")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	i := 0
	for name, data := range files {
		i++
		p := filepath.Join(src, fmt.Sprint(i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		if err := run("mcopy", "-i", path, p, "::"+name); err != nil {
			return err
		}
	}
	return nil
}

// writeDisk writes a sparse disk image of size bytes: the GPT sectors,
// GRUB's core image at the BIOS boot partition and the ESP image at its
// partition (only its non-zero blocks: the rest stays holes).
func writeDisk(path string, size int64, gpt []GPTSectors, core []byte, esp string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if err := f.Truncate(size); err != nil {
		return err
	}
	for _, s := range gpt {
		if _, err := f.WriteAt(s.Data, s.Offset); err != nil {
			return err
		}
	}
	if _, err := f.WriteAt(core, biosBootFirst*sectorSize); err != nil {
		return err
	}
	e, err := os.Open(esp)
	if err != nil {
		return err
	}
	defer e.Close()
	buf := make([]byte, 64<<10)
	zero := make([]byte, len(buf))
	for off := int64(0); ; off += int64(len(buf)) {
		n, rerr := e.ReadAt(buf, off)
		if n > 0 && !bytes.Equal(buf[:n], zero[:n]) {
			if _, err := f.WriteAt(buf[:n], espFirst*sectorSize+off); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// GRUB's boot.img (grub-core/boot/i386/pc/boot.S) and the blocklist at
// the end of core.img's first sector (diskboot.S), as grub-bios-setup
// fills them.
const (
	bootKernelSector = 0x5c  // boot.img: LBA of core.img's first sector (8 bytes)
	bootDriveCheck   = 0x66  // boot.img: a 2-byte jump over the drive-number fix-up
	bootCodeEnd      = 0x1b8 // boot.img: the boot code ends where the disk signature starts
	blocklistStart   = 0x200 - 12
	coreSegment      = 0x820 // where diskboot loads the rest: 0x8000 + one sector
)

// patchBootImg returns boot.img's code with core.img's first sector at
// coreLBA and the drive check off (what grub-bios-setup does for a hard
// disk: some BIOSes pass a wrong drive number).
func patchBootImg(boot []byte, coreLBA uint64) ([]byte, error) {
	if len(boot) != sectorSize || boot[510] != 0x55 || boot[511] != 0xAA {
		return nil, errors.New("boot.img is not a 512-byte boot sector")
	}
	code := bytes.Clone(boot[:bootCodeEnd])
	if code[bootDriveCheck] != 0xeb {
		return nil, fmt.Errorf("boot.img: no jump at %#x (a GRUB other than 2.x?)", bootDriveCheck)
	}
	binary.LittleEndian.PutUint64(code[bootKernelSector:], coreLBA)
	code[bootDriveCheck], code[bootDriveCheck+1] = 0x90, 0x90
	return code, nil
}

// patchCoreImg points core.img's first blocklist entry at the rest of the
// image, which follows its first sector at coreLBA, and checks that it
// fits room sectors.
func patchCoreImg(core []byte, coreLBA uint64, room int) error {
	n := (len(core) + sectorSize - 1) / sectorSize
	if n > room {
		return fmt.Errorf("GRUB's core image is %d sectors: the BIOS boot partition has %d", n, room)
	}
	if n < 2 {
		return errors.New("GRUB's core image is less than two sectors")
	}
	bl := core[blocklistStart:sectorSize]
	le := binary.LittleEndian
	if seg := le.Uint16(bl[10:]); seg != coreSegment {
		return fmt.Errorf("core.img: blocklist segment %#x, want %#x (a GRUB other than 2.x?)", seg, coreSegment)
	}
	le.PutUint64(bl[0:], coreLBA+1)
	le.PutUint16(bl[8:], uint16(n-1))
	return nil
}

// ExtractDiskKernel copies the kernel ELF out of a raw disk image made by
// BuildDisk into dir and returns its path (for symbolizing backtraces).
func ExtractDiskKernel(ctx context.Context, disk, dir string) (string, error) {
	f, err := os.Open(disk)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	g, err := ParseGPT(f, st.Size())
	if err != nil {
		return "", fmt.Errorf("%s: %v", disk, err)
	}
	for _, p := range g.Partitions {
		if p.Type != GPTTypeESP {
			continue
		}
		out := filepath.Join(dir, "yolk.elf")
		cmd := exec.CommandContext(ctx, "mcopy", "-n", "-i", fmt.Sprintf("%s@@%d", disk, p.First*sectorSize), "::"+ISOKernel, out)
		if log, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("extracting %s from %s with mcopy: %v\n%s", ISOKernel, disk, err, strings.TrimSpace(string(log)))
		}
		return out, nil
	}
	return "", fmt.Errorf("%s has no EFI system partition", disk)
}

// IsQCOW2 reports whether the file at path starts with QCOW2's magic.
func IsQCOW2(path string) bool {
	return fileHas(path, 0, "QFI\xfb")
}

// IsGPTDisk reports whether the file at path has a GPT header in its
// second sector (a raw disk image).
func IsGPTDisk(path string) bool {
	return fileHas(path, sectorSize, "EFI PART")
}

func fileHas(path string, off int64, magic string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(magic))
	_, err = f.ReadAt(b, off)
	return err == nil && string(b) == magic
}

// errNXIO is SEEK_DATA's "no data after this offset".
var errNXIO = syscall.ENXIO
