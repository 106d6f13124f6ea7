package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Which pages of a shared file mapping reach the file (docs/share.md): on
// a share, whose mappings are written back, only the pages the program
// stored to — a page only read keeps what the host, a write(2) or a
// pwrite(2) put in the file meanwhile — and never past an end another
// thread's truncation set while the write-back waited for the host. On
// Linux and on the in-memory file system a shared mapping is the file's
// pages, so the same program passes there by construction: it is the
// reference.

func init() {
	tests = append(tests,
		test{"TestFileMmapDirty", testFileMmapDirty},
		test{"TestShareMmapDirty", testShareMmapDirty},
		test{"TestShareMmapDirtySMP", testShareMmapDirtySMP},
		test{"TestShareMmapTruncateRace", testShareMmapTruncateRace},
	)
}

// shareTestDir is a fresh directory sub on the share (removed after the
// test), or a skip without a share.
func shareTestDir(t *T, sub string) string {
	dir := os.Getenv(envShareDir)
	if dir == "" {
		t.Skipf("no share: boot with yolk run -share (the qemu package's TestGuest gives one on every machine with virtio)")
	}
	dir = filepath.Join(dir, sub)
	os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("mkdir: %v", err)
	}
	return dir
}

func testFileMmapDirty(t *T) {
	dir, err := os.MkdirTemp("", "fmapdirty")
	if err != nil {
		t.Fatalf("MkdirTemp: %v", err)
	}
	defer os.RemoveAll(dir)
	mmapDirty(t, dir)
}

func testShareMmapDirty(t *T) {
	dir := shareTestDir(t, "fmapdirty")
	defer os.RemoveAll(dir)
	mmapDirty(t, dir)
}

