package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Files mapped into memory and fallocate (docs/files.md), errno for errno
// as Linux (the same binary passes on the host): on the in-memory file
// system (TestFileMmap, TestFallocate) and on the host share
// (TestShareMmap, with the share TestGuest gives).

func init() {
	tests = append(tests,
		test{"TestFileMmap", testFileMmap},
		test{"TestFileMmapDB", testFileMmapDB},
		test{"TestFileMmapTruncate", testFileMmapTruncate},
		test{"TestFallocate", testFallocate},
		test{"TestMapFixedNoReplace", testMapFixedNoReplace},
		test{"TestShareMmap", testShareMmap},
		test{"TestShareMmapWriteBack", testShareMmapWriteBack},
	)
}

// fmapPattern is n bytes, byte i being a function of i and seed.
func fmapPattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7+i>>12) ^ seed
	}
	return b
}

// readFaults reports whether reading *p faults (a panic, with
// debug.SetPanicOnFault, of SIGBUS past a file's end and of SIGSEGV alike:
// faultSignal, fmap_sigbus.go, tells them apart).
func readFaults(p *byte) (faulted bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			faulted = true
		}
	}()
	_ = *(*volatileByte)(p)
	return false
}

type volatileByte byte

// munmapPart unmaps part of a mapping (x/sys/unix's Munmap takes only a
// whole mapping it made).
func munmapPart(b []byte) error {
	_, _, e := syscall.Syscall(syscall.SYS_MUNMAP, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
	if e != 0 {
		return e
	}
	return nil
}

func fmapCheck(t *T, what string, err error, want syscall.Errno) {
	if got := errnoOf(err); got != want || want == 0 && err != nil {
		t.Errorf("%s: %v (%s), want %s", what, err, errnoName(got), errnoName(want))
	}
}

// fmapErrnos checks mmap's refusals for files in dir.
func fmapErrnos(t *T, dir string) {
	name := filepath.Join(dir, "errnos")
	if err := os.WriteFile(name, make([]byte, 3*pageSize), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	ro, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(ro)
	wo, err := unix.Open(name, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(wo)
	d, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open dir: %v", err)
	}
	defer unix.Close(d)
	mm := func(fd, prot, flags int, off int64, n int) error {
		b, err := unix.Mmap(fd, off, n, prot, flags)
		if err == nil {
			unix.Munmap(b)
		}
		return err
	}
	rw := unix.PROT_READ | unix.PROT_WRITE
	fmapCheck(t, "MAP_SHARED PROT_WRITE of an O_RDONLY file", mm(ro, rw, unix.MAP_SHARED, 0, pageSize), unix.EACCES)
	fmapCheck(t, "MAP_PRIVATE PROT_WRITE of an O_RDONLY file", mm(ro, rw, unix.MAP_PRIVATE, 0, pageSize), 0)
	fmapCheck(t, "MAP_SHARED PROT_READ of an O_RDONLY file", mm(ro, unix.PROT_READ, unix.MAP_SHARED, 0, pageSize), 0)
	fmapCheck(t, "MAP_SHARED PROT_READ of an O_WRONLY file", mm(wo, unix.PROT_READ, unix.MAP_SHARED, 0, pageSize), unix.EACCES)
	fmapCheck(t, "MAP_PRIVATE of an O_WRONLY file", mm(wo, unix.PROT_READ, unix.MAP_PRIVATE, 0, pageSize), unix.EACCES)
	fmapCheck(t, "an offset not page-aligned", mm(ro, unix.PROT_READ, unix.MAP_SHARED, 100, pageSize), unix.EINVAL)
	fmapCheck(t, "an offset not page-aligned, bad descriptor", mm(-1, unix.PROT_READ, unix.MAP_SHARED, 100, pageSize), unix.EINVAL)
	fmapCheck(t, "descriptor -1", mm(-1, unix.PROT_READ, unix.MAP_SHARED, 0, pageSize), unix.EBADF)
	fmapCheck(t, "descriptor 999", mm(999, unix.PROT_READ, unix.MAP_SHARED, 0, pageSize), unix.EBADF)
	fmapCheck(t, "length 0", mm(ro, unix.PROT_READ, unix.MAP_SHARED, 0, 0), unix.EINVAL)
	fmapCheck(t, "neither shared nor private", mm(ro, unix.PROT_READ, 0, 0, pageSize), unix.EINVAL)
	fmapCheck(t, "a directory", mm(d, unix.PROT_READ, unix.MAP_SHARED, 0, pageSize), unix.ENODEV)
	// MAP_SHARED_VALIDATE refuses a flag it does not know (MAP_SHARED
	// ignores it), before the access mode.
	fmapCheck(t, "MAP_SHARED_VALIDATE with an unknown flag", mm(ro, unix.PROT_READ, unix.MAP_SHARED_VALIDATE|1<<10, 0, pageSize), unix.EOPNOTSUPP)
	fmapCheck(t, "MAP_SHARED with an unknown flag", mm(ro, unix.PROT_READ, unix.MAP_SHARED|1<<10, 0, pageSize), 0)
	fmapCheck(t, "MAP_SHARED_VALIDATE with an unknown flag, O_WRONLY", mm(wo, unix.PROT_READ, unix.MAP_SHARED_VALIDATE|1<<10, 0, pageSize), unix.EOPNOTSUPP)
	fmapCheck(t, "MAP_SHARED_VALIDATE|MAP_POPULATE", mm(ro, unix.PROT_READ, unix.MAP_SHARED_VALIDATE|unix.MAP_POPULATE, 0, pageSize), 0)
	// MAP_FIXED_NOREPLACE over a mapping is EEXIST before the file's
	// access mode and type are looked at.
	if b, err := unix.Mmap(-1, 0, pageSize, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANON); err == nil {
		a := uintptr(unsafe.Pointer(&b[0]))
		for _, fl := range []uintptr{unix.MAP_SHARED, 0} {
			if r, _, e := unix.Syscall6(unix.SYS_MMAP, a, pageSize, unix.PROT_READ|unix.PROT_WRITE, fl|unix.MAP_FIXED_NOREPLACE, uintptr(ro), 0); e != unix.EEXIST {
				t.Errorf("MAP_FIXED_NOREPLACE (flags %#x) of an O_RDONLY file over a mapping: %#x, %v; want EEXIST", fl, r, e)
			}
		}
		unix.Munmap(b)
	}
	// A shared mapping of a file open read-only never becomes writable;
	// a private one does.
	for _, c := range []struct {
		flags int
		want  syscall.Errno
	}{{unix.MAP_SHARED, unix.EACCES}, {unix.MAP_PRIVATE, 0}} {
		b, err := unix.Mmap(ro, 0, 2*pageSize, unix.PROT_READ, c.flags)
		if err != nil {
			t.Fatalf("mmap: %v", err)
		}
		fmapCheck(t, "mprotect(PROT_WRITE) of a read-only file's mapping", unix.Mprotect(b[pageSize:], rw), c.want)
		unix.Munmap(b)
	}
}

func testFileMmap(t *T) {
	dir, err := os.MkdirTemp("", "fmap")
	if err != nil {
		t.Fatalf("MkdirTemp: %v", err)
	}
	defer os.RemoveAll(dir)
	fmapErrnos(t, dir)
	// Pipes and sockets cannot be mapped (ENODEV); a pipe's write end is
	// not open for reading (EACCES).
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatalf("pipe: %v", err)
	}
	_, err = unix.Mmap(p[0], 0, pageSize, unix.PROT_READ, unix.MAP_SHARED)
	fmapCheck(t, "a pipe's read end", err, unix.ENODEV)
	_, err = unix.Mmap(p[1], 0, pageSize, unix.PROT_READ, unix.MAP_SHARED)
	fmapCheck(t, "a pipe's write end", err, unix.EACCES)
	unix.Close(p[0])
	unix.Close(p[1])
	if s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
		_, err = unix.Mmap(s, 0, pageSize, unix.PROT_READ, unix.MAP_SHARED)
		fmapCheck(t, "a socket", err, unix.ENODEV)
		unix.Close(s)
	}

	// A file of three pages and 100 bytes.
	name := filepath.Join(dir, "f")
	size := 3*pageSize + 100
	want := fmapPattern(size, 1)
	if err := os.WriteFile(name, want, 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(fd)
	sh, err := unix.Mmap(fd, 0, 6*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap shared: %v", err)
	}
	if !bytes.Equal(sh[:size], want) {
		t.Errorf("shared mapping: not the file's bytes")
	}
	if !bytes.Equal(sh[size:4*pageSize], make([]byte, 4*pageSize-size)) {
		t.Errorf("shared mapping: the last page past the end is not zero")
	}
	if !readFaults(&sh[4*pageSize]) || !readFaults(&sh[6*pageSize-1]) {
		t.Errorf("a page past the file's last one did not fault")
	}
	// A write through the mapping is in the file: read(2) sees it.
	copy(sh[pageSize+10:], "mapped write")
	copy(want[pageSize+10:], "mapped write")
	got := make([]byte, size+50)
	if n, err := unix.Pread(fd, got, 0); err != nil || n != size || !bytes.Equal(got[:n], want) {
		t.Errorf("pread after a write through the mapping: %d, %v; equal %v", n, err, bytes.Equal(got[:size], want))
	}
	// And a pwrite is in the mapping.
	if _, err := unix.Pwrite(fd, []byte("pwrite"), 2*pageSize+5); err != nil {
		t.Fatalf("pwrite: %v", err)
	}
	copy(want[2*pageSize+5:], "pwrite")
	if !bytes.Equal(sh[:size], want) {
		t.Errorf("a pwrite is not in the shared mapping")
	}
	// A private mapping: a copy; its writes stay in it.
	pr, err := unix.Mmap(fd, pageSize, 3*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap private: %v", err)
	}
	if !bytes.Equal(pr[:size-pageSize], want[pageSize:]) || pr[size-pageSize] != 0 {
		t.Errorf("private mapping at offset %d: not the file's bytes", pageSize)
	}
	copy(pr[20:], "private")
	if n, err := unix.Pread(fd, got, 0); err != nil || !bytes.Equal(got[:n], want) {
		t.Errorf("a private mapping's write reached the file")
	}
	if !bytes.Equal(sh[:size], want) {
		t.Errorf("a private mapping's write reached the shared mapping")
	}
	unix.Munmap(pr)
	// msync: MS_SYNC works; its refusals.
	fmapCheck(t, "msync MS_SYNC", unix.Msync(sh, unix.MS_SYNC), 0)
	fmapCheck(t, "msync MS_ASYNC|MS_SYNC", unix.Msync(sh, unix.MS_SYNC|unix.MS_ASYNC), unix.EINVAL)
	fmapCheck(t, "msync of a range not page-aligned", unix.Msync(sh[1:], unix.MS_SYNC), unix.EINVAL)
	fmapCheck(t, "msync flag 8", unix.Msync(sh, 8), unix.EINVAL)
	// A length that rounds up to 0 pages is an empty range (Linux).
	if _, _, e := unix.Syscall(unix.SYS_MSYNC, uintptr(unsafe.Pointer(&sh[0])), ^uintptr(0), unix.MS_SYNC); e != 0 {
		t.Errorf("msync with a length that rounds to 0: %v, want ok", e)
	}
	// Split the mapping: read-only in the middle, the third page gone.
	if err := unix.Mprotect(sh[pageSize:2*pageSize], unix.PROT_READ); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	if f, _ := writeFaults(&sh[pageSize]); !f {
		t.Errorf("write to the read-only page did not fault")
	}
	if err := munmapPart(sh[2*pageSize : 3*pageSize]); err != nil {
		t.Fatalf("munmap of the third page: %v", err)
	}
	sh[3*pageSize] = 'Z' // the fourth page is still the file's fourth
	want[3*pageSize] = 'Z'
	fmapCheck(t, "msync over an unmapped page", unix.Msync(sh[:4*pageSize], unix.MS_SYNC), unix.ENOMEM)
	if err := unix.Mprotect(sh[pageSize:2*pageSize], unix.PROT_READ|unix.PROT_WRITE); err != nil {
		t.Fatalf("mprotect back: %v", err)
	}
	sh[pageSize] = 'Y'
	want[pageSize] = 'Y'
	if n, err := unix.Pread(fd, got, 0); err != nil || !bytes.Equal(got[:n], want) {
		t.Errorf("the split mapping's writes are not in the file")
	}
	// Shrunk and grown again while mapped: zeroes past the old end.
	if err := unix.Ftruncate(fd, pageSize+5); err != nil {
		t.Fatalf("ftruncate: %v", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		t.Fatalf("ftruncate: %v", err)
	}
	if !bytes.Equal(sh[pageSize+5:2*pageSize], make([]byte, pageSize-5)) || sh[3*pageSize] != 0 {
		t.Errorf("bytes cut by a truncation came back")
	}
	for _, r := range [][2]int{{0, pageSize}, {pageSize, 2 * pageSize}, {3 * pageSize, 4 * pageSize}} {
		munmapPart(sh[r[0]:r[1]])
	}
	// Unlinked and closed while mapped: the mapping keeps the file.
	fd2, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	m, err := unix.Mmap(fd2, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	unix.Close(fd2)
	os.Remove(name)
	copy(m, "after unlink")
	if string(m[:12]) != "after unlink" || !bytes.Equal(m[12:pageSize], want[12:pageSize]) {
		t.Errorf("a mapping of an unlinked, closed file lost its bytes")
	}
	unix.Munmap(m)
	if n, err := unix.Pread(fd, got[:12], 0); err != nil || string(got[:n]) != "after unlink" {
		t.Errorf("pread through the remaining descriptor: %q, %v", got[:n], err)
	}
}

// testFileMmapDB is what an embedded key-value database does with its
// file: flock it, map it read-only and shared, write pages with pwrite and
// fdatasync, read them through the mapping, grow the file and map it
// again, larger.
func testFileMmapDB(t *T) {
	dir, err := os.MkdirTemp("", "fmapdb")
	if err != nil {
		t.Fatalf("MkdirTemp: %v", err)
	}
	defer os.RemoveAll(dir)
	fmapDB(t, filepath.Join(dir, "db"))
}

func fmapDB(t *T, name string) {
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("flock: %v", err)
	}
	size := 4 * pageSize
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		t.Fatalf("ftruncate: %v", err)
	}
	m, err := unix.Mmap(fd, 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	for round := 0; round < 6; round++ {
		// A transaction: a data page and the meta page.
		page := fmapPattern(pageSize, byte(round))
		pgno := 1 + round%3
		if round >= 3 {
			pgno = size/pageSize - 1 // the newest page after growing
		}
		if _, err := unix.Pwrite(fd, page, int64(pgno*pageSize)); err != nil {
			t.Fatalf("pwrite: %v", err)
		}
		meta := []byte{'m', 'e', 't', 'a', byte(round), byte(pgno)}
		if _, err := unix.Pwrite(fd, meta, 0); err != nil {
			t.Fatalf("pwrite meta: %v", err)
		}
		if err := unix.Fdatasync(fd); err != nil {
			t.Fatalf("fdatasync: %v", err)
		}
		if !bytes.Equal(m[:6], meta) || !bytes.Equal(m[pgno*pageSize:(pgno+1)*pageSize], page) {
			t.Fatalf("round %d: the mapping does not show the pages written", round)
		}
		if round == 2 || round == 4 {
			// Grow: fallocate the new size, unmap, map again.
			size *= 2
			if err := unix.Fallocate(fd, 0, 0, int64(size)); err != nil {
				t.Fatalf("fallocate: %v", err)
			}
			if err := unix.Munmap(m); err != nil {
				t.Fatalf("munmap: %v", err)
			}
			if m, err = unix.Mmap(fd, 0, size, unix.PROT_READ, unix.MAP_SHARED); err != nil {
				t.Fatalf("mmap %d: %v", size, err)
			}
			if !bytes.Equal(m[:6], meta) || m[size-1] != 0 {
				t.Fatalf("round %d: the larger mapping lost the meta page or is not zero at its end", round)
			}
		}
	}
	if err := unix.Munmap(m); err != nil {
		t.Fatalf("munmap: %v", err)
	}
}

func testFallocate(t *T) {
	dir, err := os.MkdirTemp("", "falloc")
	if err != nil {
		t.Fatalf("MkdirTemp: %v", err)
	}
	defer os.RemoveAll(dir)
	fallocateChecks(t, dir)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatalf("pipe: %v", err)
	}
	fmapCheck(t, "fallocate on a pipe's write end", unix.Fallocate(p[1], 0, 0, 10), unix.ESPIPE)
	fmapCheck(t, "fallocate on a pipe's read end", unix.Fallocate(p[0], 0, 0, 10), unix.EBADF)
	unix.Close(p[0])
	unix.Close(p[1])
	if s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
		fmapCheck(t, "fallocate on a socket", unix.Fallocate(s, 0, 0, 10), unix.ENODEV)
		unix.Close(s)
	}
}

