package kernel

import (
	"golang.org/x/sys/unix"
	"yolk/kernel/procfs"
	"yolk/kernel/share"

	"yolk/kernel/abi"
	"yolk/kernel/epoll"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/kernel/namei"
	"yolk/sched"
)

// The in-memory file system and pipes (package fs) behind file
// descriptors of kind fileFS: the descriptor table maps them to fs
// handles (open file descriptions, shared by dup). Pipes block here, on a
// wait queue per pipe, with the pipe's change counter as the condition;
// so do blocking opens of FIFOs. A call on a descriptor holds a reference
// to its open file for its duration (fsGet, fsPut), as Linux's fdget: a
// close on another CPU cannot free the handle under it, and a read blocked
// on a pipe keeps that end open until it returns.

// pageSupplier gives fs and net their pages (pages.Supplier): frames,
// through the identity map.
type pageSupplier struct{}

func (pageSupplier) AllocPage() uintptr {
	if f := mm.AllocFrame(); f != 0 {
		return mm.Phys(f)
	}
	return 0
}
func (pageSupplier) FreePage(a uintptr) { mm.FreeFrame(a - mm.PhysOff()) }

type kenv struct{ pageSupplier }

func (kenv) Now() int64 { return walltime() }
func (kenv) Lock()      { fsLock.Lock() }
func (kenv) Unlock()    { fsLock.Unlock() }
func (kenv) Wake(p int) {
	pipeWQ[p].Wake(0, len(files))
	epollNotify(vfs.PipeSeqAddr(p)) // its readiness may have changed
}

var (
	fsLock sched.TWALock
	pipeWQ [fs.NumPipes]sched.WaitQueue
	vfs    fs.FS[kenv]
	tmpDir = [...]byte{'/', 't', 'm', 'p'}
)

// vfsInit makes the root, /tmp (mode 1777), /dev with the memory
// devices null, zero and full (mode 0666) and /etc's files (etc.go).
// File data may take half of the free memory.
func vfsInit() {
	vfs.Init(kenv{}, mm.ReadStats().FramesFree/2)
	vfs.Mkdir(fs.AtCWD, tmpDir[:], 0o777)
	vfs.Chmod(fs.AtCWD, tmpDir[:], 0o1777, 0)
	vfs.Mkdir(fs.AtCWD, devDir[:4], 0o755)
	for _, d := range [...]struct {
		name [4]byte
		dev  uint64
	}{{[4]byte{'n', 'u', 'l', 'l'}, fs.DevNull}, {[4]byte{'z', 'e', 'r', 'o'}, fs.DevZero}, {[4]byte{'f', 'u', 'l', 'l'}, fs.DevFull}} {
		copy(devDir[5:], d.name[:])
		vfs.Mknod(fs.AtCWD, devDir[:9], unix.S_IFCHR|0o666, d.dev)
		vfs.Chmod(fs.AtCWD, devDir[:9], 0o666, 0)
	}
	etcInit()
}

var devDir = [...]byte{'/', 'd', 'e', 'v', '/', 0, 0, 0, 0, 0, 0, 0, 0} // room for a block device's name (nvme0n1)

// fsGet is the fs handle behind fd, -1 if fd is not an fs file, with a
// reference of the caller's own that fsPut drops.
func fsGet(fd int) int { return handleRef(fd, fileFS) }

// fsPut drops the reference fsGet (or dirHandle, pathArgs) took; the
// last one closes the open file. It ignores -1 and fs.AtCWD.
func fsPut(h int) {
	if h >= 0 {
		vfs.Close(h)
	}
}

// badFD is the errno for a descriptor that is not an fs file: err if it
// is open (the console, epoll, eventfd), EBADF if not.
func badFD(fd int, err abi.Errno) abi.Errno {
	if fd >= 0 && fd < len(files) && files[fd].kind != fileFree {
		return err
	}
	return abi.EBADF
}

// dirHandle is the fs directory for a *at call's dirfd and path, with a
// reference (fsPut).
func dirHandle(dirfd int, path []byte) (int, abi.Errno) {
	if int32(dirfd) == unix.AT_FDCWD || len(path) > 0 && path[0] == '/' {
		return fs.AtCWD, 0
	}
	if h := fsGet(dirfd); h >= 0 {
		return h, 0
	}
	return fs.AtCWD, badFD(dirfd, abi.Errno(unix.ENOTDIR))
}

// userPath holds a path copied from the program (mm.UserPath).
type userPath = [fs.PathMax]byte

// installFS gives fs handle h a descriptor (closing h if none is free).
func installFS(h int) (uintptr, abi.Errno) { return installHandle(fileFS, h) }

