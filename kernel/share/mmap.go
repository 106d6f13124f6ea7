package share

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/kernel/mm"
)

// Memory mappings of share files: an area's file is -(h+1) for share
// file h (in-memory files' are their inode + 1), and a share has no page
// cache: mmap reads the file into the mapping (the kernel's sys_mm.go),
// and the program's writes to a shared mapping go back to the host at
// msync, munmap, mprotect, fsync and the program's end (WriteBack).

// Area is the area file of share file h.
func Area(h int) int32 { return -int32(h) - 1 }

// AreaFile is the share file of area file file (< 0).
func AreaFile(file int32) int { return int(-file - 1) }

// WriteBack writes the pages of the writable shared mappings of
// share files in [addr, end) back to the host — only share file h's if h
// >= 0 — up to the file's size (a mapping never grows its file, as on
// Linux). A mapping the program cannot write holds nothing of its own: a
// write-back would put the file as it was at mmap over what write(2) and
// pwrite(2) wrote since (and fail for a file open read-only); mprotect
// and MAP_FIXED write a mapping back before they take its writes away.
// The areas are held meanwhile (mm.HoldAreas): another thread's munmap
// could otherwise close the file, and a new open take its slot, between
// FileArea and the writes.
func (s *Shares[E]) WriteBack(addr, end uintptr, h int) abi.Errno {
	var err abi.Errno
	mm.HoldAreas()
	defer mm.ReleaseAreas()
	for addr < end {
		start, e, file, off, shared, prot, ok := mm.FileArea(addr, end)
		if !ok {
			break
		}
		addr = e
		if !shared || prot&mm.ProtWrite == 0 || file > 0 || AreaFile(file) >= NumFiles || h >= 0 && AreaFile(file) != h {
			continue
		}
		f := s.File(AreaFile(file))
		c := s.Client(f.Dev)
		var at virtio9p.Attr
		if ge := c.Getattr(f.Fid, &at); ge != 0 {
			err = abi.Errno(ge)
			continue
		}
		// Up to the file's end, and not past the size faults are
		// judged by (the pages past it are not the mapping's).
		size := min(int64(at.Size), atomic.LoadInt64(&f.Size))
		if size <= off {
			continue
		}
		// Only the pages with a frame: a page never touched holds
		// nothing of the program's, and writing it would put zeroes
		// over what the file got meanwhile past the end the mapping
		// was filled to (a pwrite), or since madvise dropped it.
		stop := start + uintptr(min(int64(e-start), size-off))
		for p := start; p < stop; {
			next := min((p|(mm.PageSize-1))+1, stop)
			if !mm.Backed(p) {
				p = next
				continue
			}
			for next < stop && mm.Backed(next) {
				next = min(next+mm.PageSize, stop)
			}
			if _, we := c.Write(f.Fid, uint64(off+int64(p-start)), bytesAt(p, int(next-p))); we != 0 {
				err = abi.Errno(we)
			}
			p = next
		}
	}
	return err
}

// Fallocate is fallocate on share file h: 9P2000.L has no Tfallocate,
// so mode 0 grows the file to cover the range with Tsetattr (the host
// file is sparse there: no blocks are reserved) and FALLOC_FL_KEEP_SIZE
// only checks its arguments.
func (s *Shares[E]) Fallocate(h, mode int, off, n int64) abi.Errno {
	f := s.File(h)
	switch {
	case off < 0 || n <= 0:
		return abi.EINVAL
	case mode&^unix.FALLOC_FL_KEEP_SIZE != 0:
		return abi.EOPNOTSUPP
	case int(f.Flags)&unix.O_ACCMODE == unix.O_RDONLY:
		return abi.EBADF
	case f.Dir:
		return abi.Errno(unix.EISDIR)
	case off+n < 0:
		return abi.Errno(unix.EFBIG)
	}
	c := s.Client(f.Dev)
	var at virtio9p.Attr
	if e := c.Getattr(f.Fid, &at); e != 0 {
		return abi.Errno(e)
	}
	if mode != 0 || off+n <= int64(at.Size) {
		return 0
	}
	e := abi.Errno(c.Setattr(f.Fid, &virtio9p.SetAttr{Valid: virtio9p.SetSize, Size: uint64(off + n)}))
	if e == 0 {
		s.Resized(f.Dev, f.Qpath, off+n, false)
	}
	return e
}

// bytesAt is the n bytes at address a (the program's, written back: the
// 9P client copies them with its environment's fault-safe copy).
func bytesAt(a uintptr, n int) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&a))), n)
}