// fallocateChecks runs fallocate on a file in dir (the in-memory file
// system or a share).
func fallocateChecks(t *T, dir string) {
	name := filepath.Join(dir, "fa")
	if err := os.WriteFile(name, []byte("0123456789"), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(fd)
	ro, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(ro)
	sizeIs := func(what string, want int64) {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Size != want {
			t.Errorf("%s: size %d, %v; want %d", what, st.Size, err, want)
		}
	}
	fmapCheck(t, "fallocate KEEP_SIZE", unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 0, 3*pageSize), 0)
	sizeIs("after KEEP_SIZE", 10)
	fmapCheck(t, "fallocate 0", unix.Fallocate(fd, 0, 5, 2*pageSize), 0)
	sizeIs("after mode 0", 5+2*pageSize)
	fmapCheck(t, "fallocate 0 inside the file", unix.Fallocate(fd, 0, 0, 100), 0)
	sizeIs("after mode 0 inside", 5+2*pageSize)
	b := make([]byte, 2*pageSize+5)
	if n, err := unix.Pread(fd, b, 0); err != nil || n != len(b) || string(b[:10]) != "0123456789" || !bytes.Equal(b[10:], make([]byte, len(b)-10)) {
		t.Errorf("after fallocate: %d, %v; not the bytes and then zeroes", n, err)
	}
	fmapCheck(t, "fallocate length 0", unix.Fallocate(fd, 0, 0, 0), unix.EINVAL)
	fmapCheck(t, "fallocate offset -1", unix.Fallocate(fd, 0, -1, 10), unix.EINVAL)
	fmapCheck(t, "fallocate PUNCH_HOLE without KEEP_SIZE", unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE, 0, 10), unix.EOPNOTSUPP)
	fmapCheck(t, "fallocate on an O_RDONLY file", unix.Fallocate(ro, 0, 0, 10), unix.EBADF)
	fmapCheck(t, "fallocate on descriptor -1", unix.Fallocate(-1, 0, 0, 10), unix.EBADF)
}

