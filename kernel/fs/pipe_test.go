package fs

import (
	"bytes"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// blockingRead and blockingWrite are what the kernel does for a blocking
// descriptor: try, and on EAGAIN wait for the pipe's state to change.
func blockingRead(f *testFS, s *hostState, h int, p []byte) (int, Errno) {
	for {
		_, addr, val, _ := f.Wait(h)
		n, e := f.Read(h, p)
		if e != unix.EAGAIN {
			return n, e
		}
		s.block(addr, val)
	}
}

func blockingWrite(f *testFS, s *hostState, h int, p []byte) (int, Errno) {
	done := 0
	for done < len(p) {
		_, addr, val, _ := f.Wait(h)
		n, e := f.Write(h, p[done:])
		done += n
		if e == unix.EAGAIN {
			s.block(addr, val)
			continue
		}
		if e != 0 {
			return done, e
		}
	}
	return done, 0
}

func TestPipeBasics(t *testing.T) {
	f, s := newFS(t, 1024, 1024)
	r, w, e := f.Pipe(unix.O_CLOEXEC)
	must(t, "pipe", e)
	buf := make([]byte, 100)
	if _, e := f.Read(r, buf); e != unix.EAGAIN {
		t.Errorf("empty pipe: %v", e)
	}
	if _, e := f.Write(r, buf); e != unix.EBADF {
		t.Errorf("write to read end: %v", e)
	}
	if _, e := f.Read(w, buf); e != unix.EBADF {
		t.Errorf("read from write end: %v", e)
	}
	if _, e := f.Seek(r, 0, unix.SEEK_SET); e != unix.ESPIPE {
		t.Errorf("seek: %v", e)
	}
	if _, e := f.Pread(r, buf, 0); e != unix.ESPIPE {
		t.Errorf("pread: %v", e)
	}
	var st unix.Stat_t
	must(t, "fstat", f.Fstat(r, &st))
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Errorf("mode %o", st.Mode)
	}
	if fl, _ := f.Flags(w); fl&unix.O_ACCMODE != unix.O_WRONLY || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("flags %o", fl)
	}
	wakes := s.wakes.Load()
	n, e := f.Write(w, []byte("hello"))
	if n != 5 || e != 0 || s.wakes.Load() == wakes {
		t.Fatalf("write: %d %v, wakes %d", n, e, s.wakes.Load()-wakes)
	}
	if n, _ := f.Read(r, buf[:3]); string(buf[:n]) != "hel" {
		t.Errorf("read %q", buf[:n])
	}
	// End of file once every writer is gone (a dup'ed end counts).
	must(t, "ref", f.Ref(w))
	f.Close(w)
	if n, _ := f.Read(r, buf); string(buf[:n]) != "lo" {
		t.Errorf("read %q", buf[:n])
	}
	if _, e := f.Read(r, buf); e != unix.EAGAIN {
		t.Errorf("with a writer left: %v", e)
	}
	_, addr, val, ok := f.Wait(r)
	f.Close(w)
	if !ok || *word32(addr) == val {
		t.Errorf("closing the writer did not change the wait counter")
	}
	if n, e := f.Read(r, buf); n != 0 || e != 0 {
		t.Errorf("EOF: %d %v", n, e)
	}
	f.Close(r)
	// EPIPE with no reader.
	r, w, _ = f.Pipe(unix.O_NONBLOCK)
	if fl, _ := f.Flags(r); fl&unix.O_NONBLOCK == 0 || !f.Nonblocking(r) {
		t.Errorf("O_NONBLOCK not kept: %o", fl)
	}
	f.Close(r)
	if _, e := f.Write(w, buf); e != unix.EPIPE {
		t.Errorf("no reader: %v", e)
	}
	f.Close(w)
	if _, _, e := f.Pipe(unix.O_APPEND); e != unix.EINVAL {
		t.Errorf("bad flags: %v", e)
	}
	if s.pages.InUse() != 0 {
		t.Errorf("pages left: %d", s.pages.InUse())
	}
}

