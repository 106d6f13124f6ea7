package main

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// File locks: flock and fcntl's record locks, errno for errno as Linux
// (the same binary passes on the host), and a lock one thread holds
// blocking another.

func init() {
	tests = append(tests,
		test{"TestFlock", testFlock},
		test{"TestRecordLocks", testRecordLocks},
		test{"TestLocksBlock", testLocksBlock},
	)
}

// lockFile makes a file of 100 bytes and opens it n times read-write.
func lockFile(t *T, n int) (string, []int) {
	dir, err := os.MkdirTemp("", "locks")
	if err != nil {
		t.Fatalf("MkdirTemp: %v", err)
	}
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, make([]byte, 100), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	var fds []int
	for range n {
		fd, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		fds = append(fds, fd)
	}
	return name, fds
}

func flockErr(fd, op int) syscall.Errno {
	_, _, e := syscall.Syscall(unix.SYS_FLOCK, uintptr(fd), uintptr(op), 0)
	return e
}

func fcntlLk(fd, cmd int, typ int16, start, length int64, pid int32, whence int16) (unix.Flock_t, syscall.Errno) {
	lk := unix.Flock_t{Type: typ, Whence: whence, Start: start, Len: length, Pid: pid}
	_, _, e := syscall.Syscall(unix.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(unsafe.Pointer(&lk)))
	return lk, e
}

func testFlock(t *T) {
	name, fds := lockFile(t, 2)
	defer os.RemoveAll(filepath.Dir(name))
	a, b := fds[0], fds[1]
	defer unix.Close(b)
	check := func(what string, got, want syscall.Errno) {
		if got != want {
			t.Errorf("%s: %s, want %s", what, errnoName(got), errnoName(want))
		}
	}
	check("flock(-1)", flockErr(-1, unix.LOCK_SH), unix.EBADF)
	check("flock(SH|EX)", flockErr(a, unix.LOCK_SH|unix.LOCK_EX), unix.EINVAL)
	check("flock(16)", flockErr(a, 16), unix.EINVAL)
	check("flock(LOCK_MAND|99): ignored, as Linux does now", flockErr(a, 99), 0)
	check("flock(LOCK_NB alone)", flockErr(a, unix.LOCK_NB), unix.EINVAL)
	check("flock(a, EX)", flockErr(a, unix.LOCK_EX), 0)
	check("flock(a, EX) again", flockErr(a, unix.LOCK_EX|unix.LOCK_NB), 0)
	check("flock(b, EX|NB) beside a's EX", flockErr(b, unix.LOCK_EX|unix.LOCK_NB), unix.EWOULDBLOCK)
	check("flock(b, SH|NB) beside a's EX", flockErr(b, unix.LOCK_SH|unix.LOCK_NB), unix.EWOULDBLOCK)
	// A duplicate descriptor shares the open file, and its lock.
	d, err := unix.Dup(a)
	if err != nil {
		t.Fatalf("dup: %v", err)
	}
	check("flock(dup of a, EX|NB)", flockErr(d, unix.LOCK_EX|unix.LOCK_NB), 0)
	unix.Close(d)
	check("flock(b, SH|NB) after closing a dup", flockErr(b, unix.LOCK_SH|unix.LOCK_NB), unix.EWOULDBLOCK)
	check("flock(a, SH): a conversion", flockErr(a, unix.LOCK_SH), 0)
	check("flock(b, SH|NB) beside a's SH", flockErr(b, unix.LOCK_SH|unix.LOCK_NB), 0)
	check("flock(a, EX|NB) beside b's SH", flockErr(a, unix.LOCK_EX|unix.LOCK_NB), unix.EWOULDBLOCK)
	check("flock(b, UN)", flockErr(b, unix.LOCK_UN), 0)
	check("flock(a, EX|NB) once b unlocked", flockErr(a, unix.LOCK_EX|unix.LOCK_NB), 0)
	// flock and record locks do not see each other.
	_, e := fcntlLk(b, unix.F_OFD_SETLK, unix.F_WRLCK, 0, 0, 0, unix.SEEK_SET)
	check("F_OFD_SETLK beside a flock", e, 0)
	// Closing the last descriptor of the open file drops its lock.
	unix.Close(a)
	check("flock(b, EX|NB) once a closed", flockErr(b, unix.LOCK_EX|unix.LOCK_NB), 0)
}

