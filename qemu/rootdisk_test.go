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
// yolk.cwd on the disk, at 2 CPUs. Both boots have a share at /tmp/sh.
func TestDiskRoot(t *testing.T) {
	onDiskMachines(t, "yolk/qemu/testdata/rootdisk", "", "16M", func(t *testing.T, r diskRig) {
		dir, c, img, disk := filepath.Dir(r.disk), r, r.img, r.disk
		tree := filepath.Join(dir, "tree")
		if err := os.MkdirAll(filepath.Join(tree, "sub/dir"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, "hello.txt"), []byte("hello from the disk\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for l, target := range map[string]string{"link": "/hello.txt", "sub/rel": "../hello.txt"} {
			if err := os.Symlink(target, filepath.Join(tree, l)); err != nil {
				t.Fatal(err)
			}
		}
		// The rig's empty disk made again from the tree, with a label.
		if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-L", "rootfs", "-d", tree, disk, "16M").CombinedOutput(); err != nil {
			t.Fatalf("mkfs.ext4: %v\n%s", err, out)
		}
		share := filepath.Join(dir, "share")
		if err := os.Mkdir(share, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(share, "shared"), []byte("from the host\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		boot := func(arg, start string, smp int, d Disk, env ...string) string {
			var serial bytes.Buffer
			res, err := Run(t.Context(), Config{Image: img, Arch: c.arch, Machine: c.machine, SMP: smp, Args: []string{arg, start},
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
		t.Log(boot("rw", "/", 1, Disk{File: disk, If: "virtio", GuestPath: "/"}))
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
		boot("ro", "/sub/dir", 2, Disk{File: disk, If: "virtio"}, "yolk.root=LABEL=rootfs:ro", "yolk.cwd=/sub/dir")
	})
}