func TestPipeFullAndAtomic(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	r, w, _ := f.Pipe(0)
	big := make([]byte, PipeSize+1000)
	if n, e := f.Write(w, big); n != PipeSize || e != 0 {
		t.Fatalf("fill: %d %v", n, e)
	}
	if _, e := f.Write(w, big[:1]); e != unix.EAGAIN {
		t.Errorf("full: %v", e)
	}
	buf := make([]byte, 100)
	f.Read(r, buf)
	// 100 bytes free: a write of up to PipeBuf is all or nothing...
	if _, e := f.Write(w, big[:200]); e != unix.EAGAIN {
		t.Errorf("atomic write: %v", e)
	}
	// ... a larger one takes what fits.
	if n, e := f.Write(w, big[:PipeBuf+1]); n != 100 || e != 0 {
		t.Errorf("partial write: %d %v", n, e)
	}
	f.Close(r)
	f.Close(w)
}

// TestPipeLargeTransfer moves 3 MiB through the 64 KiB ring between
// goroutines, in odd-sized writes and reads that wrap around the pages.
func TestPipeLargeTransfer(t *testing.T) {
	f, s := newFS(t, 1024, 1024)
	r, w, _ := f.Pipe(0)
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(i % 251)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for off := 0; off < len(data); {
			end := min(off+70001, len(data))
			n, e := blockingWrite(f, s, w, data[off:end])
			if e != 0 || n != end-off {
				t.Errorf("write: %d %v", n, e)
				return
			}
			off = end
		}
		f.Close(w)
	}()
	var got []byte
	go func() {
		defer wg.Done()
		buf := make([]byte, 5003)
		for {
			n, e := blockingRead(f, s, r, buf)
			if e != 0 {
				t.Errorf("read: %v", e)
				return
			}
			if n == 0 {
				return
			}
			got = append(got, buf[:n]...)
		}
	}()
	wg.Wait()
	if !bytes.Equal(got, data) {
		t.Errorf("got %d bytes, equal %v", len(got), bytes.Equal(got, data))
	}
	f.Close(r)
}

// TestPipeAtomicWriters: small writes from several goroutines never
// interleave.
func TestPipeAtomicWriters(t *testing.T) {
	f, s := newFS(t, 1024, 1024)
	r, w, _ := f.Pipe(0)
	const writers, msgs, size = 4, 200, 3000
	var wg sync.WaitGroup
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(c byte) {
			defer wg.Done()
			msg := bytes.Repeat([]byte{c}, size)
			for j := 0; j < msgs; j++ {
				if _, e := blockingWrite(f, s, w, msg); e != 0 {
					t.Errorf("write: %v", e)
					return
				}
			}
		}(byte('a' + i))
	}
	go func() { wg.Wait(); f.Close(w) }()
	var got []byte
	buf := make([]byte, 7000)
	for {
		n, e := blockingRead(f, s, r, buf)
		if e != 0 || n == 0 {
			break
		}
		got = append(got, buf[:n]...)
	}
	if len(got) != writers*msgs*size {
		t.Fatalf("got %d bytes", len(got))
	}
	for i := 0; i < len(got); i += size {
		if bytes.Count(got[i:i+size], got[i:i+1]) != size {
			t.Fatalf("interleaved at %d", i)
		}
	}
	f.Close(r)
}

