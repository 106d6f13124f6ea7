package main

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The block-device files (kernel/blk, docs/disks.md) on the disks the
// command line says are attached (YOLK_DISKS=vda,vdb:ro,vdc:eio: the qemu
// package's TestGuest gives every machine booted from its ELF a 16 MiB
// scratch disk, vda, a read-only one, vdb, and one whose reads of sector
// 8 fail, vdc): size by BLKGETSIZE64 and
// SEEK_END, a pattern written at aligned and unaligned offsets and read
// back, fsync, reads and writes at and past the end, goroutines writing
// distinct regions at once, a read-only disk's refusal, a failing disk's
// EIO. A disk the command line names but /dev lacks fails the test.

func init() {
	tests = append(tests, test{"TestBlockDevice", testBlockDevice})
}

// cmdlineDisks are the disks the harness attached, from its YOLK_DISKS
// (NAME[:ro],…: the program's environment, on the kernel's command line
// beside the yolk.disk options, which the program cannot read).
func cmdlineDisks() (names []string, opt map[string]string) {
	opt = map[string]string{}
	for _, d := range strings.Split(os.Getenv("YOLK_DISKS"), ",") {
		if d == "" {
			continue
		}
		name, o, _ := strings.Cut(d, ":")
		names = append(names, name)
		opt[name] = o
	}
	return names, opt
}

func blkIoctl(fd int, req uint) (uint64, error) {
	var v uint64
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&v)))
	if e != 0 {
		return 0, e
	}
	return v, nil
}

func testBlockDevice(t *T) {
	names, opt := cmdlineDisks()
	if len(names) == 0 {
		t.Skipf("YOLK_DISKS not set: no disk attached (the qemu package's TestGuest attaches them)")
	}
	for _, n := range names {
		switch {
		case opt[n] == "ro":
			blockReadOnly(t, "/dev/"+n)
		case opt[n] == "eio":
			blockFailing(t, "/dev/"+n)
		default:
			blockReadWrite(t, "/dev/"+n)
		}
	}
}

