package qemu

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDiskRoot: an ext4 disk as the root file system. mkfs.ext4 -d makes
// the disk from a tree (label "rootfs"); the first boot gives it as
// -disk FILE:/ (yolk.disk=vda:/), testdata/rootdisk checks the tree, the
// kernel's mounts over it and ".." back from them, and writes
// /persist.txt; e2fsck -fn finds the disk clean and debugfs reads the
// file and the mount points the kernel made. The second boot names the
// root by its label, mounted read-only (yolk.root=LABEL=rootfs:ro; the
// harness's yolk.disk for the same device finds it mounted already): the
// file is there and a create gives EROFS, and the program starts in
// yolk.cwd on the disk. Both boots have a share at /tmp/sh.
func TestDiskRoot(t *testing.T) {
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
			tree := filepath.Join(dir, "tree")
			for _, d := range []string{"sub/dir"} {
				if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(tree, "hello.txt"), []byte("hello from the disk\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for l, target := range map[string]string{"link": "/hello.txt", "sub/rel": "../hello.txt"} {
				if err := os.Symlink(target, filepath.Join(tree, l)); err != nil {
					t.Fatal(err)
				}
			}
			img := fixtureImageTags(t, "yolk/qemu/testdata/rootdisk", dir, c.arch, "")
			disk := filepath.Join(dir, "root.img")
			if out, err := exec.Command(mkfs, "-q", "-F", "-L", "rootfs", "-d", tree, disk, "16M").CombinedOutput(); err != nil {
				t.Fatalf("mkfs.ext4: %v\n%s", err, out)
			}
			share := filepath.Join(dir, "share")
			if err := os.Mkdir(share, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(share, "shared"), []byte("from the host\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			boot := func(arg, start string, d Disk, env ...string) string {
				var serial bytes.Buffer
				res, err := Run(t.Context(), Config{Image: img, Arch: c.arch, Machine: c.machine, Args: []string{arg, start},
					Disks: []Disk{d}, Shares: []Share{{HostDir: share, GuestPath: "/tmp/sh"}},
					Env: env, Timeout: 3 * time.Minute, Stdout: &serial, Stderr: &serial})
				out := serial.String()
				if err != nil || res.TimedOut || res.ExitCode != 0 || !strings.Contains(out, "rootdisk: ok") {
					t.Fatalf("rootdisk %s: %v, exit %d (timed out %v)\n%s", arg, err, res.ExitCode, res.TimedOut, out)
				}
				if !strings.Contains(out, "yolk: root: vda is /") || strings.Contains(out, "cannot") {
					t.Errorf("rootdisk %s: no report of the root on serial, or a complaint:\n%s", arg, out)
				}
				e2fsckClean(t, disk)
				return out
			}
			t.Log(boot("rw", "/", Disk{File: disk, If: "virtio", GuestPath: "/"}))
			dbg := func(cmd string) string {
				out, err := exec.Command("debugfs", "-R", cmd, disk).Output()
				if err != nil {
					t.Errorf("debugfs -R %q: %v", cmd, err)
				}
				return string(out)
			}
			if out := dbg("cat /persist.txt"); out != "persisted\n" {
				t.Errorf("/persist.txt on the disk after the first boot: %q", out)
			}
			out := dbg("ls -l /")
			for _, n := range []string{" proc", " sys", " dev", " tmp"} {
				if !strings.Contains(out, n) {
					t.Errorf("the kernel made no mount point%s on the disk:\n%s", n, out)
				}
			}
			// The device stays writable: a read-only one refuses a
			// journal that needs recovery, as Linux's does, and the
			// first boot's end checkpoints without unmounting.
			boot("ro", "/sub/dir", Disk{File: disk, If: "virtio"}, "yolk.root=LABEL=rootfs:ro", "yolk.cwd=/sub/dir")
		})
	}
}
