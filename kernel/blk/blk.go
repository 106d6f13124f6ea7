// Package blk is the kernel's block layer (docs/disks.md): the table of
// block devices in the order the boot found them (virtio-blk's vda, vdb,
// …; the NVMe controllers' namespaces nvme0n1 … beside them, kind
// KindNVMe: nvme.go, docs/nvme.md), each device's requests waited for by the calling task and
// completed by its interrupt, and ReadAt, WriteAt and Flush by device
// index for the file systems (byte offsets and lengths multiples of the
// logical block size, split into requests within the device's limits);
// and the block-device files /dev/vda … (files.go): their open files,
// read and write at any offset (the unaligned head and tail of a
// transfer read, modified and written through a bounce page), seek,
// stat, sync and the block ioctls.
//
// What it may not do: allocate after boot, store Go pointers in memory it
// writes, call the runtime's scheduler, or reach the program's memory but
// through kernel/mm's copies (the driver's Copy is mm.Copy). It reaches
// the kernel only through its Env type parameter (the console, and the
// /dev node of each device found).
package blk

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/drivers/clock"
	"yolk/drivers/virtio"
	"yolk/drivers/virtioblk"
	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
)

const (
	// MaxDevs is how many block devices the table holds.
	MaxDevs = 8
	// MajorVirtio is the major number Linux's virtio_blk gets (the first
	// dynamic block major, 254); each disk has 16 minors (partitions).
	MajorVirtio = 254
	// MajorNVMe is what Linux's nvme gets on a machine like this (259,
	// blkext).
	MajorNVMe = 259

	pageSize = 4096
)

// Device kinds.
const (
	KindVirtio = 1
	KindNVMe   = 2
)

// Env is the kernel below the block layer; E is also each virtio-blk
// disk's environment (Dev(i) names disk i's). A type-parameter
// constraint.
type Env[E any] interface {
	virtioblk.Env
	// Dev is device i's environment for its driver.
	Dev(i int) E
	// Page is a zeroed page for the driver (CPU and device addresses).
	Page() (virt uintptr, phys uint64)
	// Node makes the device node /dev/NAME (S_IFBLK, 0660, root:disk).
	Node(name []byte, rdev uint64)
}

// Devs is the table of block devices. Its zero value is the boot's: no
// device, requests poll until Started.
type Devs[E Env[E]] struct {
	devs    [MaxDevs]dev[E]
	n       int
	locks   [MaxDevs]sched.TWALock // each device's queue and slots
	wq      sched.WaitQueue        // tasks waiting for a request, a slot or a bounce page
	started bool
	nv      nvmes[E] // the NVMe controllers (nvme.go)

	files [NumFiles]File
	// bounce is each device's page for the unaligned ends of transfers,
	// rmw[i] its owner (0: free; atomic).
	bounce [MaxDevs][pageSize]byte
	rmw    [MaxDevs]uint32
}

type dev[E Env[E]] struct {
	kind     uint8
	irq      uint32
	rdev     uint64
	vb       virtioblk.Disk[E] // KindVirtio's driver; KindNVMe's name only
	ctrl, ns uint8             // KindNVMe: the controller and its namespace
}

func env[E Env[E]]() E { var e E; return e }

// Count is the number of devices.
func (d *Devs[E]) Count() int { return d.n }

// Rdev is device i's number.
func (d *Devs[E]) Rdev(i int) uint64 { return d.devs[i].rdev }

// Name is device i's name (vda ...).
func (d *Devs[E]) Name(i int) []byte {
	n := &d.devs[i].vb.Name
	l := 0
	for l < len(n) && n[l] != 0 {
		l++
	}
	return n[:l]
}

// Info is device i's size, block sizes and limits.
func (d *Devs[E]) Info(i int) *virtioblk.Info { return d.info(i) }

// Size is device i's size in bytes.
func (d *Devs[E]) Size(i int) uint64 { return d.info(i).Sectors * virtioblk.Sector }

// ReadOnly reports whether device i refuses writes.
func (d *Devs[E]) ReadOnly(i int) bool { return d.info(i).ReadOnly }

// BlockSize is device i's logical block size.
func (d *Devs[E]) BlockSize(i int) uint32 { return d.info(i).BlockSize }

// Stats are device i's driver counters.
func (d *Devs[E]) Stats(i int) virtioblk.Stats { return d.devs[i].vb.Stats }

// Attach opens virtio-blk device v (found at where/base, interrupt irq)
// as the next vdX and makes its /dev node. It reports whether the device
// is used, so that its interrupt is routed.
func (d *Devs[E]) Attach(v virtio.Device, where string, base uint64, irq uint32) (bool, virtio.Error) {
	if d.n == MaxDevs {
		e := env[E]()
		e.Note("blk: virtio-blk (")
		e.Log(where)
		e.Log(" ")
		logHex(e, base)
		e.Log(", irq ")
		e.LogDec(int64(irq))
		e.Log(") not used: more disks than the table holds (")
		e.LogDec(MaxDevs)
		e.Log(")\n")
		return false, virtio.OK
	}
	i := d.n
	x := &d.devs[i]
	if e := virtioblk.Open(&x.vb, env[E]().Dev(i), v, env[E]()); e != virtio.OK {
		return false, e
	}
	nvd := 0
	for j := 0; j < d.n; j++ {
		if d.devs[j].kind == KindVirtio {
			nvd++
		}
	}
	x.kind, x.irq = KindVirtio, irq
	x.vb.Name[0], x.vb.Name[1] = 'v', 'd'
	if nvd < 26 {
		x.vb.Name[2] = byte('a' + nvd)
	}
	x.rdev = unix.Mkdev(MajorVirtio, uint32(16*nvd))
	d.n++
	env[E]().Node(d.Name(i), x.rdev)
	in := x.vb.Info()
	e := env[E]()
	e.Note("blk: virtio-blk ")
	e.Log(unsafe.String(&x.vb.Name[0], len(d.Name(i))))
	e.Log(" (")
	e.Log(where)
	e.Log(", irq ")
	e.LogDec(int64(irq))
	e.Log(") ")
	logSize(e, in)
	return true, virtio.OK
}

