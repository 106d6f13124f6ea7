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
// and the pages the program wrote in a shared mapping go back to the
// host at msync, munmap, mprotect, fsync and the program's end
// (WriteBack).

// Area is the area file of share file h.
func Area(h int) int32 { return -int32(h) - 1 }

// AreaFile is the share file of area file file (< 0).
func AreaFile(file int32) int { return int(-file - 1) }

// WriteBack writes the pages of the writable shared mappings of share
// files in [addr, end) that the program stored to since they were last
// written back (or filled at mmap) back to the host — only share file
// h's if h >= 0 — up to the file's size (a mapping never grows its
// file, as on Linux). A page only read, or never touched, holds nothing
// of the program's: writing it would put what it read over what the
// host, a write(2) or a pwrite(2) put in the file since. mm tracks the
// stores (kernel/mm/dirty.go: the PTE's dirty bit on amd64, the write
// fault of a page mapped read-only while clean on arm64); TakeDirty
// cleans a run of written pages, with the shootdown that needs, before
// its bytes are read and written, so a store made meanwhile is either in
// this write or marks the page for the next. A mapping the program
// cannot write holds nothing of its own either (and writing would fail
// for a file open read-only); mprotect and MAP_FIXED write a mapping
// back before they take its writes away. The areas are held meanwhile
// (mm.HoldAreas): another thread's munmap could otherwise close the
// file, and a new open take its slot, between FileArea and the writes.
//
// Each write is bounded by the size in the file's slot read just before
// it, under the sizes lock (sizes.go): a truncation by another thread
// while the write-back waits for the host must not be undone by the
// writes after it.
func (s *Shares[E]) WriteBack(addr, end uintptr, h int) abi.Errno {
	var err abi.Errno
	en := env[E]()
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
		for p := start; p < e; {
			en.LockSizes()
			// Up to the file's end on the host, and not past the size
			// faults are judged by, as the slot has it now (the pages
			// past it are not the mapping's). The pages past the
			// limit are not cleaned: should the file grow, they are
			// still the program's to write back.
			lim := start + uintptr(min(int64(e-start), max(min(int64(at.Size), atomic.LoadInt64(&f.Size))-off, 0)))
			if p >= lim {
				en.UnlockSizes()
				break
			}
			ds, de := en.TakeDirty(p, lim)
			if ds < de {
				stop := min(de, lim)
				if _, we := c.Write(f.Fid, uint64(off+int64(ds-start)), bytesAt(ds, int(stop-ds))); we != 0 {
					err = abi.Errno(we)
				}
			}
			en.UnlockSizes()
			p = de
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