func testRecordLocks(t *T) {
	name, fds := lockFile(t, 3)
	defer os.RemoveAll(filepath.Dir(name))
	a, b, c := fds[0], fds[1], fds[2]
	defer unix.Close(a)
	defer unix.Close(b)
	check := func(what string, got, want syscall.Errno) {
		if got != want {
			t.Errorf("%s: %s, want %s", what, errnoName(got), errnoName(want))
		}
	}
	set := func(fd, cmd int, typ int16, start, length int64) syscall.Errno {
		_, e := fcntlLk(fd, cmd, typ, start, length, 0, unix.SEEK_SET)
		return e
	}
	// Arguments.
	_, e := fcntlLk(a, unix.F_SETLK, unix.F_WRLCK, 0, 10, 0, 5)
	check("F_SETLK whence 5", e, unix.EINVAL)
	_, e = fcntlLk(a, unix.F_SETLK, 7, 0, 10, 0, unix.SEEK_SET)
	check("F_SETLK type 7", e, unix.EINVAL)
	_, e = fcntlLk(a, unix.F_SETLK, unix.F_WRLCK, -1, 10, 0, unix.SEEK_SET)
	check("F_SETLK start -1", e, unix.EINVAL)
	_, e = fcntlLk(a, unix.F_SETLK, unix.F_WRLCK, 5, -10, 0, unix.SEEK_SET)
	check("F_SETLK start 5 length -10", e, unix.EINVAL)
	_, e = fcntlLk(a, unix.F_OFD_SETLK, unix.F_WRLCK, 0, 10, 1, unix.SEEK_SET)
	check("F_OFD_SETLK l_pid 1", e, unix.EINVAL)
	_, e = fcntlLk(a, unix.F_GETLK, unix.F_UNLCK, 0, 10, 0, unix.SEEK_SET)
	check("F_GETLK F_UNLCK", e, unix.EINVAL)
	ro, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	check("F_SETLK F_WRLCK on a read-only descriptor", set(ro, unix.F_SETLK, unix.F_WRLCK, 0, 10), unix.EBADF)
	check("F_SETLK F_RDLCK on a read-only descriptor", set(ro, unix.F_SETLK, unix.F_RDLCK, 0, 10), 0)
	check("F_SETLK F_UNLCK", set(ro, unix.F_SETLK, unix.F_UNLCK, 0, 10), 0)
	unix.Close(ro)
	_, _, e = syscall.Syscall(unix.SYS_FCNTL, uintptr(a), unix.F_SETLK, 8)
	check("F_SETLK at address 8", e, unix.EFAULT)

	// POSIX locks are the process's: its descriptors never conflict.
	check("F_SETLK a [0,9] W", set(a, unix.F_SETLK, unix.F_WRLCK, 0, 10), 0)
	check("F_SETLK b [0,9] W, same process", set(b, unix.F_SETLK, unix.F_WRLCK, 0, 10), 0)
	// OFD locks are the open file's, and see POSIX ones.
	check("F_OFD_SETLK b [5,14] W beside the process's [0,9]", set(b, unix.F_OFD_SETLK, unix.F_WRLCK, 5, 10), unix.EAGAIN)
	lk, e := fcntlLk(b, unix.F_OFD_GETLK, unix.F_WRLCK, 5, 10, 0, unix.SEEK_SET)
	check("F_OFD_GETLK", e, 0)
	if lk.Type != unix.F_WRLCK || lk.Start != 0 || lk.Len != 10 || lk.Pid != int32(os.Getpid()) {
		t.Errorf("F_OFD_GETLK found %+v, want the process's write lock [0,9] with its pid", lk)
	}
	check("F_OFD_SETLK b [10,19] W", set(b, unix.F_OFD_SETLK, unix.F_WRLCK, 10, 10), 0)
	lk, e = fcntlLk(a, unix.F_GETLK, unix.F_RDLCK, 0, 0, 0, unix.SEEK_SET)
	check("F_GETLK", e, 0)
	if lk.Type != unix.F_WRLCK || lk.Start != 10 || lk.Len != 10 || lk.Pid != -1 {
		t.Errorf("F_GETLK found %+v, want the OFD write lock [10,19], pid -1", lk)
	}
	// A lock over part of one of the owner's splits it.
	check("F_OFD_SETLK c [30,129] W", set(c, unix.F_OFD_SETLK, unix.F_WRLCK, 30, 100), 0)
	check("F_OFD_SETLK c [40,59] unlock", set(c, unix.F_OFD_SETLK, unix.F_UNLCK, 40, 20), 0)
	check("F_OFD_SETLK b [45,50] W in the hole", set(b, unix.F_OFD_SETLK, unix.F_WRLCK, 45, 6), 0)
	check("F_OFD_SETLK b [35,36] R beside c's W", set(b, unix.F_OFD_SETLK, unix.F_RDLCK, 35, 2), unix.EAGAIN)
	check("F_OFD_SETLK b [120,120] W beside c's far end", set(b, unix.F_OFD_SETLK, unix.F_WRLCK, 120, 1), unix.EAGAIN)
	check("F_OFD_SETLK b [130,+) W past c's", set(b, unix.F_OFD_SETLK, unix.F_WRLCK, 130, 0), 0)
	// SEEK_END and a negative length.
	_, e = fcntlLk(c, unix.F_OFD_SETLK, unix.F_RDLCK, 0, -5, 0, unix.SEEK_END)
	check("F_OFD_SETLK c [95,99] R from SEEK_END", e, 0)
	lk, e = fcntlLk(b, unix.F_OFD_GETLK, unix.F_WRLCK, 97, 1, 0, unix.SEEK_SET)
	if e != 0 || lk.Type != unix.F_RDLCK || lk.Start != 95 || lk.Len != 5 {
		t.Errorf("F_OFD_GETLK [97,97]: %+v, %v; want c's read lock [95,99], which split its write lock", lk, e)
	}
	// Closing any descriptor of the file drops the process's POSIX locks;
	// c's OFD locks go with c's open file.
	unix.Close(c)
	check("F_OFD_SETLK b [0,9] R once c closed: the process's locks are gone", set(b, unix.F_OFD_SETLK, unix.F_RDLCK, 0, 10), 0)
	check("F_OFD_SETLK b [60,129] W: c's are gone", set(b, unix.F_OFD_SETLK, unix.F_WRLCK, 60, 70), 0)
}