func testShareMmap(t *T) {
	dir := os.Getenv(envShareDir)
	if dir == "" {
		t.Skipf("no share: boot with yolk run -share (the qemu package's TestGuest gives one on every machine with virtio)")
	}
	dir = filepath.Join(dir, "fmap")
	os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("mkdir: %v", err)
	}
	defer os.RemoveAll(dir)
	fmapErrnos(t, dir)
	fallocateChecks(t, dir)
	name := filepath.Join(dir, "f")
	size := 2*pageSize + 100
	want := fmapPattern(size, 3)
	if err := os.WriteFile(name, want, 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	// hostBytes reads the file through a descriptor of its own: on a
	// share, from the host's file.
	hostBytes := func() []byte {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("ReadFile: %v", err)
		}
		return b
	}
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	sh, err := unix.Mmap(fd, 0, 4*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap shared: %v", err)
	}
	pr, err := unix.Mmap(fd, pageSize, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap private: %v", err)
	}
	ro, err := unix.Mmap(fd, 0, 3*pageSize, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap read-only: %v", err)
	}
	if !bytes.Equal(sh[:size], want) || !bytes.Equal(pr, want[pageSize:2*pageSize]) || !bytes.Equal(ro[:size], want) {
		t.Errorf("the mappings do not hold the file's bytes")
	}
	if !bytes.Equal(sh[size:3*pageSize], make([]byte, 3*pageSize-size)) {
		t.Errorf("the last page past the end is not zero")
	}
	copy(pr, "private")
	copy(sh[10:], "shared write")
	copy(want[10:], "shared write")
	sh[size+5] = 'X' // past the end: never in the file
	if err := unix.Msync(sh[:pageSize], unix.MS_SYNC); err != nil {
		t.Fatalf("msync: %v", err)
	}
	if got := hostBytes(); !bytes.Equal(got, want) {
		t.Errorf("after msync the host's file is not the mapping's (%d bytes, want %d)", len(got), len(want))
	}
	copy(sh[pageSize+1:], "second write")
	copy(want[pageSize+1:], "second write")
	unix.Munmap(pr)
	unix.Munmap(ro)
	unix.Close(fd) // the mapping keeps the file open
	if err := unix.Munmap(sh); err != nil {
		t.Fatalf("munmap: %v", err)
	}
	if got := hostBytes(); !bytes.Equal(got, want) {
		t.Errorf("after munmap the host's file is not the mapping's (%d bytes, want %d)", len(got), len(want))
	}
}

