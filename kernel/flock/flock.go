// Package flock is file locks, as Linux keeps them: flock's whole-file
// locks and fcntl's record locks, both POSIX (F_SETLK, F_SETLKW, F_GETLK:
// owned by the process) and open-file-description ones (F_OFD_SETLK,
// F_OFD_SETLKW, F_OFD_GETLK: owned by the open file, like flock's). A
// lock names its file by device and inode number (fstat), so it holds
// whichever file system the file is on. flock locks and record locks do
// not see each other; POSIX and OFD record locks do. There is one
// process, so its POSIX locks never conflict with each other — threads
// that must exclude each other use flock or OFD locks on files they
// opened separately, as on Linux.
//
// One fixed table under one spin lock. A lock that has to wait blocks on
// one wait queue until the table changes (seq), then looks again.
// Closing any descriptor of a file drops the process's POSIX locks on it;
// closing the last descriptor of an open file drops its flock and OFD
// locks (an open file in flight in an SCM_RIGHTS message counts as
// closed). Not done: EDEADLK detection (one process's POSIX locks cannot
// deadlock each other), locks on sockets, mandatory locks, leases.
//
// Kernel-context Go: nothing here allocates on the Go heap, stores a Go
// pointer into memory, holds an interface value or a func variable, or
// calls the runtime's scheduler. It reaches the kernel only through its
// type parameter (Env: the lock, the wait queue, the open files' stat,
// flags and offset, the descriptor table); a file is the file layer's
// handle, a small integer. kernel/kcontext_test.go checks this on a
// built image; the hosted tests run it with a mutex and a condition.
package flock

import (
	"math"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
)

// Env is what the kernel supplies. It must be a value type without
// pointers (in the kernel an empty struct).
type Env interface {
	// Lock and Unlock guard the table (a spin lock).
	Lock()
	Unlock()
	// Wait blocks the calling thread until the uint32 at addr is no
	// longer val (or it is woken); Wake wakes every thread waiting.
	Wait(addr uintptr, val uint32)
	Wake()
	// Key is handle h's file: its device and inode number. It may run
	// with the descriptor table's lock held (OnClose): it must not
	// block. Size is h's file's size (fstat's).
	Key(h int) (dev, ino uint64, err abi.Errno)
	Size(h int) (int64, abi.Errno)
	// Flags are h's open flags, Offset its file offset.
	Flags(h int) (int, abi.Errno)
	Offset(h int) (int64, abi.Errno)
	// Shared reports whether a descriptor other than fd names h; the
	// descriptor table's lock is held.
	Shared(fd, h int) bool
}

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

// Locks is the table of locks; the kernel has one.
type Locks[E Env] struct {
	locks  [maxLocks]recLock
	nlocks int32  // slots in use (atomic)
	seq    uint32 // bumped when a lock goes (atomic)
}

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

// findConflict is the first lock in the way; the lock is held.
func (x *Locks[E]) findConflict(kind uint8, owner int32, dev, ino uint64, start, end int64, write bool) *recLock {
	for i := range x.locks {
		if x.locks[i].conflicts(kind, owner, dev, ino, start, end, write) {
			return &x.locks[i]
		}
	}
	return nil
}