// testLocksBlock: a lock one thread holds blocks another thread's
// blocking request on the same file, until it is released.
func testLocksBlock(t *T) {
	for _, kind := range []string{"flock", "F_OFD_SETLKW"} {
		name, fds := lockFile(t, 2)
		lock := func(fd int, on bool) syscall.Errno {
			if kind == "flock" {
				op := unix.LOCK_EX
				if !on {
					op = unix.LOCK_UN
				}
				return flockErr(fd, op)
			}
			typ := int16(unix.F_WRLCK)
			if !on {
				typ = unix.F_UNLCK
			}
			_, e := fcntlLk(fd, unix.F_OFD_SETLKW, typ, 0, 0, 0, unix.SEEK_SET)
			return e
		}
		if e := lock(fds[0], true); e != 0 {
			t.Fatalf("%s: lock: %v", kind, e)
		}
		got := make(chan syscall.Errno)
		go func() {
			runtime.LockOSThread() // the blocked call holds its thread
			defer runtime.UnlockOSThread()
			got <- lock(fds[1], true)
		}()
		select {
		case e := <-got:
			t.Errorf("%s: a second open file's lock returned %v while the first held it", kind, errnoName(e))
		case <-time.After(200 * time.Millisecond):
		}
		if e := lock(fds[0], false); e != 0 {
			t.Errorf("%s: unlock: %v", kind, e)
		}
		select {
		case e := <-got:
			if e != 0 {
				t.Errorf("%s: the waiting lock: %v", kind, errnoName(e))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the waiting lock did not return 10s after the unlock", kind)
		}
		unix.Close(fds[0])
		unix.Close(fds[1])
		os.RemoveAll(filepath.Dir(name))
	}
}
