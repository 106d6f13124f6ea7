package kernel

import (
	"math"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
)

// File locks, as Linux keeps them: flock's whole-file locks and fcntl's
// record locks, both POSIX (F_SETLK, F_SETLKW, F_GETLK: owned by the
// process) and open-file-description ones (F_OFD_SETLK, F_OFD_SETLKW,
// F_OFD_GETLK: owned by the open file, like flock's). A lock names its
// file by device and inode number (fstat), so it holds whichever file
// system the file is on. flock locks and record locks do not see each
// other; POSIX and OFD record locks do. There is one process, so its
// POSIX locks never conflict with each other — threads that must exclude
// each other use flock or OFD locks on files they opened separately, as on
// Linux.
//
// One fixed table under one spin lock. A lock that has to wait blocks on
// one wait queue until the table changes (lockSeq), then looks again.
// Closing any descriptor of a file drops the process's POSIX locks on it;
// closing the last descriptor of an open file drops its flock and OFD
// locks (an open file in flight in an SCM_RIGHTS message counts as
// closed). Not done: EDEADLK detection (one process's POSIX locks cannot
// deadlock each other), locks on sockets, mandatory locks, leases.

const maxLocks = 256

// Lock kinds: whose a lock is.
const (
	lkFlock = iota + 1 // flock: the open file's
	lkPosix            // fcntl F_SETLK: the process's
	lkOFD              // fcntl F_OFD_SETLK: the open file's
)

type recLock struct {
	kind       uint8 // 0: slot free
	write      bool
	owner      int32 // the fs handle (flock, OFD)
	dev, ino   uint64
	start, end int64 // bytes [start, end]; end math.MaxInt64: to the end, wherever it is
}

var (
	lockLock sched.TWALock
	locks    [maxLocks]recLock
	nlocks   int32           // slots in use (atomic)
	lockSeq  uint32          // bumped when a lock goes (atomic)
	lockWQ   sched.WaitQueue // tasks waiting for a lock
)

const lockKey = 1 // lockWQ's only key

// sameOwner reports whether a lock of kind and owner is l's owner's.
func (l *recLock) sameOwner(kind uint8, owner int32) bool {
	return l.kind == kind && (kind == lkPosix || l.owner == owner)
}

// conflicts reports whether l stands in the way of a lock of kind and
// owner on dev, ino over [start, end] (write: exclusive).
func (l *recLock) conflicts(kind uint8, owner int32, dev, ino uint64, start, end int64, write bool) bool {
	if l.kind == 0 || l.dev != dev || l.ino != ino || !write && !l.write || l.sameOwner(kind, owner) {
		return false
	}
	if (kind == lkFlock) != (l.kind == lkFlock) {
		return false
	}
	return l.start <= end && start <= l.end
}

// findConflict is the first lock in the way; lockLock is held.
func findConflict(kind uint8, owner int32, dev, ino uint64, start, end int64, write bool) *recLock {
	for i := range locks {
		if locks[i].conflicts(kind, owner, dev, ino, start, end, write) {
			return &locks[i]
		}
	}
	return nil
}

