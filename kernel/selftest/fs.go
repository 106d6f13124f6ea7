package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// The in-memory file system (kernel/fs) and pipes, through the os package
// and raw system calls: what Go programs and their tests do with files.

// testBootFiles checks the files the harness passes in the boot archive
// (qemu.Tree, kernel/initrd.go): this package's testdata at its host path,
// read-only, with the package directory as the working directory — what
// yolk test gives a package's tests.
func testBootFiles(t *T) {
	dir := os.Getenv("YOLK_SELFTEST_DIR")
	if dir == "" {
		t.Skipf("no boot archive (the qemu package's TestGuest passes one)")
	}
	if wd, err := os.Getwd(); err != nil || wd != dir {
		t.Errorf("Getwd = %q, %v; want %q", wd, err, dir)
	}
	if b, err := os.ReadFile("testdata/hello.txt"); err != nil || string(b) != "hello, guest\n" {
		t.Errorf("testdata/hello.txt: %q, %v", b, err)
	}
	if b, err := os.ReadFile(dir + "/testdata/sub/deep.txt"); err != nil || string(b) != "deep\n" {
		t.Errorf("testdata/sub/deep.txt: %q, %v", b, err)
	}
	if l, err := os.Readlink("testdata/link"); err != nil || l != "hello.txt" {
		t.Errorf("Readlink(testdata/link) = %q, %v", l, err)
	}
	ents, err := os.ReadDir("testdata")
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	if err != nil || !slices.Equal(names, []string{"hello.txt", "link", "sub"}) {
		t.Errorf("ReadDir(testdata) = %v, %v", names, err)
	}
	if fi, err := os.Stat("testdata/hello.txt"); err != nil || fi.ModTime().Year() < 2020 || fi.Mode().Perm()&0o400 == 0 {
		t.Errorf("stat: %v %v", fi, err)
	}
	if err := os.WriteFile("testdata/new", nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("creating in testdata: %v, want EROFS", err)
	}
	if err := os.Remove("testdata/hello.txt"); !errors.Is(err, syscall.EROFS) {
		t.Errorf("removing from testdata: %v, want EROFS", err)
	}
}

