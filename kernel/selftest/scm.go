package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
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

// fdTable is the kernel's descriptor table's size (RLIMIT_NOFILE).
const fdTable = 16384

// openFDs counts the program's open descriptors.
func openFDs() int {
	n := 0
	for fd := 0; fd < fdTable; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			n++
		}
	}
	return n
}

// testUnixRightsDropped: descriptors that arrive where no control buffer
// takes them (read, readv, recvfrom, a peek's copies, recvmsg without
// one) are closed, as Linux's scm_recv closes them: round after round of
// SCM_MAX_FD descriptors leaves nothing in flight (before, four rounds
// filled the kernel's pool and every SCM_RIGHTS send failed with
// ETOOMANYREFS), and the pipe whose write end they were sees its end of
// file. A listener in flight only in its own unaccepted connection's
// queue is collected with it (before, each round kept three socket slots
// and a ring: ENOMEM after some 170). The kernel's sockets and the
// program's descriptors come back to where they were.
func testUnixRightsDropped(t *T) {
	st0, yolk := yolkStats()
	fds0 := openFDs()
	rcv := func(mode string, fd int, buf []byte) (int, error) {
		switch mode {
		case "read":
			return unix.Read(fd, buf)
		case "readv":
			return unix.Readv(fd, [][]byte{buf[:1], buf[1:]})
		case "recvfrom":
			n, _, err := unix.Recvfrom(fd, buf, 0)
			return n, err
		case "peek":
			if _, _, err := unix.Recvfrom(fd, buf, unix.MSG_PEEK); err != nil {
				return 0, err
			}
			return unix.Read(fd, buf)
		}
		n, _, _, _, err := unix.Recvmsg(fd, buf, nil, 0)
		return n, err
	}
	modes := []string{"read", "readv", "recvfrom", "peek", "recvmsg"}
	for round := range 2 * len(modes) {
		mode := modes[round%len(modes)]
		typ := unix.SOCK_STREAM
		if round >= len(modes) {
			typ = unix.SOCK_DGRAM
		}
		sv, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("round %d: socketpair: %v", round, err)
		}
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
			t.Fatalf("pipe2: %v", err)
		}
		x, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("socket: %v", err)
		}
		rights := make([]int, 253) // SCM_MAX_FD: the pipe's write end, and a socket
		for i := range rights {
			rights[i] = p[1]
		}
		rights[1] = x
		if err := unix.Sendmsg(sv[0], []byte("fds"), unix.UnixRights(rights...), nil, 0); err != nil {
			t.Fatalf("round %d (%s, type %d): sendmsg of %d descriptors: %v", round, mode, typ, len(rights), err)
		}
		unix.Close(p[1])
		unix.Close(x)
		buf := make([]byte, 16)
		if n, err := rcv(mode, sv[1], buf); err != nil || string(buf[:n]) != "fds" {
			t.Fatalf("round %d: %s: %q %v", round, mode, buf[:n], err)
		}
		if n, err := unix.Read(p[0], buf); n != 0 || err != nil {
			t.Errorf("round %d (%s, type %d): the pipe's read end: %d %v, want end of file (no writer left)", round, mode, typ, n, err)
		}
		unix.Close(p[0])
		unix.Close(sv[0])
		unix.Close(sv[1])
	}

	// A listener held only by its own unaccepted connection.
	for round := range 200 {
		ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("round %d: socket: %v", round, err)
		}
		name := &unix.SockaddrUnix{Name: fmt.Sprintf("@yolk-scm-listener-%d-%d", os.Getpid(), round)}
		if err := unix.Bind(ln, name); err != nil {
			t.Fatalf("round %d: bind: %v", round, err)
		}
		unix.Listen(ln, 1)
		c, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err := unix.Connect(c, name); err != nil {
			t.Fatalf("round %d: connect: %v", round, err)
		}
		if err := unix.Sendmsg(c, []byte("l"), unix.UnixRights(ln), nil, 0); err != nil {
			t.Fatalf("round %d: sendmsg: %v", round, err)
		}
		unix.Close(ln)
		unix.Close(c)
	}

	// Still room in flight: a full message goes and comes back.
	sv, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	rights := make([]int, 253)
	for i := range rights {
		rights[i] = sv[0]
	}
	for range 3 {
		if err := unix.Sendmsg(sv[0], []byte("m"), unix.UnixRights(rights...), nil, 0); err != nil {
			t.Fatalf("sendmsg after the rounds: %v", err)
		}
	}
	for range 3 {
		oob := make([]byte, unix.CmsgSpace(4*len(rights)))
		buf := make([]byte, 1)
		_, oobn, flags, _, err := unix.Recvmsg(sv[1], buf, oob, 0)
		if err != nil || flags&unix.MSG_CTRUNC != 0 {
			t.Fatalf("recvmsg after the rounds: %#x %v", flags, err)
		}
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		if len(msgs) != 1 {
			t.Fatalf("recvmsg after the rounds: %d control messages", len(msgs))
		}
		got, _ := unix.ParseUnixRights(&msgs[0])
		if len(got) != len(rights) {
			t.Fatalf("recvmsg after the rounds: %d descriptors, want %d", len(got), len(rights))
		}
		for _, fd := range got {
			unix.Close(fd)
		}
	}
	unix.Close(sv[0])
	unix.Close(sv[1])

	if n := openFDs(); n != fds0 {
		t.Errorf("%d descriptors open, %d before", n, fds0)
	}
	if st1, _ := yolkStats(); yolk && (st1.Sockets != st0.Sockets || st1.SocketPages != st0.SocketPages) {
		t.Errorf("the kernel's sockets: %d slots and %d pages, %d and %d before", st1.Sockets, st1.SocketPages, st0.Sockets, st0.SocketPages)
	}
}

