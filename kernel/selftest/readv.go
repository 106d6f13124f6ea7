package main

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unsafe"
)

// readv and writev as Linux has them for pipes and the console: a readv
// is one read, which waits for its first bytes only — once some data was
// read, a later buffer takes what is there and the call returns; a writev
// is one write, so one of at most PIPE_BUF bytes to a pipe is atomic (all
// of it, or on a full O_NONBLOCK pipe EAGAIN and nothing). These run on
// the host's Linux unchanged (go run ./kernel/selftest -run 'v(Pipe|Console)').

func init() {
	tests = append(tests,
		test{"TestReadvPipe", testReadvPipe},
		test{"TestWritevPipe", testWritevPipe},
		test{"TestReadvConsole", testReadvConsole},
	)
}

// iovecs is bufs as the program's iovec array.
func iovecs(bufs [][]byte) []syscall.Iovec {
	iov := make([]syscall.Iovec, len(bufs))
	for i, b := range bufs {
		if len(b) > 0 {
			iov[i].Base = &b[0]
		}
		iov[i].SetLen(len(b))
	}
	return iov
}

// readvWithin is readv(fd, bufs), waited for at most 10 s: a readv that
// blocks after reading fails the test instead of hanging it (unblock then
// gives it something to end with, if it can).
func readvWithin(t *T, what string, fd int, bufs [][]byte, unblock func()) (int, syscall.Errno) {
	type res struct {
		n int
		e syscall.Errno
	}
	iov := iovecs(bufs)
	done := make(chan res, 1)
	go func() {
		n, _, e := syscall.Syscall(syscall.SYS_READV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
		done <- res{int(n), e}
	}()
	select {
	case r := <-done:
		return r.n, r.e
	case <-time.After(10 * time.Second):
		t.Errorf("%s: readv still blocked after 10 s, though its first buffer was filled", what)
		unblock()
		select {
		case r := <-done:
			return r.n, r.e
		case <-time.After(5 * time.Second):
			return -1, 0 // left blocked
		}
	}
}

// testReadvPipe: on a pipe and on a FIFO, readv returns what the pipe
// holds when the data ends in its first buffer, in its second or in the
// middle of one, with an empty buffer between.
func testReadvPipe(t *T) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatalf("pipe2: %v", err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	readvCases(t, "pipe", p[0], p[1])

	dir := t.tempDir()
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(name, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	fd, err := syscall.Open(name, syscall.O_RDWR|syscall.O_CLOEXEC, 0) // both ends: no wait at open
	if err != nil {
		t.Fatalf("open the FIFO: %v", err)
	}
	defer syscall.Close(fd)
	readvCases(t, "fifo", fd, fd)
}

func readvCases(t *T, kind string, r, w int) {
	for _, c := range []struct {
		name string
		data string
		lens []int
		want []string // what each buffer holds after
	}{
		{"first buffer filled exactly", "abcd", []int{4, 8}, []string{"abcd", ""}},
		{"first buffer larger than the data", "xy", []int{8, 8}, []string{"xy", ""}},
		{"data into the second buffer", "0123456789", []int{4, 8}, []string{"0123", "456789"}},
		{"second buffer filled exactly, third waits", "ABCDEFGH", []int{4, 4, 8}, []string{"ABCD", "EFGH", ""}},
		{"an empty buffer between", "abcdef", []int{4, 0, 8}, []string{"abcd", "", "ef"}},
	} {
		what := kind + ": " + c.name
		if n, err := syscall.Write(w, []byte(c.data)); n != len(c.data) || err != nil {
			t.Fatalf("%s: write: %d, %v", what, n, err)
		}
		bufs := make([][]byte, len(c.lens))
		for i, l := range c.lens {
			bufs[i] = make([]byte, l)
		}
		n, e := readvWithin(t, what, r, bufs, func() { syscall.Write(w, []byte("!")) })
		if e != 0 || n != len(c.data) {
			t.Errorf("%s: readv = %d, %v; want %d", what, n, e, len(c.data))
		}
		for i, b := range bufs {
			if got := string(bytes.TrimRight(b, "\x00")); got != c.want[i] {
				t.Errorf("%s: buffer %d holds %q, want %q", what, i, got, c.want[i])
			}
		}
		drain(r)
	}
}

// drain empties the pipe behind r (what an unblocking write left).
func drain(r int) {
	syscall.SetNonblock(r, true)
	b := make([]byte, 64)
	for {
		if n, _ := syscall.Read(r, b); n <= 0 {
			break
		}
	}
	syscall.SetNonblock(r, false)
}

// testWritevPipe: writev to a pipe is one write. With 3996 bytes of room
// (Linux: fifteen full pages and 100 bytes in the sixteenth, which a
// small write may fill; yolk: 64 KiB less 61540 bytes), an O_NONBLOCK
// writev of 2000+2000 bytes is refused whole (EAGAIN: it is at most
// PIPE_BUF, so it is atomic), one of 1000+2996 fits and goes in whole;
// the reader sees the bytes in order. A writev of nothing is 0, even with
// no reader left (no EPIPE, no SIGPIPE).
func testWritevPipe(t *T) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		t.Fatalf("pipe2: %v", err)
	}
	r, w := p[0], p[1]
	defer syscall.Close(w)
	var sent []byte
	write := func(b []byte) {
		if n, err := syscall.Write(w, b); n != len(b) || err != nil {
			t.Fatalf("write of %d: %d, %v", len(b), n, err)
		}
		sent = append(sent, b...)
	}
	page := make([]byte, 4096)
	for i := range 15 {
		for j := range page {
			page[j] = byte(i + j)
		}
		write(page)
	}
	write(bytes.Repeat([]byte{'s'}, 100))
	writev := func(bufs ...[]byte) (int, syscall.Errno) {
		iov := iovecs(bufs)
		n, _, e := syscall.Syscall(syscall.SYS_WRITEV, uintptr(w), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
		return int(n), e
	}
	a, b := bytes.Repeat([]byte{'a'}, 2000), bytes.Repeat([]byte{'b'}, 2000)
	if n, e := writev(a, b); e != syscall.EAGAIN {
		t.Errorf("writev of 2000+2000 bytes with 3996 free: %d, %v; want EAGAIN, nothing written", n, e)
	}
	c, d := bytes.Repeat([]byte{'c'}, 1000), bytes.Repeat([]byte{'d'}, 2996)
	if n, e := writev(c, d); n != 3996 || e != 0 {
		t.Errorf("writev of 1000+2996 bytes with 3996 free: %d, %v; want 3996", n, e)
	} else {
		sent = append(append(sent, c...), d...)
	}
	got := make([]byte, 0, len(sent))
	buf := make([]byte, 8192)
	for {
		n, err := syscall.Read(r, buf)
		if n <= 0 || err != nil {
			break
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, sent) {
		t.Errorf("the reader got %d bytes, not the %d written in order", len(got), len(sent))
	}
	syscall.Close(r)
	if n, e := writev(nil, []byte{}); n != 0 || e != 0 {
		t.Errorf("writev of nothing with no reader: %d, %v; want 0", n, e)
	}
	if n, err := syscall.Write(w, nil); n != 0 || err != nil {
		t.Errorf("write of nothing with no reader: %d, %v; want 0", n, err)
	}
}

// testReadvConsole: readv of the console (fd 0) returns what was there
// when its first buffer is full. It needs input that stays open without
// more bytes: YOLK_READV_CONSOLE=1 and "abcd" on stdin, e.g.
//
//	(printf abcd; sleep 60) | yolk run -e YOLK_READV_CONSOLE=1 image -run TestReadvConsole
func testReadvConsole(t *T) {
	if os.Getenv("YOLK_READV_CONSOLE") != "1" {
		t.Skipf("YOLK_READV_CONSOLE=1 not set: needs \"abcd\" on stdin, held open")
	}
	var got []byte
	for len(got) < 4 { // the bytes may come in pieces; the readv that takes the last fills its first buffer
		first, second := make([]byte, 4-len(got)), make([]byte, 8)
		n, e := readvWithin(t, "console", 0, [][]byte{first, second}, func() {})
		if e != 0 || n <= 0 || n > len(first) {
			t.Fatalf("readv of the console: %d, %v (after %q)", n, e, got)
		}
		got = append(got, first[:n]...)
	}
	if string(got) != "abcd" {
		t.Errorf("console: %q, want \"abcd\"", got)
	}
}
