package main

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// testAcceptAddrLen: accept4's *addrlen as Linux's move_addr_to_user
// reads it: a negative length is EINVAL (not EFAULT); a length larger
// than the buffer is no fault as long as the address itself fits (only
// min(*addrlen, the address's length) is written), and the whole length
// comes back; with no address buffer the length is not looked at.
func testAcceptAddrLen(t *T) {
	m, err := unix.Mmap(-1, 0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	base := uintptr(unsafe.Pointer(&m[0]))
	defer unix.Syscall(unix.SYS_MUNMAP, base, pageSize, 0)
	if _, _, e := unix.Syscall(unix.SYS_MUNMAP, base+pageSize, pageSize, 0); e != 0 {
		t.Fatalf("munmap: %v", e)
	}
	lenp := (*int32)(unsafe.Pointer(&m[0]))
	buf := base + pageSize - 16 // 16 bytes before the hole

	ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	defer unix.Close(ln)
	sa := &unix.SockaddrUnix{Name: fmt.Sprintf("@yolk-accept-%d", os.Getpid())}
	if err := unix.Bind(ln, sa); err != nil {
		t.Fatalf("bind: %v", err)
	}
	unix.Listen(ln, 4)
	accept := func(what string, p uintptr, l int32, want unix.Errno, named bool) {
		c, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		defer unix.Close(c)
		if named {
			unix.Bind(c, &unix.SockaddrUnix{Name: fmt.Sprintf("@yolk-accept-client-%d-with-a-longer-name", os.Getpid())})
		}
		if err := unix.Connect(c, sa); err != nil {
			t.Fatalf("%s: connect: %v", what, err)
		}
		*lenp = l
		fd, _, e := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(ln), p, uintptr(unsafe.Pointer(lenp)), unix.SOCK_CLOEXEC, 0, 0)
		if e != want {
			t.Errorf("%s: accept4 = %v, want %v", what, e, want)
		}
		if e == 0 {
			unix.Close(int(fd))
			if p != 0 && !named && *lenp != 2 {
				t.Errorf("%s: *addrlen = %d, want 2 (an unnamed client's address: the family)", what, *lenp)
			}
		}
		// Linux drops the connection it failed to report; yolk keeps
		// it: either way nothing is left for the next call.
		unix.Accept4(ln, unix.SOCK_CLOEXEC)
	}
	accept("*addrlen -1", buf, -1, unix.EINVAL, false)
	accept("*addrlen -2^31", buf, -1<<31, unix.EINVAL, false)
	accept("*addrlen 2^30, 16 bytes of buffer", buf, 1<<30, 0, false)
	accept("*addrlen 16", buf, 16, 0, false)
	accept("no address, *addrlen -1", 0, -1, 0, false)
	accept("address at the hole, *addrlen -1", buf+16, -1, unix.EINVAL, false)
	accept("address at the hole, *addrlen 8", buf+16, 8, unix.EFAULT, false)
	// The address does not fit: EFAULT after the accept (the connection
	// dropped, as Linux's).
	accept("a named peer, *addrlen 110, 16 bytes of buffer", buf, 110, unix.EFAULT, true)
}
