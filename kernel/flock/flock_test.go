package flock

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// hostEnv runs the table with a mutex for its spin lock and a condition
// for its wait queue; handles 1 to 9 are open files: handle h is inode
// h/2+1 (2 and 3 are one inode opened twice), open for reading
// and writing, of 1000 bytes, at offset 100; 7 is open read-only.
type hostEnv struct{}

var (
	tl     *Locks[hostEnv]
	mu     sync.Mutex
	wmu    sync.Mutex
	wcond  = sync.NewCond(&wmu)
	shared = map[int]bool{}
)

func (hostEnv) Lock()   { mu.Lock() }
func (hostEnv) Unlock() { mu.Unlock() }
func (hostEnv) Wait(addr uintptr, val uint32) {
	wmu.Lock()
	for atomic.LoadUint32(&tl.seq) == val {
		wcond.Wait()
	}
	wmu.Unlock()
}
func (hostEnv) Wake() {
	wmu.Lock()
	wcond.Broadcast()
	wmu.Unlock()
}
func (hostEnv) Key(h int) (dev, ino uint64, err abi.Errno) {
	if h <= 0 || h > 9 {
		return 0, 0, abi.EBADF
	}
	return 1, uint64(h/2 + 1), 0
}
func (hostEnv) Size(h int) (int64, abi.Errno) { return 1000, 0 }
func (hostEnv) Flags(h int) (int, abi.Errno) {
	if h == 7 {
		return unix.O_RDONLY, 0
	}
	return unix.O_RDWR, 0
}
func (hostEnv) Offset(h int) (int64, abi.Errno) { return 100, 0 }
func (hostEnv) Shared(fd, h int) bool           { return shared[h] }

func reset() { tl = new(Locks[hostEnv]); shared = map[int]bool{} }

// fl runs fcntl on handle h with a struct flock of typ, whence, start,
// len.
func fl(h, cmd int, typ, whence int16, start, n int64) (flockT, abi.Errno) {
	f := flockT{typ: typ, whence: whence, start: start, len: n}
	_, e := tl.fcntl(h, cmd, &f)
	return f, e
}

func TestFlock(t *testing.T) {
	reset()
	// Handles 2 and 3 are one inode opened twice.
	if e := tl.Flock(2, unix.LOCK_EX); e != 0 {
		t.Fatal(e)
	}
	if e := tl.Flock(3, unix.LOCK_SH|unix.LOCK_NB); e != abi.EAGAIN {
		t.Fatalf("shared under exclusive: %v", e)
	}
	if e := tl.Flock(2, unix.LOCK_SH); e != 0 { // a conversion
		t.Fatal(e)
	}
	if e := tl.Flock(3, unix.LOCK_SH|unix.LOCK_NB); e != 0 {
		t.Fatalf("two shared: %v", e)
	}
	if e := tl.Flock(2, unix.LOCK_NB); e != abi.EINVAL {
		t.Errorf("bad op: %v", e)
	}
	if e := tl.Flock(2, 32|unix.LOCK_EX); e != 0 {
		t.Errorf("LOCK_MAND: %v", e)
	}
	// Record locks do not see flock's.
	if _, e := fl(2, unix.F_OFD_SETLK, unix.F_WRLCK, unix.SEEK_SET, 0, 0); e != 0 {
		t.Errorf("OFD lock beside flock: %v", e)
	}
	// Closing handle 3 (its last descriptor) drops its lock.
	tl.OnClose(5, 3)
	if e := tl.Flock(2, unix.LOCK_EX|unix.LOCK_NB); e != 0 {
		t.Errorf("after the other's close: %v", e)
	}
}

