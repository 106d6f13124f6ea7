package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/blk"
	"yolk/kernel/cmdline"
	"yolk/kernel/fs"
)

// The block devices and their files are package blk's (docs/disks.md);
// the glue: blkenv (its environment, each disk driver's), blkOps (kind
// fileBlk: an open file of blk's table), blkOpen (memOpen's, for a block
// node); virtioAttach and the interrupt handlers call blks.
var blks blk.Devs[blkenv]

// disks are the yolk.disk options: where the file systems are to go.
var disks cmdline.Disks

// blkDisk is block device i as the file systems reach it (ReadAt,
// WriteAt, Flush: kernel/ext4's and kernel/jbd2's constraint).
type blkDisk struct{ i int }

func (d blkDisk) ReadAt(b []byte, off uint64) abi.Errno  { return blks.ReadAt(d.i, b, off) }
func (d blkDisk) WriteAt(b []byte, off uint64) abi.Errno { return blks.WriteAt(d.i, b, off) }
func (d blkDisk) Flush() abi.Errno                       { return blks.Flush(d.i) }

type blkenv struct {
	nicMem
	blk.Clock // Now, Copy
	dev       int
}

func (e blkenv) Lock()                                  { blks.Lock(e.dev) }
func (e blkenv) Unlock()                                { blks.Unlock(e.dev) }
func (e blkenv) Wait(a *uint32, v uint32, d int64) bool { return blks.Wait(e.dev, a, v, d) }
func (blkenv) Wake(a *uint32)                           { blks.Wake(a) }
func (blkenv) Note(s string)                            { klog(s) }
func (blkenv) Log(s string)                             { kprint(s) }
func (blkenv) LogDec(v int64)                           { kprintDec(v) }
func (blkenv) Dev(i int) blkenv                         { return blkenv{dev: i} }

// Node makes /dev/NAME, as Linux's devtmpfs: S_IFBLK 0660 root:disk.
func (blkenv) Node(name []byte, rdev uint64) {
	p := devDir[:5+copy(devDir[5:], name)]
	vfs.Mknod(fs.AtCWD, p, unix.S_IFBLK|0o660, rdev)
	vfs.Chmod(fs.AtCWD, p, 0o660, 0)
	vfs.Chown(fs.AtCWD, p, 0, blk.GidDisk, 0)
}

// blkOpen is openat of a node the in-memory file system refused (ENXIO):
// a block device's is opened on package blk.
func blkOpen(d int, path []byte, flags int) (uintptr, abi.Errno) {
	rdev, ok := vfs.BlockNode(d, path, flags&unix.O_NOFOLLOW != 0)
	if !ok {
		return 0, abi.Errno(unix.ENXIO)
	}
	h, e := blks.Open(rdev, flags)
	if e != 0 {
		return 0, e
	}
	return installHandle(fileBlk, h)
}

var blkOps = fileOps{
	dupOK:    true,
	read:     func(o ofile, u *uio) (uintptr, abi.Errno) { return blkTransfer(o.h, u, -1, false) },
	write:    func(o ofile, u *uio) (uintptr, abi.Errno) { return blkTransfer(o.h, u, -1, true) },
	pread:    func(o ofile, u *uio, off int64, w bool) (uintptr, abi.Errno) { return blkTransfer(o.h, u, off, w) },
	seek:     func(o ofile, off int64, whence int) (uintptr, abi.Errno) { return blks.Seek(o.h, off, whence) },
	stat:     func(o ofile, st *unix.Stat_t) abi.Errno { return blks.Stat(o.h, st) },
	sync:     func(o ofile, _ bool) abi.Errno { return blks.Sync(o.h) },
	getfl:    func(o ofile) (uintptr, abi.Errno) { return blks.Getfl(o.h) },
	setfl:    func(o ofile, fl int) abi.Errno { return blks.Setfl(o.h, fl) },
	ioctl:    func(o ofile, cmd uint, arg uintptr) (uintptr, abi.Errno) { return blks.Ioctl(o.h, cmd, arg) },
	pollable: func(o ofile) (int32, uint64, uintptr, abi.Errno) { return -1, 0, 0, abi.EPERM }, // as Linux's
}

// blkTransfer is read, write (off < 0), pread and pwrite on block file
// h, a buffer at a time.
func blkTransfer(h int, u *uio, off int64, write bool) (uintptr, abi.Errno) {
	if e := u.check(!write); e != 0 {
		return 0, e
	}
	return u.eachAt(off, func(p, n uintptr, at int64) (uintptr, abi.Errno) {
		c, e := blks.Transfer(h, p, int(n), at, write)
		return uintptr(c), e
	})
}
