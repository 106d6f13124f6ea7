package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/epoll"
	"yolk/kernel/namei"
	"yolk/kernel/procfs"
)

// Open files carry their operations (docs/vfs.md), as Linux's
// file_operations do: a descriptor names a kind and a handle, and the
// kind's table says what each call does on it. A handler looks the
// descriptor up (fdGet: a reference of the call's own, fdPut drops it)
// and calls its kind; it never asks which kind a file is. A new kind is a
// new table in its own file and a line in kinds.
//
// The tables are static, read-only data (each a package-level value of
// top-level functions, laid out by the linker): they are there before
// the runtime starts, and nothing writes them. A nil entry is what Linux
// answers for a file that cannot do it (the method's comment says which
// errno).

// fileOps is what one kind of open file does; h is its handle (the
// descriptor's h), o the call's view of it.
type fileOps struct {
	// dupOK: dup may copy the descriptor (epoll and eventfd
	// descriptors are the runtime's own). A kind's handle counts its
	// references through refHandle, closeHandle and handlePut
	// (files.go).
	dupOK bool

	read, write func(o ofile, u *uio) (uintptr, abi.Errno)                        // nil: EINVAL
	pread       func(o ofile, u *uio, off int64, write bool) (uintptr, abi.Errno) // nil: ESPIPE
	seek        func(o ofile, off int64, whence int) (uintptr, abi.Errno)         // nil: ESPIPE
	stat        func(o ofile, st *unix.Stat_t) abi.Errno                          // nil: a character device
	statfs      func(o ofile, st *unix.Statfs_t) abi.Errno                        // nil: Linux's anonymous inodes' file system
	getdents    func(o ofile, b []byte) (uintptr, abi.Errno)                      // nil: ENOTDIR
	truncate    func(o ofile, size int64) abi.Errno                               // nil: EINVAL
	allocate    func(o ofile, mode int, off, n int64) abi.Errno                   // nil: ENODEV
	sync        func(o ofile, datasync bool) abi.Errno                            // nil: EINVAL
	syncfs      func(o ofile) abi.Errno                                           // nil: nothing to write (0)
	chdir       func(o ofile) abi.Errno                                           // nil: ENOTDIR
	chmod       func(o ofile, mode uint32) abi.Errno                              // nil: accepted
	chown       func(o ofile, uid, gid int) abi.Errno                             // nil: accepted
	// getfl and setfl are fcntl's F_GETFL and F_SETFL; lock its record
	// locks (F_GETLK ... F_OFD_SETLKW, arg the program's struct flock).
	getfl func(o ofile) (uintptr, abi.Errno)            // nil: O_RDWR
	setfl func(o ofile, flags int) abi.Errno            // nil: accepted
	lock  func(o ofile, cmd int, arg uintptr) abi.Errno // nil: EINVAL
	// ioctl is the file's own requests (sysIoctl answers FIOCLEX,
	// FIONCLEX and FIONBIO for every kind); nil: ENOTTY, as Linux for a
	// file that is not a terminal.
	ioctl func(o ofile, cmd uint, arg uintptr) (uintptr, abi.Errno)
	// mmap maps the file (mmapFile checked the rest); nil: ENODEV.
	mmap func(o ofile, m *fileMap) (uintptr, abi.Errno)
	// pollable says what an epoll watch of the file polls: the open
	// file (h; -1: the descriptor itself), the identity poll checks and
	// the counter that changes with its readiness (0: never ready). nil:
	// never ready (the console, epoll). poll is its readiness now; ok
	// false if the file went.
	pollable func(o ofile) (h int32, id uint64, seq uintptr, e abi.Errno)
	poll     func(w *epoll.Watch) (ready, seq uint32, ok bool)
	// at is where a path relative to the file starts (openat and the
	// other *at calls with it as dirfd): the place takes the call's
	// reference on the open file (o's), or the entry drops it. nil: the
	// file is no directory (ENOTDIR).
	at func(o ofile, path []byte) (namei.Place, abi.Errno)
	// release runs when descriptor fd closes, under fileLock, before
	// the descriptor's reference is dropped (unref).
	release func(fd, h int)
}