// testMapFixedNoReplace: MAP_FIXED_NOREPLACE maps exactly at its address
// when the range is free and is EEXIST when any of it is mapped — for a
// file too (before, it was a hint: the mapping went elsewhere, and the
// soak's fuzzer, expecting EEXIST, never unmapped it, so the file's pages
// stayed alive round after round).
func testMapFixedNoReplace(t *T) {
	const pg = 4096
	p, err := unix.Mmap(-1, 0, 4*pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	base := uintptr(unsafe.Pointer(&p[0]))
	unix.Munmap(p[2*pg:]) // pages 2 and 3 free, 0 and 1 mapped
	defer unix.Munmap(p[:2*pg])
	const noReplace = unix.MAP_PRIVATE | unix.MAP_ANON | unix.MAP_FIXED_NOREPLACE
	if a, _, e := unix.Syscall6(unix.SYS_MMAP, base+pg, 2*pg, unix.PROT_READ, noReplace, ^uintptr(0), 0); e != unix.EEXIST {
		t.Errorf("MAP_FIXED_NOREPLACE over a mapped page: %#x, %v; want EEXIST", a, e)
		if e == 0 {
			unix.Syscall(unix.SYS_MUNMAP, a, 2*pg, 0)
		}
	}
	// With MAP_FIXED too, MAP_FIXED_NOREPLACE still does not replace.
	if a, _, e := unix.Syscall6(unix.SYS_MMAP, base, pg, unix.PROT_READ, noReplace|unix.MAP_FIXED, ^uintptr(0), 0); e != unix.EEXIST {
		t.Errorf("MAP_FIXED|MAP_FIXED_NOREPLACE over a mapped page: %#x, %v; want EEXIST", a, e)
	}
	fd, err := unix.Open("/tmp/noreplace", unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC, 0o600)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(fd)
	defer unix.Unlink("/tmp/noreplace")
	unix.Ftruncate(fd, 2*pg)
	if a, _, e := unix.Syscall6(unix.SYS_MMAP, base, 2*pg, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED_NOREPLACE, uintptr(fd), 0); e != unix.EEXIST {
		t.Errorf("file MAP_FIXED_NOREPLACE over mapped pages: %#x, %v; want EEXIST", a, e)
		if e == 0 {
			unix.Syscall(unix.SYS_MUNMAP, a, 2*pg, 0)
		}
	}
	a, _, e := unix.Syscall6(unix.SYS_MMAP, base+2*pg, 2*pg, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED_NOREPLACE, uintptr(fd), 0)
	if e == unix.EEXIST {
		// The runtime may have mapped the freed range meanwhile: EEXIST
		// is then right. msync says whether anything is there.
		if _, _, me := unix.Syscall(unix.SYS_MSYNC, base+2*pg, 2*pg, unix.MS_ASYNC); me == unix.ENOMEM {
			t.Errorf("file MAP_FIXED_NOREPLACE on a free range at %#x: EEXIST", base+2*pg)
		}
	} else if e != 0 || a != base+2*pg {
		t.Errorf("file MAP_FIXED_NOREPLACE on a free range at %#x: %#x, %v", base+2*pg, a, e)
	}
	if e == 0 {
		unix.Syscall(unix.SYS_MUNMAP, a, 2*pg, 0)
	}
}

// testShareMmapWriteBack: what a share writes back is what the program
// wrote through a mapping, never a mapping it could not write. The
// database pattern (a PROT_READ, MAP_SHARED mapping, pwrite, fdatasync,
// munmap to map again larger) keeps its pwrites; msync of a read-only
// mapping of a file open read-only is 0, as on Linux; a write made before
// mprotect took PROT_WRITE away, or before MAP_FIXED replaced the
// mapping, still reaches the file.
func testShareMmapWriteBack(t *T) {
	dir := os.Getenv(envShareDir)
	if dir == "" {
		t.Skipf("no share: boot with yolk run -share (the qemu package's TestGuest gives one on every machine with virtio)")
	}
	dir = filepath.Join(dir, "fmapwb")
	os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("mkdir: %v", err)
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "db")
	want := fmapPattern(2*pageSize, 5)
	if err := os.WriteFile(name, want, 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	check := func(what string) {
		if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: the host's file is not what was written (%d bytes, %v)", what, len(got), err)
		}
	}
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(fd)
	m, err := unix.Mmap(fd, 0, 2*pageSize, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	copy(want[pageSize:], "pwrite after mmap")
	if _, err := unix.Pwrite(fd, want[pageSize:2*pageSize], pageSize); err != nil {
		t.Fatalf("pwrite: %v", err)
	}
	if err := unix.Fdatasync(fd); err != nil {
		t.Fatalf("fdatasync: %v", err)
	}
	check("fdatasync with a read-only mapping")
	if err := unix.Munmap(m); err != nil {
		t.Fatalf("munmap: %v", err)
	}
	check("munmap of a read-only mapping")

	ro, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open read-only: %v", err)
	}
	m, err = unix.Mmap(ro, 0, pageSize, unix.PROT_READ, unix.MAP_SHARED)
	unix.Close(ro)
	if err != nil {
		t.Fatalf("mmap read-only: %v", err)
	}
	fmapCheck(t, "msync of a mapping of a file open read-only", unix.Msync(m, unix.MS_SYNC), 0)
	unix.Munmap(m)

	m, err = unix.Mmap(fd, 0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap read-write: %v", err)
	}
	copy(m[8:], "written, then read-only")
	copy(want[8:], "written, then read-only")
	copy(m[pageSize+8:], "written, then replaced")
	copy(want[pageSize+8:], "written, then replaced")
	if err := unix.Mprotect(m[:pageSize], unix.PROT_READ); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	a := uintptr(unsafe.Pointer(&m[pageSize]))
	if r, _, e := unix.Syscall6(unix.SYS_MMAP, a, pageSize, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_FIXED, ^uintptr(0), 0); e != 0 || r != a {
		t.Fatalf("MAP_FIXED over the mapping: %#x, %v", r, e)
	}
	if err := unix.Munmap(m); err != nil {
		t.Fatalf("munmap: %v", err)
	}
	check("munmap of a mapping written before mprotect and MAP_FIXED")
}

