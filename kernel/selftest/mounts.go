package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// One tree of mounts (kernel/pathwalk.go, docs/vfs.md): a path walks from
// the in-memory file system onto /proc, /sys and the host shares and
// back, by name, by "..", from the working directory and through symbolic
// links whose targets are on another mount, as Linux's path_resolution(7)
// says; rename and link across mounts are EXDEV; each mount has its own
// statfs magic and /proc/self/mounts lists it. The share cases run where
// the qemu package's TestGuest gives a share. The rest passes on the
// host's Linux too (go build ./kernel/selftest; run it as root).

func init() { tests = append(tests, test{"TestMounts", testMounts}) }

// sameFile reports whether a and b name one file (st_dev and st_ino).
func sameFile(t *T, a, b string) {
	var sa, sb unix.Stat_t
	ea, eb := unix.Stat(a, &sa), unix.Stat(b, &sb)
	if ea != nil || eb != nil || sa.Dev != sb.Dev || sa.Ino != sb.Ino {
		t.Errorf("stat %q = %v dev %#x ino %d; stat %q = %v dev %#x ino %d: want the same file", a, ea, sa.Dev, sa.Ino, b, eb, sb.Dev, sb.Ino)
	}
}

func testMounts(t *T) {
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	// /proc and /sys.
	sameFile(t, "/proc/..", "/")
	sameFile(t, "/proc/self/..", "/proc")
	sameFile(t, "/sys/fs/../..", "/")
	sameFile(t, "/proc/self/root/tmp", "/tmp") // a link out of /proc, then on
	var root unix.Stat_t
	unix.Stat("/", &root)
	var ps unix.Stat_t
	if err := unix.Stat("/proc", &ps); err != nil || ps.Dev == root.Dev || ps.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Errorf("stat /proc = %v, dev %#x (root's %#x), mode %o: want a directory on a device of its own", err, ps.Dev, root.Dev, ps.Mode)
	}
	pid := strconv.Itoa(os.Getpid())
	if l, err := os.Readlink("/proc/self"); err != nil || l != pid {
		t.Errorf("readlink /proc/self = %q, %v; want %s", l, err, pid)
	}
	f, err := os.CreateTemp("", "mounts")
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	fdLink := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if l, err := os.Readlink(fdLink); err != nil || l != f.Name() {
		t.Errorf("readlink %s = %q, %v; want %q", fdLink, l, err, f.Name())
	}
	sameFile(t, fdLink, f.Name()) // followed through the root into /tmp
	for _, c := range []struct {
		path string
		typ  int64
	}{{"/proc", 0x9fa0}, {"/proc/self/stat", 0x9fa0}, {"/sys", 0x62656572}, {"/sys/fs/cgroup", 0x63677270}, {"/tmp", 0x01021994}, {"/", 0x01021994}} {
		if !onYolk() && (c.path == "/tmp" || c.path == "/" || c.path == "/sys/fs/cgroup") {
			continue // the host's (a container's) may be any file system
		}
		var st unix.Statfs_t
		if err := unix.Statfs(c.path, &st); err != nil || st.Type != c.typ {
			t.Errorf("statfs(%s) = %v, type %#x; want %#x", c.path, err, st.Type, c.typ)
		}
	}
	pf, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatalf("%v", err)
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(pf.Fd()), &st); err != nil || st.Type != 0x9fa0 {
		t.Errorf("fstatfs(/proc/self/status) = %v, type %#x; want proc's 0x9fa0", err, st.Type)
	}
	if b := make([]byte, 5); true {
		if n, err := pf.Read(b); err != nil || string(b[:n]) != "Name:" {
			t.Errorf("read /proc/self/status = %q, %v; want it to start with Name:", b[:n], err)
		}
	}
	pf.Close()
	// A directory descriptor on /proc, and "relative to it".
	pd, err := os.Open("/proc/self")
	if err != nil {
		t.Fatalf("%v", err)
	}
	if fd, err := unix.Openat(int(pd.Fd()), "stat", unix.O_RDONLY, 0); err != nil {
		t.Errorf("openat(/proc/self, stat) = %v", err)
	} else {
		unix.Close(fd)
	}
	var s1, s2 unix.Stat_t
	if err := unix.Fstatat(int(pd.Fd()), "..", &s1, 0); err != nil || unix.Stat("/proc", &s2) != nil || s1.Ino != s2.Ino {
		t.Errorf("fstatat(/proc/self, ..) = %v ino %d, want /proc's %d", err, s1.Ino, s2.Ino)
	}
	names, err := pd.Readdirnames(-1)
	if err != nil || !contains(names, "stat") || !contains(names, "fd") {
		t.Errorf("readdir /proc/self = %v, %v; want stat and fd among them", names, err)
	}
	pd.Close()
	for _, c := range []struct {
		what string
		err  error
		want syscall.Errno
	}{
		{"write /proc/self/stat", writeErr("/proc/self/stat"), syscall.EINVAL},
		{"create /proc/x", openErr("/proc/x", os.O_CREATE|os.O_WRONLY), syscall.ENOENT},
		{"remove /proc/self/stat", os.Remove("/proc/self/stat"), syscall.EPERM},
		{"rmdir /proc", syscall.Rmdir("/proc"), syscall.EBUSY},
		{"truncate /proc/self/stat", os.Truncate("/proc/self/stat", 0), 0},
		{"mkdir /proc/self", os.Mkdir("/proc/self", 0o755), syscall.EEXIST},
		{"rename /tmp into /proc", os.Rename(f.Name(), "/proc/x"), syscall.EXDEV},
		{"chmod /proc/self/stat", os.Chmod("/proc/self/stat", 0o600), syscall.EPERM},
	} {
		if errnoOf(c.err) != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.err, c.want)
		}
	}
	// A working directory on /proc.
	if err := os.Chdir("/proc/self/fd"); err != nil {
		t.Errorf("chdir /proc/self/fd: %v", err)
	} else {
		if d, err := os.Getwd(); err != nil || d != "/proc/"+pid+"/fd" {
			t.Errorf("getwd on /proc = %q, %v; want /proc/%s/fd", d, err, pid)
		}
		sameFile(t, "../../..", "/")
		sameFile(t, strconv.Itoa(int(f.Fd())), f.Name())
		os.Chdir("/tmp")
		sameFile(t, ".", "/tmp")
	}
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil || !bytes.Contains(mounts, []byte("proc /proc proc ")) || !bytes.Contains(mounts, []byte("sysfs /sys sysfs ")) {
		t.Errorf("/proc/self/mounts = %q, %v: want /proc and /sys", mounts, err)
	}

	dir := os.Getenv(envShareDir)
	if dir == "" {
		t.Logf("no share: the share's cases not run")
		return
	}
	// A share: ".." at its root, from a path and from a working
	// directory on it; links both ways.
	sub := dir + "/mounts" // the test's own, gone at its end
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	defer os.RemoveAll(sub)
	sameFile(t, dir+"/..", filepath.Dir(dir))
	sameFile(t, sub+"/../..", filepath.Dir(dir))
	if !strings.Contains(string(mounts), " "+dir+" 9p ") {
		t.Errorf("/proc/self/mounts does not list the share at %s:\n%s", dir, mounts)
	}
	if err := os.Chdir(sub); err != nil {
		t.Fatalf("%v", err)
	}
	sameFile(t, "../..", filepath.Dir(dir))
	sameFile(t, "../../"+filepath.Base(dir)+"/mounts", sub)
	if _, err := os.Stat(""); errnoOf(err) != syscall.ENOENT {
		t.Errorf(`stat("") with the working directory on a share = %v, want ENOENT`, err)
	}
	if fd, err := unix.Open("", unix.O_RDONLY, 0); errnoOf(err) != syscall.ENOENT {
		unix.Close(fd)
		t.Errorf(`open("") with the working directory on a share = %v, want ENOENT`, err)
	}
	if err := os.Chdir("/tmp"); err != nil {
		t.Fatalf("%v", err)
	}
	in := "/tmp/mounts-to-share"
	os.Remove(in)
	if err := os.Symlink(sub, in); err != nil {
		t.Fatalf("%v", err)
	}
	defer os.Remove(in)
	if err := os.WriteFile(in+"/mounts.txt", []byte("through a link\n"), 0o644); err != nil {
		t.Errorf("write through a link into the share: %v", err)
	} else if b, err := os.ReadFile(sub + "/mounts.txt"); err != nil || string(b) != "through a link\n" {
		t.Errorf("read back: %q, %v", b, err)
	}
	defer os.Remove(sub + "/mounts.txt")
	out := sub + "/mounts-to-tmp"
	os.Remove(out)
	if err := os.Symlink("/tmp", out); err != nil {
		t.Fatalf("%v", err)
	}
	defer os.Remove(out)
	sameFile(t, out, "/tmp") // a share's link to an absolute path: from the root
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil || sfs.Type != 0x01021997 {
		t.Errorf("statfs(%s) = %v, type %#x; want 9p's 0x1021997", dir, err, sfs.Type)
	}
	for _, c := range []struct {
		what string
		err  error
	}{
		{"rename /tmp to the share", os.Rename(f.Name(), sub+"/x")},
		{"rename the share to /tmp", os.Rename(sub+"/mounts.txt", "/tmp/x")},
		{"link /tmp into the share", os.Link(f.Name(), sub+"/x")},
		{"link through the link", os.Link(f.Name(), in+"/x")},
	} {
		if errnoOf(c.err) != syscall.EXDEV {
			t.Errorf("%s: %v, want EXDEV", c.what, c.err)
		}
	}
	// Within the share, through a link from the in-memory file system.
	if err := os.Rename(in+"/mounts.txt", sub+"/mounts2.txt"); err != nil {
		t.Errorf("rename on the share through a link: %v", err)
	}
	os.Rename(sub+"/mounts2.txt", sub+"/mounts.txt")
	if err := os.Remove(dir); errnoOf(err) != syscall.EBUSY {
		t.Errorf("rmdir of the share's mount point = %v, want EBUSY", err)
	}
}

// writeErr is a write's error on path opened for writing (root may).
func writeErr(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write([]byte("x"))
	return err
}

func openErr(path string, flag int) error {
	f, err := os.OpenFile(path, flag, 0o644)
	if err == nil {
		f.Close()
		return errors.New("opened")
	}
	return err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
