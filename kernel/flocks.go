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

// A lock handle is an fs handle, or diskLocks+h for disk file h; Size,
// Flags and Offset ask its kind.
const diskLocks = 1 << 24

func lockFile(h int) ofile {
	if h >= diskLocks {
		return ofile{kind: fileDisk, h: h - diskLocks}
	}
	return ofile{kind: fileFS, h: h}
}

func (lenv) Key(h int) (dev, ino uint64, err abi.Errno) {
	if h >= diskLocks {
		dev, ino = dsk.Key(h - diskLocks) // no lock: Key runs under fileLock
		return dev, ino, 0
	}
	var st unix.Stat_t
	e := vfs.Fstat(h, &st)
	return st.Dev, st.Ino, abi.Errno(e)
}

func (lenv) Size(h int) (int64, abi.Errno) {
	var st unix.Stat_t
	e := lockFile(h).stat(&st)
	return st.Size, e
}

func (lenv) Flags(h int) (int, abi.Errno) {
	fl, e := lockFile(h).getfl()
	return int(fl), e
}

func (lenv) Offset(h int) (int64, abi.Errno) {
	off, e := lockFile(h).seek(0, unix.SEEK_CUR)
	return int64(off), e
}

// Shared reports whether a descriptor other than fd names lock handle h;
// fileLock is held.
func (lenv) Shared(fd, h int) bool {
	for i := range files {
		if i != fd && lockHandle(files[i].kind, int(files[i].h)) == h {
			return true
		}
	}
	return false
}

// lockHandle is the lock handle of a descriptor of kind with handle h,
// -1 if its kind has no locks.
func lockHandle(kind uint32, h int) int {
	switch kind {
	case fileFS:
		return h
	case fileDisk:
		return diskLocks + h
	}
	return -1
}

var fileLocks flock.Locks[lenv]

func sysFlock(fd, op int) abi.Errno {
	o, e := fdGet(fd)
	if e != 0 {
		return e
	}
	if h := lockHandle(o.kind, o.h); h >= 0 {
		e = fileLocks.Flock(h, op)
	} // else a console, socket, epoll or eventfd: nothing to lock against
	fdPut(o)
	return e
}

// fcntlLock and locksOnClose are the fs kind's lock and release
// (vfs.go), on a lock handle (a disk file's: disks.go).
func fcntlLock(h, cmd int, p uintptr) abi.Errno { return fileLocks.Fcntl(h, cmd, p) }
func locksOnClose(fd, h int)                    { fileLocks.OnClose(fd, h) }