// mmapDirty: a file of five pages mapped MAP_SHARED read-write. The
// program reads page 0, writes page 1, leaves page 2 alone, writes page 3
// through read(2) (the kernel's store) and reads page 4; a pwrite
// through a second descriptor then changes pages 0, 2 and 4. After msync
// the file has the pwrite's bytes in 0, 2 and 4 and the program's in 1
// and 3. Then, with the mapping written back: a pwrite to page 1 (clean
// now) survives munmap; page 4 made read-only and writable again
// (mprotect) and written goes back, page 0 likewise but only read does
// not.
func mmapDirty(t *T, dir string) {
	name := filepath.Join(dir, "f")
	want := fmapPattern(5*pageSize, 3)
	if err := os.WriteFile(name, want, 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	src := filepath.Join(dir, "src")
	srcBytes := bytes.Repeat([]byte("read(2) into the mapping "), 8)
	if err := os.WriteFile(src, srcBytes, 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(fd)
	other, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open a second descriptor: %v", err)
	}
	defer unix.Close(other)
	m, err := unix.Mmap(fd, 0, 5*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	if m[100] != want[100] || m[4*pageSize+7] != want[4*pageSize+7] {
		t.Errorf("the mapping does not read the file")
	}
	copy(m[pageSize+16:], "the program's store")
	copy(want[pageSize+16:], "the program's store")
	sf, err := os.Open(src)
	if err != nil {
		t.Fatalf("open src: %v", err)
	}
	if n, err := sf.Read(m[3*pageSize+32 : 3*pageSize+32+len(srcBytes)]); n != len(srcBytes) || err != nil {
		t.Fatalf("read(2) into the mapping: %d, %v", n, err)
	}
	sf.Close()
	copy(want[3*pageSize+32:], srcBytes)
	for _, p := range []int{0, 2, 4} {
		b := []byte("pwrite meanwhile, page " + string(rune('0'+p)))
		if _, err := unix.Pwrite(other, b, int64(p*pageSize+200)); err != nil {
			t.Fatalf("pwrite: %v", err)
		}
		copy(want[p*pageSize+200:], b)
	}
	check := func(what string) {
		got, err := os.ReadFile(name)
		if err != nil || len(got) != len(want) {
			t.Errorf("%s: the file is %d bytes, %v; want %d", what, len(got), err, len(want))
			return
		}
		for p := 0; p < 5; p++ {
			g, w := got[p*pageSize:(p+1)*pageSize], want[p*pageSize:(p+1)*pageSize]
			if i := firstDiff(g, w); i >= 0 {
				t.Errorf("%s: page %d differs at byte %d: %q, want %q", what, p, i, g[i:min(i+24, len(g))], w[i:min(i+24, len(w))])
			}
		}
	}
	fmapCheck(t, "msync", unix.Msync(m, unix.MS_SYNC), 0)
	check("after msync")

	b := []byte("pwrite after the write-back")
	if _, err := unix.Pwrite(other, b, pageSize+600); err != nil {
		t.Fatalf("pwrite: %v", err)
	}
	copy(want[pageSize+600:], b)
	fmapCheck(t, "mprotect read-only", unix.Mprotect(m, unix.PROT_READ), 0)
	fmapCheck(t, "mprotect read-write", unix.Mprotect(m, unix.PROT_READ|unix.PROT_WRITE), 0)
	_ = m[40] // page 0: read only
	m[4*pageSize+3000] = 'W'
	want[4*pageSize+3000] = 'W'
	// Page 4, written, goes back whole: the mapping's copy of it (on a
	// share without the pwrite made after mmap, which a share's mapping
	// does not see; on Linux the file's own page).
	copy(want[4*pageSize:5*pageSize], m[4*pageSize:5*pageSize])
	if err := unix.Munmap(m); err != nil {
		t.Fatalf("munmap: %v", err)
	}
	check("after munmap")
}

// firstDiff is the first index where a and b (as long) differ, or -1.
func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// testShareMmapDirtySMP: a thread stores a counter into a page of a
// shared mapping while another writes the mapping back again and again
// (msync); after the writer's last store and one more msync the file has
// the last value. Each write-back cleans the page: without the TLB
// shootdown after the clean, the writer's CPU keeps a cached translation
// whose dirty bit is set (amd64) and its later stores mark nothing, so
// the last value never goes back.
func testShareMmapDirtySMP(t *T) {
	dir := shareTestDir(t, "fmapsmp")
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, make([]byte, 2*pageSize), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(fd)
	m, err := unix.Mmap(fd, 0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer unix.Munmap(m)
	// Each store comes after a write-back that cleaned the page and
	// through the translation the store before it used.
	const stores = 50
	var syncs, done atomic.Int32
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := uint64(1); i <= stores; i++ {
			binary.LittleEndian.PutUint64(m[pageSize+64:], i)
			for n, spins := syncs.Load(), 0; syncs.Load() < n+2; spins++ {
				if spins%1024 == 1023 {
					runtime.Gosched() // one CPU: let the write-backs run
				}
			}
		}
		done.Store(1)
	}()
	for done.Load() == 0 {
		if err := unix.Msync(m, unix.MS_SYNC); err != nil {
			t.Fatalf("msync: %v", err)
		}
		syncs.Add(1)
	}
	fmapCheck(t, "the last msync", unix.Msync(m, unix.MS_SYNC), 0)
	got := make([]byte, 8)
	if n, err := unix.Pread(fd, got, pageSize+64); n != 8 || err != nil {
		t.Fatalf("pread: %d, %v", n, err)
	}
	if v := binary.LittleEndian.Uint64(got); v != stores {
		t.Errorf("after %d write-backs the file has the counter at %d, want the last store %d", syncs.Load(), v, stores)
	}
}

// testShareMmapTruncateRace: a 1 MiB shared mapping, every page written,
// written back by msync while another thread truncates the file to 0
// through a second descriptor, at points spread over the write-back's
// length. Linux ends with an empty file whichever comes first (the
// write-back never writes past the end); yolk's write-back read the size
// once before its writes and grew the file again with the rest of them.
func testShareMmapTruncateRace(t *T) {
	dir := shareTestDir(t, "fmaptrunc")
	defer os.RemoveAll(dir)
	const size = 1 << 20
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, make([]byte, size), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(fd)
	other, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open a second descriptor: %v", err)
	}
	defer unix.Close(other)
	m, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer unix.Munmap(m)
	dirty := func(round byte) {
		for p := 0; p < size; p += pageSize {
			m[p] = round | 1
		}
	}
	dirty(0)
	t0 := time.Now()
	fmapCheck(t, "msync", unix.Msync(m, unix.MS_SYNC), 0)
	full := time.Since(t0)
	const rounds = 4
	for r := 1; r <= rounds; r++ {
		if err := unix.Ftruncate(other, size); err != nil {
			t.Fatalf("ftruncate back to 1 MiB: %v", err)
		}
		dirty(byte(r))
		delay := full * time.Duration(r) / (rounds + 1)
		cut := make(chan error)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			time.Sleep(delay)
			cut <- unix.Ftruncate(other, 0)
		}()
		fmapCheck(t, "msync racing a truncation", unix.Msync(m, unix.MS_SYNC), 0)
		if err := <-cut; err != nil {
			t.Fatalf("ftruncate to 0: %v", err)
		}
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatalf("stat: %v", err)
		}
		if fi.Size() != 0 {
			t.Errorf("round %d (truncation %v into a %v write-back): the file is %d bytes after the truncation to 0, want 0", r, delay, full, fi.Size())
		}
	}
}
