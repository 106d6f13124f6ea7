// Command rootdisk is TestDiskRoot's program: it runs with an ext4 disk
// as the root file system (yolk.root=, or -disk FILE:/) made by
// mkfs.ext4 -d from a tree holding hello.txt, link (-> /hello.txt),
// sub/rel (-> ../hello.txt) and sub/dir/. It checks that paths from /
// are the disk's, that /proc, /sys, /dev and /tmp are the kernel's over
// the disk's directories of those names, that ".." from each of them
// comes back to the disk, and that renames, a unix socket in /tmp and
// an fsynced file work, that mount points are busy, that unix sockets
// bind only in the kernel's trees, and that a share mounted at /tmp/sh
// (holding a file "shared") comes back to /tmp by "..". rootdisk rw
// START writes /persist.txt; rootdisk ro START (a read-only root) reads
// it back and checks that writes give EROFS; START is the working
// directory the program must start in (yolk.cwd). It prints "rootdisk:
// ok", or each failure and exits 1.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
)

var failed bool

func fail(format string, a ...any) {
	fmt.Printf("rootdisk: FAIL: "+format+"\n", a...)
	failed = true
}

const hello = "hello from the disk\n"

func main() {
	if len(os.Args) != 3 || os.Args[1] != "rw" && os.Args[1] != "ro" {
		fmt.Println("usage: rootdisk rw|ro START")
		os.Exit(2)
	}
	ro := os.Args[1] == "ro"
	// What a mount point's rmdir, rename and unlink give: on a read-only
	// root EROFS comes first, as Linux's.
	busy, isdir := syscall.EBUSY, syscall.EISDIR
	if ro {
		busy, isdir = syscall.EROFS, syscall.EROFS
	}
	if wd, err := os.Getwd(); err != nil || wd != os.Args[2] {
		fail("getwd at the start = %q, %v; want %s", wd, err, os.Args[2])
	}
	os.Chdir("/")
	for _, p := range []string{"/hello.txt", "/link", "/sub/rel", "hello.txt", "/sub/dir/../../hello.txt", "/proc/../hello.txt"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != hello {
			fail("read %s = %q, %v", p, b, err)
		}
	}
	ents, err := os.ReadDir("/")
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	for _, n := range []string{"hello.txt", "link", "sub", "lost+found", "proc", "sys", "dev", "tmp"} {
		if !slices.Contains(names, n) {
			fail("readdir(/) = %v, %v: no %s", names, err, n)
		}
	}
	for _, c := range []struct {
		path  string
		magic int64
	}{{"/", 0xef53}, {"/sub", 0xef53}, {"/tmp", 0x01021994}, {"/dev", 0x01021994}, {"/proc", 0x9fa0}, {"/sys", 0x62656572}} {
		var st syscall.Statfs_t
		if err := syscall.Statfs(c.path, &st); err != nil || int64(st.Type) != c.magic {
			fail("statfs(%s) = %#x, %v; want %#x", c.path, st.Type, err, c.magic)
		}
	}
	if b, err := os.ReadFile("/proc/self/stat"); err != nil || !bytes.HasPrefix(b, []byte("1 (")) {
		fail("/proc/self/stat = %.40q, %v", b, err)
	}
	if l, err := os.Readlink("/proc/self/cwd"); err != nil || l != "/" {
		fail("readlink /proc/self/cwd = %q, %v", l, err)
	}
	// /proc/self/root and cwd lead to the disk.
	if b, err := os.ReadFile("/proc/self/root/hello.txt"); err != nil || string(b) != hello {
		fail("read /proc/self/root/hello.txt = %q, %v", b, err)
	}
	os.Chdir("/sub/dir")
	if l, err := os.Readlink("/proc/self/cwd"); err != nil || l != "/sub/dir" {
		fail("readlink /proc/self/cwd in /sub/dir = %q, %v", l, err)
	}
	if b, err := os.ReadFile("/proc/self/cwd/../../hello.txt"); err != nil || string(b) != hello {
		fail("read /proc/self/cwd/../../hello.txt = %q, %v", b, err)
	}
	os.Chdir("/")
	// A share below /tmp: its ".." is /tmp.
	var sh, tmp syscall.Stat_t
	syscall.Stat("/tmp", &tmp)
	if err := syscall.Stat("/tmp/sh/..", &sh); err != nil || sh.Dev != tmp.Dev || sh.Ino != tmp.Ino {
		fail("stat /tmp/sh/.. = dev %#x ino %d, %v; want /tmp's, dev %#x ino %d", sh.Dev, sh.Ino, err, tmp.Dev, tmp.Ino)
	}
	if b, err := os.ReadFile("/tmp/sh/shared"); err != nil || string(b) != "from the host\n" {
		fail("read /tmp/sh/shared = %q, %v", b, err)
	}
	// Mount points are busy.
	for _, c := range []struct {
		what string
		err  error
		want syscall.Errno
	}{
		{"rename /tmp /tmp2", syscall.Rename("/tmp", "/tmp2"), busy},
		{"rename /sub /proc", syscall.Rename("/sub", "/proc"), busy}, // (os.Rename says EEXIST itself over a directory)
		{"unlink /tmp", syscall.Unlink("/tmp"), isdir},
	} {
		if !errors.Is(c.err, c.want) {
			fail("%s = %v, want %v", c.what, c.err, c.want)
		}
	}
	// Unix sockets: their nodes are the kernel's.
	if l, err := net.Listen("unix", "/y.sock"); !errors.Is(err, syscall.EPERM) {
		fail("listen on /y.sock (the disk) = %v, want EPERM", err)
		if l != nil {
			l.Close()
		}
	}
	if _, err := net.Dial("unix", "/hello.txt"); !errors.Is(err, syscall.ECONNREFUSED) {
		fail("dial /hello.txt = %v, want ECONNREFUSED", err)
	}
	if _, err := net.Dial("unix", "/none.sock"); !errors.Is(err, syscall.ENOENT) {
		fail("dial /none.sock = %v, want ENOENT", err)
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err != nil || !strings.Contains(string(mi), " / / ") || !strings.Contains(string(mi), " - ext4 /dev/vda ") || !strings.Contains(string(mi), " /tmp /tmp ") {
		fail("/proc/self/mountinfo: no ext4 root on /dev/vda and tmpfs /tmp: %v\n%s", err, mi)
	}
	if err := os.WriteFile("/dev/null", []byte("x"), 0); err != nil {
		fail("write /dev/null: %v", err)
	}
	// /tmp is the kernel's: a file there is not on the disk.
	if err := os.WriteFile("/tmp/t", []byte("t"), 0o644); err != nil {
		fail("write /tmp/t: %v", err)
	}
	var tst, rst, dst syscall.Stat_t
	syscall.Stat("/tmp/t", &tst)
	syscall.Stat("/", &rst)
	if tst.Dev == rst.Dev {
		fail("/tmp/t is on the root's device %#x", rst.Dev)
	}
	if err := os.Rename("/tmp/t", "/tmp/u"); err != nil {
		fail("rename /tmp/t /tmp/u: %v", err)
	}
	if err := os.Rename("/tmp/u", "/moved"); !errors.Is(err, syscall.EXDEV) {
		fail("rename /tmp/u /moved = %v, want EXDEV", err)
	}
	if err := syscall.Rmdir("/proc"); !errors.Is(err, busy) {
		fail("rmdir /proc = %v, want %v", err, busy)
	}
	// ".." from each mounted root and from directories on the disk.
	for _, c := range []struct{ dir, wd, up string }{{"/tmp", "/tmp", ".."}, {"/proc", "/proc", ".."}, {"/dev", "/dev", ".."}, {"/sub/dir", "/sub/dir", "../.."}, {"/", "/", ".."}} {
		if err := os.Chdir(c.dir); err != nil {
			fail("chdir %s: %v", c.dir, err)
			continue
		}
		if wd, err := os.Getwd(); err != nil || wd != c.wd {
			fail("getwd in %s = %q, %v", c.dir, wd, err)
		}
		if err := syscall.Stat(c.up, &dst); err != nil || dst.Dev != rst.Dev || dst.Ino != rst.Ino {
			fail("stat %s from %s = dev %#x ino %d, %v; want the root's, dev %#x ino %d", c.up, c.dir, dst.Dev, dst.Ino, err, rst.Dev, rst.Ino)
		}
		if b, err := os.ReadFile(c.up + "/hello.txt"); err != nil || string(b) != hello {
			fail("read %s/hello.txt from %s = %q, %v", c.up, c.dir, b, err)
		}
	}
	os.Chdir("/")
	// A unix socket in /tmp.
	if l, err := net.Listen("unix", "/tmp/s.sock"); err != nil {
		fail("listen on /tmp/s.sock: %v", err)
	} else {
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Write([]byte("pong"))
				c.Close()
			}
		}()
		c, err := net.Dial("unix", "/tmp/s.sock")
		var b [4]byte
		if err == nil {
			_, err = c.Read(b[:])
			c.Close()
		}
		if err != nil || string(b[:]) != "pong" {
			fail("unix socket in /tmp: %q, %v", b, err)
		}
		l.Close()
	}
	if ro {
		if b, err := os.ReadFile("/persist.txt"); err != nil || string(b) != "persisted\n" {
			fail("read /persist.txt = %q, %v", b, err)
		}
		if err := os.WriteFile("/new", nil, 0o644); !errors.Is(err, syscall.EROFS) {
			fail("create /new on a read-only root = %v, want EROFS", err)
		}
	} else {
		// rename and link through links on the way (as a root's
		// /var/run -> /run), relative and absolute.
		err := os.Mkdir("/real", 0o755)
		if err == nil {
			err = os.Symlink("real", "/lnk")
		}
		if err == nil {
			err = os.Symlink("/real", "/alnk")
		}
		if err == nil {
			err = os.WriteFile("/lnk/a", []byte("a"), 0o644)
		}
		if err == nil {
			err = syscall.Rename("/lnk/a", "/alnk/b")
		}
		if err == nil {
			err = syscall.Link("/alnk/b", "/lnk/c")
		}
		if err != nil {
			fail("rename and link through links: %v", err)
		} else if b, err := os.ReadFile("/real/c"); err != nil || string(b) != "a" {
			fail("/real/c after the rename and link through links = %q, %v", b, err)
		}
		if err := syscall.Rename("/alnk/b", "/tmp/b"); !errors.Is(err, syscall.EXDEV) {
			fail("rename /alnk/b /tmp/b = %v, want EXDEV", err)
		}
		f, err := os.Create("/persist.tmp")
		if err == nil {
			_, err = f.WriteString("persisted\n")
		}
		if err == nil {
			err = f.Sync()
		}
		if err == nil {
			err = f.Close()
		}
		if err == nil {
			err = os.Rename("persist.tmp", "persist.txt") // relative: from the working directory, /
		}
		if err != nil {
			fail("write /persist.txt: %v", err)
		}
	}
	if failed {
		os.Exit(1)
	}
	fmt.Println("rootdisk: ok")
}
