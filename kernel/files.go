package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/internal/bitmap"
	"yolk/kernel/mm"
	"yolk/kernel/procfs"
	"yolk/sched"
)

// File descriptors: 0, 1, 2 are the serial console; the rest are the epoll
// instances and eventfds the runtime's netpoller uses, files,
// directories and pipes of the in-memory file system (vfs.go), and
// sockets (sys_socket.go). The handlers are in sys_file.go (descriptors),
// sys_path.go (path names), sys_epoll.go (epoll and eventfd) and
// sys_socket.go.

const (
	fileFree = iota
	fileConsole
	fileEpoll
	fileEventfd
	fileFS
	fileSocket
	fileShare // a file on a host share (share.go)
	fileProc  // a file of /proc or /sys (procfiles.go)
	fileBlk   // a block device (blk.go)
)

type file struct {
	kind  uint32
	count uint64 // eventfd: counter (atomic)
	seq   uint32 // eventfd: bumped on every change of count (atomic)
	whead int32  // epoll: 1 + its first watch, 0 if none
	h     int32  // fileFS: the fs handle; fileSocket: the socket; fileShare: the share file
	fdfl  uint32 // the descriptor's flags (FD_CLOEXEC), F_GETFD and F_SETFD
}

// numFiles is the descriptor table's size, RLIMIT_NOFILE (soft and
// hard: Go's os package raises the soft limit to the hard one at start
// anyway). 16,384 descriptors: a server's 10,000 idle connections and
// more (issue 33's load); os's tests keep hundreds open. The table is
// BSS, demand-paged: the pages of descriptors never used cost nothing.
const numFiles = 16384

const _ = uint(procfs.MaxFDs-numFiles) + uint(numFiles-procfs.MaxFDs) // /proc/self/fd lists them all

var (
	fileLock sched.TWALock  // the descriptor table and the watches
	files    [numFiles]file // by descriptor
	epollSeq uint32         // bumped by every change any watch may see (atomic)
	epollWQ  sched.WaitQueue

	// fdTaken has a bit for every descriptor taken: open, or reserved
	// (reserveFD: accept4 takes its descriptor before the connection, as
	// Linux's get_unused_fd_flags; such a descriptor is fileFree to every
	// call until installed). With its summary it finds the lowest free
	// descriptor in a few words instead of a walk of the table.
	fdTaken    [(numFiles + 63) / 64]uint64
	fdTakenSum [((numFiles+63)/64 + 63) / 64]uint64
)

func filesInit() {
	for i := 0; i < 3; i++ {
		files[i].kind = fileConsole
		bitmap.Set(fdTaken[:], fdTakenSum[:], i)
	}
	vfsInit()
	sockets.Init(netenv{})
	unpackInitrd(bootInfo.Module, bootInfo.ModuleSize)
}

func getFile(fd int, kind uint32) *file {
	if fd < 0 || fd >= len(files) || files[fd].kind != kind {
		return nil
	}
	return &files[fd]
}

func newFile(kind uint32, init uint64) (uintptr, abi.Errno) { return allocFD(kind, init, 0) }

// allocFD takes the lowest free descriptor, as Linux, for a file of kind
// with its eventfd count init or its handle h, all set under fileLock: a
// close on another CPU sees the descriptor whole or not at all (a handle
// set after the descriptor was published could be a stale one, and that
// close would drop a reference on an unrelated open file).
func allocFD(kind uint32, init uint64, h int32) (uintptr, abi.Errno) {
	fileLock.Lock()
	defer fileLock.Unlock()
	i := takeFD(0)
	if i < 0 {
		return 0, abi.EMFILE
	}
	f := &files[i]
	f.kind, f.count, f.seq, f.whead, f.h, f.fdfl = kind, init, 0, 0, h, 0
	return uintptr(i), 0
}

// takeFD takes the lowest free descriptor from lowest on, -1 if none;
// fileLock is held. Its entry is the caller's to fill.
func takeFD(lowest int) int {
	i := bitmap.Lowest(fdTaken[:], fdTakenSum[:], lowest, len(files))
	if i >= 0 {
		bitmap.Set(fdTaken[:], fdTakenSum[:], i)
	}
	return i
}

// reserveFD takes the lowest free descriptor for a file to come
// (installFD) or none (unreserveFD): EMFILE if the table is full.
func reserveFD() (int, abi.Errno) {
	fileLock.Lock()
	defer fileLock.Unlock()
	if i := takeFD(0); i >= 0 {
		return i, 0
	}
	return -1, abi.EMFILE
}

// installFD gives reserved descriptor fd handle h of kind.
func installFD(fd int, kind uint32, h int32) {
	fileLock.Lock()
	f := &files[fd]
	f.kind, f.count, f.seq, f.whead, f.h, f.fdfl = kind, 0, 0, 0, h, 0
	fileLock.Unlock()
}

