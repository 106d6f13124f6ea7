package blk

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtio"
	"yolk/drivers/virtioblk"
	"yolk/drivers/virtioblk/blkmodel"
	"yolk/kernel/abi"
)

// The block layer on package blkmodel's devices, before Started (its
// waits poll the driver, as at boot): the table and its names, ReadAt,
// WriteAt and Flush by index, and the device files' transfers, seeks
// and errors, against Linux's answers (docs/disks.md).

type tenv struct{ i int }

var (
	tdevs  Devs[tenv]
	tlocks [MaxDevs]sync.Mutex
	tnodes []string
	tmodel *blkmodel.Device // the device being attached: its pages
)

func (e tenv) Lock()                                  { tlocks[e.i].Lock() }
func (e tenv) Unlock()                                { tlocks[e.i].Unlock() }
func (e tenv) Wait(a *uint32, v uint32, d int64) bool { return tdevs.Wait(e.i, a, v, d) }
func (tenv) Wake(a *uint32)                           { tdevs.Wake(a) }
func (tenv) Now() int64                               { return time.Now().UnixNano() }
func (tenv) Note(s string)                            { tlogf("\nyolk: %s", s) }
func (tenv) Log(s string)                             { tlogf("%s", s) }
func (tenv) LogDec(v int64)                           { tlogf("%d", v) }
func (tenv) Dev(i int) tenv                           { return tenv{i} }
func (tenv) Page() (uintptr, uint64)                  { return tmodel.Page() }
func (tenv) Node(name []byte, rdev uint64) {
	tnodes = append(tnodes, fmt.Sprintf("%s:%d:%d", name, unix.Major(rdev), unix.Minor(rdev)))
}
func (tenv) Copy(dst, src uintptr, n int) bool {
	copy(unsafe.Slice((*byte)(ptr(dst)), n), unsafe.Slice((*byte)(ptr(src)), n))
	return true
}

var (
	tlogMu sync.Mutex
	tlog   strings.Builder // what the table wrote on the console
)

func tlogf(format string, a ...any) {
	tlogMu.Lock()
	defer tlogMu.Unlock()
	fmt.Fprintf(&tlog, format, a...)
}

