package qemu

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
	onDiskMachines(t, "yolk/qemu/testdata/persist", "", "16M", func(t *testing.T, r diskRig) {
		for _, args := range [][]string{{"write", "0", "40"}, {"write", "40", "100"}, {"read", "100"}} {
			start := time.Now()
			res, out := r.boot(t, Config{Args: append([]string{args[0], "/data"}, args[1:]...)})
			if res.TimedOut || res.ExitCode != 0 || !strings.Contains(out, "persist: ok") {
				t.Fatalf("persist %s: exit %d (timed out %v, %v)\n%s", strings.Join(args, " "), res.ExitCode, res.TimedOut, res.Messages, out)
			}
			if t.Failed() {
				t.FailNow() // e2fsck
			}
			t.Logf("persist %s: %v from QEMU's start to its exit", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		}
	})
}

// TestDiskCommitInterval: what a program wrote without fsync is on the
// disk within seconds, as Linux's ext4 commits its journal every 5 s.
// testdata/persist writes a file and a directory with a file in it and
// sleeps; 10 s later QEMU is killed (SIGKILL: nothing is written back);
// the next boot replays the journal and finds them whole, and e2fsck -fn
// finds the disk clean. Without the kernel's committer the transaction
// holding their metadata never left memory.
func TestDiskCommitInterval(t *testing.T) {
	onDiskMachines(t, "yolk/qemu/testdata/persist", "", "16M", func(t *testing.T, r diskRig) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var mu sync.Mutex
		var serial bytes.Buffer
		var timer *time.Timer
		res, err := Run(ctx, Config{Image: r.img, Arch: r.arch, Machine: r.machine, Args: []string{"unsynced", "/data"}, Timeout: 3 * time.Minute,
			Disks:  []Disk{{File: r.disk, If: "virtio", GuestPath: "/data"}},
			Stdout: &lockedWriter{&mu, &serial}, Stderr: &lockedWriter{&mu, &serial},
			OnLine: func(line string) {
				if strings.Contains(line, "persist: unsynced written") && timer == nil {
					timer = time.AfterFunc(10*time.Second, cancel) // SIGKILL
				}
			}})
		mu.Lock()
		out := serial.String()
		mu.Unlock()
		if err != context.Canceled {
			t.Fatalf("the guest was to be killed 10 s after writing; it ended: %v %+v\n%s", err, res, out)
		}
		res, out = r.boot(t, Config{Args: []string{"unsynced-check", "/data"}})
		if res.TimedOut || res.ExitCode != 0 || !strings.Contains(out, "persist: ok") {
			t.Fatalf("after the kill: exit %d (timed out %v)\n%s", res.ExitCode, res.TimedOut, out)
		}
	})
}

// diskRig is a program's image for one machine and an ext4 disk image
// for it, at /data.
type diskRig struct {
	img, arch, machine, disk string
}

// onDiskMachines runs f as a subtest for amd64 microvm and arm64 virt
// with pkg's image (built with tags) and a fresh ext4 disk of size
// (mkfs.ext4's defaults).
func onDiskMachines(t *testing.T, pkg, tags, size string, f func(t *testing.T, r diskRig)) {
	if testing.Short() {
		t.Skip("builds and boots images")
	}
	needQEMU(t)
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skip("mkfs.ext4 not found (Debian's e2fsprogs; make test installs it)")
	}
	for _, c := range []struct{ arch, machine string }{{"amd64", "microvm"}, {"arm64", "virt"}} {
		t.Run(c.machine, func(t *testing.T) {
			if _, err := FindQEMUFor(c.arch); err != nil {
				t.Skip(err)
			}
			dir := t.TempDir()
			r := diskRig{img: fixtureImageTags(t, pkg, dir, c.arch, tags), arch: c.arch, machine: c.machine, disk: filepath.Join(dir, "data.img")}
			if out, err := exec.Command(mkfs, "-q", "-F", r.disk, size).CombinedOutput(); err != nil {
				t.Fatalf("mkfs.ext4: %v\n%s", err, out)
			}
			f(t, r)
		})
	}
}

// boot boots r's image with its disk at /data and c's arguments, SMP,
// memory and timeout (default 3 minutes); e2fsck -fn judges the disk
// after. It returns the result and the serial output.
func (r diskRig) boot(t *testing.T, c Config) (*Result, string) {
	var serial bytes.Buffer
	c.Image, c.Arch, c.Machine = r.img, r.arch, r.machine
	c.Disks = []Disk{{File: r.disk, If: "virtio", GuestPath: "/data"}}
	c.Stdout, c.Stderr = &serial, &serial
	if c.Timeout == 0 {
		c.Timeout = 3 * time.Minute
	}
	res, err := Run(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	e2fsckClean(t, r.disk)
	return res, serial.String()
}