func testFileSystem(t *T) {
	dir := t.tempDir()
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "a")
	before := time.Now().Add(-time.Second)
	if err := os.WriteFile(p, []byte("hello"), 0o640); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	// Append, then read back.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("open O_APPEND: %v", err)
	}
	f.WriteString(", world")
	f.Close()
	if b, err := os.ReadFile(p); err != nil || string(b) != "hello, world" {
		t.Errorf("read back %q, %v", b, err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Size() != 12 || st.Mode() != 0o640 || st.ModTime().Before(before) || st.IsDir() {
		t.Errorf("stat: %v size %d mode %v mtime %v", err, st.Size(), st.Mode(), st.ModTime())
	}
	// Seek, ReadAt, WriteAt past the end (a hole reads as zeroes).
	f, err = os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open O_RDWR: %v", err)
	}
	if n, err := f.WriteAt([]byte("X"), 20); n != 1 || err != nil {
		t.Errorf("WriteAt: %d %v", n, err)
	}
	buf := make([]byte, 21)
	if n, err := f.ReadAt(buf, 0); n != 21 || (err != nil && err != io.EOF) || string(buf[:12]) != "hello, world" || buf[15] != 0 || buf[20] != 'X' {
		t.Errorf("ReadAt: %d %v %q", n, err, buf)
	}
	if off, err := f.Seek(-1, io.SeekEnd); off != 20 || err != nil {
		t.Errorf("Seek(-1, End) = %d, %v", off, err)
	}
	f.Close()
	// Truncate, O_TRUNC, O_EXCL.
	if err := os.Truncate(p, 5); err != nil {
		t.Errorf("Truncate: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "hello" {
		t.Errorf("after Truncate: %q", b)
	}
	if _, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("O_EXCL on an existing file: %v, want EEXIST", err)
	}
	if f, err := os.OpenFile(p, os.O_TRUNC|os.O_WRONLY, 0); err != nil {
		t.Errorf("O_TRUNC: %v", err)
	} else {
		f.Close()
	}
	if st, _ := os.Stat(p); st == nil || st.Size() != 0 {
		t.Errorf("O_TRUNC left %v", st)
	}
	// Rename over an existing file; remove; readdir order and contents.
	q := filepath.Join(dir, "b")
	os.WriteFile(q, []byte("bee"), 0o600)
	if err := os.Rename(q, p); err != nil {
		t.Errorf("rename over: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "bee" {
		t.Errorf("after rename over: %q", b)
	}
	if _, err := os.Stat(q); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old name after rename: %v", err)
	}
	for _, n := range []string{"z", "m", "c"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o600)
	}
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	os.Symlink("a", filepath.Join(dir, "l"))
	if err := os.Remove(filepath.Join(dir, "m")); err != nil {
		t.Errorf("remove: %v", err)
	}
	ents, err := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if err != nil || !slices.Equal(names, []string{"a", "c", "d", "l", "z"}) {
		t.Errorf("ReadDir = %v, %v", names, err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "l")); err != nil || target != "a" {
		t.Errorf("Readlink = %q, %v", target, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "l")); err != nil || string(b) != "bee" {
		t.Errorf("read through symlink: %q %v", b, err)
	}
	// The working directory.
	wd, _ := os.Getwd()
	if err := os.Chdir(filepath.Join(dir, "d")); err != nil {
		t.Errorf("Chdir: %v", err)
	}
	if got, err := os.Getwd(); err != nil || got != filepath.Join(dir, "d") {
		t.Errorf("Getwd = %q, %v", got, err)
	}
	if err := os.WriteFile("rel", []byte("r"), 0o600); err != nil {
		t.Errorf("relative create: %v", err)
	}
	os.Chdir(wd)
	if b, _ := os.ReadFile(filepath.Join(dir, "d", "rel")); string(b) != "r" {
		t.Errorf("relative file not in the new cwd: %q", b)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("RemoveAll: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after RemoveAll: %v", err)
	}
	if os.TempDir() != "/tmp" {
		t.Errorf("TempDir = %q", os.TempDir())
	}
}

// testFileErrno checks the errno of every error path a Go program meets.
func testFileErrno(t *T) {
	dir := t.tempDir()
	defer os.RemoveAll(dir)
	f := filepath.Join(dir, "f")
	d := filepath.Join(dir, "d")
	os.WriteFile(f, []byte("x"), 0o600)
	os.Mkdir(d, 0o755)
	os.WriteFile(filepath.Join(d, "in"), nil, 0o600)
	for _, c := range []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"open missing", open(filepath.Join(dir, "missing")), syscall.ENOENT},
		{"mkdir existing", os.Mkdir(f, 0o755), syscall.EEXIST},
		{"file as directory", open(filepath.Join(f, "x")), syscall.ENOTDIR},
		{"write a directory", func() error { _, err := os.OpenFile(d, os.O_WRONLY, 0); return err }(), syscall.EISDIR},
		{"rmdir non-empty", syscall.Rmdir(d), syscall.ENOTEMPTY},
		{"unlink a directory", syscall.Unlink(d), syscall.EISDIR},
		{"read a closed fd", func() error { _, err := syscall.Read(999, make([]byte, 1)); return err }(), syscall.EBADF},
		{"seek whence 7", func() error {
			fd, _ := syscall.Open(f, syscall.O_RDONLY, 0)
			defer syscall.Close(fd)
			_, err := syscall.Seek(fd, 0, 7)
			return err
		}(), syscall.EINVAL},
		{"rename a dir into itself", os.Rename(d, filepath.Join(d, "sub")), syscall.EINVAL},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
}

func open(p string) error {
	f, err := os.Open(p)
	if err == nil {
		f.Close()
	}
	return err
}

