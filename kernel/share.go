package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtio"
	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/kernel/namei"
	"yolk/kernel/procfs"
	"yolk/kernel/share"
	"yolk/sched"
)

// The host shares (docs/share.md) are package share's (kernel/share):
// the virtio-9p devices, the open files, the path operations and the
// working directory on a share. This is their glue: shareenv, the
// package's environment and each device's 9P client's; the kind's table
// shareOps; sharePathOp, the path walk's dispatch to the share; and the
// boot hooks (shareAttach, shareStarted). Descriptors of files on a
// share are of kind fileShare, an index into the package's open files.

var shares share.Shares[shareenv]

// shareenv is package share's environment and device dev's 9P client's
// (its methods come back to shares).
type shareenv struct {
	nicMem
	dev int
}

const _ = uint(len(files) - share.NumFiles) // at most one open file a descriptor (more descriptors than share files: ENFILE, as fs's)

func (e shareenv) Lock()                             { shares.Lock(e.dev) }
func (e shareenv) Unlock()                           { shares.Unlock(e.dev) }
func (e shareenv) Wait(addr *uint32, val uint32)     { shares.Wait(addr, val) }
func (e shareenv) Wake(addr *uint32)                 { shares.Wake(addr) }
func (e shareenv) Copy(dst, src uintptr, n int) bool { return mm.Copy(dst, src, n) }
func (e shareenv) Post(s, out int) bool              { return shares.Post(e.dev, s, out) }
func (e shareenv) Exchange(s, out, outData, inData int) (int, bool) {
	return shares.Exchange(e.dev, s, out, outData, inData)
}
func (shareenv) Dev(dev int) shareenv { return shareenv{dev: dev} }

func (shareenv) Log(s string)                  { klog(s) }
func (shareenv) Print(s string)                { kprint(s) }
func (shareenv) PrintBytes(b []byte)           { kprintBytes(b) }
func (shareenv) PrintDec(v int64)              { kprintDec(v) }
func (shareenv) PrintHex(v uint64, digits int) { kprintHex(v, digits) }

func (shareenv) Ending() bool { return shareEnding() }
func (shareenv) Exit()        { exitQEMU(uint8(atomic.LoadInt32(&exitCode))) }

func (shareenv) LockFiles()                                  { fileLock.Lock() }
func (shareenv) UnlockFiles()                                { fileLock.Unlock() }
func (shareenv) Get(fd int) int                              { return shareGet(fd) }
func (shareenv) Install(h int) (uintptr, abi.Errno)          { return allocFD(fileShare, 0, int32(h)) }
func (shareenv) Unback(h int, off int64)                     { vm.UnbackFile(share.Area(h), off) }
func (shareenv) TakeDirty(a, end uintptr) (uintptr, uintptr) { return vm.TakeDirty(a, end) }
func (shareenv) LockSizes()                                  { shareSizes.Lock() }
func (shareenv) UnlockSizes()                                { shareSizes.Unlock() }

// shareSizes is package share's sizes lock (share/sizes.go).
var shareSizes sched.Mutex

func (shareenv) Umask() uint32 { return atomic.LoadUint32(&shareUmask) }
func (shareenv) CwdEntered()   { procCwd.on = false; dsk.LeaveCwd() }

// Mount makes the mount point, in the in-memory file system.
func (shareenv) Mount(p []byte, id int32) abi.Errno {
	if memPath(p) {
		for i := 1; i <= len(p); i++ {
			if i == len(p) || p[i] == '/' {
				vfs.Mkdir(fs.AtCWD, p[:i], 0o755)
			}
		}
	}
	return mountAt(p, id)
}

var shareUmask uint32 = 0o022 // the process's umask, as vfs has it (atomic)

// shareEnder is the TID of the task writing back at the program's end
// (exitWriteBack), 0 before; exitCode is the program's status (atomic
// both).
var shareEnder, exitCode int32

// shareEnding reports whether the current task is the one writing back
// at the program's end.
func shareEnding() bool {
	e := atomic.LoadInt32(&shareEnder)
	return e != 0 && sched.Current() != nil && sched.Current().TID == e
}

// shareGet is the share file behind fd, with a reference (shares.Put);
// -1 if fd is not one.
func shareGet(fd int) int {
	if fd < 0 || fd >= len(files) || files[fd].kind != fileShare {
		return -1 // a hint, read without fileLock: handleRef checks again under it
	}
	return handleRef(fd, fileShare)
}

// shareAttach opens 9p device d and mounts it where its tag says; false
// if it is not used.
func shareAttach(d virtio.Device, where string, base uint64, irq uint32) bool {
	ok, e := shares.Attach(d, where, base, irq)
	if e != virtio.OK {
		nicRefused(where, base, e)
	}
	return ok
}

// shareStarted ends the boot's polling and enters yolk.cwd if it is on a
// share (unpackInitrd left it alone).
func shareStarted() {
	if cwdLen != 0 && shares.MountOf(cwdPath[:cwdLen]) >= 0 {
		// Still polling: the boot context cannot block. A share whose
		// device is missing leaves the path to the in-memory file system.
		if e := chdirPath(cwdPath[:cwdLen]); e != 0 {
			klogErrno("yolk.cwd: cannot change to ", cwdPath[:cwdLen], int64(e))
		}
	}
	shares.Started()
	diskMount()
	blks.Started()
}

// shareOps: files and directories on host shares.
// shareAt: a path relative to a share directory walks from its fid (how
// deep it is below the share's root is not known: the server keeps ".."
// at the root).
func shareAt(o ofile, path []byte) (namei.Place, abi.Errno) {
	f := shares.File(o.h)
	pl := namei.Place{M: shareMount(int(f.Dev)), D: fs.AtCWD, Depth: -1, Path: path,
		R: share.Ref{Dev: int(f.Dev), From: f.Fid, Rel: path, H: o.h}}
	if len(path) == 0 {
		placeDone(&pl)
		return nowhere(), abi.ENOENT
	}
	return pl, 0
}

