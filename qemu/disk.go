package qemu

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// A Disk is a host file the guest sees as a block device (yolk run
// -disk, docs/disks.md): FILE[,if=virtio|nvme][,ro][:GUESTPATH]. If is
// "virtio" (virtio-blk: virtio-blk-device on the virtio-mmio machines,
// microvm and arm64 virt; virtio-blk-pci on pc and q35) or "nvme" (QEMU's
// nvme controller with one namespace, on the PCI machines: docs/nvme.md).
// The kernel names the n-th virtio disk vd(a+n) and the n-th NVMe
// one nvme(n)n1, and is told where each is to be mounted with
// yolk.disk=NAME:GUESTPATH[:ro] (default /mnt/disk0, /mnt/disk1, … by
// position among the -disk flags; GUESTPATH / makes the disk the root,
// which the kernel also takes as yolk.root=NAME).
type Disk struct {
	File      string // absolute
	If        string // "virtio" or "nvme"
	ReadOnly  bool
	GuestPath string // "" until DiskArgs gives the default
	// Label, if set, names the disk to the kernel by its ext4 file
	// system's label (yolk.disk=LABEL=L:GUESTPATH), as a cloud disk
	// whose device name is not known is named, instead of its device.
	Label string
	// Inject, if set, is a QEMU blkdebug configuration file whose
	// [inject-error] rules fail the disk's requests (tests: a disk that
	// answers EIO).
	Inject string
}

// MaxDisks is how many disks a guest takes (the kernel's table).
const MaxDisks = 8

// ParseDisk parses FILE[,if=virtio|nvme][,ro][:GUESTPATH]. The file must
// exist and be a regular file (or a block device).
func ParseDisk(s string) (Disk, error) {
	d := Disk{If: "virtio"}
	spec := s
	if i := strings.LastIndex(s, ":"); i >= 0 && strings.HasPrefix(s[i+1:], "/") {
		spec, d.GuestPath = s[:i], s[i+1:]
	}
	parts := strings.Split(spec, ",")
	if parts[0] == "" {
		return Disk{}, fmt.Errorf("disk %q: want FILE[,if=virtio|nvme][,ro][:GUESTPATH]", s)
	}
	for _, o := range parts[1:] {
		switch o {
		case "ro":
			d.ReadOnly = true
		case "if=virtio", "if=nvme":
			d.If = o[3:]
		default:
			return Disk{}, fmt.Errorf("disk %q: option %q: want if=virtio, if=nvme or ro", s, o)
		}
	}
	abs, err := filepath.Abs(parts[0])
	if err != nil {
		return Disk{}, err
	}
	d.File = abs
	return d, d.check()
}

func (d Disk) check() error {
	st, err := os.Stat(d.File)
	if err != nil {
		return fmt.Errorf("disk: %s: %w", d.File, errors.Unwrap(err))
	}
	if !st.Mode().IsRegular() && st.Mode()&os.ModeDevice == 0 {
		return fmt.Errorf("disk: %s is not a file", d.File)
	}
	if g := d.GuestPath; g != "" && (!path.IsAbs(g) || path.Clean(g) != g || len(g) > 255 || strings.ContainsAny(g, " \t\n:")) {
		return fmt.Errorf("disk %s: guest path %q: want a clean absolute path (/: the root) without spaces or colons (at most 255 bytes)", d.File, g)
	}
	if d.If != "virtio" && d.If != "nvme" {
		return fmt.Errorf("disk %s: interface %q: want virtio or nvme", d.File, d.If)
	}
	return nil
}

// DiskFlag collects -disk flags, each checked at once.
type DiskFlag []Disk

func (f *DiskFlag) String() string {
	var s []string
	for _, x := range *f {
		s = append(s, x.File)
	}
	return strings.Join(s, " ")
}

func (f *DiskFlag) Set(s string) error {
	x, err := ParseDisk(s)
	if err != nil {
		return err
	}
	*f = append(*f, x)
	return nil
}

// DiskArgs returns the QEMU arguments of disks on a machine whose virtio
// devices are PCI (pc, q35) or virtio-mmio, and per disk its yolk.disk
// option's value, NAME:GUESTPATH[:ro]. downward says the machine gives
// each -device the next virtio-mmio transport at a lower address (arm64
// virt): the kernel, as Linux since its traversal changed, names the
// disks by increasing address, so the devices go to QEMU in reverse for
// vda to be the first -disk.
func DiskArgs(disks []Disk, pci, downward bool) (args, opts []string, err error) {
	var devs [][]string
	if len(disks) > MaxDisks {
		return nil, nil, fmt.Errorf("at most %d disks", MaxDisks)
	}
	nv, nn := 0, 0
	for i, d := range disks {
		if err := d.check(); err != nil {
			return nil, nil, err
		}
		if d.GuestPath == "" {
			d.GuestPath = fmt.Sprintf("/mnt/disk%d", i)
		}
		for _, o := range disks[:i] {
			if o.File == d.File {
				return nil, nil, fmt.Errorf("disk %s given twice", d.File)
			}
		}
		file := strings.ReplaceAll(d.File, ",", ",,")
		if d.Inject != "" {
			file = "blkdebug:" + strings.ReplaceAll(d.Inject, ",", ",,") + ":" + file
		}
		drive := fmt.Sprintf("file=%s,if=none,id=disk%d,format=raw,cache=writeback,discard=unmap", file, i)
		if d.ReadOnly {
			drive += ",readonly=on"
		}
		var dev, name string
		switch {
		case d.If == "nvme":
			dev = fmt.Sprintf("nvme,drive=disk%d,serial=yolk%d", i, i)
			name = fmt.Sprintf("nvme%dn1", nn)
			nn++
		case pci:
			dev = fmt.Sprintf("virtio-blk-pci,drive=disk%d,disable-legacy=on,romfile=", i)
		default:
			if nv == 0 {
				args = append(args, "-global", "virtio-mmio.force-legacy=false")
			}
			dev = fmt.Sprintf("virtio-blk-device,drive=disk%d", i)
		}
		if d.If == "virtio" {
			if nv >= 26 {
				return nil, nil, errors.New("more than 26 virtio disks")
			}
			name = "vd" + string(rune('a'+nv))
			nv++
		}
		devs = append(devs, []string{"-drive", drive, "-device", dev})
		if d.Label != "" {
			name = "LABEL=" + d.Label
		}
		o := name + ":" + d.GuestPath
		if d.ReadOnly {
			o += ":ro"
		}
		for _, p := range opts {
			if strings.Split(p, ":")[1] == d.GuestPath {
				return nil, nil, fmt.Errorf("two disks at guest path %s", d.GuestPath)
			}
		}
		opts = append(opts, o)
	}
	if downward {
		slices.Reverse(devs)
	}
	for _, d := range devs {
		args = append(args, d...)
	}
	return args, opts, nil
}

// diskConfig is QEMUArgs's part for c.Disks on machine (of arch): the
// QEMU arguments, and env with a yolk.disk option for each disk.
func diskConfig(c Config, arch, machine string, env []string) ([]string, []string, error) {
	if len(c.Disks) > 0 && c.Board != "" {
		return nil, nil, fmt.Errorf("board %s: no -disk (its devices are fixed)", c.Board)
	}
	args, opts, err := DiskArgs(c.Disks, arch == "amd64" && !mmioMachine(machine), arch == "arm64")
	if err != nil {
		return nil, nil, err
	}
	for _, o := range opts {
		env = append(slices.Clip(env), "yolk.disk="+o)
	}
	return args, env, nil
}
