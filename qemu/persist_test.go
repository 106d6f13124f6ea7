package qemu

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDiskPersistence: state outlives the machine. testdata/persist
// appends records to a log on an ext4 disk (at /data), fsyncing each, and
// replaces a state file by the atomic-replace pattern (tmp, fsync,
// rename, fsync of the directory); the machine stops; a second boot on
// the same image finds every record and the last state and writes more;
// a third only reads. e2fsck -fn finds the image clean after each boot.
func TestDiskPersistence(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots images")
	}
	needQEMU(t)
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skip("mkfs.ext4 not found (Debian's e2fsprogs; make test installs it)")
	}
	const pkg = "yolk/qemu/testdata/persist"
	for _, c := range []struct{ arch, machine string }{{"amd64", "microvm"}, {"arm64", "virt"}} {
		t.Run(c.machine, func(t *testing.T) {
			if _, err := FindQEMUFor(c.arch); err != nil {
				t.Skip(err)
			}
			dir := t.TempDir()
			img := fixtureImage(t, pkg, dir, c.arch)
			disk := filepath.Join(dir, "data.img")
			if out, err := exec.Command(mkfs, "-q", "-F", disk, "16M").CombinedOutput(); err != nil {
				t.Fatalf("mkfs.ext4: %v\n%s", err, out)
			}
			for _, args := range [][]string{{"write", "0", "40"}, {"write", "40", "100"}, {"read", "100"}} {
				var serial bytes.Buffer
				start := time.Now()
				res, err := Run(t.Context(), Config{Image: img, Arch: c.arch, Machine: c.machine, Timeout: 3 * time.Minute,
					Args:   append([]string{args[0], "/data"}, args[1:]...),
					Disks:  []Disk{{File: disk, If: "virtio", GuestPath: "/data"}},
					Stdout: &serial, Stderr: &serial})
				if err != nil {
					t.Fatal(err)
				}
				if res.TimedOut || res.ExitCode != 0 || !strings.Contains(serial.String(), "persist: ok") {
					t.Fatalf("persist %s: exit %d (timed out %v, %v)\n%s", strings.Join(args, " "), res.ExitCode, res.TimedOut, res.Messages, serial.String())
				}
				e2fsckClean(t, disk)
				if t.Failed() {
					t.FailNow()
				}
				t.Logf("persist %s: %v from QEMU's start to its exit", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
			}
		})
	}
}