func blockReadWrite(t *T, path string) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatalf("stat %s: %v (the command line says the disk is attached)", path, err)
	}
	major, minorOK := uint32(254), unix.Minor(st.Rdev)%16 == 0 // virtio_blk's: 16 minors a disk
	if strings.HasPrefix(path, "/dev/nvme") {
		major, minorOK = 259, true // NVMe: blkext's, minors in the order found
	}
	if st.Mode != unix.S_IFBLK|0o660 || unix.Major(st.Rdev) != major || !minorOK || st.Gid != 6 {
		t.Errorf("stat %s: mode %o rdev %d:%d gid %d; want S_IFBLK 0660, %d:n, gid 6 (disk)", path, st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev), st.Gid, major)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	fd := int(f.Fd())
	size, err := blkIoctl(fd, unix.BLKGETSIZE64)
	if err != nil || size == 0 || size%512 != 0 {
		t.Fatalf("BLKGETSIZE64 = %d, %v", size, err)
	}
	if end, err := f.Seek(0, 2); err != nil || uint64(end) != size {
		t.Errorf("SEEK_END = %d, %v; want %d", end, err, size)
	}
	if _, err := f.Seek(int64(size)+1, 0); !errors.Is(err, unix.EINVAL) {
		t.Errorf("seek past the end: %v, want EINVAL", err)
	}
	if ss, err := blkIoctl(fd, unix.BLKSSZGET); err != nil || uint32(ss) != 512 {
		t.Errorf("BLKSSZGET = %d, %v", uint32(ss), err)
	}
	if ps, err := blkIoctl(fd, unix.BLKPBSZGET); err != nil || uint32(ps) < 512 {
		t.Errorf("BLKPBSZGET = %d, %v", uint32(ps), err)
	}
	if r, err := blkIoctl(fd, unix.BLKROGET); err != nil || uint32(r) != 0 {
		t.Errorf("BLKROGET = %d, %v; want 0", uint32(r), err)
	}
	if _, err := blkIoctl(fd, unix.BLKFLSBUF); err != nil {
		t.Errorf("BLKFLSBUF: %v", err)
	}
	var st2 unix.Stat_t
	if unix.Fstat(fd, &st2) != nil || st2.Rdev != st.Rdev {
		t.Errorf("fstat: rdev %#x, want %#x", st2.Rdev, st.Rdev)
	}

	rnd := rand.New(rand.NewSource(1))
	for _, c := range []struct{ off, n int64 }{{0, 4096}, {4096, 65536}, {8192 + 100, 1000}, {20000, 7}, {1 << 20, 300 << 10}, {int64(size) - 4096, 4096}, {int64(size) - 700, 700}} {
		w := make([]byte, c.n)
		rnd.Read(w)
		if n, err := f.WriteAt(w, c.off); err != nil || n != len(w) {
			t.Fatalf("pwrite %d at %d: %d, %v", c.n, c.off, n, err)
		}
		r := make([]byte, c.n)
		if n, err := f.ReadAt(r, c.off); err != nil || n != len(r) || !bytes.Equal(r, w) {
			t.Fatalf("pread %d at %d: %d, %v, equal %v", c.n, c.off, n, err, bytes.Equal(r, w))
		}
	}
	// An unaligned write leaves its neighbours alone.
	base := make([]byte, 1536)
	rnd.Read(base)
	f.WriteAt(base, 3<<20)
	f.WriteAt([]byte("hello"), 3<<20+510)
	copy(base[510:], "hello")
	got := make([]byte, len(base))
	if _, err := f.ReadAt(got, 3<<20); err != nil || !bytes.Equal(got, base) {
		t.Errorf("read-modify-write across a sector boundary: %v, equal %v", err, bytes.Equal(got, base))
	}
	// read/write at the offset, readv.
	f.Seek(3<<20, 0)
	a, b := make([]byte, 100), make([]byte, 900)
	if n, err := unix.Readv(fd, [][]byte{a, b}); err != nil || n != 1000 || !bytes.Equal(append(a, b...), base[:1000]) {
		t.Errorf("readv: %d, %v", n, err)
	}
	if off, _ := f.Seek(0, 1); off != 3<<20+1000 {
		t.Errorf("offset after readv %d", off)
	}
	if err := f.Sync(); err != nil {
		t.Errorf("fsync: %v", err)
	}
	if err := unix.Fdatasync(fd); err != nil {
		t.Errorf("fdatasync: %v", err)
	}
	// The end: reads give 0 bytes, writes ENOSPC; both are cut there.
	buf := make([]byte, 1024)
	if n, err := unix.Pread(fd, buf, int64(size)); n != 0 || err != nil {
		t.Errorf("pread at the end: %d, %v; want 0", n, err)
	}
	if n, err := unix.Pread(fd, buf, int64(size)+4096); n != 0 || err != nil {
		t.Errorf("pread past the end: %d, %v; want 0", n, err)
	}
	if n, err := unix.Pread(fd, buf, int64(size)-512); n != 512 || err != nil {
		t.Errorf("pread across the end: %d, %v; want 512", n, err)
	}
	if n, err := unix.Pwrite(fd, buf, int64(size)); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("pwrite at the end: %d, %v; want ENOSPC", n, err)
	}
	if n, err := unix.Pwrite(fd, buf, int64(size)-100); n != 100 || err != nil {
		t.Errorf("pwrite across the end: %d, %v; want 100", n, err)
	}

	// Goroutines writing distinct regions at once, then each verifying.
	const workers, region = 8, 256 << 10
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(100 + g)))
			off := int64(4<<20 + g*region)
			w := make([]byte, region)
			r.Read(w)
			for o := 0; o < region; o += 16 << 10 {
				if _, err := f.WriteAt(w[o:o+16<<10], off+int64(o)); err != nil {
					errs[g] = err
					return
				}
			}
			got := make([]byte, region)
			if _, err := f.ReadAt(got, off); err != nil {
				errs[g] = err
			} else if !bytes.Equal(got, w) {
				errs[g] = errors.New("read back differs")
			}
		}(g)
	}
	wg.Wait()
	for g, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", g, err)
		}
	}
	if 4<<20+workers*region > int64(size) {
		t.Errorf("disk of %d bytes too small for the concurrent regions", size)
	}
}

// blockReadOnly: a read-only disk opens for writing, as Linux's
// virtio_blk (no open hook refuses it), but every write is EPERM
// (blkdev_write_iter); BLKROGET says 1; reads work.
func blockReadOnly(t *T, path string) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open %s O_RDWR: %v (Linux opens a read-only virtio disk)", path, err)
	}
	defer f.Close()
	if r, err := blkIoctl(int(f.Fd()), unix.BLKROGET); err != nil || uint32(r) != 1 {
		t.Errorf("BLKROGET = %d, %v; want 1", uint32(r), err)
	}
	if _, err := f.WriteAt(make([]byte, 512), 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("write to a read-only disk: %v, want EPERM", err)
	}
	if _, err := f.ReadAt(make([]byte, 512), 0); err != nil {
		t.Errorf("read from a read-only disk: %v", err)
	}
}

// blockFailing: a disk whose reads of sector 8 fail (the harness's
// blkdebug rule): EIO for a read that covers it, through the whole and
// the unaligned path; the program and the disk go on (reads and writes
// elsewhere work); never a hang or a fault.
func blockFailing(t *T, path string) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	for _, c := range []struct{ off, n int64 }{{4096, 512}, {0, 8192}, {4096 + 100, 10}} {
		if _, err := f.ReadAt(make([]byte, c.n), c.off); !errors.Is(err, unix.EIO) {
			t.Errorf("read %d at %d of the failing sector: %v, want EIO", c.n, c.off, err)
		}
	}
	if _, err := f.ReadAt(make([]byte, 4096), 0); err != nil {
		t.Errorf("read beside the failing sector: %v", err)
	}
	if _, err := f.WriteAt(make([]byte, 512), 0); err != nil {
		t.Errorf("write beside the failing sector: %v", err)
	}
}