// kinds are the tables by descriptor kind.
var kinds = [...]*fileOps{
	fileConsole: &consoleOps,
	fileEpoll:   &epollOps,
	fileEventfd: &eventfdOps,
	fileFS:      &memOps,
	fileSocket:  &socketOps,
	fileShare:   &shareOps,
	fileProc:    &procOps,
	fileBlk:     &blkOps,
	fileDisk:    &diskOps,
}

// fdViews say what /proc/self/fd and fdinfo show of an open file of each
// kind (procenv.FD, for kernel/procsnap's fill): its status flags
// (F_GETFL's; nil: O_RDWR) and its kind, identity, mount and path (nil:
// an anonymous inode's file with no more to say). A table apart from kinds: /proc's own files
// (procOps) read it, and a static table may not depend on itself.
var fdViews = [...]struct {
	getfl func(o ofile) (uintptr, abi.Errno)
	view  func(o ofile, s *procfs.Snapshot, d *procfs.FD)
}{
	fileConsole: {nil, consoleProcFD},
	fileEpoll:   {nonblockingFl, func(o ofile, s *procfs.Snapshot, d *procfs.FD) { d.Kind = procfs.FDEpoll }},
	fileEventfd: {nonblockingFl, func(o ofile, s *procfs.Snapshot, d *procfs.FD) { d.Kind = procfs.FDEventfd }},
	fileFS:      {memGetfl, memProcFD},
	fileSocket:  {sockGetfl, sockProcFD},
	fileShare:   {shareGetfl, shareProcFD},
	fileProc:    {procGetfl, procProcFD},
	fileBlk:     {func(o ofile) (uintptr, abi.Errno) { return blks.Getfl(o.h) }, nil},
	fileDisk:    {func(o ofile) (uintptr, abi.Errno) { return dsk.Getfl(o.h), 0 }, diskProcFD},
}

// ofile is an open file as a call sees it: the descriptor, its kind and
// its handle, on which the call holds a reference.
type ofile struct {
	fd   int
	kind uint32
	h    int
}

func (o ofile) ops() *fileOps { return kinds[o.kind] }

// fdGet is descriptor fd's open file, with a reference of the call's own
// taken under fileLock (a close on another CPU cannot free the handle
// under the call); EBADF if fd is not open.
func fdGet(fd int) (ofile, abi.Errno) {
	if fd < 0 || fd >= len(files) {
		return ofile{}, abi.EBADF
	}
	fileLock.Lock()
	f := &files[fd]
	o := ofile{fd: fd, kind: f.kind, h: int(f.h)}
	refHandle(o.kind, o.h)
	fileLock.Unlock()
	if o.kind == fileFree {
		return ofile{}, abi.EBADF
	}
	return o, 0
}

// fdPut drops fdGet's reference.
func fdPut(o ofile) { handlePut(o.kind, o.h) }

// onFD runs op on descriptor fd's open file between fdGet and fdPut. op
// does not escape: the closures the handlers pass live on their stacks.
func onFD(fd int, op func(o ofile) abi.Errno) abi.Errno {
	o, e := fdGet(fd)
	if e != 0 {
		return e
	}
	e = op(o)
	fdPut(o)
	return e
}

// The calls, each with its default for a kind that has no entry.

func (o ofile) read(u *uio) (uintptr, abi.Errno) {
	if f := o.ops().read; f != nil {
		return f(o, noEscapeP(u))
	}
	return 0, abi.EINVAL
}

func (o ofile) write(u *uio) (uintptr, abi.Errno) {
	if f := o.ops().write; f != nil {
		return f(o, noEscapeP(u))
	}
	return 0, abi.EINVAL
}

