package fs

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pipes: a PipeSize ring in pages, with counts of open read and write
// ends. Nothing blocks here; see Wait.

// Pipe makes a pipe and returns its read and write ends (flags:
// O_NONBLOCK is kept in both; O_CLOEXEC is the caller's).
func (f *FS[E]) Pipe(flags int) (r, w int, err Errno) {
	f.env.Lock()
	defer f.env.Unlock()
	if flags&^(unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_DIRECT) != 0 {
		return -1, -1, unix.EINVAL
	}
	p := -1
	for i := range f.pipes {
		if !f.pipes[i].used {
			p = i
			break
		}
	}
	if p < 0 {
		return -1, -1, unix.ENFILE
	}
	r, err = f.newFile(kindPipeR, unix.O_RDONLY|flags&unix.O_NONBLOCK, int32(p))
	if err != 0 {
		return -1, -1, err
	}
	w, err = f.newFile(kindPipeW, unix.O_WRONLY|flags&unix.O_NONBLOCK, int32(p))
	if err != 0 {
		f.files[r].refs = 0
		return -1, -1, err
	}
	pp := &f.pipes[p]
	for i := range pp.pages {
		if pp.pages[i] = f.env.AllocPage(); pp.pages[i] == 0 {
			f.freePipePages(pp)
			f.files[r].refs, f.files[w].refs = 0, 0
			return -1, -1, unix.ENOMEM
		}
	}
	pp.used, pp.readers, pp.writers, pp.r, pp.n = true, 1, 1, 0, 0
	return r, w, 0
}

func (f *FS[E]) freePipePages(pp *pipe) {
	for i, a := range pp.pages {
		if a != 0 {
			f.env.FreePage(a)
			pp.pages[i] = 0
		}
	}
}

func (f *FS[E]) closePipe(fl *file) {
	p := int(fl.obj)
	pp := &f.pipes[p]
	if fl.kind == kindPipeR {
		pp.readers--
	} else {
		pp.writers--
	}
	if pp.readers == 0 && pp.writers == 0 {
		f.freePipePages(pp)
		pp.used = false
	}
	f.bump(p)
}

func (f *FS[E]) readPipe(p int, b []byte) (int, Errno) {
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

func (f *FS[E]) writePipe(p int, b []byte) (int, Errno) {
	pp := &f.pipes[p]
	if pp.readers == 0 {
		return 0, unix.EPIPE
	}
	if len(b) == 0 {
		return 0, 0
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

// Nonblocking reports whether h was opened or set O_NONBLOCK.
func (f *FS[E]) Nonblocking(h int) bool {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	return fl != nil && fl.flags&unix.O_NONBLOCK != 0
}
