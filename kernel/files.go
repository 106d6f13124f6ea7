package kernel

import (
	"yolk/kernel/abi"
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
)

type file struct {
	kind  uint32
	count uint64 // eventfd: counter (atomic)
	seq   uint32 // eventfd: bumped on every change of count (atomic)
	whead int32  // epoll: 1 + its first watch, 0 if none
	h     int32  // fileFS: the fs handle; fileSocket: the socket
}

var (
	fileLock sched.TWALock // the descriptor table and the watches
	files    [1024]file    // RLIMIT_NOFILE, Linux's default soft limit: os's tests keep hundreds open
	watches  [len(files)]watch
	epollSeq uint32 // bumped by every change any watch may see (atomic)
	epollWQ  sched.WaitQueue
)

func filesInit() {
	for i := 0; i < 3; i++ {
		files[i].kind = fileConsole
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

func newFile(kind uint32, init uint64) (uintptr, abi.Errno) {
	fileLock.Lock()
	defer fileLock.Unlock()
	for i := 0; i < len(files); i++ { // the lowest free one, as Linux
		if f := &files[i]; f.kind == fileFree {
			f.kind, f.count, f.seq, f.whead = kind, init, 0, 0
			return uintptr(i), 0
		}
	}
	return 0, abi.EMFILE
}

// closeLocked closes fd; fileLock is held.
func closeLocked(fd int) abi.Errno {
	if fd < 0 || fd >= len(files) || files[fd].kind == fileFree {
		return abi.EBADF
	}
	switch files[fd].kind {
	case fileFS:
		// Its watches go when the open file does (Poll notices).
		vfs.Close(int(files[fd].h))
	case fileSocket:
		sockets.Close(int(files[fd].h)) // its watches too, as an fs file's
	case fileEpoll:
		for i := files[fd].whead; i != 0; {
			w := &watches[i-1]
			i = w.next
			*w = watch{}
		}
	}
	if files[fd].kind != fileFS && files[fd].kind != fileSocket {
		// Not shared by dup: the watches on it end with it.
		for i := range watches {
			if w := &watches[i]; w.ep != 0 && w.fd == int32(fd) && w.h < 0 {
				unwatch(w)
			}
		}
	}
	files[fd].kind = fileFree
	return 0
}