// tempDir is a fresh directory under os.TempDir.
func (t *T) tempDir() string {
	d, err := os.MkdirTemp("", "selftest-")
	if err != nil {
		t.Fatalf("MkdirTemp: %v", err)
	}
	return d
}

// testPipe passes data through os.Pipe between goroutines: blocking reads
// and writes, a write ten times the pipe's buffer, EOF when the writer
// closes, EPIPE when the reader has.
func testPipe(t *T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("os.Pipe: %v", err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640 KB
	done := make(chan error, 1)
	go func() {
		_, err := w.Write(data)
		w.Close()
		done <- err
	}()
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("read %d of %d bytes, %v", len(got), len(data), err)
	}
	if err := <-done; err != nil {
		t.Errorf("write: %v", err)
	}
	r.Close()
	// A reader blocked on an empty pipe wakes for a later write.
	r, w, _ = os.Pipe()
	go func() {
		time.Sleep(10 * time.Millisecond)
		w.Write([]byte("late"))
	}()
	b := make([]byte, 8)
	if n, err := r.Read(b); err != nil || string(b[:n]) != "late" {
		t.Errorf("blocked read = %q, %v", b[:n], err)
	}
	r.Close()
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("write with no reader: %v, want EPIPE", err)
	}
	select {
	case <-sigpipe:
	case <-time.After(5 * time.Second):
		t.Errorf("write with no reader: no SIGPIPE")
	}
	w.Close()
}