// setLock takes (or, with unlock, releases) the lock of kind and owner on
// dev, ino over [start, end]; if another owner's lock is in the way it
// waits for it to go (wait) or returns EAGAIN. Taking a range replaces
// the owner's locks over it, splitting those it covers in part.
func setLock(kind uint8, owner int32, dev, ino uint64, start, end int64, write, unlock, wait bool) abi.Errno {
	for {
		lockLock.Lock()
		if unlock || findConflict(kind, owner, dev, ino, start, end, write) == nil {
			break
		}
		seq := atomic.LoadUint32(&lockSeq)
		lockLock.Unlock()
		if !wait {
			return abi.EAGAIN
		}
		sched.Block(&lockWQ, lockKey, uintptr(unsafe.Pointer(&lockSeq)), seq, 0)
	}
	// Free slots the change may need: one for the new lock, one for the
	// far end of a lock it splits in two.
	free := 0
	for i := range locks {
		if locks[i].kind == 0 {
			free++
		}
	}
	removed := false
	for i := range locks {
		l := &locks[i]
		if l.kind == 0 || !l.sameOwner(kind, owner) || l.dev != dev || l.ino != ino || l.end < start || end < l.start {
			continue
		}
		switch {
		case l.start < start && l.end > end: // split: the far end goes to a new slot
			if free < 2 && !unlock || free < 1 {
				lockLock.Unlock()
				return abi.ENOLCK
			}
			far := *l
			far.start = end + 1
			addLock(far)
			free--
			l.end = start - 1
		case l.start < start:
			l.end = start - 1
		case l.end > end:
			l.start = end + 1
		default:
			*l = recLock{}
			atomic.AddInt32(&nlocks, -1)
			free++
		}
		removed = true
	}
	errno := abi.Errno(0)
	if !unlock {
		if free == 0 {
			errno = abi.ENOLCK
		} else {
			addLock(recLock{kind: kind, write: write, owner: owner, dev: dev, ino: ino, start: start, end: end})
		}
	}
	lockLock.Unlock()
	if removed {
		locksChanged()
	}
	return errno
}

// addLock puts l in a free slot; lockLock is held and there is one.
func addLock(l recLock) {
	for i := range locks {
		if locks[i].kind == 0 {
			locks[i] = l
			atomic.AddInt32(&nlocks, 1)
			return
		}
	}
}

// locksChanged wakes the tasks waiting for a lock to go.
func locksChanged() {
	atomic.AddUint32(&lockSeq, 1)
	lockWQ.Wake(lockKey, sched.MaxTasks)
}

// locksOnClose drops the locks a close of descriptor fd, of fs handle h,
// ends: the process's POSIX locks on the file, and if no other
// descriptor names h, h's flock and OFD locks. fileLock is held.
func locksOnClose(fd, h int) {
	if atomic.LoadInt32(&nlocks) == 0 {
		return
	}
	var st unix.Stat_t
	if vfs.Fstat(h, &st) != 0 {
		return
	}
	last := true
	for i := range files {
		if i != fd && files[i].kind == fileFS && int(files[i].h) == h {
			last = false
			break
		}
	}
	removed := false
	lockLock.Lock()
	for i := range locks {
		l := &locks[i]
		if l.kind == 0 || l.dev != st.Dev || l.ino != st.Ino {
			continue
		}
		if l.kind == lkPosix || last && l.owner == int32(h) {
			*l = recLock{}
			atomic.AddInt32(&nlocks, -1)
			removed = true
		}
	}
	lockLock.Unlock()
	if removed {
		locksChanged()
	}
}

// fileKey is h's device and inode number, and its open flags.
func fileKey(h int) (dev, ino uint64, flags int, err abi.Errno) {
	var st unix.Stat_t
	if e := vfs.Fstat(h, &st); e != 0 {
		return 0, 0, 0, abi.Errno(e)
	}
	fl, e := vfs.Flags(h)
	return st.Dev, st.Ino, fl, abi.Errno(e)
}

func sysFlock(fd, op int) abi.Errno {
	h := fsGet(fd)
	if h < 0 {
		if fd < 0 || fd >= len(files) || files[fd].kind == fileFree {
			return abi.EBADF
		}
		return 0 // a console, socket, epoll or eventfd: nothing to lock against
	}
	err := flock(h, op)
	fsPut(h)
	return err
}

// lockMand is LOCK_MAND, which Linux no longer supports: such a call
// succeeds and does nothing.
const lockMand = 32

func flock(h, op int) abi.Errno {
	if op&lockMand != 0 {
		return 0
	}
	cmd := op &^ unix.LOCK_NB
	if cmd != unix.LOCK_SH && cmd != unix.LOCK_EX && cmd != unix.LOCK_UN {
		return abi.EINVAL
	}
	dev, ino, _, err := fileKey(h)
	if err != 0 {
		return err
	}
	if cmd != unix.LOCK_UN {
		// A conversion drops the old lock first, as Linux's does.
		setLock(lkFlock, int32(h), dev, ino, 0, math.MaxInt64, false, true, false)
	}
	return setLock(lkFlock, int32(h), dev, ino, 0, math.MaxInt64, cmd == unix.LOCK_EX, cmd == unix.LOCK_UN, op&unix.LOCK_NB == 0)
}

