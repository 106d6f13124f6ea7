package ext4_test

import (
	"os"
	"testing"

	"yolk/kernel/abi"
	"yolk/kernel/ext4"
	"yolk/kernel/internal/envtest"
)

// disk is the test's block device: an image file, and whether it fails
// reads past a limit (never, unless set).
type disk struct {
	f       *os.File
	mem     []byte // the image in memory, if f is nil
	size    int64
	reads   int
	writes  int
	oob     int // reads or writes past the image's end
	flushes int
	open    map[uint32]bool // the inodes "the kernel" has open (InUse)
	// cut > 0: the power goes after the cut-th write; later writes are
	// dropped (they return as if done).
	cut int
	// fail: every write is EIO (a device that failed) until cleared.
	fail bool
}

// env is an ext4.Env over an image file and an arena of pages.
type env struct {
	envtest.Arena
	d envtest.Handle[disk]
}

func (e env) ReadAt(b []byte, off uint64) abi.Errno  { return e.io(b, off, false) }
func (e env) WriteAt(b []byte, off uint64) abi.Errno { return e.io(b, off, true) }

// io moves b to or from the disk at off, counting the accesses and those
// past the image's end.
func (e env) io(b []byte, off uint64, write bool) abi.Errno {
	if len(b)%512 != 0 || off%512 != 0 {
		panic("unaligned access")
	}
	d := e.d.Get()
	if write && d.fail {
		return abi.Errno(5)
	}
	if write {
		d.writes++
		if d.cut > 0 && d.writes > d.cut {
			return 0
		}
	} else {
		d.reads++
	}
	if int64(off)+int64(len(b)) > d.size {
		d.oob++
		return abi.Errno(5)
	}
	var err error
	switch {
	case d.f == nil && write:
		copy(d.mem[off:], b)
	case d.f == nil:
		copy(b, d.mem[off:])
	case write:
		_, err = d.f.WriteAt(b, int64(off))
	default:
		_, err = d.f.ReadAt(b, int64(off))
	}
	if err != nil {
		return abi.Errno(5)
	}
	return 0
}

func (e env) Now() int64 { return 1_780_000_000_123_456_789 }

func (e env) InUse(ino uint32) bool { return e.d.Get().open[ino] }

// Flush counts; the image is read back through the host's page cache,
// so it needs no fsync (which would make the tests slow).
func (e env) Flush() abi.Errno {
	e.d.Get().flushes++
	return 0
}

// mount mounts image path (read-only if ro) on a new FS.
func mount(t testing.TB, path string, ro bool) (*ext4.FS[env], env, ext4.Refusal, abi.Errno) {
	t.Helper()
	flag := os.O_RDWR
	if ro {
		flag = os.O_RDONLY
	}
	fd, err := os.OpenFile(path, flag, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fd.Close() })
	st, err := fd.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return mountDisk(t, &disk{f: fd, size: st.Size()}, ro)
}

// mountDisk mounts d on a new FS.
func mountDisk(t testing.TB, d *disk, ro bool) (*ext4.FS[env], env, ext4.Refusal, abi.Errno) {
	opts := 0
	if ro {
		opts = ext4.MountRO
	}
	return mountOpts(t, d, opts)
}

// mountOpts mounts d on a new FS with Mount's options.
func mountOpts(t testing.TB, d *disk, opts int) (*ext4.FS[env], env, ext4.Refusal, abi.Errno) {
	e := env{envtest.New(t, ext4.Pages+16), envtest.NewHandle(t, d)}
	fs := new(ext4.FS[env])
	r, errno := fs.Mount(e, opts)
	return fs, e, r, errno
}

// mountRW mounts the image in memory img read-write (its writes change
// img), failing the test unless it mounts so.
func mountRW(t testing.TB, img []byte) (*ext4.FS[env], *disk, ext4.Refusal) {
	t.Helper()
	d := &disk{mem: img, size: int64(len(img))}
	fs, _, r, e := mountDisk(t, d, false)
	if e != 0 || fs.ReadOnly() {
		t.Fatalf("mount: %v %+v", e, r)
	}
	return fs, d, r
}
