package main

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// FD_CLOEXEC as each call that makes a descriptor sets it from its flags
// (O_CLOEXEC, SOCK_CLOEXEC, EFD_CLOEXEC, EPOLL_CLOEXEC) and F_GETFD reads
// it back; Linux answers the same (the program passes on the host).

func init() { tests = append(tests, test{"TestCloexec", testCloexec}) }

func testCloexec(t *T) {
	check := func(what string, fd int, err error, want bool) {
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		defer unix.Close(fd)
		got, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || (got == unix.FD_CLOEXEC) != want {
			t.Errorf("%s: F_GETFD = %d, %v; want FD_CLOEXEC %v", what, got, err, want)
		}
	}
	for _, on := range []bool{false, true} {
		var o, s, e, p int
		if on {
			o, s, e, p = unix.O_CLOEXEC, unix.SOCK_CLOEXEC, unix.EFD_CLOEXEC, unix.EPOLL_CLOEXEC
		}
		fd, err := unix.Open("/proc/self/status", unix.O_RDONLY|o, 0)
		check("open", fd, err, on)
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|s, 0)
		check("socket", fd, err, on)
		fd, err = unix.Eventfd(0, e)
		check("eventfd2", fd, err, on)
		fd, err = unix.EpollCreate1(p)
		check("epoll_create1", fd, err, on)
		var pp [2]int
		err = unix.Pipe2(pp[:], o)
		check("pipe2 (read end)", pp[0], err, on)
		check("pipe2 (write end)", pp[1], err, on)
		sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|s, 0)
		check("socketpair (0)", sp[0], err, on)
		check("socketpair (1)", sp[1], err, on)
	}
	// accept4, with and without SOCK_CLOEXEC, on a loopback listener.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatalf("listener's file: %v", err)
	}
	defer f.Close()
	for _, on := range []bool{false, true} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		flags := 0
		if on {
			flags = unix.SOCK_CLOEXEC
		}
		fd, _, err := unix.Accept4(int(f.Fd()), flags)
		check("accept4", fd, err, on)
		c.Close()
	}
	// dup clears it; dup3 with O_CLOEXEC sets it.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	defer r.Close()
	defer w.Close()
	fd, err := unix.Dup(int(r.Fd()))
	check("dup", fd, err, false)
	err = unix.Dup3(int(r.Fd()), 100, unix.O_CLOEXEC)
	check("dup3", 100, err, true)
}