func (o ofile) pread(u *uio, off int64, write bool) (uintptr, abi.Errno) {
	if f := o.ops().pread; f != nil {
		return f(o, noEscapeP(u), off, write)
	}
	return 0, abi.Errno(unix.ESPIPE)
}

func (o ofile) seek(off int64, whence int) (uintptr, abi.Errno) {
	if f := o.ops().seek; f != nil {
		return f(o, off, whence)
	}
	return 0, abi.Errno(unix.ESPIPE)
}

func (o ofile) stat(st *unix.Stat_t) abi.Errno {
	if f := o.ops().stat; f != nil {
		return f(o, noEscapeP(st))
	}
	// The console and the kernel's own files: a character device.
	*st = unix.Stat_t{Mode: unix.S_IFCHR | 0o620, Blksize: 4096}
	return 0
}

// anonInodeMagic is the f_type of Linux's anonymous inodes (epoll,
// eventfd), which fstatfs reports for them.
const anonInodeMagic = 0x09041934

func (o ofile) statfs(st *unix.Statfs_t) abi.Errno {
	if f := o.ops().statfs; f != nil {
		return f(o, noEscapeP(st))
	}
	*st = unix.Statfs_t{Type: anonInodeMagic, Bsize: 4096, Namelen: 255, Frsize: 4096, Flags: stValid}
	return 0
}

// stValid is statfs's ST_VALID flag, which Linux sets in every answer.
const stValid = 0x20

func (o ofile) getdents(b []byte) (uintptr, abi.Errno) {
	if f := o.ops().getdents; f != nil {
		return f(o, noEscape(b))
	}
	return 0, abi.Errno(unix.ENOTDIR)
}

func (o ofile) truncate(size int64) abi.Errno {
	if f := o.ops().truncate; f != nil {
		return f(o, size)
	}
	return abi.EINVAL
}

func (o ofile) sync(datasync bool) abi.Errno {
	if f := o.ops().sync; f != nil {
		return f(o, datasync)
	}
	return abi.EINVAL
}

func (o ofile) syncfs() abi.Errno {
	if f := o.ops().syncfs; f != nil {
		return f(o)
	}
	return 0
}

func (o ofile) chdir() abi.Errno {
	if f := o.ops().chdir; f != nil {
		return f(o)
	}
	return abi.Errno(unix.ENOTDIR)
}

func (o ofile) chmod(mode uint32) abi.Errno {
	if f := o.ops().chmod; f != nil {
		return f(o, mode)
	}
	return 0
}

func (o ofile) chown(uid, gid int) abi.Errno {
	if f := o.ops().chown; f != nil {
		return f(o, uid, gid)
	}
	return 0
}

func (o ofile) getfl() (uintptr, abi.Errno) {
	if f := o.ops().getfl; f != nil {
		return f(o)
	}
	return unix.O_RDWR, 0
}

func (o ofile) setfl(flags int) abi.Errno {
	if f := o.ops().setfl; f != nil {
		return f(o, flags)
	}
	return 0
}

func (o ofile) lock(cmd int, arg uintptr) abi.Errno {
	if f := o.ops().lock; f != nil {
		return f(o, cmd, arg)
	}
	return abi.EINVAL
}

// at is where path, relative to descriptor dirfd, starts (pathStart):
// the place holds the descriptor's reference, taken here.
func dirAt(dirfd int, path []byte) (namei.Place, abi.Errno) {
	o, e := fdGet(dirfd)
	if e != 0 {
		return nowhere(), e
	}
	if f := o.ops().at; f != nil {
		return f(o, noEscape(path))
	}
	fdPut(o)
	return nowhere(), abi.Errno(unix.ENOTDIR)
}

func (o ofile) ioctl(cmd uint, arg uintptr) (uintptr, abi.Errno) {
	if f := o.ops().ioctl; f != nil {
		return f(o, cmd, arg)
	}
	return 0, abi.Errno(unix.ENOTTY)
}
