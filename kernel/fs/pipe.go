package fs

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pipes: a PipeSize ring in pages, with counts of open read and write
// ends. pipe(2) makes one with two ends; a FIFO gets one at its first
// open, which goes away with its last close (and the data with it). Nothing
// blocks here; see Wait and OpenWait.

// Pipe makes a pipe and returns its read and write ends (flags:
// O_NONBLOCK is kept in both; O_CLOEXEC is the caller's).
func (f *FS[E]) Pipe(flags int) (r, w int, err Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	if flags&^(unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_DIRECT) != 0 {
		return -1, -1, unix.EINVAL
	}
	r, err = f.newFile(kindPipe, unix.O_RDONLY|flags&unix.O_NONBLOCK, -1)
	if err != 0 {
		return -1, -1, err
	}
	w, err = f.newFile(kindPipe, unix.O_WRONLY|flags&unix.O_NONBLOCK, -1)
	if err != 0 {
		f.files[r].refs = 0
		return -1, -1, err
	}
	p, err := f.newPipe(-1)
	if err != 0 {
		f.files[r].refs, f.files[w].refs = 0, 0
		return -1, -1, err
	}
	pp := &f.pipes[p]
	pp.readers, pp.writers, pp.rOpens, pp.wOpens = 1, 1, 1, 1
	f.files[r].obj, f.files[w].obj = p, p
	// The read end's partner count is 0: it reports EPOLLHUP as soon as
	// the writers are gone.
	return r, w, 0
}

// newPipe takes a free pipe and its pages (fifo: the FIFO inode, -1 for
// pipe(2)).
func (f *FS[E]) newPipe(fifo int32) (int32, Errno) {
	for i := range f.pipes {
		pp := &f.pipes[i]
		if pp.used {
			continue
		}
		for j := range pp.pages {
			if pp.pages[j] = f.env.AllocPage(); pp.pages[j] == 0 {
				f.freePipePages(pp)
				return -1, unix.ENOMEM
			}
		}
		*pp = pipe{used: true, fifo: fifo + 1, pages: pp.pages, seq: pp.seq}
		return int32(i), 0
	}
	return -1, unix.ENFILE
}

func (f *FS[E]) freePipePages(pp *pipe) {
	for i, a := range pp.pages {
		if a != 0 {
			f.env.FreePage(a)
			pp.pages[i] = 0
		}
	}
}

func canRead(fl *file) bool  { return fl.flags&unix.O_ACCMODE != unix.O_WRONLY }
func canWrite(fl *file) bool { return fl.flags&unix.O_ACCMODE != unix.O_RDONLY }

func (f *FS[E]) closePipe(fl *file) {
	p := int(fl.obj)
	pp := &f.pipes[p]
	if canRead(fl) {
		pp.readers--
	}
	if canWrite(fl) {
		pp.writers--
	}
	if pp.readers == 0 && pp.writers == 0 {
		f.freePipePages(pp)
		if pp.fifo != 0 {
			f.inodes[pp.fifo-1].fifo = 0
		}
		pp.used = false
	}
	f.bump(p)
}

// openFIFO makes open file h an end of FIFO ino's pipe (both ends for
// O_RDWR). A blocking open that has to wait for the other end is marked
// (see OpenWait); a nonblocking write-only open without a reader is
// ENXIO, as Linux.
func (f *FS[E]) openFIFO(h int, ino int32) Errno {
	ip := &f.inodes[ino]
	fl := &f.files[h]
	acc := fl.flags & unix.O_ACCMODE
	nonblock := fl.flags&unix.O_NONBLOCK != 0
	p := ip.fifo - 1
	if p < 0 {
		if acc == unix.O_WRONLY && nonblock {
			return unix.ENXIO
		}
		var e Errno
		if p, e = f.newPipe(ino); e != 0 {
			return e
		}
		ip.fifo = p + 1
	}
	pp := &f.pipes[p]
	switch acc {
	case unix.O_RDONLY:
		pp.readers++
		pp.rOpens++
		if pp.writers == 0 {
			// No EPOLLHUP and no end of the wait before a writer
			// came, as Linux's f_pipe.
			fl.partner = pp.wOpens
			if !nonblock {
				fl.waitFor = waitWriter
			}
		}
	case unix.O_WRONLY:
		if pp.readers == 0 {
			if nonblock {
				return unix.ENXIO // the pipe was made by another open: it stays
			}
			fl.waitFor = waitReader
		}
		pp.writers++
		pp.wOpens++
		fl.partner = pp.rOpens
	default:
		pp.readers++
		pp.writers++
		pp.rOpens++
		pp.wOpens++
	}
	fl.kind, fl.obj, fl.ino = kindPipe, p, ino
	ip.refs++
	f.bump(int(p))
	return 0
}

// OpenWait names what the blocking open of a FIFO end h waits for: the
// other end to be opened (then ok is false). As Wait: take it, and
// block until *addr != val; the wait is over when ok comes back false.
func (f *FS[E]) OpenWait(h int) (pipe int, addr uintptr, val uint32, ok bool) {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	if fl == nil || fl.kind != kindPipe || fl.waitFor == 0 {
		return 0, 0, 0, false
	}
	pp := &f.pipes[fl.obj]
	if fl.waitFor == waitWriter && pp.wOpens != fl.partner || fl.waitFor == waitReader && pp.rOpens != fl.partner {
		fl.waitFor = 0
		return 0, 0, 0, false
	}
	return int(fl.obj), uintptr(unsafe.Pointer(&pp.seq)), atomic.LoadUint32(&pp.seq), true
}