// TestPipePoll: readiness as Linux's pipe_poll, and the change counter
// epoll's edge-triggered watches follow.
func TestPipePoll(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	r, w, _ := f.Pipe(unix.O_NONBLOCK)
	rid, raddr, e := f.Pollable(r)
	must(t, "pollable r", e)
	wid, _, e := f.Pollable(w)
	must(t, "pollable w", e)
	poll := func(h int, id uint64) uint32 {
		t.Helper()
		ev, seq, ok := f.Poll(h, id)
		if !ok || seq != *word32(raddr) {
			t.Fatalf("poll: ok %v, seq %d, counter %d", ok, seq, *word32(raddr))
		}
		return ev
	}
	const in, out = unix.EPOLLIN | unix.EPOLLRDNORM, unix.EPOLLOUT | unix.EPOLLWRNORM
	if ev := poll(r, rid); ev != 0 {
		t.Errorf("empty read end: %#x", ev)
	}
	if ev := poll(w, wid); ev != out {
		t.Errorf("empty write end: %#x", ev)
	}
	seq := *word32(raddr)
	write(t, f, w, "x")
	if *word32(raddr) == seq {
		t.Errorf("a write did not move the counter")
	}
	if ev := poll(r, rid); ev != in {
		t.Errorf("read end with data: %#x", ev)
	}
	// Full to within PipeBuf: not writable.
	big := make([]byte, PipeSize-PipeBuf)
	if n, e := f.Write(w, big); n != len(big) || e != 0 {
		t.Fatalf("fill: %d %v", n, e)
	}
	if ev := poll(w, wid); ev != 0 {
		t.Errorf("nearly full write end: %#x", ev)
	}
	seq = *word32(raddr)
	f.Read(r, make([]byte, 10))
	if *word32(raddr) == seq {
		t.Errorf("a read did not move the counter")
	}
	if ev := poll(w, wid); ev != out {
		t.Errorf("write end after a read: %#x", ev)
	}
	// The writer gone: EPOLLHUP with the data still there.
	f.Close(w)
	if ev := poll(r, rid); ev != in|unix.EPOLLHUP {
		t.Errorf("read end, writer gone: %#x", ev)
	}
	if _, _, ok := f.Poll(w, wid); ok {
		t.Errorf("a closed end polls")
	}
	// The reader gone: EPOLLERR on the writer.
	r2, w2, _ := f.Pipe(0)
	wid2, _, _ := f.Pollable(w2)
	f.Close(r2)
	if ev, _, _ := f.Poll(w2, wid2); ev != out|unix.EPOLLERR {
		t.Errorf("write end, reader gone: %#x", ev)
	}
	// A handle reused by a new open is not the watched open file.
	f.Close(w2)
	h := open(t, f, "file", unix.O_CREAT|unix.O_RDWR, 0o644)
	if h == w2 {
		if _, _, ok := f.Poll(h, wid2); ok {
			t.Errorf("a reused handle polls as the old open file")
		}
	}
	// Files and directories cannot be watched, as Linux.
	if _, _, e := f.Pollable(h); e != unix.EPERM {
		t.Errorf("regular file: %v", e)
	}
	d := open(t, f, "/", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if _, _, e := f.Pollable(d); e != unix.EPERM {
		t.Errorf("directory: %v", e)
	}
	if _, _, e := f.Pollable(-1); e != unix.EBADF {
		t.Errorf("bad handle: %v", e)
	}
	f.Close(h)
	f.Close(d)
	f.Close(r)
}

// TestPipeZeroWrite: a write of nothing is 0 even when no reader is left,
// as Linux's pipe_write (which returns before it looks at the readers: no
// EPIPE, so no SIGPIPE); the host's pipe says the same.
func TestPipeZeroWrite(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	unix.Close(p[0])
	if n, err := unix.Write(p[1], nil); n != 0 || err != nil {
		t.Errorf("host: write of nothing with no reader: %d, %v", n, err)
	}
	unix.Close(p[1])
	f, _ := newFS(t, 1024, 1024)
	r, w, e := f.Pipe(0)
	must(t, "pipe", e)
	f.Close(r)
	if n, e := f.Write(w, nil); n != 0 || e != 0 {
		t.Errorf("write of nothing with no reader: %d, %v; want 0, as the host", n, e)
	}
	if _, e := f.Write(w, []byte("x")); e != unix.EPIPE {
		t.Errorf("write with no reader: %v, want EPIPE", e)
	}
	f.Close(w)
}

// TestReadable: FIONREAD's count, on pipes and files (Linux: the bytes
// buffered; a file's size past the offset; ENOTTY for a directory).
func TestReadable(t *testing.T) {
	f, _ := newFS(t, 64, 64)
	r, w, e := f.Pipe(0)
	if e != 0 {
		t.Fatal(e)
	}
	if n, e := f.Readable(r); n != 0 || e != 0 {
		t.Errorf("empty pipe: %d, %v", n, e)
	}
	f.Write(w, []byte("hello"))
	if n, e := f.Readable(r); n != 5 || e != 0 {
		t.Errorf("pipe with 5 bytes: %d, %v", n, e)
	}
	h := open(t, f, "/x", unix.O_RDWR|unix.O_CREAT, 0o644)
	write(t, f, h, "0123456789")
	f.Seek(h, 3, 0)
	if n, e := f.Readable(h); n != 7 || e != 0 {
		t.Errorf("file at offset 3 of 10: %d, %v", n, e)
	}
	f.Seek(h, 20, 0)
	if n, e := f.Readable(h); n != 0 || e != 0 {
		t.Errorf("file past its end: %d, %v", n, e)
	}
	d := open(t, f, "/", unix.O_RDONLY, 0)
	if _, e := f.Readable(d); e != unix.ENOTTY {
		t.Errorf("directory: %v, want ENOTTY", e)
	}
}
