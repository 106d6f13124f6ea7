package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The Raspberry Pi 3 board image (yolk build -board rpi3). The firmware
// (bootcode.bin, start.elf) reads config.txt from the SD card's first FAT
// partition, loads kernel8.img — the kernel's memory image from 0x80000,
// raw — at 0x80000 and the device tree config.txt names, and enters the
// image's first word at EL2 with x0 = the tree; QEMU raspi3b loads
// kernel8.img the same way (-kernel, -dtb) without any firmware.

// RPi3 link and load addresses: the image is linked with -T RPi3TextAddr,
// so its first PT_LOAD (ELF header included) starts at RPi3LoadAddr, where
// the firmware puts kernel8.img.
const (
	RPi3LoadAddr = 0x80000
	RPi3TextAddr = RPi3LoadAddr + 0x1000
)

// RPi3EntrySymbol is the kernel's Raspberry Pi 3 entry: kernel8.img's first
// word branches to it.
const RPi3EntrySymbol = "yolk/boot.entryRPi3"

// RPi3Limit bounds the image's memory (its BSS included): QEMU puts the
// boot archive and the device tree at 128 MiB, the firmware its own tree
// above the kernel file.
const RPi3Limit = 128 << 20

// RPi3Firmware are the closed GPU firmware files the Pi 3 needs on the SD
// card; Debian's raspi-firmware package (non-free-firmware) installs them
// in RPi3FirmwareDir.
var RPi3Firmware = []string{"bootcode.bin", "start.elf", "fixup.dat"}

// RPi3FirmwareDir is where Debian's raspi-firmware installs them.
const RPi3FirmwareDir = "/usr/lib/raspi-firmware"

// RPi3DTB is the device tree's file name on the card (8.3: the FAT writer
// makes no long names).
const RPi3DTB = "yolk.dtb"

// RPi3CmdlineMark starts the card's command line: the kernel ignores what
// a boot loader puts before it (kernel/cmdline, startMark).
const RPi3CmdlineMark = "yolk.start"

// RPi3Options control WriteRPi3.
type RPi3Options struct {
	Cmdline  string // the kernel command line: cmdline.txt, and the tree's bootargs (QEMU without -append)
	Firmware string // directory with RPi3Firmware; "" tries RPi3FirmwareDir
}

// RPi3Result says what WriteRPi3 wrote.
type RPi3Result struct {
	Dir             string   // the boot directory
	Disk            string   // the SD-card disk image (Dir + ".img")
	Files           []string // names in Dir that are on the card, in order
	MissingFirmware []string // RPi3Firmware files not found: the card does not boot a real Pi without them
	ImageEnd        uint64   // end of the kernel's memory (BSS included)
}

// RPi3Config is config.txt: 64-bit mode, kernel8.img at 0x80000, our device
// tree (in place of the firmware's) at 128 MiB, clear of the kernel's BSS,
// and the PL011's clock at 48 MHz (the kernel routes it to GPIO 14/15).
func RPi3Config() string {
	return `# yolk: Raspberry Pi 3, arm64
arm_64bit=1
kernel=kernel8.img
kernel_address=0x80000
device_tree=` + RPi3DTB + `
device_tree_address=0x8000000
enable_uart=1
init_uart_clock=48000000
`
}

// WriteRPi3 turns the rpi3-linked ELF image at elfPath into the boot
// directory dir (kernel8.img, config.txt, cmdline.txt, yolk.dtb and the
// firmware when found) and the FAT-partitioned disk image dir+".img".
func WriteRPi3(elfPath, dir string, o RPi3Options) (*RPi3Result, error) {
	data, err := os.ReadFile(elfPath)
	if err != nil {
		return nil, err
	}
	img, end, err := RPi3Kernel(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", elfPath, err)
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	res := &RPi3Result{Dir: dir, Disk: dir + ".img", ImageEnd: end}
	// The firmware puts Linux's options in front of cmdline.txt's line in
	// the tree's bootargs: the kernel reads from the mark on.
	line := RPi3CmdlineMark + " " + o.Cmdline
	files := []struct {
		name string
		data []byte
	}{
		{"kernel8.img", img},
		{"config.txt", []byte(RPi3Config())},
		{"cmdline.txt", []byte(line + "\n")},
		{RPi3DTB, RPi3DeviceTree(line)},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return nil, err
		}
		res.Files = append(res.Files, f.name)
	}
	fw := o.Firmware
	if fw == "" {
		fw = RPi3FirmwareDir
	}
	for _, name := range RPi3Firmware {
		b, err := os.ReadFile(filepath.Join(fw, name))
		if err != nil {
			if o.Firmware != "" {
				return nil, fmt.Errorf("-firmware %s: %w", o.Firmware, err)
			}
			res.MissingFirmware = append(res.MissingFirmware, name)
			os.Remove(filepath.Join(dir, name)) // not a stale copy from an earlier build
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, err
		}
		res.Files = append(res.Files, name)
	}
	var disk []FATFile
	for _, name := range res.Files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		disk = append(disk, FATFile{Name: name, Data: b})
	}
	d, err := FATDisk("YOLK", disk)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(res.Disk, d, 0o644); err != nil {
		return nil, err
	}
	return res, nil
}