// testUnixRightsFault: a receive whose buffer is unmapped while it blocks
// fails with EFAULT, and the descriptors in flight go as Linux's go: a
// datagram is taken off the queue before the copy, so it is gone with
// them (the next receive gets the next message and its own); a stream's
// bytes are copied before their descriptors are taken, so both stay for
// the next receive. (Before, a datagram stayed queued without its
// descriptors and the next receive gave it the following message's; a
// stream's descriptors were closed and its bytes stayed.)
func testUnixRightsFault(t *T) {
	pipe := func() (r, w int) {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
			t.Fatalf("pipe2: %v", err)
		}
		return p[0], p[1]
	}
	// through writes via fd and reports whether pipe r got it.
	through := func(fd, r int) bool {
		unix.Write(fd, []byte("via"))
		b := make([]byte, 8)
		n, _ := unix.Read(r, b)
		return string(b[:max(n, 0)]) == "via"
	}
	for _, typ := range []int{unix.SOCK_DGRAM, unix.SOCK_STREAM} {
		sv, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("socketpair: %v", err)
		}
		r1, w1 := pipe()
		r2, w2 := pipe()
		m, err := syscall.Mmap(-1, 0, pageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			t.Fatalf("mmap: %v", err)
		}
		m[0] = 1
		done := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			oob := make([]byte, 64)
			_, _, _, _, err := unix.Recvmsg(sv[1], m[:16], oob, 0)
			for err == unix.EINTR {
				_, _, _, _, err = unix.Recvmsg(sv[1], m[:16], oob, 0)
			}
			done <- err
		}()
		time.Sleep(200 * time.Millisecond) // blocked in the kernel by now
		if err := syscall.Munmap(m); err != nil {
			t.Fatalf("munmap: %v", err)
		}
		if err := unix.Sendmsg(sv[0], []byte("1"), unix.UnixRights(w1), nil, 0); err != nil {
			t.Fatalf("sendmsg: %v", err)
		}
		if typ == unix.SOCK_DGRAM {
			if err := unix.Sendmsg(sv[0], []byte("2"), unix.UnixRights(w2), nil, 0); err != nil {
				t.Fatalf("sendmsg: %v", err)
			}
		}
		unix.Close(w1)
		unix.Close(w2)
		select {
		case err := <-done:
			if err != unix.EFAULT {
				t.Errorf("type %d: recvmsg into a buffer unmapped while it blocked: %v, want EFAULT", typ, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("type %d: recvmsg did not return", typ)
		}
		buf := make([]byte, 16)
		oob := make([]byte, 64)
		n, oobn, _, _, err := unix.Recvmsg(sv[1], buf, oob, unix.MSG_DONTWAIT)
		var got []int
		if msgs, _ := unix.ParseSocketControlMessage(oob[:max(oobn, 0)]); len(msgs) == 1 {
			got, _ = unix.ParseUnixRights(&msgs[0])
		}
		want, r := "1", r1 // a stream's bytes and descriptor stayed
		if typ == unix.SOCK_DGRAM {
			want, r = "2", r2 // the first datagram went
			if k, err := unix.Read(r1, buf); k != 0 || err != nil {
				t.Errorf("the lost datagram's pipe: %d %v, want end of file (its descriptor closed)", k, err)
			}
		}
		if err != nil || string(buf[:max(n, 0)]) != want || len(got) != 1 || !through(got[0], r) {
			t.Errorf("type %d: the receive after the fault: %q %v, %d descriptors; want %q and its own descriptor", typ, buf[:max(n, 0)], err, len(got), want)
		}
		for _, fd := range append(got, sv[0], sv[1], r1, r2) {
			unix.Close(fd)
		}
	}
}
