package main

import (
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// statfs and fstatfs answer with the f_type Linux gives each kind of
// file (the same program on the host's Linux passes: /dev is a tmpfs
// there too), and a host share's is 9p's, with the host's figures.

func init() { tests = append(tests, test{"TestStatfs", testStatfs}) }

func testStatfs(t *T) {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatalf("%v", err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	us, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer unix.Close(us)
	is, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer unix.Close(is)
	ev, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer unix.Close(ev)
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer unix.Close(ep)
	null, err := os.Open("/dev/null")
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer null.Close()
	for _, c := range []struct {
		what string
		fd   int
		typ  int64
	}{
		{"pipe", p[0], 0x50495045},
		{"unix socket", us, 0x534f434b},
		{"inet socket", is, 0x534f434b},
		{"eventfd", ev, 0x09041934},
		{"epoll", ep, 0x09041934},
		{"/dev/null", int(null.Fd()), 0x01021994},
	} {
		var st unix.Statfs_t
		if err := unix.Fstatfs(c.fd, &st); err != nil || st.Type != c.typ || st.Bsize != 4096 || st.Namelen != 255 || st.Flags&0x20 == 0 {
			t.Errorf("fstatfs(%s) = %v: type %#x bsize %d namelen %d flags %#x; want type %#x, bsize 4096, namelen 255, ST_VALID",
				c.what, err, st.Type, st.Bsize, st.Namelen, st.Flags, c.typ)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/dev", &st); err != nil || st.Type != 0x01021994 {
		t.Errorf("statfs(/dev) = %v, type %#x; want tmpfs's 0x1021994", err, st.Type)
	}
	if err := unix.Fstatfs(p[1]+1000, &st); err != syscall.EBADF {
		t.Errorf("fstatfs of a closed descriptor = %v, want EBADF", err)
	}
	for _, c := range []struct {
		path string
		want error
	}{{"/no/such/dir", syscall.ENOENT}, {"", syscall.ENOENT}, {"/dev/null/x", syscall.ENOTDIR}} {
		if err := unix.Statfs(c.path, &st); err != c.want {
			t.Errorf("statfs(%q) = %v, want %v", c.path, err, c.want)
		}
	}
	if err := unix.Statfs("/dev", (*unix.Statfs_t)(nil)); err != syscall.EFAULT {
		t.Errorf("statfs into nil = %v, want EFAULT", err)
	}
	if !onYolk() {
		return
	}
	// On yolk the root and /tmp are the in-memory file system: tmpfs,
	// its size the pages file data may take.
	if err := unix.Statfs("/tmp", &st); err != nil || st.Type != 0x01021994 || st.Blocks == 0 || st.Bfree > st.Blocks || st.Files == 0 {
		t.Errorf("statfs(/tmp) = %v, %+v; want tmpfs with its size", err, st)
	}
	if dir := os.Getenv(envShareDir); dir != "" {
		if err := unix.Statfs(filepath.Join(dir, "in"), &st); err != nil || st.Type != 0x01021997 || st.Blocks == 0 || st.Bsize == 0 {
			t.Errorf("statfs(%s/in) = %v, %+v; want 9p's 0x1021997 with the host's figures", dir, err, st)
		}
		f, err := os.Open(filepath.Join(dir, "in", "hello.txt"))
		if err != nil {
			t.Fatalf("%v", err)
		}
		defer f.Close()
		var fst unix.Statfs_t
		if err := unix.Fstatfs(int(f.Fd()), &fst); err != nil || fst.Type != 0x01021997 || fst.Blocks != st.Blocks {
			t.Errorf("fstatfs(a share's file) = %v, %+v; want what statfs of its directory says", err, fst)
		}
	}
}