// MissingFirmwareHelp says which firmware files to add and where from.
func MissingFirmwareHelp(missing []string) string {
	return fmt.Sprintf(`the SD card has no Raspberry Pi firmware (%s): QEMU does not need it, a Pi 3 does.
Either install Debian's raspi-firmware (component non-free-firmware: add it to the
"Components:" of /etc/apt/sources.list.d/debian.sources, then apt-get update &&
apt-get install raspi-firmware) and build again, or take the files from
https://github.com/raspberrypi/firmware/tree/master/boot and pass their directory
with -firmware DIR (or copy them to the card's FAT partition, next to kernel8.img).`,
		strings.Join(missing, ", "))
}

// RPi3Kernel makes kernel8.img from an image linked at RPi3TextAddr: its
// loadable segments' file bytes laid out from RPi3LoadAddr, the first word
// (the ELF header's magic, unused at run time) replaced by a branch to
// RPi3EntrySymbol. It returns the image and the end of the kernel's memory
// (BSS included), which must stay below RPi3Limit.
func RPi3Kernel(data []byte) ([]byte, uint64, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 || f.Class != elf.ELFCLASS64 {
		return nil, 0, fmt.Errorf("not an arm64 ELF image (%v)", f.Machine)
	}
	var loads []*elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			loads = append(loads, p)
		}
	}
	if len(loads) == 0 {
		return nil, 0, errors.New("no loadable segment")
	}
	slices.SortFunc(loads, func(a, b *elf.Prog) int { return int(int64(a.Paddr) - int64(b.Paddr)) })
	if loads[0].Paddr != RPi3LoadAddr || loads[0].Off != 0 {
		return nil, 0, fmt.Errorf("first segment at %#x (file offset %#x): not linked for the Raspberry Pi 3 (want %#x from offset 0: -T %#x)",
			loads[0].Paddr, loads[0].Off, RPi3LoadAddr, RPi3TextAddr)
	}
	var fileEnd, memEnd uint64
	for _, p := range loads {
		fileEnd = max(fileEnd, p.Paddr+p.Filesz)
		memEnd = max(memEnd, p.Paddr+p.Memsz)
	}
	if memEnd > RPi3Limit {
		return nil, 0, fmt.Errorf("the kernel's memory ends at %#x, above %#x where QEMU and the firmware put the device tree", memEnd, RPi3Limit)
	}
	img := make([]byte, fileEnd-RPi3LoadAddr)
	for _, p := range loads {
		if p.Filesz == 0 {
			continue
		}
		if p.Off+p.Filesz > uint64(len(data)) {
			return nil, 0, fmt.Errorf("segment at %#x runs past the end of the file", p.Paddr)
		}
		copy(img[p.Paddr-RPi3LoadAddr:], data[p.Off:p.Off+p.Filesz])
	}
	_, entry, err := findEntrySymbol(f, []string{RPi3EntrySymbol})
	if err != nil {
		return nil, 0, err
	}
	if entry < RPi3LoadAddr+4 || entry >= fileEnd || entry%4 != 0 {
		return nil, 0, fmt.Errorf("%s at %#x is not in the image", RPi3EntrySymbol, entry)
	}
	binary.LittleEndian.PutUint32(img, armBranch(RPi3LoadAddr, entry))
	return img, memEnd, nil
}

// armBranch encodes the A64 instruction B target at address pc.
func armBranch(pc, target uint64) uint32 {
	return 0x14000000 | uint32((target-pc)/4)&0x03ffffff
}
