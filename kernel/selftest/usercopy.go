package main

// The kernel's copies to and from the program's memory: a buffer checked
// when a call starts and unmapped by another thread while the call
// blocks is EFAULT when the call gets its data, never a kernel fault.

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// testUserCopyFault: for a pipe read, a stream-socket read and
// epoll_wait, a thread blocks with its buffer in an anonymous mapping,
// another unmaps it, then data arrives: the call returns EFAULT (as
// Linux's, run on the same program), and the channel still works with a
// good buffer afterwards.
func testUserCopyFault(t *T) {
	// No bytes, no memory to check: a NULL buffer of length 0 is fine,
	// as Linux's access_ok says.
	r, w, closePipe, err := openPipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	for _, c := range []struct {
		name string
		nr   uintptr
		a    [3]uintptr
	}{{"write", syscall.SYS_WRITE, [3]uintptr{uintptr(w), 0, 0}}, {"read", syscall.SYS_READ, [3]uintptr{uintptr(r), 0, 0}},
		{"getrandom", unix.SYS_GETRANDOM, [3]uintptr{0, 0, 0}}} {
		if n, e := sys(c.nr, c.a[0], c.a[1], c.a[2]); n != 0 || e != 0 {
			t.Errorf("%s(NULL, 0) = %d, %v; want 0", c.name, n, e)
		}
	}
	closePipe()
	for _, c := range userCopyCases {
		r, w, closeAll, err := c.open()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		m, err := syscall.Mmap(-1, 0, 2*pageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			t.Fatalf("mmap: %v", err)
		}
		m[0], m[pageSize] = 1, 1 // backed: the fault comes from the unmap, not a first touch
		buf := uintptr(unsafe.Pointer(&m[0]))
		type result struct {
			n   uintptr
			err syscall.Errno
		}
		done := make(chan result, 1)
		var eintr atomic.Int32
		signals := stats(t).Signals
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			// A signal handled meanwhile (any the program gets: the
			// runtime's, or a timer the fuzzer left) ends epoll_wait
			// with EINTR, on Linux too: wait again.
			n, e := c.wait(r, buf)
			for ; e == syscall.EINTR; n, e = c.wait(r, buf) {
				eintr.Add(1)
			}
			done <- result{n, e}
		}()
		// Long enough for the reader to be blocked in the kernel; were
		// it not yet, the call would find the buffer unmapped at entry
		// and say EFAULT too, so the test could not tell: the fault
		// path is what the old kernel died of (see the commit).
		time.Sleep(200 * time.Millisecond)
		select {
		case res := <-done:
			t.Fatalf("%s: returned %d, %v before any data", c.name, res.n, res.err)
		default:
		}
		if err := syscall.Munmap(m); err != nil {
			t.Fatalf("munmap: %v", err)
		}
		if _, err := syscall.Write(w, []byte("data")); err != nil {
			t.Fatalf("%s: write: %v", c.name, err)
		}
		select {
		case res := <-done:
			if res.err != syscall.EFAULT {
				t.Errorf("%s into a buffer unmapped while it blocked: %d, %v; want EFAULT", c.name, res.n, res.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no return after the data came", c.name)
		}
		if k := eintr.Load(); k > 0 {
			delivered := stats(t).Signals - signals
			t.Logf("%s: %d EINTR while blocked, %d signals delivered meanwhile (all threads)", c.name, k, delivered)
			if delivered == 0 {
				t.Errorf("%s: EINTR %d times with no signal delivered", c.name, k)
			}
		}
		// The channel goes on working.
		if _, err := syscall.Write(w, []byte("more")); err != nil {
			t.Errorf("%s: write after: %v", c.name, err)
		}
		var good [64]byte
		if n, e := c.wait(r, uintptr(unsafe.Pointer(&good[0]))); e != 0 || n == 0 {
			t.Errorf("%s: call with a good buffer after: %d, %v", c.name, n, e)
		}
		closeAll()
	}
}

var userCopyCases = []struct {
	name string
	open func() (r, w int, closeAll func(), err error)
	wait func(r int, buf uintptr) (uintptr, syscall.Errno)
}{
	{"pipe read", openPipe, readInto},
	{"unix stream read", openStreamPair, readInto},
	{"epoll_wait", openEpollPipe, epollInto},
}

func openPipe() (int, int, func(), error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return 0, 0, nil, err
	}
	return p[0], p[1], func() { syscall.Close(p[0]); syscall.Close(p[1]) }, nil
}

func openStreamPair() (int, int, func(), error) {
	p, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, 0, nil, err
	}
	return p[0], p[1], func() { syscall.Close(p[0]); syscall.Close(p[1]) }, nil
}

// openEpollPipe is an epoll instance (r) watching a pipe's read end for
// input; w is the pipe's write end.
func openEpollPipe() (int, int, func(), error) {
	pr, pw, closePipe, err := openPipe()
	if err != nil {
		return 0, 0, nil, err
	}
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		closePipe()
		return 0, 0, nil, err
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(pr)}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, pr, &ev); err != nil {
		syscall.Close(ep)
		closePipe()
		return 0, 0, nil, err
	}
	// The data stays in the pipe: drain it (without waiting: the wait
	// may have ended with no data), so the next wait blocks.
	syscall.SetNonblock(pr, true)
	drain := func() { var b [64]byte; syscall.Read(pr, b[:]) }
	epollDrain[ep] = drain
	return ep, pw, func() { delete(epollDrain, ep); syscall.Close(ep); closePipe() }, nil
}

var epollDrain = map[int]func(){}

func readInto(r int, buf uintptr) (uintptr, syscall.Errno) {
	n, _, e := syscall.Syscall(syscall.SYS_READ, uintptr(r), buf, 64)
	return n, e
}

func epollInto(ep int, buf uintptr) (uintptr, syscall.Errno) {
	n, _, e := syscall.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), buf, 1, ^uintptr(0), 0, 0)
	if drain := epollDrain[ep]; drain != nil {
		drain()
	}
	return n, e
}