// testPipeEpoll drives epoll on pipes with raw system calls, as the
// runtime's netpoller does: edge- and level-triggered readiness, EAGAIN on
// O_NONBLOCK ends, a blocked epoll_wait woken by a write, EPOLLHUP and
// EPOLLERR when the other end closes, EPERM for files and directories.
func testPipeEpoll(t *T) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		t.Fatalf("pipe2: %v", err)
	}
	r, w := p[0], p[1]
	defer syscall.Close(r)
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatalf("epoll_create1: %v", err)
	}
	defer syscall.Close(ep)
	const et = 1 << 31 // EPOLLET (package syscall declares it negative)
	add := func(fd int, events uint32, data int32) error {
		ev := syscall.EpollEvent{Events: events, Fd: data}
		return syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev)
	}
	if err := add(r, syscall.EPOLLIN|syscall.EPOLLRDHUP|et, 1); err != nil {
		t.Fatalf("add read end: %v", err)
	}
	if err := add(w, syscall.EPOLLOUT|et, 2); err != nil {
		t.Fatalf("add write end: %v", err)
	}
	if err := add(r, syscall.EPOLLIN, 1); err != syscall.EEXIST {
		t.Errorf("second add: %v, want EEXIST", err)
	}
	evs := make([]syscall.EpollEvent, 8)
	got := func(ms int) map[int32]uint32 {
		n, err := syscall.EpollWait(ep, evs, ms)
		if err != nil {
			t.Fatalf("epoll_wait: %v", err)
		}
		m := map[int32]uint32{}
		for _, e := range evs[:n] {
			m[e.Fd] = e.Events
		}
		return m
	}
	// Just added: the write end is writable, the read end not readable.
	if m := got(0); len(m) != 1 || m[2] != syscall.EPOLLOUT {
		t.Errorf("after add: %v", m)
	}
	// Edge-triggered: reported once.
	if m := got(0); len(m) != 0 {
		t.Errorf("again: %v", m)
	}
	buf := make([]byte, 100)
	if _, err := syscall.Read(r, buf); err != syscall.EAGAIN {
		t.Errorf("read of an empty O_NONBLOCK pipe: %v", err)
	}
	// A write from another thread wakes a blocked epoll_wait.
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		time.Sleep(20 * time.Millisecond)
		syscall.Write(w, []byte("ping"))
	}()
	start := time.Now()
	if m := got(5000); m[1] != syscall.EPOLLIN {
		t.Errorf("woken by a write: %v", m)
	} else if d := time.Since(start); d > 4*time.Second {
		t.Errorf("woken after %v", d)
	}
	if n, _ := syscall.Read(r, buf); string(buf[:n]) != "ping" {
		t.Errorf("read %q", buf[:n])
	}
	// The writer's call must have returned before w is closed below: the
	// reader can read "ping" while that thread is still in the call,
	// holding the file, and a close meanwhile ends the pipe's writer only
	// when the call lets go (as on Linux). Under load (CI, microvm:2)
	// the close below once came first: no EPOLLHUP, EAGAIN at the end.
	<-wrote
	// Level-triggered: reported while ready.
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: 1}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_MOD, r, &ev); err != nil {
		t.Fatalf("mod: %v", err)
	}
	syscall.Write(w, []byte("x"))
	for i := 0; i < 2; i++ {
		if m := got(0); m[1] != syscall.EPOLLIN {
			t.Errorf("level-triggered, round %d: %v", i, m)
		}
	}
	syscall.Read(r, buf)
	if m := got(0); m[1] != 0 {
		t.Errorf("level-triggered after the read: %v", m)
	}
	// The writer gone: EPOLLHUP on the reader; the reader gone: EPOLLERR.
	var q [2]int
	syscall.Pipe2(q[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC)
	add(q[1], syscall.EPOLLOUT|et, 3)
	syscall.Close(w)
	if m := got(0); m[1] != syscall.EPOLLHUP || m[3] != syscall.EPOLLOUT {
		t.Errorf("writer closed: %v", m)
	}
	syscall.Close(q[0])
	if m := got(0); m[3] != syscall.EPOLLOUT|syscall.EPOLLERR {
		t.Errorf("reader closed: %v", m)
	}
	if n, err := syscall.Read(r, buf); n != 0 || err != nil {
		t.Errorf("read at end of file: %d %v", n, err)
	}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, q[1], nil); err != nil {
		t.Errorf("del: %v", err)
	}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, q[1], nil); err != syscall.ENOENT {
		t.Errorf("second del: %v, want ENOENT", err)
	}
	syscall.Close(q[1])
	// Files and directories cannot be watched, as on Linux.
	dir := t.tempDir()
	defer os.RemoveAll(dir)
	fd, _ := syscall.Open(filepath.Join(dir, "f"), syscall.O_CREAT|syscall.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err := add(fd, syscall.EPOLLIN, 4); err != syscall.EPERM {
		t.Errorf("regular file: %v, want EPERM", err)
	}
	syscall.Close(fd)
	fd, _ = syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err := add(fd, syscall.EPOLLIN, 4); err != syscall.EPERM {
		t.Errorf("directory: %v, want EPERM", err)
	}
	syscall.Close(fd)
}

// testPipeNetpoll checks that os.Pipe's ends are in the netpoller: read
// deadlines work, and closing a file wakes a goroutine blocked reading it
// (with os.ErrClosed) without a thread per blocked reader.
func testPipeNetpoll(t *T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("os.Pipe: %v", err)
	}
	defer w.Close()
	if err := r.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatalf("SetReadDeadline: %v (a pipe not in the netpoller)", err)
	}
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past the deadline: %v", err)
	}
	r.SetReadDeadline(time.Time{})
	done := make(chan error)
	go func() {
		_, err := r.Read(make([]byte, 1))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	r.Close()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("read on a closed file: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Close did not wake the reader")
	}
	// Many readers blocked at once: goroutines parked in the netpoller.
	const n = 64
	var rs, ws [n]*os.File
	for i := range rs {
		if rs[i], ws[i], err = os.Pipe(); err != nil {
			t.Fatalf("os.Pipe %d: %v", i, err)
		}
	}
	res := make(chan string, n)
	for i := range rs {
		go func(f *os.File) {
			b := make([]byte, 8)
			k, _ := f.Read(b)
			res <- string(b[:k])
		}(rs[i])
	}
	time.Sleep(20 * time.Millisecond)
	for i := range ws {
		ws[i].Write([]byte("go"))
	}
	for i := 0; i < n; i++ {
		select {
		case s := <-res:
			if s != "go" {
				t.Errorf("read %q", s)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d readers woke", i, n)
		}
	}
	for i := range rs {
		rs[i].Close()
		ws[i].Close()
	}
}