func ptr(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

func itoa(v uint32) string {
	return string(rune('0'+v/100%10)) + string(rune('0'+v/10%10)) + string(rune('0'+v%10))
}

// attach gives the table a model disk of sectors sectors.
func attach(t *testing.T, sectors uint64, features uint32) *blkmodel.Device {
	m := blkmodel.New(sectors, features, nil)
	m.Errorf = t.Errorf
	dev, e := virtio.OpenMMIO(m.Base())
	if e != virtio.OK {
		t.Fatal(e)
	}
	tmodel = m
	irq := uint32(40 + tdevs.Count())
	if ok, e := tdevs.Attach(dev, "mmio", 0, irq); !ok || e != virtio.OK {
		t.Fatalf("Attach: %v %v", ok, e)
	}
	m.Serve(func() { tdevs.Interrupt(irq) })
	t.Cleanup(m.Stop)
	return m
}

func addr(b []byte) uintptr {
	heapMu.Lock()                  // tests call it from many goroutines
	heapOnly = append(heapOnly, b) // b's array escapes: on the heap
	heapMu.Unlock()
	return uintptr(unsafe.Pointer(&b[0]))
}

func fill(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func TestBlockLayer(t *testing.T) {
	tdevs, tnodes = Devs[tenv]{}, nil             // a fresh table for each run (-count)
	a := attach(t, 2048, virtioblk.FFlush)        // vda, 1 MiB
	attach(t, 64, virtioblk.FRO|virtioblk.FFlush) // vdb, 32 KiB, read-only
	if tdevs.Count() != 2 || string(tdevs.Name(0)) != "vda" || string(tdevs.Name(1)) != "vdb" {
		t.Fatalf("devices %d: %q %q", tdevs.Count(), tdevs.Name(0), tdevs.Name(1))
	}
	if strings.Join(tnodes, " ") != "vda:254:0 vdb:254:16" {
		t.Errorf("nodes %q", tnodes)
	}
	if tdevs.Size(0) != 1<<20 || tdevs.ReadOnly(0) || !tdevs.ReadOnly(1) || tdevs.BlockSize(0) != 512 {
		t.Errorf("size %d ro %v %v block %d", tdevs.Size(0), tdevs.ReadOnly(0), tdevs.ReadOnly(1), tdevs.BlockSize(0))
	}
	if !tdevs.IsIRQ(41) || tdevs.IsIRQ(7) || tdevs.ByRdev(unix.Mkdev(254, 16)) != 1 || tdevs.ByRdev(unix.Mkdev(254, 32)) != -1 {
		t.Error("IsIRQ or ByRdev")
	}

	// By index, as the file systems call it.
	w := fill(8192, 1)
	if e := tdevs.WriteAt(0, w, 4096); e != 0 {
		t.Fatalf("WriteAt: %d", e)
	}
	if !bytes.Equal(a.Disk[4096:4096+8192], w) {
		t.Fatal("the disk does not hold what WriteAt wrote")
	}
	r := make([]byte, 8192)
	if e := tdevs.ReadAt(0, r, 4096); e != 0 || !bytes.Equal(r, w) {
		t.Fatalf("ReadAt: %d", e)
	}
	if e := tdevs.Flush(0); e != 0 {
		t.Errorf("Flush: %d", e)
	}
	for _, c := range []struct {
		i    int
		n    int
		off  uint64
		want abi.Errno
	}{{0, 100, 0, abi.EINVAL}, {0, 512, 100, abi.EINVAL}, {0, 1024, 1<<20 - 512, abi.Errno(unix.EIO)}, {2, 512, 0, abi.Errno(unix.ENXIO)}, {-1, 512, 0, abi.Errno(unix.ENXIO)}} {
		if e := tdevs.ReadAt(c.i, make([]byte, c.n), c.off); e != c.want {
			t.Errorf("ReadAt(%d, %d bytes, %d) = %d, want %d", c.i, c.n, c.off, e, c.want)
		}
	}
	if e := tdevs.WriteAt(1, make([]byte, 512), 0); e != abi.Errno(unix.EROFS) {
		t.Errorf("WriteAt on a read-only disk: %d, want EROFS", e)
	}

	// The device file.
	if _, e := tdevs.Open(unix.Mkdev(254, 48), unix.O_RDWR); e != abi.Errno(unix.ENXIO) {
		t.Errorf("open of no device: %d", e)
	}
	h, e := tdevs.Open(unix.Mkdev(254, 0), unix.O_RDWR|unix.O_CLOEXEC)
	if e != 0 {
		t.Fatal(e)
	}
	defer tdevs.Unref(h)
	var st unix.Stat_t
	tdevs.Stat(h, &st)
	if st.Mode != unix.S_IFBLK|0o660 || st.Rdev != unix.Mkdev(254, 0) || st.Gid != GidDisk || st.Size != 0 {
		t.Errorf("stat %+v", st)
	}
	if fl, _ := tdevs.Getfl(h); fl != unix.O_RDWR|unix.O_LARGEFILE {
		t.Errorf("flags %#x", fl)
	}
	// Unaligned: a write across a sector boundary keeps its neighbours.
	base := fill(2048, 9)
	copy(a.Disk[8192:], base)
	if n, e := tdevs.Transfer(h, addr([]byte("hello")), 5, 8192+510, true); n != 5 || e != 0 {
		t.Fatalf("unaligned write: %d %d", n, e)
	}
	copy(base[510:], "hello")
	if !bytes.Equal(a.Disk[8192:8192+2048], base) {
		t.Fatal("an unaligned write changed its neighbours")
	}
	got := make([]byte, 1000)
	if n, e := tdevs.Transfer(h, addr(got), 1000, 8192+300, false); n != 1000 || e != 0 || !bytes.Equal(got, base[300:1300]) {
		t.Fatalf("unaligned read: %d %d", n, e)
	}
	// The offset: SEEK_END is the size, reads and writes move it.
	if pos, e := tdevs.Seek(h, 0, unix.SEEK_END); pos != 1<<20 || e != 0 {
		t.Errorf("SEEK_END %d %d", pos, e)
	}
	for _, c := range []struct {
		off    int64
		whence int
		want   abi.Errno
	}{{1, unix.SEEK_END, abi.EINVAL}, {-1, unix.SEEK_SET, abi.EINVAL}, {1 << 20, unix.SEEK_DATA, abi.Errno(unix.ENXIO)}, {0, 7, abi.EINVAL}} {
		if _, e := tdevs.Seek(h, c.off, c.whence); e != c.want {
			t.Errorf("seek %d %d: %d, want %d", c.off, c.whence, e, c.want)
		}
	}
	if pos, _ := tdevs.Seek(h, 100, unix.SEEK_HOLE); pos != 1<<20 {
		t.Errorf("SEEK_HOLE %d", pos)
	}
	tdevs.Seek(h, 8192, unix.SEEK_SET)
	if n, _ := tdevs.Transfer(h, addr(got), 600, -1, false); n != 600 {
		t.Errorf("read at the offset: %d", n)
	}
	if pos, _ := tdevs.Seek(h, 0, unix.SEEK_CUR); pos != 8192+600 {
		t.Errorf("offset after a read %d", pos)
	}
	// The end: reads 0, writes ENOSPC, both cut there.
	if n, e := tdevs.Transfer(h, addr(got), 1000, 1<<20, false); n != 0 || e != 0 {
		t.Errorf("read at the end: %d %d", n, e)
	}
	if n, e := tdevs.Transfer(h, addr(got), 1000, 1<<20, true); n != 0 || e != abi.Errno(unix.ENOSPC) {
		t.Errorf("write at the end: %d %d", n, e)
	}
	if n, e := tdevs.Transfer(h, addr(got), 1000, 1<<20-100, true); n != 100 || e != 0 {
		t.Errorf("write across the end: %d %d", n, e)
	}
	if n, e := tdevs.Transfer(h, addr(got), 1000, 1<<20-700, false); n != 700 || e != 0 {
		t.Errorf("read across the end: %d %d", n, e)
	}
	if e := tdevs.Sync(h); e != 0 {
		t.Errorf("sync %d", e)
	}

	// Access modes and the read-only disk.
	ro, _ := tdevs.Open(unix.Mkdev(254, 0), unix.O_RDONLY)
	if _, e := tdevs.Transfer(ro, addr(got), 512, 0, true); e != abi.EBADF {
		t.Errorf("write on O_RDONLY: %d", e)
	}
	tdevs.Unref(ro)
	hb, e := tdevs.Open(unix.Mkdev(254, 16), unix.O_RDWR)
	if e != 0 {
		t.Fatalf("open of a read-only disk O_RDWR: %d (Linux's virtio_blk opens it)", e)
	}
	if _, e := tdevs.Transfer(hb, addr(got), 512, 0, true); e != abi.EPERM {
		t.Errorf("write on a read-only disk: %d, want EPERM", e)
	}
	if n, e := tdevs.Transfer(hb, addr(got), 512, 0, false); n != 512 || e != 0 {
		t.Errorf("read of a read-only disk: %d %d", n, e)
	}
	tdevs.Unref(hb)
}

// TestTableFull: a virtio-blk disk beyond MaxDevs is not used, and the
// console says which (its transport, address and line), as QEMU pc's
// set of more disks than the table holds would show it.
func TestTableFull(t *testing.T) {
	tdevs, tnodes = Devs[tenv]{}, nil
	tlogMu.Lock()
	tlog.Reset()
	tlogMu.Unlock()
	for range MaxDevs {
		attach(t, 64, 0)
	}
	if tdevs.Count() != MaxDevs || string(tdevs.Name(MaxDevs-1)) != "vdh" {
		t.Fatalf("%d devices, the last %q", tdevs.Count(), tdevs.Name(tdevs.Count()-1))
	}
	m := blkmodel.New(64, 0, nil)
	m.Errorf = t.Errorf
	dev, e := virtio.OpenMMIO(m.Base())
	if e != virtio.OK {
		t.Fatal(e)
	}
	if ok, e := tdevs.Attach(dev, "pci", 0x50, 11); ok || e != virtio.OK || tdevs.Count() != MaxDevs {
		t.Errorf("Attach of a ninth disk = %v, %v; %d devices", ok, e, tdevs.Count())
	}
	if ok, _ := tdevs.Attach(dev, "mmio", 0xfeb00e00, 5); ok {
		t.Error("Attach of a tenth disk: used")
	}
	tlogMu.Lock()
	out := tlog.String()
	tlogMu.Unlock()
	for _, want := range []string{
		"\nyolk: blk: virtio-blk (pci 0x50, irq 11) not used: more disks than the table holds (8)\n",
		"\nyolk: blk: virtio-blk (mmio 0xfeb00e00, irq 5) not used: more disks than the table holds (8)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("console:%s\nwant the line%s", out, want)
		}
	}
}

// heapOnly keeps the buffers this file reaches through uintptrs on the
// heap: a goroutine's stack is copied when it grows, and a uintptr into
// the old copy is not updated (a test in drivers/vgatext failed so in CI).
var (
	heapOnly []any
	heapMu   sync.Mutex
)
