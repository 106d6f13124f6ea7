package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// AF_UNIX sockets (kernel/net) through package net: what Go programs and
// their tests do with unix sockets — the netpoller, deadlines, half-close
// and the errors Go turns into its own.

func testUnixStream(t *T) {
	dir := t.tempDir()
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("stat %s: %v, %v; want a socket", path, fi, err)
	}
	if _, err := net.Listen("unix", path); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("second Listen on %s: %v, want EADDRINUSE", path, err)
	}
	// An echo server: each connection echoes until EOF, then closes.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	const conns = 8
	msg := bytes.Repeat([]byte("echo through the kernel "), 10000) // 240 kB: more than a ring holds
	errs := make(chan error, conns)
	for range conns {
		go func() {
			c, err := net.Dial("unix", path)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			go func() {
				c.Write(msg)
				c.(*net.UnixConn).CloseWrite() // half-close: the server sees EOF
			}()
			got, err := io.ReadAll(c)
			if err == nil && !bytes.Equal(got, msg) {
				err = errors.New("echo differs")
			}
			errs <- err
		}()
	}
	for range conns {
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("echo: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("echo round trips did not finish")
		}
	}
	// A read deadline expires with nothing to read.
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if a := c.RemoteAddr().String(); a != path {
		t.Errorf("RemoteAddr = %q, want %q", a, path)
	}
	start := time.Now() // before the deadline is set: it is 20 ms from then at the earliest
	c.SetReadDeadline(start.Add(20 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read past the deadline: %v", err)
	}
	if d := time.Since(start); d < 20*time.Millisecond || d > 10*time.Second {
		t.Errorf("a 20ms read deadline expired after %v", d)
	}
	c.Close()
	// The listener closed: its path stays, and nobody listens there.
	ln.Close()
	if _, err := net.Dial("unix", path); !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Dial after the listener closed: %v, want ECONNREFUSED or ENOENT", err)
	}
	if _, err := net.Dial("unix", filepath.Join(dir, "missing")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Dial a missing path: %v, want ENOENT", err)
	}
	// An abstract name.
	aln, err := net.Listen("unix", "@yolk-selftest")
	if err != nil {
		t.Fatalf("Listen abstract: %v", err)
	}
	go func() {
		if c, err := aln.Accept(); err == nil {
			c.Write([]byte("abstract"))
			c.Close()
		}
	}()
	ac, err := net.Dial("unix", "@yolk-selftest")
	if err != nil {
		t.Fatalf("Dial abstract: %v", err)
	}
	if b, err := io.ReadAll(ac); err != nil || string(b) != "abstract" {
		t.Errorf("abstract: %q, %v", b, err)
	}
	ac.Close()
	aln.Close()
}

func testUnixDatagram(t *T) {
	dir := t.tempDir()
	defer os.RemoveAll(dir)
	sa := &net.UnixAddr{Name: filepath.Join(dir, "server"), Net: "unixgram"}
	ca := &net.UnixAddr{Name: filepath.Join(dir, "client"), Net: "unixgram"}
	srv, err := net.ListenUnixgram("unixgram", sa)
	if err != nil {
		t.Fatalf("ListenUnixgram: %v", err)
	}
	defer srv.Close()
	cl, err := net.DialUnix("unixgram", ca, sa)
	if err != nil {
		t.Fatalf("DialUnix: %v", err)
	}
	defer cl.Close()
	for _, m := range []string{"one", "two", "three"} {
		if _, err := cl.Write([]byte(m)); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	buf := make([]byte, 16)
	for _, want := range []string{"one", "two", "three"} {
		srv.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, from, err := srv.ReadFromUnix(buf)
		if err != nil || string(buf[:n]) != want || from == nil || from.Name != ca.Name {
			t.Errorf("ReadFromUnix = %q from %v, %v; want %q from %s", buf[:n], from, err, want, ca.Name)
		}
	}
	// A reply to the sender's address, and a datagram cut to fit.
	if _, err := srv.WriteToUnix([]byte("a longer reply"), ca); err != nil {
		t.Fatalf("WriteToUnix: %v", err)
	}
	n, oobn, flags, _, err := cl.ReadMsgUnix(buf[:5], nil)
	if err != nil || string(buf[:n]) != "a lon" || oobn != 0 || flags&syscall.MSG_TRUNC == 0 {
		t.Errorf("ReadMsgUnix = %q, %d, flags %#x, %v; want \"a lon\" and MSG_TRUNC", buf[:n], oobn, flags, err)
	}
	srv.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, _, err := srv.ReadFromUnix(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("ReadFromUnix past the deadline: %v", err)
	}
}

func testUnixPacket(t *T) {
	ln, err := net.Listen("unixpacket", "@yolk-selftest-packet")
	if err != nil {
		t.Fatalf("Listen unixpacket: %v", err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		b := make([]byte, 64)
		for {
			n, err := c.Read(b)
			if err != nil || n == 0 {
				done <- err
				return
			}
			if _, err := c.Write(b[:n]); err != nil {
				done <- err
				return
			}
		}
	}()
	c, err := net.Dial("unixpacket", "@yolk-selftest-packet")
	if err != nil {
		t.Fatalf("Dial unixpacket: %v", err)
	}
	// Messages keep their boundaries both ways.
	for _, m := range []string{"a", "bb", "ccc"} {
		c.Write([]byte(m))
	}
	b := make([]byte, 64)
	for _, want := range []string{"a", "bb", "ccc"} {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := c.Read(b)
		if err != nil || string(b[:n]) != want {
			t.Errorf("Read = %q, %v; want %q", b[:n], err, want)
		}
	}
	c.Close()
	select {
	case err := <-done:
		if err != nil && err != io.EOF {
			t.Errorf("server: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the server did not see the close")
	}
	// A socketpair through syscall, and SIGPIPE-free EPIPE after close.
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("Socketpair: %v", err)
	}
	syscall.Close(fds[1])
	if _, err := syscall.SendmsgN(fds[0], []byte("x"), nil, nil, syscall.MSG_NOSIGNAL); err != syscall.EPIPE {
		t.Errorf("send to a closed peer: %v, want EPIPE", err)
	}
	syscall.Close(fds[0])
	if _, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, 0); err != syscall.EAFNOSUPPORT {
		t.Errorf("socket(AF_PACKET) = %v, want EAFNOSUPPORT", err)
	}
}