// testPipeBlockingClose: a read blocked in the kernel on a blocking pipe
// keeps its end open when another thread closes the descriptor, as on
// Linux: a later write still reaches it, and only then is the end gone.
func testPipeBlockingClose(t *T) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatalf("pipe2: %v", err)
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result)
	go func() {
		b := make([]byte, 8)
		n, err := syscall.Read(p[0], b)
		done <- result{n, err}
	}()
	time.Sleep(20 * time.Millisecond)
	if err := syscall.Close(p[0]); err != nil {
		t.Errorf("close: %v", err)
	}
	// A new descriptor may take the number; the blocked read is not on it.
	fd, _ := syscall.Open(os.TempDir(), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if n, err := syscall.Write(p[1], []byte("abc")); n != 3 || err != nil {
		t.Errorf("write while the read holds the end: %d %v", n, err)
	}
	select {
	case r := <-done:
		if r.n != 3 || r.err != nil {
			t.Errorf("blocked read: %d %v", r.n, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the blocked read did not return")
	}
	syscall.Close(fd)
	if _, err := syscall.Write(p[1], []byte("x")); err != syscall.EPIPE {
		t.Errorf("write after the read returned: %v, want EPIPE", err)
	}
	syscall.Close(p[1])
	// Blocking pipe semantics without the netpoller: a writer larger than
	// the buffer and a reader, each blocking in the kernel.
	syscall.Pipe2(p[:], syscall.O_CLOEXEC)
	data := bytes.Repeat([]byte("yolk"), 50000)
	go func() {
		// A signal (the runtime's preemption) can end a blocked write
		// after part of it, with the count written, as on Linux: write
		// the rest.
		for d := data; len(d) > 0; {
			n, err := syscall.Write(p[1], d)
			if n > 0 {
				d = d[n:]
			}
			if err != nil && err != syscall.EINTR {
				break
			}
		}
		syscall.Close(p[1])
	}()
	var got []byte
	b := make([]byte, 10000)
	for {
		n, err := syscall.Read(p[0], b)
		if n <= 0 || err != nil {
			break
		}
		got = append(got, b[:n]...)
	}
	syscall.Close(p[0])
	if !bytes.Equal(got, data) {
		t.Errorf("blocking transfer: %d of %d bytes", len(got), len(data))
	}
}

// testFIFO: a FIFO made by mkfifo, opened blocking at both ends from two
// goroutines (each open waits for the other), data, end of file;
// O_NONBLOCK opens as Linux.
func testFIFO(t *T) {
	dir := t.tempDir()
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(name, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	if fi, err := os.Stat(name); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("stat: %v %v", fi, err)
	}
	rc := make(chan *os.File, 1)
	go func() {
		r, err := os.Open(name)
		if err != nil {
			t.Errorf("open for reading: %v", err)
		}
		rc <- r
	}()
	time.Sleep(10 * time.Millisecond)
	w, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open for writing: %v", err)
	}
	r := <-rc
	if r == nil {
		return
	}
	w.Write([]byte("through the fifo"))
	w.Close()
	if b, err := io.ReadAll(r); err != nil || string(b) != "through the fifo" {
		t.Errorf("read %q %v", b, err)
	}
	r.Close()
	if _, err := os.OpenFile(name, os.O_WRONLY|syscall.O_NONBLOCK, 0); !errors.Is(err, syscall.ENXIO) {
		t.Errorf("nonblocking writer without reader: %v, want ENXIO", err)
	}
	r, err = os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("nonblocking reader: %v", err)
	}
	r.Close()
}