func (f *FS[E]) readPipe(fl *file, b []byte) (int, Errno) {
	p := int(fl.obj)
	pp := &f.pipes[p]
	if len(b) == 0 {
		return 0, 0
	}
	if pp.n == 0 {
		if pp.writers == 0 {
			return 0, 0
		}
		return 0, unix.EAGAIN
	}
	n := 0
	for n < len(b) && pp.n > 0 {
		in := pp.r % PageSize
		c := PageSize - in
		if c > pp.n {
			c = pp.n
		}
		c = copy(b[n:], mem(pp.pages[pp.r/PageSize]+uintptr(in), c))
		n += c
		pp.r = (pp.r + c) % PipeSize
		pp.n -= c
	}
	f.bump(p)
	return n, 0
}

func (f *FS[E]) writePipe(fl *file, b []byte) (int, Errno) {
	p := int(fl.obj)
	pp := &f.pipes[p]
	if len(b) == 0 {
		return 0, 0 // even with no reader, as Linux's pipe_write
	}
	if pp.readers == 0 {
		return 0, unix.EPIPE
	}
	space := PipeSize - pp.n
	if space == 0 || len(b) <= PipeBuf && space < len(b) {
		return 0, unix.EAGAIN
	}
	n := 0
	for n < len(b) && pp.n < PipeSize {
		w := (pp.r + pp.n) % PipeSize
		in := w % PageSize
		c := PageSize - in
		if c > PipeSize-pp.n {
			c = PipeSize - pp.n
		}
		c = copy(mem(pp.pages[w/PageSize]+uintptr(in), c), b[n:])
		n += c
		pp.n += c
	}
	f.bump(p)
	return n, 0
}

// Wait names what a caller of Read or Write on h that got EAGAIN waits
// for: pipe, the index Env.Wake is called with, and the address of a
// counter that changes (atomically) with every change of the pipe's state,
// with the value it had before the call. Take it before calling Read or
// Write, then block until *addr != val: a change in between is not lost.
// Files never wait: ok is false for them.
func (f *FS[E]) Wait(h int) (pipe int, addr uintptr, val uint32, ok bool) {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	if fl == nil || fl.kind == kindInode {
		return 0, 0, 0, false
	}
	pp := &f.pipes[fl.obj]
	return int(fl.obj), uintptr(unsafe.Pointer(&pp.seq)), atomic.LoadUint32(&pp.seq), true
}

// PipeSeqAddr is the address of pipe p's change counter (Wait's addr),
// for the self-tests' report of a wait that did not end.
func (f *FS[E]) PipeSeqAddr(p int) uintptr {
	return uintptr(unsafe.Pointer(&f.pipes[uint(p)%NumPipes].seq))
}

// Nonblocking reports whether h was opened or set O_NONBLOCK.
func (f *FS[E]) Nonblocking(h int) bool {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	return fl != nil && fl.flags&unix.O_NONBLOCK != 0
}

// Pollable tells epoll whether h can be watched: pipes can; regular
// files and directories cannot (EPERM, as Linux). It returns the open
// file's identity, which Poll checks (a handle is reused after its last
// close), and the address of the counter that changes with every change
// of h's readiness (as Wait's).
func (f *FS[E]) Pollable(h int) (id uint64, addr uintptr, e Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	if fl == nil {
		return 0, 0, unix.EBADF
	}
	if fl.kind != kindPipe {
		return 0, 0, unix.EPERM
	}
	return fl.id, uintptr(unsafe.Pointer(&f.pipes[fl.obj].seq)), 0
}

// Poll is the readiness of open file h as epoll events, as Linux's
// pipe_poll: a readable end is EPOLLIN with data, EPOLLHUP when no writer
// is left (of a FIFO: once one has been there since it opened); a
// writable end is EPOLLOUT with room for PipeBuf bytes, EPOLLERR when no
// reader is left. seq is the change counter's value the events belong
// to. ok is false when h is no longer the open file id names.
func (f *FS[E]) Poll(h int, id uint64) (events uint32, seq uint32, ok bool) {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	if fl == nil || fl.id != id || fl.kind != kindPipe {
		return 0, 0, false
	}
	pp := &f.pipes[fl.obj]
	if canRead(fl) {
		if pp.n > 0 {
			events |= unix.EPOLLIN | unix.EPOLLRDNORM
		}
		if pp.writers == 0 && pp.wOpens != fl.partner {
			events |= unix.EPOLLHUP
		}
	}
	if canWrite(fl) {
		if PipeSize-pp.n >= PipeBuf {
			events |= unix.EPOLLOUT | unix.EPOLLWRNORM
		}
		if pp.readers == 0 {
			events |= unix.EPOLLERR
		}
	}
	return events, atomic.LoadUint32(&pp.seq), true
}

// Readable is ioctl's FIONREAD on handle h: the bytes a pipe end holds,
// or a regular file's past the offset (0 at or past its end); ENOTTY for
// anything else, as Linux.
func (f *FS[E]) Readable(h int) (int, Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	switch {
	case fl == nil:
		return 0, unix.EBADF
	case fl.kind == kindPipe:
		return f.pipes[fl.obj].n, 0
	case fl.kind == kindInode && f.inodes[fl.obj].mode&unix.S_IFMT == unix.S_IFREG:
		return int(max(f.inodes[fl.obj].size-fl.off, 0)), 0
	}
	return 0, unix.ENOTTY
}