var shareOps = fileOps{
	at:       shareAt,
	dupOK:    true,
	read:     func(o ofile, u *uio) (uintptr, abi.Errno) { return shareTransfer(o.h, u, -1, false) },
	write:    func(o ofile, u *uio) (uintptr, abi.Errno) { return shareTransfer(o.h, u, -1, true) },
	pread:    sharePread,
	seek:     func(o ofile, off int64, whence int) (uintptr, abi.Errno) { return shares.Seek(o.h, off, whence) },
	stat:     func(o ofile, st *unix.Stat_t) abi.Errno { return shares.Fstat(o.h, st) },
	statfs:   func(o ofile, st *unix.Statfs_t) abi.Errno { return shares.Fstatfs(o.h, st) },
	getdents: func(o ofile, b []byte) (uintptr, abi.Errno) { return shares.Getdents(o.h, b) },
	truncate: func(o ofile, size int64) abi.Errno { return shares.Ftruncate(o.h, size) },
	allocate: func(o ofile, mode int, off, n int64) abi.Errno { return shares.Fallocate(o.h, mode, off, n) },
	sync:     shareSync,
	chdir:    shareFchdir,
	chmod:    func(o ofile, mode uint32) abi.Errno { return shares.Fchmod(o.h, mode) },
	chown:    func(o ofile, uid, gid int) abi.Errno { return shares.Fchown(o.h, uid, gid) },
	getfl:    shareGetfl,
	setfl:    func(o ofile, flags int) abi.Errno { return shares.Setfl(o.h, flags) },
	mmap:     shareMmap,                                                                        // sys_mm.go
	pollable: func(o ofile) (int32, uint64, uintptr, abi.Errno) { return -1, 0, 0, abi.EPERM }, // a regular file or directory, as Linux
}

func sharePread(o ofile, u *uio, off int64, write bool) (uintptr, abi.Errno) {
	return shareTransfer(o.h, u, off, write)
}

func shareGetfl(o ofile) (uintptr, abi.Errno) { return shares.Getfl(o.h) }

// shareTransfer is read, write (off < 0), pread and pwrite on share file
// h, a buffer at a time. The program's buffers are reached only through
// the client's environment's fault-safe Copy: another thread may unmap
// them while a request waits for the host.
func shareTransfer(h int, u *uio, off int64, write bool) (uintptr, abi.Errno) {
	if e := u.check(!write); e != 0 {
		return 0, e
	}
	return u.eachAt(off, func(p, n uintptr, at int64) (uintptr, abi.Errno) {
		return shares.RW(h, bytesAt(p, int(n)), at, write)
	})
}

// shareSync is fsync and fdatasync: the file is synced on the host,
// after the shared mappings made through this open file are written back
// (sys_mm.go).
func shareSync(o ofile, datasync bool) abi.Errno {
	e := shares.WriteBack(mm.UserMin, mm.UserMax, o.h)
	if se := shares.Fsync(o.h, datasync); se != 0 {
		e = se
	}
	return e
}

// shareFchdir enters a share directory again by the guest path it was
// opened by (EINVAL when it has none).
func shareFchdir(o ofile) abi.Errno {
	var np [fs.PathMax]byte
	n, e := shares.FchdirPath(o.h, np[:])
	if e != 0 {
		return e
	}
	return chdirPath(np[:n])
}

// shareProcFD: a share file, its qid path as its identity.
func shareProcFD(o ofile, s *procfs.Snapshot, d *procfs.FD) {
	sf := shares.File(o.h)
	d.Kind, d.Ino, d.Pos = procfs.FDFile, sf.Qpath, atomic.LoadInt64(&sf.Off)
	d.MntID, d.Path = procSharePath(s, o.h)
}

// sharePathOp is path operation op on a share (onPath).
func sharePathOp(op int, pl *namei.Place, a *namei.Args) (uintptr, abi.Errno) {
	r := &pl.R
	follow := a.Flags&unix.AT_SYMLINK_NOFOLLOW == 0
	switch op {
	case namei.OpOpen:
		return shares.Open(r, a.Flags, a.Mode)
	case namei.OpStat:
		return 0, shares.Stat(r, &a.St, follow)
	case namei.OpStatfs:
		return 0, shares.Statfs(r, &a.Sfs)
	case namei.OpMkdir:
		return 0, shares.Mkdir(r, a.Mode)
	case namei.OpUnlink:
		return 0, shares.Unlink(r, a.Flags)
	case namei.OpMknod:
		return 0, abi.EPERM // not done: device nodes, FIFOs and sockets on a share
	case namei.OpSymlink:
		return 0, shares.Symlink(r, a.Target)
	case namei.OpReadlink:
		return shares.Readlink(r, a.Out)
	case namei.OpTruncate:
		return 0, shares.Truncate(r, a.Size)
	case namei.OpChdir:
		return 0, shares.Chdir(r)
	case namei.OpChmod:
		return 0, shares.Chmod(r, a.Mode, follow)
	case namei.OpChown:
		return 0, shares.Chown(r, a.UID, a.GID, follow)
	case namei.OpUtimes:
		return 0, shares.Utimes(r, a.Times, follow)
	}
	return 0, abi.EINVAL
}

// setInt stores v in a stat field whose type differs by architecture
// (procfiles.go).
func setInt[T ~int32 | ~int64 | ~uint32 | ~uint64](p *T, v int64) { *p = T(v) }