// logHex goes on with v in hexadecimal, 0x first.
func logHex[E Env[E]](e E, v uint64) {
	const digits = "0123456789abcdef"
	e.Log("0x")
	i := 60
	for i > 0 && v>>i == 0 {
		i -= 4
	}
	for ; i >= 0; i -= 4 {
		e.Log(digits[v>>i&15 : v>>i&15+1])
	}
}

// logSize ends a device's boot line with its size, block size and
// whether it is read-only.
func logSize[E Env[E]](e E, in *virtioblk.Info) {
	e.LogDec(int64(in.Sectors / 2048))
	e.Log(" MiB, blocks of ")
	e.LogDec(int64(in.BlockSize))
	if in.ReadOnly {
		e.Log(", read-only")
	}
	e.Log("\n")
}

// Started ends the boot's polling: requests wait for their interrupts.
func (d *Devs[E]) Started() {
	d.started = true
	atomic.StoreUint32(&nvStarted, 1)
}

// Lock and Unlock are device i's lock (its driver's Env).
func (d *Devs[E]) Lock(i int)   { d.locks[i].Lock() }
func (d *Devs[E]) Unlock(i int) { d.locks[i].Unlock() }

// Wait blocks while *addr == val, until deadline (0: none); before tasks
// run it polls device i instead. It reports whether the deadline passed.
func (d *Devs[E]) Wait(i int, addr *uint32, val uint32, deadline int64) bool {
	if !d.started {
		for atomic.LoadUint32(addr) == val {
			if deadline != 0 && clock.Nanotime() >= deadline {
				return true
			}
			d.devs[i].vb.Interrupt()
		}
		return false
	}
	a := uintptr(unsafe.Pointer(addr))
	return sched.Block(&d.wq, a, a, val, deadline)
}

// Wake wakes the waiters on addr.
func (d *Devs[E]) Wake(addr *uint32) {
	if d.started {
		d.wq.Wake(uintptr(unsafe.Pointer(addr)), 1<<30)
	}
}

// Interrupt is the block devices' interrupt handler for line irq: every
// device on it is asked (a PCI line may be shared).
func (d *Devs[E]) Interrupt(irq uint32) {
	for i := 0; i < d.n; i++ {
		if d.devs[i].irq == irq {
			d.devs[i].vb.Interrupt()
		}
	}
	d.nvInterrupt(irq)
}

// IsIRQ reports whether id is a block device's interrupt.
func (d *Devs[E]) IsIRQ(id uint32) bool {
	for i := 0; i < d.n; i++ {
		if d.devs[i].irq == id {
			return true
		}
	}
	return false
}

// check is EINVAL unless [off, off+n) is whole logical blocks of device
// i, ENXIO if there is no device i, EIO past its end.
func (d *Devs[E]) check(i int, n int, off uint64) abi.Errno {
	if i < 0 || i >= d.n {
		return abi.Errno(unix.ENXIO)
	}
	bs := uint64(d.BlockSize(i))
	if off%bs != 0 || uint64(n)%bs != 0 {
		return abi.EINVAL
	}
	if size := d.Size(i); off > size || uint64(n) > size-off {
		return abi.Errno(unix.EIO)
	}
	return 0
}

// Clock gives the drivers' environment (the kernel's type, which embeds
// it) the monotonic clock and the fault-safe copy: Now and Copy.
type Clock struct{}

func (Clock) Now() int64                        { return clock.Nanotime() }
func (Clock) Copy(dst, src uintptr, n int) bool { return mm.Copy(dst, src, n) }

// ReadAt reads len(b) bytes of device i at byte offset off into b
// (kernel memory); both multiples of the logical block size. It blocks
// the task until the device answers (EIO after the driver's timeout).
func (d *Devs[E]) ReadAt(i int, b []byte, off uint64) abi.Errno {
	if e := d.check(i, len(b), off); e != 0 || len(b) == 0 {
		return e
	}
	return d.rw(i, off/virtioblk.Sector, uintptr(unsafe.Pointer(&b[0])), len(b), false)
}

// WriteAt writes b to device i at byte offset off (as ReadAt); EROFS on
// a read-only device.
func (d *Devs[E]) WriteAt(i int, b []byte, off uint64) abi.Errno {
	if e := d.check(i, len(b), off); e != 0 || len(b) == 0 {
		return e
	}
	return d.rw(i, off/virtioblk.Sector, uintptr(unsafe.Pointer(&b[0])), len(b), true)
}

// Flush makes every write device i completed durable.
func (d *Devs[E]) Flush(i int) abi.Errno {
	if i < 0 || i >= d.n {
		return abi.Errno(unix.ENXIO)
	}
	return d.flush(i)
}

// Discard tells device i the bytes [off, off+n) are unused (zeroes:
// writes zeroes there); EOPNOTSUPP where it cannot.
func (d *Devs[E]) Discard(i int, off, n uint64, zeroes bool) abi.Errno {
	if i < 0 || i >= d.n {
		return abi.Errno(unix.ENXIO)
	}
	return d.discard(i, off/virtioblk.Sector, n/virtioblk.Sector, zeroes)
}

// ByRdev is the device whose number is rdev, -1 if none.
func (d *Devs[E]) ByRdev(rdev uint64) int {
	for i := 0; i < d.n; i++ {
		if d.devs[i].rdev == rdev {
			return i
		}
	}
	return -1
}