// setLock takes (or, with unlock, releases) the lock of kind and owner on
// dev, ino over [start, end]; if another owner's lock is in the way it
// waits for it to go (wait) or returns EAGAIN. Taking a range replaces
// the owner's locks over it, splitting those it covers in part.
func (x *Locks[E]) setLock(kind uint8, owner int32, dev, ino uint64, start, end int64, write, unlock, wait bool) abi.Errno {
	var e E
	for {
		e.Lock()
		if unlock || x.findConflict(kind, owner, dev, ino, start, end, write) == nil {
			break
		}
		seq := atomic.LoadUint32(&x.seq)
		e.Unlock()
		if !wait {
			return abi.EAGAIN
		}
		e.Wait(uintptr(unsafe.Pointer(&x.seq)), seq)
	}
	// Free slots the change may need: one for the new lock, one for the
	// far end of a lock it splits in two.
	free := 0
	for i := range x.locks {
		if x.locks[i].kind == 0 {
			free++
		}
	}
	removed := false
	for i := range x.locks {
		l := &x.locks[i]
		if l.kind == 0 || !l.sameOwner(kind, owner) || l.dev != dev || l.ino != ino || l.end < start || end < l.start {
			continue
		}
		switch {
		case l.start < start && l.end > end: // split: the far end goes to a new slot
			if free < 2 && !unlock || free < 1 {
				e.Unlock()
				return abi.ENOLCK
			}
			far := *l
			far.start = end + 1
			x.addLock(far)
			free--
			l.end = start - 1
		case l.start < start:
			l.end = start - 1
		case l.end > end:
			l.start = end + 1
		default:
			*l = recLock{}
			atomic.AddInt32(&x.nlocks, -1)
			free++
		}
		removed = true
	}
	errno := abi.Errno(0)
	if !unlock {
		if free == 0 {
			errno = abi.ENOLCK
		} else {
			x.addLock(recLock{kind: kind, write: write, owner: owner, dev: dev, ino: ino, start: start, end: end})
		}
	}
	e.Unlock()
	if removed {
		x.changed()
	}
	return errno
}

// addLock puts l in a free slot; the lock is held and there is one.
func (x *Locks[E]) addLock(l recLock) {
	for i := range x.locks {
		if x.locks[i].kind == 0 {
			x.locks[i] = l
			atomic.AddInt32(&x.nlocks, 1)
			return
		}
	}
}

// changed wakes the tasks waiting for a lock to go.
func (x *Locks[E]) changed() {
	var e E
	atomic.AddUint32(&x.seq, 1)
	e.Wake()
}

// OnClose drops the locks a close of descriptor fd, of fs handle h,
// ends: the process's POSIX locks on the file, and if no other
// descriptor names h, h's flock and OFD locks. The descriptor table's
// lock is held.
func (x *Locks[E]) OnClose(fd, h int) {
	if atomic.LoadInt32(&x.nlocks) == 0 {
		return
	}
	var e E
	dev, ino, err := e.Key(h)
	if err != 0 {
		return
	}
	last := !e.Shared(fd, h)
	removed := false
	e.Lock()
	for i := range x.locks {
		l := &x.locks[i]
		if l.kind == 0 || l.dev != dev || l.ino != ino {
			continue
		}
		if l.kind == lkPosix || last && l.owner == int32(h) {
			*l = recLock{}
			atomic.AddInt32(&x.nlocks, -1)
			removed = true
		}
	}
	e.Unlock()
	if removed {
		x.changed()
	}
}

// fileKey is h's device and inode number, and its open flags.
func fileKey[E Env](h int) (dev, ino uint64, flags int, err abi.Errno) {
	var e E
	if dev, ino, err = e.Key(h); err != 0 {
		return 0, 0, 0, err
	}
	fl, err := e.Flags(h)
	return dev, ino, fl, err
}

// lockMand is LOCK_MAND, which Linux no longer supports: such a call
// succeeds and does nothing.
const lockMand = 32

// Flock is flock(2) on fs handle h.
func (x *Locks[E]) Flock(h, op int) abi.Errno {
	if op&lockMand != 0 {
		return 0
	}
	cmd := op &^ unix.LOCK_NB
	if cmd != unix.LOCK_SH && cmd != unix.LOCK_EX && cmd != unix.LOCK_UN {
		return abi.EINVAL
	}
	dev, ino, _, err := fileKey[E](h)
	if err != 0 {
		return err
	}
	if cmd != unix.LOCK_UN {
		// A conversion drops the old lock first, as Linux's does.
		x.setLock(lkFlock, int32(h), dev, ino, 0, math.MaxInt64, false, true, false)
	}
	return x.setLock(lkFlock, int32(h), dev, ino, 0, math.MaxInt64, cmd == unix.LOCK_EX, cmd == unix.LOCK_UN, op&unix.LOCK_NB == 0)
}