// unreserveFD gives reserved descriptor fd back unused.
func unreserveFD(fd int) {
	fileLock.Lock()
	bitmap.Clear(fdTaken[:], fdTakenSum[:], fd)
	fileLock.Unlock()
}

// Descriptors of kind fileFS, fileSocket and fileShare name a handle (an
// fs open file, a socket, a share file) that counts its references: one
// for each descriptor (dup shares it) and one for each call using it.
// These three functions are the one place that names the kinds with a
// handle, not through kinds: the kinds' own operations reach them (a
// lookup from a directory descriptor, a descriptor a receive drops), and
// a static table may not depend on itself.

// handleRef is the handle behind fd if fd is of kind, with a reference
// of the caller's own (handlePut), taken under fileLock so that a close
// on another CPU cannot free the handle first; -1 if fd is not of kind.
func handleRef(fd int, kind uint32) int {
	if fd < 0 || fd >= len(files) {
		return -1
	}
	h := -1
	fileLock.Lock()
	if files[fd].kind == kind {
		h = int(files[fd].h)
		refHandle(kind, h)
	}
	fileLock.Unlock()
	return h
}

// refHandle adds a reference to handle h of kind (none for a kind
// without handles); fileLock is held.
func refHandle(kind uint32, h int) {
	switch kind {
	case fileFS:
		vfs.Ref(h)
	case fileShare:
		shares.File(h).Refs++
	case fileSocket:
		sockets.Ref(h)
	case fileProc:
		procFiles[h].refs++
	case fileBlk:
		blks.Ref(h)
	}
}

// closeHandle drops a reference to handle h of kind; fileLock is held
// (a share file's is clunked after it: shares.Reap).
func closeHandle(kind uint32, h int) {
	switch kind {
	case fileFS:
		vfs.Close(h)
	case fileShare:
		shares.Unref(h)
	case fileSocket:
		sockets.Close(h)
	case fileProc:
		procFiles[h].refs--
	case fileBlk:
		blks.Unref(h)
	}
}

// handlePut drops a call's reference, outside fileLock.
func handlePut(kind uint32, h int) {
	switch kind {
	case fileFS:
		fsPut(h)
	case fileShare:
		shares.Put(h)
	case fileSocket:
		sockPut(h)
	case fileProc:
		fileLock.Lock()
		procFiles[h].refs--
		fileLock.Unlock()
	case fileBlk:
		blks.Unref(h)
	}
}

// setCloexec sets FD_CLOEXEC on the descriptor a call just made (fd, e)
// when the call's flags asked for it (O_CLOEXEC, SOCK_CLOEXEC,
// EFD_CLOEXEC, EPOLL_CLOEXEC: one bit); it returns fd and e.
func setCloexec(fd uintptr, e abi.Errno, on bool) (uintptr, abi.Errno) {
	if e == 0 && on {
		atomic.StoreUint32(&files[fd].fdfl, unix.FD_CLOEXEC)
	}
	return fd, e
}

// installHandle gives handle h of kind a descriptor (closing h if none is
// free).
func installHandle(kind uint32, h int) (uintptr, abi.Errno) {
	fd, e := allocFD(kind, 0, int32(h))
	if e != 0 {
		closeHandle(kind, h)
	}
	return fd, e
}

// installPair gives handles a and b of kind descriptors (FD_CLOEXEC if
// cloexec) and stores them at p, which the caller has checked is writable
// (pipe2, socketpair); on failure neither stays open.
func installPair(kind uint32, a, b int, p uintptr, cloexec bool) abi.Errno {
	fa, e := installHandle(kind, a)
	if e != 0 {
		closeHandle(kind, b)
		return e
	}
	fb, e := installHandle(kind, b)
	if e != 0 {
		sysClose(int(fa))
		return e
	}
	setCloexec(fa, 0, cloexec)
	setCloexec(fb, 0, cloexec)
	if e := mm.Put(p, [2]int32{int32(fa), int32(fb)}); e != 0 {
		// Unmapped since the check: neither stays open, as Linux's.
		sysClose(int(fa))
		sysClose(int(fb))
		return e
	}
	return 0
}

// closeLocked closes fd; fileLock is held. Its kind's release runs
// first (record locks, an epoll's watches), then the descriptor's
// reference on the handle goes; the watches on fd itself (a descriptor
// without a handle: eventfd, the console) go with it, those on an open
// file when the open file does (Poll notices).
func closeLocked(fd int) abi.Errno {
	if fd < 0 || fd >= len(files) || files[fd].kind == fileFree {
		return abi.EBADF
	}
	k, h := files[fd].kind, int(files[fd].h)
	if r := kinds[k].release; r != nil {
		r(fd, h)
	}
	closeHandle(k, h)
	epolls.Closed(int32(fd))
	files[fd].kind = fileFree
	bitmap.Clear(fdTaken[:], fdTakenSum[:], fd)
	return 0
}
