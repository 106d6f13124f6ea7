package qemu

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"strings"

	"yolk/qemu/image"
)

// The PC board: a hybrid ISO made by image.BuildISO, booted like a PC from
// its CD-ROM drive by the machine's firmware and GRUB (docs/pc-image.md).

// PCMachines are the QEMU machines a PC image boots on, q35 first (the
// default); Firmwares the firmware choices, "bios" first (the default).
var (
	PCMachines = []string{"q35", "pc"}
	Firmwares  = []string{"bios", "uefi"}
)

// OVMFPath is the UEFI firmware for -firmware uefi: Debian's ovmf package
// (OVMF code and variables in one image, loaded with -bios). $YOLK_OVMF
// names another file.
const (
	OVMFPath        = "/usr/share/qemu/OVMF.fd"
	OVMFInstallHint = "apt-get update && apt-get install -y ovmf"
)

// UEFIMemory is a PC image's default RAM under OVMF (128M otherwise).
const UEFIMemory = "256M"

// FindOVMF returns the UEFI firmware image: $YOLK_OVMF if set, else
// OVMFPath, or an error that says how to install it.
func FindOVMF() (string, error) {
	if p := os.Getenv("YOLK_OVMF"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$YOLK_OVMF: %w", err)
		}
		return p, nil
	}
	if _, err := os.Stat(OVMFPath); err != nil {
		return "", fmt.Errorf("UEFI firmware %s is missing; install it with: %s", OVMFPath, OVMFInstallHint)
	}
	return OVMFPath, nil
}

// ErrFixedCmdline is returned for a PC image booted with an environment,
// arguments or a boot archive: those are built into the image.
var ErrFixedCmdline = errors.New("a PC image carries its command line and boot archive from yolk build -board pc or yolk image (-e, -dir, arguments there; a disk image's are in its grub.cfg); it cannot take new ones when it boots")

// pcArgs are QEMUArgs for c.Board == "pc": the image on the CD-ROM
// drive (-cdrom), the firmware, and the rest as for an ELF image.
func pcArgs(c Config) ([]string, error) {
	if c.Board != "pc" {
		return nil, fmt.Errorf("board %q: want pc", c.Board)
	}
	if c.Arch != "" && c.Arch != "amd64" {
		return nil, fmt.Errorf("board pc: the image is %s, want amd64", c.Arch)
	}
	if len(c.Env) > 0 || len(c.Args) > 0 || c.Initrd != "" {
		return nil, ErrFixedCmdline
	}
	machine := c.Machine
	if machine == "" {
		machine = PCMachines[0]
	}
	if !contains(PCMachines, machine) {
		return nil, fmt.Errorf("board pc: machine %q: want one of %s", machine, strings.Join(PCMachines, ", "))
	}
	fw := c.Firmware
	if fw == "" {
		fw = Firmwares[0]
	}
	var firmware []string
	mem := cmp.Or(c.Memory, "128M")
	switch fw {
	case "bios": // QEMU's default, SeaBIOS
	case "uefi":
		ovmf, err := FindOVMF()
		if err != nil {
			return nil, err
		}
		firmware = []string{"-bios", ovmf}
		// OVMF keeps memory near the top of RAM that a kernel linked
		// at 4 MiB reaches with its BSS (the self-test's ends near
		// 120 MiB): with 128M, GRUB reports "out of memory".
		mem = cmp.Or(c.Memory, UEFIMemory)
	default:
		return nil, fmt.Errorf("firmware %q: want one of %s", fw, strings.Join(Firmwares, ", "))
	}
	if c.Image == "" {
		return nil, errors.New("no image")
	}
	args, err := baseArgs(machine, c.Accel, "max", mem, c.SMP)
	if err != nil {
		return nil, err
	}
	args = append(args, "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04")
	args = append(args, firmware...)
	disk, err := diskArgs(c.Image, c.Disk)
	if err != nil {
		return nil, err
	}
	args = append(args, disk...)
	net, err := netArgs(c.Net, c.Forwards, true)
	if err != nil {
		return nil, err
	}
	args = append(args, net...)
	args, err = gdbArgs(args, c.GDB)
	if err != nil {
		return nil, err
	}
	return append(args, c.Extra...), nil
}

// DiskControllers are the controllers a disk image boots from (-disk),
// the default first: virtio-scsi (GCE's boot disk), NVMe (newer GCE
// machines, AWS Nitro), virtio-blk (OpenStack, KubeVirt).
var DiskControllers = []string{"virtio-scsi", "nvme", "virtio-blk"}

// diskArgs attach a PC image: a disk image (a raw disk with a GPT, or
// QCOW2) on controller (default DiskControllers[0]) as the first boot
// device, its changes kept in a temporary overlay (snapshot=on); an ISO
// (whose hybrid layout has a GPT as well) or anything else on the CD-ROM
// drive.
func diskArgs(img, controller string) ([]string, error) {
	format := "raw"
	switch {
	case image.IsQCOW2(img):
		format = "qcow2"
	case image.IsISO(img) || !image.IsGPTDisk(img): // the hybrid ISO has a GPT too
		if controller != "" {
			return nil, fmt.Errorf("-disk %s: %s is not a disk image (yolk image makes them); an ISO boots from the CD-ROM drive", controller, img)
		}
		return []string{"-cdrom", img}, nil
	}
	drive := []string{"-drive", "file=" + img + ",format=" + format + ",if=none,id=disk0,snapshot=on"}
	switch cmp.Or(controller, DiskControllers[0]) {
	case "virtio-scsi":
		return append(drive, "-device", "virtio-scsi-pci,id=scsi0", "-device", "scsi-hd,drive=disk0,bus=scsi0.0,bootindex=0"), nil
	case "nvme":
		return append(drive, "-device", "nvme,drive=disk0,serial=yolk0,bootindex=0"), nil
	case "virtio-blk":
		return append(drive, "-device", "virtio-blk-pci,drive=disk0,bootindex=0"), nil
	}
	return nil, fmt.Errorf("disk controller %q: want one of %s", controller, strings.Join(DiskControllers, ", "))
}

// CheckPCImage reports an error unless path is a PC image: an ISO 9660
// file (yolk build -board pc) or a disk image with a GPT (yolk image;
// raw or QCOW2).
func CheckPCImage(path string) error {
	if image.IsISO(path) || image.IsQCOW2(path) || image.IsGPTDisk(path) {
		return nil
	}
	if strings.HasSuffix(path, ".tar.gz") {
		return fmt.Errorf("%s: unpack GCE's disk.raw first (tar -xzf %s) and boot that", path, path)
	}
	return fmt.Errorf("%s is not a PC image (an ISO made by yolk build -board pc, or a disk made by yolk image)", path)
}