// fsRead reads fs handle h; a pipe blocks until data or end of file, or
// a signal (made again under SA_RESTART, as Linux's pipe_read).
func fsRead(h int, b []byte) (uintptr, abi.Errno) {
	for {
		pipe, addr, val, ok := vfs.Wait(h)
		n, e := vfs.Read(h, b)
		if e != unix.EAGAIN || !ok || vfs.Nonblocking(h) {
			return uintptr(n), abi.Errno(e)
		}
		if blockIntr(&pipeWQ[pipe], 0, addr, val, 0) == sched.WakeSignal {
			return 0, errRestartSys
		}
	}
}

// fsWrite writes to fs handle h; a pipe blocks until all is written, or
// returns what was written before it would block (O_NONBLOCK), broke or
// a signal came (nothing written: made again under SA_RESTART, as Linux's
// pipe_write).
func fsWrite(h int, b []byte) (uintptr, abi.Errno) {
	done := 0
	for {
		pipe, addr, val, ok := vfs.Wait(h)
		n, e := vfs.Write(h, b[done:])
		done += n
		if !ok || done == len(b) || e != unix.EAGAIN && e != 0 || e == unix.EAGAIN && vfs.Nonblocking(h) {
			if done > 0 {
				return uintptr(done), 0
			}
			return 0, abi.Errno(e)
		}
		if e == unix.EAGAIN && blockIntr(&pipeWQ[pipe], 0, addr, val, 0) == sched.WakeSignal {
			if done > 0 {
				return uintptr(done), 0
			}
			return 0, errRestartSys
		}
	}
}

// ioChunk is the bounce buffer of file and pipe transfers: the file
// system copies to and from it under its lock, the kernel between it and
// the program's memory outside (mm.CopyOut, mm.CopyIn), so a fault on a
// buffer another thread unmapped is EFAULT, never a fault under fsLock.
// fs.PipeBuf, so that a pipe write of at most PIPE_BUF bytes stays one
// atomic write.
const ioChunk = fs.PipeBuf

// ioBufs are the bounce buffers, one a task slot: in the BSS, not on the
// kernel stack (which Go would clear at every call), and paged in the
// first time a task uses its own.
var ioBufs [sched.MaxTasks][ioChunk]byte

// fsTransferUio moves the program's buffers u to or from open file h, at
// off (pread, pwrite: neither moves nor blocks) or at and advancing its
// position (off < 0), all of them one read or write as Linux's
// read_iter and write_iter make readv and writev: a read blocks for its
// first bytes only, whichever buffer the rest would go to; a write
// gathers its chunks across buffers, so a writev of at most PIPE_BUF
// bytes to a pipe is one atomic write.
func fsTransferUio(h int, u *uio, off int64, write bool) (uintptr, abi.Errno) {
	buf := &ioBufs[sched.Current().Index()]
	done := uintptr(0)
	for {
		k := min(u.left, ioChunk)
		b := buf[:k]
		var c int
		var e abi.Errno
		switch {
		case write:
			if u.move(b, false) != int(k) {
				return partial(done, abi.EFAULT)
			}
			if off >= 0 {
				var fe fs.Errno
				c, fe = vfs.Pwrite(h, b, off+int64(done))
				e = abi.Errno(fe)
			} else {
				var cu uintptr
				cu, e = fsWrite(h, b)
				c = int(cu)
			}
		case off >= 0:
			var fe fs.Errno
			c, fe = vfs.Pread(h, b, off+int64(done))
			e = abi.Errno(fe)
		case done == 0:
			var cu uintptr
			cu, e = fsRead(h, b)
			c = int(cu)
		default:
			var fe fs.Errno
			c, fe = vfs.Read(h, b) // what is there: a later chunk does not wait
			if fe == unix.EAGAIN {
				return done, 0
			}
			e = abi.Errno(fe)
		}
		if !write && c > 0 && u.move(b[:c], true) != c {
			return partial(done, abi.EFAULT)
		}
		done += uintptr(c)
		if e != 0 {
			return partial(done, e)
		}
		if c < int(k) || u.left == 0 {
			return done, 0
		}
	}
}

// memOps: the in-memory file system's open files (regular files,
// directories, device nodes), pipes and FIFOs (package fs).
// memAt: a path relative to an in-memory directory starts there (the
// walk refuses a file that is none: ENOTDIR).
func memAt(o ofile, path []byte) (namei.Place, abi.Errno) {
	return namei.Place{D: o.h, R: share.Ref{H: -1}, Depth: -1, Path: path}, 0
}

