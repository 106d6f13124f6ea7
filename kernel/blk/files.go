package blk

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtioblk"
	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
)

// NumFiles is the size of the table of open block-device files.
const NumFiles = 256

// File is an open block-device file: what a descriptor (and its dups)
// names. Refs counts the descriptors and the calls using it (atomic: 0
// is a free entry).
type File struct {
	Refs  int32
	dev   int32
	flags int32
	off   int64 // atomic
}

// keptFlags are the open flags F_GETFL shows.
const keptFlags = unix.O_ACCMODE | unix.O_APPEND | unix.O_NONBLOCK | unix.O_DIRECT | unix.O_SYNC | unix.O_DSYNC | unix.O_NOATIME

// Open opens block device rdev for a descriptor (flags: open's) and
// returns its open file: ENXIO if no device has that number, ENFILE if
// the table is full. A read-only disk opens for writing, as Linux's
// virtio_blk (its writes are EPERM).
func (d *Devs[E]) Open(rdev uint64, flags int) (int, abi.Errno) {
	i := d.ByRdev(rdev)
	if i < 0 {
		return -1, abi.Errno(unix.ENXIO)
	}
	if flags&unix.O_ACCMODE == unix.O_ACCMODE {
		return -1, abi.EINVAL
	}
	for h := range d.files {
		f := &d.files[h]
		if atomic.LoadInt32(&f.Refs) == 0 && atomic.CompareAndSwapInt32(&f.Refs, 0, -1) {
			f.dev, f.flags = int32(i), int32(flags&keptFlags)
			atomic.StoreInt64(&f.off, 0)
			atomic.StoreInt32(&f.Refs, 1)
			return h, 0
		}
	}
	return -1, abi.Errno(unix.ENFILE)
}

// Ref and Unref count a reference to open file h.
func (d *Devs[E]) Ref(h int)   { atomic.AddInt32(&d.files[h].Refs, 1) }
func (d *Devs[E]) Unref(h int) { atomic.AddInt32(&d.files[h].Refs, -1) }

// Dev is the device open file h is on.
func (d *Devs[E]) Dev(h int) int { return int(d.files[h].dev) }

// Getfl is F_GETFL; Setfl F_SETFL (O_APPEND, O_NONBLOCK, O_DIRECT,
// O_NOATIME change).
func (d *Devs[E]) Getfl(h int) (uintptr, abi.Errno) {
	return uintptr(atomic.LoadInt32(&d.files[h].flags)) | unix.O_LARGEFILE, 0
}

func (d *Devs[E]) Setfl(h int, flags int) abi.Errno {
	const settable = unix.O_APPEND | unix.O_NONBLOCK | unix.O_DIRECT | unix.O_NOATIME
	f := &d.files[h]
	for {
		old := atomic.LoadInt32(&f.flags)
		if atomic.CompareAndSwapInt32(&f.flags, old, old&^settable|int32(flags&settable)) {
			return 0
		}
	}
}

// Seek is lseek, as Linux's blkdev_llseek: the size is the end, and no
// offset lies outside [0, size] (EINVAL); SEEK_DATA and SEEK_HOLE see
// one extent of data.
func (d *Devs[E]) Seek(h int, off int64, whence int) (uintptr, abi.Errno) {
	f := &d.files[h]
	size := int64(d.Size(int(f.dev)))
	pos := off
	switch whence {
	case unix.SEEK_SET:
	case unix.SEEK_CUR:
		pos = atomic.LoadInt64(&f.off) + off
	case unix.SEEK_END:
		pos = size + off
	case unix.SEEK_DATA, unix.SEEK_HOLE:
		if off < 0 || off >= size {
			return 0, abi.Errno(unix.ENXIO)
		}
		if whence == unix.SEEK_HOLE {
			pos = size
		}
	default:
		return 0, abi.EINVAL
	}
	if pos < 0 || pos > size {
		return 0, abi.EINVAL
	}
	atomic.StoreInt64(&f.off, pos)
	return uintptr(pos), 0
}

// Stat is fstat of open file h: the device node as Linux's devtmpfs
// shows it (S_IFBLK 0660, root:disk, st_rdev the device's number, size
// 0).
func (d *Devs[E]) Stat(h int, st *unix.Stat_t) abi.Errno {
	i := d.Dev(h)
	*st = unix.Stat_t{Dev: 5, Ino: uint64(0x100 + i), Nlink: 1, Mode: unix.S_IFBLK | 0o660, Gid: GidDisk, Rdev: d.devs[i].rdev, Blksize: pageSize}
	return 0
}

// GidDisk is the group Debian's /dev/vd* belong to (disk).
const GidDisk = 6

// Sync is fsync and fdatasync: the device's flush (there is no cache
// above it).
func (d *Devs[E]) Sync(h int) abi.Errno { return d.Flush(d.Dev(h)) }

