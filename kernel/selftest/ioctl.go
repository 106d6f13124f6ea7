package main

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ioctl through the open file's kind (kernel/fileops.go): FIONREAD on
// pipes and files, FIONBIO, FIOCLEX and FIONCLEX on every kind, ENOTTY
// for what a kind does not do (a terminal's TCGETS on a pipe or file);
// Linux answers the same (the program passes on the host).

func init() { tests = append(tests, test{"TestIoctl", testIoctl}) }

func ioctlInt(fd int, req uint, v *int32) syscall.Errno {
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(v)))
	return e
}

func testIoctl(t *T) {
	const fionread, fionbio, fionclex, fioclex = 0x541b, 0x5421, 0x5450, 0x5451
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatalf("%v", err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	var n int32
	if e := ioctlInt(p[0], fionread, &n); e != 0 || n != 0 {
		t.Errorf("FIONREAD of an empty pipe = %d, %v; want 0", n, e)
	}
	unix.Write(p[1], []byte("hello"))
	if e := ioctlInt(p[0], fionread, &n); e != 0 || n != 5 {
		t.Errorf("FIONREAD of a pipe holding 5 bytes = %d, %v", n, e)
	}
	buf := make([]byte, 5)
	unix.Read(p[0], buf)
	on := int32(1)
	if e := ioctlInt(p[0], fionbio, &on); e != 0 {
		t.Errorf("FIONBIO on: %v", e)
	}
	if _, err := unix.Read(p[0], buf); err != syscall.EAGAIN {
		t.Errorf("read of an empty pipe after FIONBIO = %v, want EAGAIN", err)
	}
	if fl, _ := unix.FcntlInt(uintptr(p[0]), unix.F_GETFL, 0); fl&unix.O_NONBLOCK == 0 {
		t.Errorf("F_GETFL after FIONBIO = %#x, want O_NONBLOCK", fl)
	}
	off := int32(0)
	ioctlInt(p[0], fionbio, &off)
	if fl, _ := unix.FcntlInt(uintptr(p[0]), unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
		t.Errorf("F_GETFL after FIONBIO off = %#x", fl)
	}
	if e := ioctlInt(p[1], fioclex, nil); e != 0 {
		t.Errorf("FIOCLEX: %v", e)
	}
	if fd, _ := unix.FcntlInt(uintptr(p[1]), unix.F_GETFD, 0); fd != unix.FD_CLOEXEC {
		t.Errorf("F_GETFD after FIOCLEX = %d", fd)
	}
	ioctlInt(p[1], fionclex, nil)
	if fd, _ := unix.FcntlInt(uintptr(p[1]), unix.F_GETFD, 0); fd != 0 {
		t.Errorf("F_GETFD after FIONCLEX = %d", fd)
	}
	f, err := os.CreateTemp("", "ioctl")
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	f.WriteString("0123456789")
	f.Seek(4, 0)
	if e := ioctlInt(int(f.Fd()), fionread, &n); e != 0 || n != 6 {
		t.Errorf("FIONREAD of a 10-byte file at offset 4 = %d, %v; want 6", n, e)
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != syscall.ENOTTY {
		t.Errorf("TCGETS on a file = %v, want ENOTTY", err)
	}
	if _, err := unix.IoctlGetTermios(p[0], unix.TCGETS); err != syscall.ENOTTY {
		t.Errorf("TCGETS on a pipe = %v, want ENOTTY", err)
	}
	if e := ioctlInt(1000, fionread, &n); e != syscall.EBADF {
		t.Errorf("FIONREAD of a closed descriptor = %v, want EBADF", e)
	}
}
