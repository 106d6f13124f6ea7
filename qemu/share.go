package qemu

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// A Share is a host directory the guest sees at GuestPath (yolk run
// -share): a virtio-9p device over QEMU's "local" file system driver with
// security_model=none — the guest's calls are the QEMU process's on the
// host, so permissions and errno are the host's for the user running
// QEMU, and files are created with the modes the guest asks for, owned
// by that user. The device's mount tag is "yolkN" (N its index) and the
// kernel command line's yolk.share=yolkN:GUESTPATH says where it appears.
// ReadOnly shares are QEMU's readonly=on: writes fail with EROFS.
type Share struct {
	HostDir   string // absolute
	GuestPath string // absolute, not "/"
	ReadOnly  bool
}

// ParseShare parses HOSTDIR[:GUESTPATH][:ro]: GUESTPATH defaults to
// HOSTDIR's absolute path. The host directory must exist.
func ParseShare(s string) (Share, error) {
	parts := strings.Split(s, ":")
	var sh Share
	if n := len(parts); n > 1 && parts[n-1] == "ro" {
		sh.ReadOnly = true
		parts = parts[:n-1]
	}
	if len(parts) > 2 || parts[0] == "" {
		return Share{}, fmt.Errorf("share %q: want HOSTDIR[:GUESTPATH][:ro]", s)
	}
	abs, err := filepath.Abs(parts[0])
	if err != nil {
		return Share{}, err
	}
	sh.HostDir, sh.GuestPath = abs, filepath.ToSlash(abs)
	if len(parts) == 2 {
		sh.GuestPath = parts[1]
	}
	return sh, sh.check()
}

func (sh Share) check() error {
	st, err := os.Stat(sh.HostDir)
	if err != nil {
		return fmt.Errorf("share: host directory %s: %w", sh.HostDir, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("share: %s is not a directory", sh.HostDir)
	}
	g := sh.GuestPath
	if !path.IsAbs(g) || path.Clean(g) != g || g == "/" || len(g) > 255 {
		return fmt.Errorf("share %s: guest path %q: want a clean absolute path other than / (at most 255 bytes)", sh.HostDir, g)
	}
	return nil
}

// ShareFlag collects -share flags (yolk run, linuxref): each is checked
// at once, so a missing directory is an error before the boot.
type ShareFlag []Share

func (f *ShareFlag) String() string {
	var s []string
	for _, x := range *f {
		s = append(s, x.HostDir+":"+x.GuestPath)
	}
	return strings.Join(s, " ")
}

func (f *ShareFlag) Set(s string) error {
	x, err := ParseShare(s)
	if err != nil {
		return err
	}
	*f = append(*f, x)
	return nil
}

// ShareArgs returns the QEMU arguments of shares on a machine whose virtio
// devices are PCI (pc, q35) or virtio-mmio, and per share its mount,
// "TAG:GUESTPATH": yolk's kernel takes it as yolk.share=TAG:GUESTPATH, and
// linuxref's guest init mounts TAG there with 9p.
func ShareArgs(shares []Share, pci bool) (args, mounts []string, err error) {
	if len(shares) > 4 {
		return nil, nil, errors.New("at most 4 shares")
	}
	for i, sh := range shares {
		if err := sh.check(); err != nil {
			return nil, nil, err
		}
		for _, o := range shares[:i] {
			if o.GuestPath == sh.GuestPath {
				return nil, nil, fmt.Errorf("two shares at guest path %s", sh.GuestPath)
			}
		}
		fsdev := fmt.Sprintf("local,id=fs%d,path=%s,security_model=none", i, strings.ReplaceAll(sh.HostDir, ",", ",,"))
		if sh.ReadOnly {
			fsdev += ",readonly=on"
		}
		dev := fmt.Sprintf("virtio-9p-device,fsdev=fs%d,mount_tag=yolk%d", i, i)
		if pci {
			dev = fmt.Sprintf("virtio-9p-pci,fsdev=fs%d,mount_tag=yolk%d,disable-legacy=on,romfile=", i, i)
		} else if i == 0 {
			args = append(args, "-global", "virtio-mmio.force-legacy=false")
		}
		args = append(args, "-fsdev", fsdev, "-device", dev)
		mounts = append(mounts, fmt.Sprintf("yolk%d:%s", i, sh.GuestPath))
	}
	return args, mounts, nil
}
