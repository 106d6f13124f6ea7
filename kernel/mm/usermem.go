package mm

import (
	"sync/atomic"
	"unsafe"

	"yolk/boot"
	"yolk/kernel/abi"
	"yolk/sched"
)

// The user-memory rule: the program cannot be trusted to pass good
// arguments, so the system calls reach user memory only through these
// checks. A range is good below 4 GiB above the low guard (the
// identity-mapped image and RAM), or inside areas of the address space
// that allow the access (writable for what the kernel writes); a range
// whose end wraps around is refused.

// PageRound rounds n up to a whole number of pages.
func PageRound(n uintptr) uintptr { return (n + PageSize - 1) &^ (PageSize - 1) }

// UserHalf reports whether a is an address in the user half, where
// application code and its stacks live (a program counter or stack
// pointer a signal frame restores must be).
func UserHalf(a uint64) bool { return a < userMax+PageSize }

// UserMin and UserMax bound the areas: every mapping lies in [UserMin, UserMax).
const (
	UserMin = userMin
	UserMax = userMax
)

// MaxMapping is the longest mapping the user half holds.
const MaxMapping = userMax - userMin

// UserSpan reports whether [addr, addr+n), n rounded up to pages, ends
// below the top of the user half: the length is bounded before any sum
// is formed, so a huge n cannot wrap around (addr is page-aligned).
func UserSpan(addr, n uintptr) bool { return addr <= userMax && n <= userMax-addr }

// CheckPage is EINVAL unless addr is page-aligned and n is not 0, as
// munmap, mprotect and madvise require.
func CheckPage(addr, n uintptr) abi.Errno {
	if addr&(PageSize-1) != 0 || n == 0 {
		return abi.EINVAL
	}
	return 0
}

// UserOK reports whether [p, p+n) is memory the program may hand the kernel:
// the identity-mapped image and RAM, or accessible mappings.
func UserOK(p, n uintptr) bool { return userRange(p, n, ProtRead) }

// UserW reports whether the kernel may write n bytes at p: writable areas
// only (a write to a read-only page would fault in the kernel).
func UserW(p, n uintptr) bool { return userRange(p, n, ProtWrite) }

// userRange reports whether [p, p+n) is memory the program owns with the
// access need: below the areas, the image only (its text and read-only
// data not for writes); above, areas whose protection has need. The
// frame pool, the boot page tables (bootTables: in the image), MMIO and
// the hole above RAM are not the program's, though the identity map
// reaches them.
func userRange(p, n uintptr, need uint32) bool {
	if p+n < p {
		return false
	}
	if p < 1<<32 {
		return p >= imageLo && p+n <= imageHi && (need&ProtWrite == 0 || p >= imageRO) && !bootTables(p, n)
	}
	for {
		// The table is read without mmLock (the check runs in every
		// system call that takes a buffer): what was read counts only
		// if no change was under way or made meanwhile.
		s := atomic.LoadUint32(&vmSeq)
		if s&1 == 0 {
			ok := areasAllow(p, p+n, need)
			if areasUnchanged(s) {
				return ok
			}
		}
		sched.Pause()
	}
}

// areasAllow reports whether areas cover [p, end) with the access need.
// It may run while the table changes (userRange then throws its answer
// away): every index stays in the array and the walk ends, whatever it
// reads.
func areasAllow(p, end uintptr, need uint32) bool {
	for k := 0; p < end; k++ {
		if k == len(vmas) {
			return false
		}
		i := findVMA(p)
		if i >= nvmas || i >= len(vmas) {
			return false
		}
		v := &vmas[i]
		start, stop, prot := v.start, v.end, v.prot
		if start > p || stop <= p || prot == 0 || prot&need != need {
			return false
		}
		if stop >= end {
			return true
		}
		p = stop
	}
	return true
}

// bootTables reports whether [p, p+n) overlaps the boot page tables,
// which live in the image's BSS beside the program's variables: a read
// into them would rewrite the address space.
func bootTables(p, n uintptr) bool {
	lo := uintptr(unsafe.Pointer(&boot.PageTables[0]))
	return p < lo+uintptr(len(boot.PageTables)) && p+n > lo
}