// testFileMmapTruncate: a truncation takes the pages past the new end
// from the file's mappings, shared and private, as Linux does: touching
// them raises SIGBUS (TestFileMmapSigbus), nothing written through a
// mapping after the truncation reaches the file, and the file grown
// again reads zeroes there, through read and through the mappings.
func testFileMmapTruncate(t *T) {
	dir, err := os.MkdirTemp("", "fmaptrunc")
	if err != nil {
		t.Fatalf("MkdirTemp: %v", err)
	}
	defer os.RemoveAll(dir)
	fd, err := unix.Open(filepath.Join(dir, "f"), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(fd)
	if _, err := unix.Pwrite(fd, fmapPattern(3*pageSize, 9), 0); err != nil {
		t.Fatalf("pwrite: %v", err)
	}
	sh, err := unix.Mmap(fd, 0, 3*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap shared: %v", err)
	}
	defer unix.Munmap(sh)
	pr, err := unix.Mmap(fd, 0, 3*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap private: %v", err)
	}
	defer unix.Munmap(pr)
	for i := 0; i < 3*pageSize; i += pageSize {
		sh[i+1], pr[i+1] = 'S', 'P' // every page backed
	}
	if err := unix.Ftruncate(fd, pageSize+10); err != nil {
		t.Fatalf("ftruncate: %v", err)
	}
	if !readFaults(&sh[2*pageSize]) {
		t.Errorf("the shared mapping's page past the new end did not fault")
	}
	if !readFaults(&pr[2*pageSize]) {
		t.Errorf("the private mapping's page past the new end did not fault")
	}
	if f, _ := writeFaults(&sh[2*pageSize+7]); !f {
		t.Errorf("a write to the shared mapping's page past the new end did not fault")
	}
	if sh[pageSize+10] != 0 || sh[pageSize+1] != 'S' || pr[pageSize+1] != 'P' {
		t.Errorf("the last page: %q %q %q, want 0 S P", sh[pageSize+10], sh[pageSize+1], pr[pageSize+1])
	}
	if err := unix.Ftruncate(fd, 3*pageSize); err != nil {
		t.Fatalf("ftruncate: %v", err)
	}
	got := make([]byte, pageSize)
	if n, err := unix.Pread(fd, got, 2*pageSize); err != nil || n != pageSize || !bytes.Equal(got, make([]byte, pageSize)) {
		t.Errorf("the page cut off and grown again does not read as zeroes (%d, %v)", n, err)
	}
	if sh[2*pageSize+7] != 0 || sh[2*pageSize+1] != 0 || pr[2*pageSize+1] != 0 {
		t.Errorf("the mappings' page cut off and grown again is not zero: %q %q %q", sh[2*pageSize+7], sh[2*pageSize+1], pr[2*pageSize+1])
	}
}