// flockT is struct flock.
type flockT struct {
	typ, whence int16
	_           int32
	start, len  int64
	pid         int32
	_           int32
}

// Fcntl is fcntl's F_GETLK, F_SETLK, F_SETLKW and their F_OFD_ twins
// on fs handle h, with the struct flock at p: copied in first, and for
// F_GETLK back out whole, as Linux's fcntl does.
func (x *Locks[E]) Fcntl(h, cmd int, p uintptr) abi.Errno {
	fl, e := mm.Get[flockT](p)
	if e != 0 {
		return e
	}
	out, e := x.fcntl(h, cmd, &fl)
	if out {
		return mm.Put(p, fl)
	}
	return e
}

// fcntl is Fcntl on the struct flock copied in; out: fl is to be copied
// back (F_GETLK's answer).
func (x *Locks[E]) fcntl(h, cmd int, fl *flockT) (out bool, err abi.Errno) {
	var env E
	kind, owner := uint8(lkPosix), int32(0)
	if cmd == unix.F_OFD_GETLK || cmd == unix.F_OFD_SETLK || cmd == unix.F_OFD_SETLKW {
		kind, owner = lkOFD, int32(h)
	}
	dev, ino, flags, err := fileKey[E](h)
	if err != 0 {
		return false, err
	}
	var base int64
	switch fl.whence {
	case unix.SEEK_SET:
	case unix.SEEK_CUR:
		off, e := env.Offset(h)
		if e != 0 {
			return false, e
		}
		base = off
	case unix.SEEK_END:
		size, e := env.Size(h)
		if e != 0 {
			return false, e
		}
		base = size
	default:
		return false, abi.EINVAL
	}
	if fl.start > math.MaxInt64-base {
		return false, abi.EOVERFLOW
	}
	start, end := base+fl.start, int64(math.MaxInt64)
	if start < 0 {
		return false, abi.EINVAL
	}
	switch {
	case fl.len > 0:
		if fl.len-1 > math.MaxInt64-start {
			return false, abi.EOVERFLOW
		}
		end = start + fl.len - 1
	case fl.len < 0:
		end = start - 1
		start += fl.len
	}
	if start < 0 {
		return false, abi.EINVAL
	}
	if fl.typ != unix.F_RDLCK && fl.typ != unix.F_WRLCK && fl.typ != unix.F_UNLCK {
		return false, abi.EINVAL
	}
	write := fl.typ == unix.F_WRLCK
	switch cmd {
	case unix.F_GETLK, unix.F_OFD_GETLK:
		if fl.typ == unix.F_UNLCK || kind == lkOFD && fl.pid != 0 {
			return false, abi.EINVAL
		}
		env.Lock()
		c := x.findConflict(kind, owner, dev, ino, start, end, write)
		var lk recLock
		if c != nil {
			lk = *c
		}
		env.Unlock()
		if c == nil {
			fl.typ = unix.F_UNLCK
			return true, 0
		}
		fl.typ, fl.whence, fl.start, fl.len, fl.pid = unix.F_RDLCK, unix.SEEK_SET, lk.start, 0, 1
		if lk.write {
			fl.typ = unix.F_WRLCK
		}
		if lk.end != math.MaxInt64 {
			fl.len = lk.end - lk.start + 1
		}
		if lk.kind == lkOFD {
			fl.pid = -1
		}
		return true, 0
	}
	acc := flags & unix.O_ACCMODE
	if fl.typ == unix.F_RDLCK && acc == unix.O_WRONLY || fl.typ == unix.F_WRLCK && acc == unix.O_RDONLY {
		return false, abi.EBADF
	}
	if kind == lkOFD && fl.pid != 0 {
		return false, abi.EINVAL
	}
	return false, x.setLock(kind, owner, dev, ino, start, end, write, fl.typ == unix.F_UNLCK,
		cmd == unix.F_SETLKW || cmd == unix.F_OFD_SETLKW)
}