// testHardLink: os.Link, link counts, one inode behind two names.
func testHardLink(t *T) {
	dir := t.tempDir()
	defer os.RemoveAll(dir)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("one inode"), 0o644)
	if err := os.Link(a, b); err != nil {
		t.Fatalf("link: %v", err)
	}
	fa, _ := os.Stat(a)
	fb, err := os.Stat(b)
	if err != nil || !os.SameFile(fa, fb) || fb.Sys().(*syscall.Stat_t).Nlink != 2 {
		t.Errorf("after link: %v %v", fb, err)
	}
	if err := os.Link(a, b); !errors.Is(err, os.ErrExist) {
		t.Errorf("link onto an existing name: %v", err)
	}
	if err := os.Link(dir, filepath.Join(dir, "d")); !errors.Is(err, syscall.EPERM) {
		t.Errorf("link a directory: %v, want EPERM", err)
	}
	os.Remove(a)
	if got, err := os.ReadFile(b); err != nil || string(got) != "one inode" {
		t.Errorf("after removing the first name: %q %v", got, err)
	}
	if fi, _ := os.Stat(b); fi.Sys().(*syscall.Stat_t).Nlink != 1 {
		t.Errorf("nlink after remove: %d", fi.Sys().(*syscall.Stat_t).Nlink)
	}
}

// testDevNull: the memory devices the kernel makes in /dev.
func testDevNull(t *T) {
	f, err := os.OpenFile(os.DevNull, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		t.Fatalf("open %s: %v", os.DevNull, err)
	}
	if n, err := f.Write([]byte("gone")); n != 4 || err != nil {
		t.Errorf("write: %d %v", n, err)
	}
	if n, err := f.Read(make([]byte, 4)); n != 0 || err != io.EOF {
		t.Errorf("read: %d %v", n, err)
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 || fi.Mode().Perm() != 0o666 {
		t.Errorf("stat: %v %v", fi.Mode(), err)
	}
	f.Close()
	z, _ := os.Open("/dev/zero")
	b := []byte("xyz")
	if n, err := z.Read(b); n != 3 || err != nil || string(b) != "\x00\x00\x00" {
		t.Errorf("/dev/zero: %d %v %q", n, err, b)
	}
	z.Close()
	if err := os.WriteFile("/dev/full", []byte("x"), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("/dev/full: %v, want ENOSPC", err)
	}
}

// testCloseStdio: descriptors 0, 1 and 2 close like any other, and the
// lowest free descriptor is the next one given, as on Linux. With stdout
// made a pipe's write end, closing it leaves the pipe without writers: the
// reader sees the end of file (close(1) used to be EBADF whatever 1 was,
// so the reader waited forever).
func testCloseStdio(t *T) {
	saved, err := syscall.Dup(1)
	if err != nil {
		t.Fatalf("dup(1): %v", err)
	}
	defer func() {
		syscall.Dup3(saved, 1, 0)
		syscall.Close(saved)
	}()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatalf("pipe: %v", err)
	}
	defer syscall.Close(p[0])
	if err := syscall.Dup3(p[1], 1, 0); err != nil {
		t.Fatalf("dup3(pipe, 1): %v", err)
	}
	syscall.Close(p[1])
	if n, err := syscall.Write(1, []byte("x")); n != 1 || err != nil {
		t.Fatalf("write to stdout, now the pipe: %d, %v", n, err)
	}
	if err := syscall.Close(1); err != nil {
		t.Fatalf("close(1) = %v; want success", err)
	}
	buf := make([]byte, 8)
	if n, err := syscall.Read(p[0], buf); n != 1 || err != nil || buf[0] != 'x' {
		t.Fatalf("read from the pipe: %d, %v, %q", n, err, buf[:max(n, 0)])
	}
	if n, err := syscall.Read(p[0], buf); n != 0 || err != nil {
		t.Fatalf("read after the last writer closed: %d, %v; want end of file", n, err)
	}
	fd, err := syscall.Open("/dev/null", syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/null: %v", err)
	}
	if fd != 1 {
		t.Errorf("open gave descriptor %d; want 1, the lowest free", fd)
	}
	syscall.Close(fd)
}
