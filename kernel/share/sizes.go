package share

import (
	"sync/atomic"

	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/kernel/mm"
)

// A share file's size, as its mappings see it (File.Size): the size a
// fault is judged by (a page wholly past it is SIGBUS, the kernel's
// FileFault) and a write-back is bounded by (a mapping never grows its
// file). It is set by mmap (the host's size, Tgetattr) and by the
// program's changes of the size through any open file of the host file
// (Resized, matched by qid), and it is read from the slot itself at the
// moment of use — never from a copy taken before a blocking call, which
// another thread's truncation makes stale.
//
// Under the sizes lock (Env.LockSizes):
//
//   - a change that can shrink the file (ftruncate, truncate, open with
//     O_TRUNC): its Tsetattr or Tlopen and its record (setSize);
//   - a growth's record (a write past the end, fallocate: Resized);
//   - mmap's Tgetattr and its record (the kernel's shareMmap);
//   - each write of a write-back with the size it is bounded by
//     (WriteBack).
//
// So a write-back never writes past an end a truncation set — its writes
// would grow the file again with the mapping's bytes — and mmap never
// records a size older than a change made meanwhile. The pages past a
// new end are taken from the mappings after the lock is dropped (cut):
// Env.Unback waits for the areas, which a write-back holds while it
// waits for this lock.

// Resized records that the program made the host file qpath on share dev
// size bytes long (exact) or at least size bytes long (a write or
// fallocate that grew it): the size every open file of it judges its
// mappings' faults by. When the file shrank, the pages past its new end
// are taken from those mappings, so that touching one raises SIGBUS, as
// Linux's truncation does; grown, they are reachable again (zeroes: a
// share has no page cache). A change that can shrink the file makes its
// host call and the record under the sizes lock: setSize, not this.
func (s *Shares[E]) Resized(dev int32, qpath uint64, size int64, exact bool) {
	if atomic.LoadInt32(&s.MapRefs) == 0 {
		return
	}
	e := env[E]()
	e.LockSizes()
	cut := s.resized(dev, qpath, size, exact)
	e.UnlockSizes()
	if cut {
		s.cut(dev, qpath, size)
	}
}

// setSize is Tsetattr a, which sets the size, on fid, the host file
// qpath on share dev, with its record, under the sizes lock.
func (s *Shares[E]) setSize(dev int32, fid virtio9p.Fid, qpath uint64, a *virtio9p.SetAttr) abi.Errno {
	e := env[E]()
	e.LockSizes()
	err := abi.Errno(s.c(int(dev)).Setattr(fid, a))
	cut := err == 0 && s.resized(dev, qpath, int64(a.Size), true)
	e.UnlockSizes()
	if cut {
		s.cut(dev, qpath, int64(a.Size))
	}
	return err
}

// resized records size in the open files of the host file qpath on
// share dev (Resized's exact or not); the sizes lock is held. It reports
// whether one of them had more (the pages past the new end must go:
// cut). While nothing is mapped no size matters (MapRefs: mmap counts its
// mapping before it asks the host, so a change after that is recorded).
func (s *Shares[E]) resized(dev int32, qpath uint64, size int64, exact bool) bool {
	if atomic.LoadInt32(&s.MapRefs) == 0 {
		return false
	}
	e := env[E]()
	shrank := false
	for h := range s.files {
		f := &s.files[h]
		if !f.Used || f.Qpath != qpath {
			continue // a hint, read without the lock: checked again under it
		}
		e.LockFiles()
		if f.Used && f.Refs > 0 && f.Dev == dev && f.Qpath == qpath && !f.Dir {
			old := atomic.LoadInt64(&f.Size)
			if exact || size > old {
				atomic.StoreInt64(&f.Size, size)
			}
			shrank = shrank || exact && size < old
		}
		e.UnlockFiles()
	}
	return shrank
}

// cut takes the pages from size on (rounded up to a page) from the
// mappings of the open files of the host file qpath on share dev, as
// Linux's truncation does. Each slot is held by a reference meanwhile:
// Env.Unback blocks, and the slot must not become another file's.
func (s *Shares[E]) cut(dev int32, qpath uint64, size int64) {
	e := env[E]()
	for h := range s.files {
		f := &s.files[h]
		if !f.Used || f.Qpath != qpath {
			continue
		}
		e.LockFiles()
		match := f.Used && f.Refs > 0 && f.Dev == dev && f.Qpath == qpath && !f.Dir
		if match {
			f.Refs++
		}
		e.UnlockFiles()
		if !match {
			continue
		}
		e.Unback(h, int64(mm.PageRound(uintptr(size))))
		s.Put(h)
	}
}

// MapSize records the host's size of share file h for its new mapping
// (the kernel's shareMmap), asking the host under the sizes lock. The
// caller counted the mapping in MapRefs first, so that a change of the
// size made after the answer is recorded after this.
func (s *Shares[E]) MapSize(h int) abi.Errno {
	f := &s.files[h]
	e := env[E]()
	var at virtio9p.Attr
	e.LockSizes()
	err := abi.Errno(s.c(int(f.Dev)).Getattr(f.Fid, &at))
	if err == 0 {
		atomic.StoreInt64(&f.Size, int64(at.Size))
	}
	e.UnlockSizes()
	return err
}
