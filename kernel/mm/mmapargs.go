package mm

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// mmap's argument checks, in Linux's order (sys_mmap, do_mmap,
// get_unmapped_area). The kernel's mmap makes them between its own (the
// descriptor's EBADF before MapArea; the file's access mode and whether
// its kind can be mapped after MapFileType) and then maps with Map or
// MapFile.

// MapArea checks mmap's length and address as Linux's do_mmap and
// get_unmapped_area do, in their order, and returns the address as the
// areas take it and the length rounded up to pages: a length of 0 is
// EINVAL; one that rounds past the top of the address space, or longer
// than the user half, ENOMEM; then, with MAP_FIXED or
// MAP_FIXED_NOREPLACE, a range past the user half is ENOMEM and an
// unaligned address EINVAL. Without them the address is a hint, rounded
// down to its page as Linux's round_hint_to_min does, and used if that
// range is free and in the user half (ignored otherwise: a kernel-half
// hint too). (do_mmap's check that the offset in pages plus the length
// does not wrap cannot fail with 64-bit offsets; a file's offset past
// what it can hold is EOVERFLOW later, MapFileType.)
func MapArea(addr, n, flags uintptr) (uintptr, uintptr, abi.Errno) {
	switch {
	case n == 0:
		return 0, 0, abi.EINVAL
	case n > MaxMapping:
		return 0, 0, abi.ENOMEM
	}
	n = PageRound(n)
	if flags&(unix.MAP_FIXED|unix.MAP_FIXED_NOREPLACE) == 0 {
		return addr &^ (PageSize - 1), n, 0
	}
	switch {
	case addr > UserMax-n:
		return 0, 0, abi.ENOMEM
	case addr&(PageSize-1) != 0:
		return 0, 0, abi.EINVAL
	}
	return addr, n, 0
}

// MapTaken reports whether MAP_FIXED_NOREPLACE asks for [addr, addr+n),
// which is not all free: EEXIST — with MAP_FIXED too, which then replaces
// nothing — which Linux checks after the length and address and before
// a file's offset, the mapping type and the file's access mode. (The
// kernel's mmap checks again after mapping: a hint is placed elsewhere
// when taken.)
func MapTaken(addr, n, flags uintptr) bool {
	return flags&unix.MAP_FIXED_NOREPLACE != 0 && Overlaps(addr, addr+n)
}

// MapCharge is how a mapping counts against memory (Charge): never
// with MAP_NORESERVE, at mmap if shared and anonymous, never if shared
// and of a file, when writable if private.
func MapCharge(flags uintptr, shared, anon bool) Charge {
	switch {
	case flags&unix.MAP_NORESERVE != 0, shared && !anon:
		return ChargeNone
	case shared:
		return ChargeNow
	}
	return ChargeWrite
}

// legacyMapFlags are the flags MAP_SHARED_VALIDATE accepts (Linux's
// LEGACY_MAP_MASK; MAP_SYNC is for DAX files only): MAP_SHARED, _PRIVATE,
// _FIXED, _ANONYMOUS, _GROWSDOWN, _DENYWRITE, _EXECUTABLE, _LOCKED,
// _NORESERVE, _POPULATE, _NONBLOCK, _STACK, _HUGETLB, _HUGE_2MB, _HUGE_1GB
// and the architecture's own (archMapFlags).
const legacyMapFlags = 0x3 | 0x10 | 0x20 | 0x100 | 0x800 | 0x1000 | 0x2000 | 0x4000 |
	0x8000 | 0x10000 | 0x20000 | 0x40000 | 21<<26 | 30<<26 | archMapFlags

// MapFileType checks a file mapping of n bytes (a whole number of pages)
// from offset off after MapArea and MapTaken, in Linux's order: the offset
// past what a file holds (EOVERFLOW), the mapping type (EINVAL),
// MAP_SHARED_VALIDATE's flags (EOPNOTSUPP: MAP_SHARED ignores flags it
// does not know). shared: MAP_SHARED or MAP_SHARED_VALIDATE.
func MapFileType(n, flags, off uintptr) (shared bool, e abi.Errno) {
	if int64(off) < 0 || int64(off+n) < int64(off) {
		return false, abi.EOVERFLOW
	}
	typ := flags & (unix.MAP_SHARED | unix.MAP_PRIVATE)
	if typ == 0 {
		return false, abi.EINVAL
	}
	if typ == unix.MAP_SHARED_VALIDATE && flags&^legacyMapFlags != 0 {
		return false, abi.EOPNOTSUPP
	}
	return typ != unix.MAP_PRIVATE, 0
}