var memOps = fileOps{
	at:       memAt,
	dupOK:    true,
	read:     memRead,
	write:    memWrite,
	pread:    memPread,
	seek:     memSeek,
	stat:     func(o ofile, st *unix.Stat_t) abi.Errno { return abi.Errno(vfs.Fstat(o.h, st)) },
	statfs:   func(o ofile, st *unix.Statfs_t) abi.Errno { return abi.Errno(vfs.Statfs(o.h, st)) },
	getdents: memGetdents,
	truncate: memTruncate,
	allocate: func(o ofile, mode int, off, n int64) abi.Errno { return abi.Errno(vfs.Fallocate(o.h, mode, off, n)) },
	sync:     func(o ofile, datasync bool) abi.Errno { return abi.Errno(vfs.Fsync(o.h)) },
	chdir:    memChdir,
	chmod:    func(o ofile, mode uint32) abi.Errno { return abi.Errno(vfs.Fchmod(o.h, mode)) },
	chown:    func(o ofile, uid, gid int) abi.Errno { return abi.Errno(vfs.Fchown(o.h, uid, gid)) },
	getfl:    memGetfl,
	ioctl:    memIoctl,
	setfl:    func(o ofile, flags int) abi.Errno { return abi.Errno(vfs.SetFlags(o.h, flags)) },
	lock:     func(o ofile, cmd int, arg uintptr) abi.Errno { return fcntlLock(o.h, cmd, arg) },
	mmap:     memMmap,
	pollable: memPollable,
	poll:     func(w *epoll.Watch) (uint32, uint32, bool) { return vfs.Poll(int(w.H), w.ID) },
	release:  locksOnClose, // flock.go
}

func memRead(o ofile, u *uio) (uintptr, abi.Errno) {
	if e := u.check(true); e != 0 {
		return 0, e
	}
	return fsTransferUio(o.h, u, -1, false)
}

func memWrite(o ofile, u *uio) (uintptr, abi.Errno) {
	if e := u.check(false); e != 0 {
		return 0, e
	}
	return fsTransferUio(o.h, u, -1, true)
}

func memPread(o ofile, u *uio, off int64, write bool) (uintptr, abi.Errno) {
	return fsTransferUio(o.h, u, off, write)
}

func memSeek(o ofile, off int64, whence int) (uintptr, abi.Errno) {
	pos, e := vfs.Seek(o.h, off, whence)
	return uintptr(pos), abi.Errno(e)
}

func memGetdents(o ofile, b []byte) (uintptr, abi.Errno) {
	c, e := vfs.Getdents(o.h, b)
	return uintptr(c), abi.Errno(e)
}

func memTruncate(o ofile, size int64) abi.Errno {
	e := vfs.Ftruncate(o.h, size)
	fileCut()
	return abi.Errno(e)
}

func memChdir(o ofile) abi.Errno {
	e := vfs.Fchdir(o.h)
	if e == 0 {
		leaveCwd()
	}
	return abi.Errno(e)
}

// memIoctl is FIONREAD on pipes and regular files.
func memIoctl(o ofile, cmd uint, arg uintptr) (uintptr, abi.Errno) {
	if cmd != ioFIONREAD {
		return 0, abi.Errno(unix.ENOTTY)
	}
	n, e := vfs.Readable(o.h)
	if e != 0 {
		return 0, abi.Errno(e)
	}
	return 0, mm.Put(arg, int32(min(n, 1<<31-1)))
}

func memGetfl(o ofile) (uintptr, abi.Errno) {
	fl, e := vfs.Flags(o.h)
	return uintptr(fl), abi.Errno(e)
}

func memPollable(o ofile) (int32, uint64, uintptr, abi.Errno) {
	id, seq, e := vfs.Pollable(o.h)
	return int32(o.h), id, seq, abi.Errno(e)
}

// memProcFD: a pipe pipe(2) made, or a file of the tree, whose path the
// snapshot finds later by its inode (procState.WantIno).
func memProcFD(o ofile, s *procfs.Snapshot, d *procfs.FD) {
	var st unix.Stat_t
	if vfs.Fstat(o.h, &st) != 0 {
		return
	}
	d.Ino = st.Ino
	if st.Mode&unix.S_IFMT == unix.S_IFIFO && st.Ino > fs.NumInodes {
		d.Kind, d.MntID = procfs.FDPipe, procMntPipe
		return
	}
	d.Kind, d.MntID = procfs.FDFile, procMntRoot
	if pos, e := vfs.Seek(o.h, 0, unix.SEEK_CUR); e == 0 {
		d.Pos = pos
	}
	if st.Nlink == 0 {
		d.Path = s.PutString("/ (deleted)")
	} else {
		procState.WantIno(st.Ino)
	}
}