// Transfer is read and write (off < 0: at the file's offset, which it
// moves) and pread and pwrite (at off) of n bytes at p, the program's
// memory (checked by the caller), as Linux's blkdev_read_iter and
// blkdev_write_iter: EBADF for a write on a descriptor opened read-only
// (and a read on a write-only one), EPERM for a write to a read-only
// disk, reads at the end give 0 bytes, writes there ENOSPC, both are cut
// at the end. Whole logical blocks go to the device straight from the
// program's memory; the unaligned head and tail are read, modified and
// written through the device's bounce page.
func (d *Devs[E]) Transfer(h int, p uintptr, n int, off int64, write bool) (int, abi.Errno) {
	f := &d.files[h]
	i := int(f.dev)
	acc := atomic.LoadInt32(&f.flags) & unix.O_ACCMODE
	if write && acc == unix.O_RDONLY || !write && acc == unix.O_WRONLY {
		return 0, abi.EBADF
	}
	if write && d.ReadOnly(i) {
		return 0, abi.EPERM
	}
	pos := off
	if off < 0 {
		pos = atomic.LoadInt64(&f.off)
	}
	size := int64(d.Size(i))
	if n == 0 {
		return 0, 0
	}
	if pos >= size {
		if write {
			return 0, abi.Errno(unix.ENOSPC)
		}
		return 0, 0
	}
	n = int(min(int64(n), size-pos))
	bs := int64(d.BlockSize(i))
	chunk := int64(d.Info(i).MaxTransfer)
	done := int64(0)
	var e abi.Errno
	for done < int64(n) && e == 0 {
		at := pos + done
		if within := at % bs; within != 0 || int64(n)-done < bs {
			c := min(bs-within, int64(n)-done)
			e = d.partial(i, p+uintptr(done), int(c), at-within, int(within), write)
			if e == 0 {
				done += c
			}
			continue
		}
		c := min((int64(n)-done)&^(bs-1), chunk)
		e = d.rw(i, uint64(at)/virtioblk.Sector, p+uintptr(done), int(c), write)
		if e == 0 {
			done += c
		}
	}
	if off < 0 {
		atomic.StoreInt64(&f.off, pos+done)
	}
	if done > 0 {
		return int(done), 0
	}
	return 0, e
}

// partial moves n bytes at p to or from byte within of device i's block
// at off, through the device's bounce page: read the block, then copy
// out, or copy in and write it back.
func (d *Devs[E]) partial(i int, p uintptr, n int, off int64, within int, write bool) abi.Errno {
	for !atomic.CompareAndSwapUint32(&d.rmw[i], 0, 1) {
		a := uintptr(unsafe.Pointer(&d.rmw[i]))
		if d.started {
			sched.Block(&d.wq, a, a, 1, 0)
		}
	}
	b := d.bounce[i][:d.BlockSize(i)]
	ba := uintptr(unsafe.Pointer(&b[0]))
	e := d.rw(i, uint64(off)/virtioblk.Sector, ba, len(b), false)
	if e == 0 {
		if write {
			if !mm.Copy(ba+uintptr(within), p, n) {
				e = abi.EFAULT
			} else {
				e = d.rw(i, uint64(off)/virtioblk.Sector, ba, len(b), true)
			}
		} else if !mm.Copy(p, ba+uintptr(within), n) {
			e = abi.EFAULT
		}
	}
	atomic.StoreUint32(&d.rmw[i], 0)
	if d.started {
		d.wq.Wake(uintptr(unsafe.Pointer(&d.rmw[i])), 1)
	}
	return e
}

// Ioctl is the block ioctls Linux's block layer answers for a disk:
// BLKGETSIZE64 (bytes), BLKGETSIZE (sectors), BLKSSZGET (logical block
// size), BLKPBSZGET (physical), BLKBSZGET (the soft block size: a page),
// BLKROGET, BLKFLSBUF (no cache here: the device's flush), BLKDISCARD
// ({start, length} in bytes); ENOTTY for the rest.
func (d *Devs[E]) Ioctl(h int, cmd uint, arg uintptr) (uintptr, abi.Errno) {
	i := d.Dev(h)
	in := d.Info(i)
	switch cmd {
	case unix.BLKGETSIZE64:
		return 0, mm.Put(arg, d.Size(i))
	case unix.BLKGETSIZE:
		return 0, mm.Put(arg, in.Sectors)
	case unix.BLKSSZGET:
		return 0, mm.Put(arg, int32(in.BlockSize))
	case unix.BLKPBSZGET:
		return 0, mm.Put(arg, in.PhysBlock)
	case unix.BLKBSZGET:
		return 0, mm.Put(arg, int32(pageSize))
	case unix.BLKROGET:
		ro := int32(0)
		if in.ReadOnly {
			ro = 1
		}
		return 0, mm.Put(arg, ro)
	case unix.BLKFLSBUF:
		return 0, d.Flush(i)
	case unix.BLKDISCARD:
		if atomic.LoadInt32(&d.files[h].flags)&unix.O_ACCMODE == unix.O_RDONLY {
			return 0, abi.EBADF
		}
		r, e := mm.Get[[2]uint64](arg)
		if e != 0 {
			return 0, e
		}
		bs := uint64(in.BlockSize)
		if r[0]%bs != 0 || r[1]%bs != 0 || r[0] > d.Size(i) || r[1] > d.Size(i)-r[0] {
			return 0, abi.EINVAL
		}
		if in.ReadOnly {
			return 0, abi.EPERM
		}
		return 0, d.Discard(i, r[0], r[1], false)
	}
	return 0, abi.Errno(unix.ENOTTY)
}