// flockT is struct flock.
type flockT struct {
	typ, whence int16
	_           int32
	start, len  int64
	pid         int32
	_           int32
}

// fcntlLock is fcntl's F_GETLK, F_SETLK, F_SETLKW and their F_OFD_ twins
// on fs handle h, with the struct flock at p: copied in first, and for
// F_GETLK back out whole, as Linux's fcntl does.
func fcntlLock(h, cmd int, p uintptr) abi.Errno {
	fl, e := mm.Get[flockT](p)
	if e != 0 {
		return e
	}
	kind, owner := uint8(lkPosix), int32(0)
	if cmd == unix.F_OFD_GETLK || cmd == unix.F_OFD_SETLK || cmd == unix.F_OFD_SETLKW {
		kind, owner = lkOFD, int32(h)
	}
	dev, ino, flags, err := fileKey(h)
	if err != 0 {
		return err
	}
	var base int64
	switch fl.whence {
	case unix.SEEK_SET:
	case unix.SEEK_CUR:
		off, e := vfs.Seek(h, 0, unix.SEEK_CUR)
		if e != 0 {
			return abi.Errno(e)
		}
		base = off
	case unix.SEEK_END:
		var st unix.Stat_t
		if e := vfs.Fstat(h, &st); e != 0 {
			return abi.Errno(e)
		}
		base = st.Size
	default:
		return abi.EINVAL
	}
	if fl.start > math.MaxInt64-base {
		return abi.EOVERFLOW
	}
	start, end := base+fl.start, int64(math.MaxInt64)
	if start < 0 {
		return abi.EINVAL
	}
	switch {
	case fl.len > 0:
		if fl.len-1 > math.MaxInt64-start {
			return abi.EOVERFLOW
		}
		end = start + fl.len - 1
	case fl.len < 0:
		end = start - 1
		start += fl.len
	}
	if start < 0 {
		return abi.EINVAL
	}
	if fl.typ != unix.F_RDLCK && fl.typ != unix.F_WRLCK && fl.typ != unix.F_UNLCK {
		return abi.EINVAL
	}
	write := fl.typ == unix.F_WRLCK
	switch cmd {
	case unix.F_GETLK, unix.F_OFD_GETLK:
		if fl.typ == unix.F_UNLCK || kind == lkOFD && fl.pid != 0 {
			return abi.EINVAL
		}
		lockLock.Lock()
		c := findConflict(kind, owner, dev, ino, start, end, write)
		var out recLock
		if c != nil {
			out = *c
		}
		lockLock.Unlock()
		if c == nil {
			fl.typ = unix.F_UNLCK
			return mm.Put(p, fl)
		}
		fl.typ, fl.whence, fl.start, fl.len, fl.pid = unix.F_RDLCK, unix.SEEK_SET, out.start, 0, 1
		if out.write {
			fl.typ = unix.F_WRLCK
		}
		if out.end != math.MaxInt64 {
			fl.len = out.end - out.start + 1
		}
		if out.kind == lkOFD {
			fl.pid = -1
		}
		return mm.Put(p, fl)
	}
	acc := flags & unix.O_ACCMODE
	if fl.typ == unix.F_RDLCK && acc == unix.O_WRONLY || fl.typ == unix.F_WRLCK && acc == unix.O_RDONLY {
		return abi.EBADF
	}
	if kind == lkOFD && fl.pid != 0 {
		return abi.EINVAL
	}
	return setLock(kind, owner, dev, ino, start, end, write, fl.typ == unix.F_UNLCK,
		cmd == unix.F_SETLKW || cmd == unix.F_OFD_SETLKW)
}
