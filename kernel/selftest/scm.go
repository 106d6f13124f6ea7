package main

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Control messages over AF_UNIX socketpairs through package net's
// WriteMsgUnix and ReadMsgUnix: descriptors passed (a pipe's write end, a
// socket) and used, credentials with SO_PASSCRED, and MSG_CTRUNC when the
// control buffer is too small.

func unixPair(t *T, typ int) (*net.UnixConn, *net.UnixConn) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, typ, 0)
	if err != nil {
		t.Fatalf("Socketpair: %v", err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatalf("FileConn: %v", err)
		}
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

func testUnixRights(t *T) {
	a, b := unixPair(t, syscall.SOCK_STREAM)
	defer a.Close()
	defer b.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("Pipe: %v", err)
	}
	defer r.Close()
	x, y := unixPair(t, syscall.SOCK_DGRAM)
	defer x.Close()
	yf, err := y.File()
	if err != nil {
		t.Fatalf("File: %v", err)
	}
	y.Close()

	// Pass the pipe's write end and a socket; close ours.
	oob := syscall.UnixRights(int(w.Fd()), int(yf.Fd()))
	if n, oobn, err := a.WriteMsgUnix([]byte("fds"), oob, nil); err != nil || n != 3 || oobn != len(oob) {
		t.Fatalf("WriteMsgUnix: %d %d %v", n, oobn, err)
	}
	w.Close()
	yf.Close()
	if _, err := a.Write([]byte("after")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	buf := make([]byte, 64)
	oob2 := make([]byte, 128)
	n, oobn, flags, _, err := b.ReadMsgUnix(buf, oob2)
	if err != nil || string(buf[:n]) != "fds" || flags&syscall.MSG_CTRUNC != 0 {
		t.Fatalf("ReadMsgUnix: %q %d %#x %v (want \"fds\", stopping at the descriptors)", buf[:n], oobn, flags, err)
	}
	msgs, err := syscall.ParseSocketControlMessage(oob2[:oobn])
	if err != nil || len(msgs) != 1 {
		t.Fatalf("ParseSocketControlMessage: %v %v", msgs, err)
	}
	got, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(got) != 2 {
		t.Fatalf("ParseUnixRights: %v %v", got, err)
	}
	w2 := os.NewFile(uintptr(got[0]), "w2")
	if _, err := w2.Write([]byte("through the pipe")); err != nil {
		t.Fatalf("write to the passed pipe: %v", err)
	}
	w2.Close()
	all := make([]byte, 64)
	k, _ := r.Read(all)
	if string(all[:k]) != "through the pipe" {
		t.Fatalf("pipe read %q", all[:k])
	}
	if k, err := r.Read(all); k != 0 || err == nil {
		t.Fatalf("pipe after its last writer closed: %d %v, want EOF", k, err)
	}
	yf2 := os.NewFile(uintptr(got[1]), "y2")
	yc, err := net.FileConn(yf2)
	yf2.Close()
	if err != nil {
		t.Fatalf("FileConn of the passed socket: %v", err)
	}
	if _, err := x.Write([]byte("dgram")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if k, err := yc.Read(all); err != nil || string(all[:k]) != "dgram" {
		t.Fatalf("read on the passed socket: %q %v", all[:k], err)
	}
	yc.Close()
	if n, err := b.Read(buf); err != nil || string(buf[:n]) != "after" {
		t.Fatalf("Read: %q %v", buf[:n], err)
	}

	// MSG_CTRUNC: room for one descriptor of three; the others closed.
	r3, w3, _ := os.Pipe()
	oob = syscall.UnixRights(int(w3.Fd()), int(w3.Fd()), int(w3.Fd()))
	if _, _, err := a.WriteMsgUnix([]byte("t"), oob, nil); err != nil {
		t.Fatalf("WriteMsgUnix: %v", err)
	}
	w3.Close()
	small := make([]byte, syscall.CmsgLen(4)) // room for one descriptor
	n, oobn, flags, _, err = b.ReadMsgUnix(buf, small)
	if err != nil || n != 1 || flags&syscall.MSG_CTRUNC == 0 || oobn != len(small) {
		t.Fatalf("ReadMsgUnix small: %d %d %#x %v, want MSG_CTRUNC and %d bytes", n, oobn, flags, err, len(small))
	}
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&small[0]))
	if h.Level != syscall.SOL_SOCKET || h.Type != syscall.SCM_RIGHTS || h.Len != uint64(len(small)) {
		t.Fatalf("control message %+v", *h)
	}
	got = []int{int(int32(binary.LittleEndian.Uint32(small[16:])))}
	syscall.Close(got[0]) // the last writer: the others were closed
	if k, err := r3.Read(all); k != 0 || err == nil {
		t.Fatalf("pipe after CTRUNC: %d %v, want EOF", k, err)
	}
	r3.Close()

	// Credentials: the receiver has SO_PASSCRED.
	for _, typ := range []int{syscall.SOCK_STREAM, syscall.SOCK_DGRAM} {
		c, d := unixPair(t, typ)
		rc, _ := d.SyscallConn()
		rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PASSCRED, 1)
		})
		if err != nil {
			t.Fatalf("SO_PASSCRED: %v", err)
		}
		u := syscall.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
		if _, _, err := c.WriteMsgUnix([]byte("c"), syscall.UnixCredentials(&u), nil); err != nil {
			t.Fatalf("WriteMsgUnix creds: %v", err)
		}
		bad := syscall.Ucred{Pid: int32(os.Getpid()), Uid: ^uint32(0)}
		if _, _, err := c.WriteMsgUnix([]byte("c"), syscall.UnixCredentials(&bad), nil); err == nil {
			t.Fatalf("WriteMsgUnix with uid -1: no error, want EINVAL")
		}
		oob2 := make([]byte, 128)
		n, oobn, flags, _, err := d.ReadMsgUnix(buf, oob2)
		if err != nil || n != 1 || flags&syscall.MSG_CTRUNC != 0 {
			t.Fatalf("ReadMsgUnix creds: %d %#x %v", n, flags, err)
		}
		want := syscall.UnixCredentials(&u)
		if !bytes.Equal(oob2[:oobn], want) {
			t.Fatalf("credentials %x, want %x", oob2[:oobn], want)
		}
		c.Close()
		d.Close()
	}
}