func TestRecordLocks(t *testing.T) {
	reset()
	if _, e := fl(2, unix.F_SETLK, unix.F_WRLCK, unix.SEEK_SET, 0, 100); e != 0 {
		t.Fatal(e)
	}
	if _, e := fl(3, unix.F_OFD_SETLK, unix.F_RDLCK, unix.SEEK_SET, 50, 10); e != abi.EAGAIN {
		t.Fatalf("OFD read lock under a POSIX write lock: %v", e)
	}
	got, e := fl(3, unix.F_OFD_GETLK, unix.F_RDLCK, unix.SEEK_SET, 50, 10)
	if e != 0 || got.typ != unix.F_WRLCK || got.start != 0 || got.len != 100 || got.pid != 1 {
		t.Fatalf("F_OFD_GETLK: %+v, %v", got, e)
	}
	// Unlocking the middle splits the lock in two.
	if _, e := fl(2, unix.F_SETLK, unix.F_UNLCK, unix.SEEK_CUR, -60, 20); e != 0 { // [40, 59]: offset 100
		t.Fatal(e)
	}
	if n := atomic.LoadInt32(&tl.nlocks); n != 2 {
		t.Errorf("%d locks after the split, want 2", n)
	}
	got, _ = fl(3, unix.F_OFD_GETLK, unix.F_WRLCK, unix.SEEK_SET, 40, 20)
	if got.typ != unix.F_UNLCK {
		t.Errorf("the split's gap: %+v", got)
	}
	got, _ = fl(3, unix.F_OFD_GETLK, unix.F_WRLCK, unix.SEEK_END, -940, 1) // byte 60
	if got.typ != unix.F_WRLCK || got.start != 60 || got.len != 40 {
		t.Errorf("the far end: %+v", got)
	}
	// The process's POSIX locks never conflict with each other.
	if _, e := fl(3, unix.F_SETLK, unix.F_WRLCK, unix.SEEK_SET, 0, 0); e != 0 {
		t.Errorf("POSIX over POSIX: %v", e)
	}
	// Closing any descriptor of the file drops them.
	shared[2] = true
	tl.OnClose(4, 2)
	if n := atomic.LoadInt32(&tl.nlocks); n != 0 {
		t.Errorf("%d locks after close", n)
	}
}

func TestRecordLockErrors(t *testing.T) {
	reset()
	for _, c := range []struct {
		h, cmd     int
		typ, whn   int16
		start, len int64
		want       abi.Errno
	}{
		{7, unix.F_SETLK, unix.F_WRLCK, unix.SEEK_SET, 0, 0, abi.EBADF},
		{2, unix.F_SETLK, unix.F_WRLCK, 9, 0, 0, abi.EINVAL},
		{2, unix.F_SETLK, 9, unix.SEEK_SET, 0, 0, abi.EINVAL},
		{2, unix.F_SETLK, unix.F_WRLCK, unix.SEEK_SET, -1, 0, abi.EINVAL},
		{2, unix.F_SETLK, unix.F_WRLCK, unix.SEEK_SET, 10, -11, abi.EINVAL},
		{2, unix.F_SETLK, unix.F_WRLCK, unix.SEEK_CUR, math.MaxInt64, 0, abi.EOVERFLOW},
		{2, unix.F_SETLK, unix.F_WRLCK, unix.SEEK_SET, 10, math.MaxInt64, abi.EOVERFLOW},
		{2, unix.F_GETLK, unix.F_UNLCK, unix.SEEK_SET, 0, 0, abi.EINVAL},
		{20, unix.F_SETLK, unix.F_WRLCK, unix.SEEK_SET, 0, 0, abi.EBADF},
	} {
		if _, e := fl(c.h, c.cmd, c.typ, c.whn, c.start, c.len); e != c.want {
			t.Errorf("%+v: %v", c, e)
		}
	}
}

func TestRecordLocksFull(t *testing.T) {
	reset()
	for i := range int64(maxLocks) {
		if _, e := fl(2, unix.F_OFD_SETLK, unix.F_WRLCK, unix.SEEK_SET, 2*i, 1); e != 0 {
			t.Fatalf("lock %d: %v", i, e)
		}
	}
	if _, e := fl(2, unix.F_OFD_SETLK, unix.F_WRLCK, unix.SEEK_SET, 1000, 1); e != abi.ENOLCK {
		t.Errorf("a full table: %v", e)
	}
}

func TestLocksBlock(t *testing.T) {
	reset()
	if _, e := fl(2, unix.F_OFD_SETLK, unix.F_WRLCK, unix.SEEK_SET, 0, 0); e != 0 {
		t.Fatal(e)
	}
	done := make(chan abi.Errno)
	go func() {
		_, e := fl(3, unix.F_OFD_SETLKW, unix.F_WRLCK, unix.SEEK_SET, 0, 0)
		done <- e
	}()
	select {
	case e := <-done:
		t.Fatalf("F_OFD_SETLKW returned %v under another's lock", e)
	case <-time.After(50 * time.Millisecond):
	}
	if _, e := fl(2, unix.F_OFD_SETLK, unix.F_UNLCK, unix.SEEK_SET, 0, 0); e != 0 {
		t.Fatal(e)
	}
	if e := <-done; e != 0 {
		t.Fatalf("F_OFD_SETLKW: %v", e)
	}
}
