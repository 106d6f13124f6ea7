package qemu

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseDisk(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.img")
	os.WriteFile(f, make([]byte, 4096), 0o644)
	for _, c := range []struct {
		in   string
		want Disk
	}{
		{f, Disk{File: f, If: "virtio"}},
		{f + ",ro", Disk{File: f, If: "virtio", ReadOnly: true}},
		{f + ",if=nvme:/data", Disk{File: f, If: "nvme", GuestPath: "/data"}},
		{f + ",if=virtio,ro:/mnt/x", Disk{File: f, If: "virtio", ReadOnly: true, GuestPath: "/mnt/x"}},
		{f + ":/", Disk{File: f, If: "virtio", GuestPath: "/"}}, // the root
	} {
		got, err := ParseDisk(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDisk(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", f + ",if=scsi", f + ",rw", filepath.Join(dir, "none.img"), dir, f + ":/a/../b", f + ":/a b"} {
		if d, err := ParseDisk(bad); err == nil {
			t.Errorf("ParseDisk(%q) = %+v, want an error", bad, d)
		}
	}
	var fl DiskFlag
	if err := fl.Set(f); err != nil || len(fl) != 1 || fl.String() != f {
		t.Errorf("DiskFlag: %v %v", fl, err)
	}
}

func TestDiskArgs(t *testing.T) {
	dir := t.TempDir()
	var disks []Disk
	for i, spec := range []string{"a.img", "b.img,ro", "c.img,if=nvme:/data", "d.img:/mnt/d"} {
		name, _, _ := strings.Cut(spec, ",")
		name, _, _ = strings.Cut(name, ":")
		os.WriteFile(filepath.Join(dir, name), make([]byte, 4096*(i+1)), 0o644)
		d, err := ParseDisk(filepath.Join(dir, spec))
		if err != nil {
			t.Fatal(err)
		}
		disks = append(disks, d)
	}
	args, opts, err := DiskArgs(disks, false, false)
	if err != nil {
		t.Fatal(err)
	}
	wantOpts := []string{"vda:/mnt/disk0", "vdb:/mnt/disk1:ro", "nvme0n1:/data", "vdc:/mnt/d"}
	if !slices.Equal(opts, wantOpts) {
		t.Errorf("options %q, want %q", opts, wantOpts)
	}
	joined := strings.Join(args, " ")
	for _, w := range []string{"-global virtio-mmio.force-legacy=false", "-device virtio-blk-device,drive=disk0", "id=disk1,format=raw,cache=writeback,discard=unmap,readonly=on", "-device nvme,drive=disk2,serial=yolk2", "-device virtio-blk-device,drive=disk3"} {
		if !strings.Contains(joined, w) {
			t.Errorf("mmio args %q lack %q", joined, w)
		}
	}
	byLabel := slices.Clone(disks)
	byLabel[1].Label = "data"
	if _, o, _ := DiskArgs(byLabel, false, false); o[1] != "LABEL=data:/mnt/disk1:ro" || o[2] != "nvme0n1:/data" {
		t.Errorf("by label: options %q", o)
	}
	args, _, _ = DiskArgs(disks, true, false)
	joined = strings.Join(args, " ")
	if !strings.Contains(joined, "-device virtio-blk-pci,drive=disk0,disable-legacy=on,romfile=") || strings.Contains(joined, "force-legacy") {
		t.Errorf("pci args %q", joined)
	}
	if _, _, err := DiskArgs([]Disk{disks[0], disks[0]}, false, false); err == nil {
		t.Error("one file twice accepted")
	}
	if _, _, err := DiskArgs([]Disk{disks[0], {File: disks[1].File, If: "virtio", GuestPath: "/mnt/disk0"}}, false, false); err == nil {
		t.Error("two disks at one guest path accepted")
	}

	// A disk with injected errors goes through QEMU's blkdebug.
	inj := disks[0]
	inj.Inject = filepath.Join(dir, "eio.conf")
	args, _, _ = DiskArgs([]Disk{inj}, false, false)
	if j := strings.Join(args, " "); !strings.Contains(j, "file=blkdebug:"+inj.Inject+":"+inj.File+",if=none") {
		t.Errorf("blkdebug args %q", j)
	}

	// arm64 virt: the devices in reverse, the names as given.
	args, opts, _ = DiskArgs(disks[:2], false, true)
	if j := strings.Join(args, " "); strings.Index(j, "drive=disk1") > strings.Index(j, "drive=disk0") || !slices.Equal(opts, wantOpts[:2]) {
		t.Errorf("downward: %q, %q", j, opts)
	}

	// Through QEMUArgs: the machine picks the device, the command line
	// carries yolk.disk; boards refuse.
	for _, c := range []struct {
		machine, arch, dev string
	}{{"microvm", "amd64", "virtio-blk-device"}, {"pc", "amd64", "virtio-blk-pci"}, {"q35", "amd64", "virtio-blk-pci"}, {"virt", "arm64", "virtio-blk-device"}} {
		a, err := QEMUArgs(Config{Image: "x.elf", Arch: c.arch, Machine: c.machine, Disks: disks[:1]})
		if err != nil {
			t.Fatalf("%s: %v", c.machine, err)
		}
		j := strings.Join(a, " ")
		if !strings.Contains(j, "-device "+c.dev+",drive=disk0") || !strings.Contains(j, "yolk.disk=vda:/mnt/disk0") {
			t.Errorf("%s: %q", c.machine, j)
		}
	}
	if _, err := QEMUArgs(Config{Image: "x", Board: "rpi3", Disks: disks[:1]}); err == nil {
		t.Error("rpi3 with a disk accepted")
	}
}
