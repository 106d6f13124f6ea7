package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/flock"
	"yolk/sched"
)

// File locks (flock, fcntl's record locks) are package flock; the
// descriptor calls reach it through their kind's operations (vfs.go's
// lock and release). lenv is what the kernel supplies to it (flock.Env):
// the table's spin lock, the wait queue of the tasks waiting for a lock
// to go, the open files' stat, flags and offset, and the descriptor
// table.

type lenv struct{}

var (
	lockLock sched.TWALock
	lockWQ   sched.WaitQueue // tasks waiting for a lock
)

const lockKey = 1 // lockWQ's only key

func (lenv) Lock()                         { lockLock.Lock() }
func (lenv) Unlock()                       { lockLock.Unlock() }
func (lenv) Wait(addr uintptr, val uint32) { sched.Block(&lockWQ, lockKey, addr, val, 0) }
func (lenv) Wake()                         { lockWQ.Wake(lockKey, sched.MaxTasks) }

func (lenv) Stat(h int) (dev, ino uint64, size int64, err abi.Errno) {
	var st unix.Stat_t
	if e := vfs.Fstat(h, &st); e != 0 {
		return 0, 0, 0, abi.Errno(e)
	}
	return st.Dev, st.Ino, st.Size, 0
}

func (lenv) Flags(h int) (int, abi.Errno) {
	fl, e := vfs.Flags(h)
	return fl, abi.Errno(e)
}

func (lenv) Offset(h int) (int64, abi.Errno) {
	off, e := vfs.Seek(h, 0, unix.SEEK_CUR)
	return off, abi.Errno(e)
}

// Shared reports whether a descriptor other than fd names fs handle h;
// fileLock is held.
func (lenv) Shared(fd, h int) bool {
	for i := range files {
		if i != fd && files[i].kind == fileFS && int(files[i].h) == h {
			return true
		}
	}
	return false
}

var fileLocks flock.Locks[lenv]

func sysFlock(fd, op int) abi.Errno {
	h := fsGet(fd)
	if h < 0 {
		if fd < 0 || fd >= len(files) || files[fd].kind == fileFree {
			return abi.EBADF
		}
		return 0 // a console, socket, epoll or eventfd: nothing to lock against
	}
	err := fileLocks.Flock(h, op)
	fsPut(h)
	return err
}

// fcntlLock and locksOnClose are the fs kind's lock and release
// (vfs.go).
func fcntlLock(h, cmd int, p uintptr) abi.Errno { return fileLocks.Fcntl(h, cmd, p) }
func locksOnClose(fd, h int)                    { fileLocks.OnClose(fd, h) }
