package main

import (
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// File locks on an ext4 disk (kernel/disk's files through kernel/flock):
// two opens of one inode share its locks, a close drops them as Linux's
// does. The disk is TestDiskFS's ($YOLK_EXT4); the files go before the
// end, for e2fsck.

func init() { tests = append(tests, test{"TestDiskLocks", testDiskLocks}) }

func testDiskLocks(t *T) {
	root := os.Getenv("YOLK_EXT4")
	if root == "" {
		t.Skipf("no ext4 disk attached (YOLK_EXT4 unset)")
	}
	name := filepath.Join(root, "locks")
	other := filepath.Join(root, "locks2")
	defer os.Remove(name)
	defer os.Remove(other)
	for _, n := range []string{name, other} {
		if err := os.WriteFile(n, make([]byte, 200), 0o644); err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
	}
	open := func(n string) int {
		fd, err := unix.Open(n, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("open %s: %v", n, err)
		}
		return fd
	}
	a, b, c := open(name), open(name), open(other)
	defer unix.Close(b)
	defer unix.Close(c)

	// Record locks: an OFD lock of a against a's own POSIX process lock
	// through b, and back.
	if _, e := fcntlLk(a, unix.F_OFD_SETLK, unix.F_WRLCK, 0, 10, 0, 0); e != 0 {
		t.Fatalf("F_OFD_SETLK write [0,10) on a: %v", e)
	}
	if _, e := fcntlLk(b, unix.F_OFD_SETLK, unix.F_WRLCK, 5, 10, 0, 0); e != unix.EAGAIN {
		t.Errorf("F_OFD_SETLK over a's lock through b: %v, want EAGAIN", e)
	}
	if _, e := fcntlLk(b, unix.F_SETLK, unix.F_RDLCK, 0, 1, 0, 0); e != unix.EAGAIN {
		t.Errorf("F_SETLK read over a's write lock: %v, want EAGAIN", e)
	}
	if lk, e := fcntlLk(b, unix.F_GETLK, unix.F_WRLCK, 3, 1, 0, 0); e != 0 || lk.Type != unix.F_WRLCK || lk.Start != 0 || lk.Len != 10 || lk.Pid != -1 {
		t.Errorf("F_GETLK through b: %+v, %v; want a's write lock [0,10), pid -1 (an OFD lock)", lk, e)
	}
	if _, e := fcntlLk(c, unix.F_OFD_SETLK, unix.F_WRLCK, 0, 10, 0, 0); e != 0 {
		t.Errorf("F_OFD_SETLK on another file: %v", e)
	}
	if _, e := fcntlLk(b, unix.F_SETLK, unix.F_WRLCK, 100, 10, 0, 0); e != 0 {
		t.Fatalf("F_SETLK write [100,110) through b: %v", e)
	}
	if lk, e := fcntlLk(a, unix.F_OFD_GETLK, unix.F_RDLCK, 105, 0, 0, 0); e != 0 || lk.Type != unix.F_WRLCK || lk.Start != 100 || lk.Len != 10 || lk.Pid != int32(os.Getpid()) {
		t.Errorf("F_OFD_GETLK through a: %+v, %v; want the process's write lock [100,110), pid %d", lk, e, os.Getpid())
	}
	if _, e := fcntlLk(a, unix.F_OFD_SETLK, unix.F_RDLCK, 100, 1, 0, 0); e != unix.EAGAIN {
		t.Errorf("F_OFD_SETLK read over the process's lock: %v, want EAGAIN", e)
	}

	// flock: b's exclusive lock excludes a's.
	if e := flockErr(b, unix.LOCK_EX|unix.LOCK_NB); e != 0 {
		t.Fatalf("flock LOCK_EX through b: %v", e)
	}
	if e := flockErr(a, unix.LOCK_EX|unix.LOCK_NB); e != unix.EWOULDBLOCK {
		t.Errorf("flock LOCK_EX|LOCK_NB through a: %v, want EWOULDBLOCK", e)
	}
	if e := flockErr(c, unix.LOCK_EX|unix.LOCK_NB); e != 0 {
		t.Errorf("flock on another file: %v", e)
	}

	// F_SETLKW waits for a's lock to go.
	got := make(chan syscall.Errno, 1)
	go func() {
		_, e := fcntlLk(b, unix.F_OFD_SETLKW, unix.F_WRLCK, 0, 10, 0, 0)
		got <- e
	}()
	time.Sleep(20 * time.Millisecond)
	if _, e := fcntlLk(a, unix.F_OFD_SETLK, unix.F_UNLCK, 0, 10, 0, 0); e != 0 {
		t.Errorf("F_OFD_SETLK unlock through a: %v", e)
	}
	select {
	case e := <-got:
		if e != 0 {
			t.Errorf("F_OFD_SETLKW through b: %v", e)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("F_OFD_SETLKW still waiting 30s after the lock went")
	}
	if _, e := fcntlLk(a, unix.F_OFD_SETLK, unix.F_WRLCK, 0, 1, 0, 0); e != unix.EAGAIN {
		t.Errorf("F_OFD_SETLK over b's new lock: %v, want EAGAIN", e)
	}

	// A close: closing any descriptor of the file drops the process's
	// POSIX locks; closing b's open file drops its flock and OFD locks.
	d := open(name)
	unix.Close(d)
	if _, e := fcntlLk(a, unix.F_OFD_SETLK, unix.F_WRLCK, 100, 10, 0, 0); e != 0 {
		t.Errorf("F_OFD_SETLK where the POSIX lock was, after a close: %v", e)
	}
	if lk, e := fcntlLk(b, unix.F_OFD_GETLK, unix.F_WRLCK, 100, 10, 0, 0); e != 0 || lk.Type != unix.F_WRLCK || lk.Pid != -1 {
		t.Errorf("F_OFD_GETLK through b: %+v, %v; want a's OFD lock", lk, e)
	}
	b2, err := unix.Dup(b)
	if err != nil {
		t.Fatalf("dup: %v", err)
	}
	unix.Close(b)
	if e := flockErr(a, unix.LOCK_EX|unix.LOCK_NB); e != unix.EWOULDBLOCK {
		t.Errorf("flock through a while b's dup holds it: %v, want EWOULDBLOCK", e)
	}
	unix.Close(b2)
	if e := flockErr(a, unix.LOCK_EX|unix.LOCK_NB); e != 0 {
		t.Errorf("flock LOCK_EX through a after b's last close: %v", e)
	}
	if _, e := fcntlLk(a, unix.F_OFD_SETLK, unix.F_WRLCK, 0, 10, 0, 0); e != 0 {
		t.Errorf("F_OFD_SETLK where b's lock was, after its last close: %v", e)
	}
	unix.Close(a)
	fd := open(name)
	if e := flockErr(fd, unix.LOCK_EX|unix.LOCK_NB); e != 0 {
		t.Errorf("flock after a's close: %v", e)
	}
	unix.Close(fd)
}
