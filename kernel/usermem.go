package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
)

func pageRound(n uintptr) uintptr { return (n + pageSize - 1) &^ (pageSize - 1) }

func checkPage(addr, n uintptr) abi.Errno {
	if addr&(pageSize-1) != 0 || n == 0 {
		return abi.EINVAL
	}
	return 0
}

// userOK reports whether [p, p+n) is memory the program may hand the kernel:
// the identity-mapped image and RAM, or accessible mappings.
func userOK(p, n uintptr) bool { return userRange(p, n, protRead) }

// userW reports whether the kernel may write n bytes at p: writable areas
// only (a write to a read-only page would fault in the kernel).
func userW(p, n uintptr) bool { return userRange(p, n, protWrite) }

func userRange(p, n uintptr, need uint32) bool {
	if p < lowGuard || p+n < p {
		return false
	}
	if p+n <= 1<<32 {
		return true
	}
	mmLock.Lock()
	defer mmLock.Unlock()
	for p < p+n {
		i := findVMA(p)
		if i >= nvmas || vmas[i].start > p || vmas[i].prot == 0 || vmas[i].prot&need != need {
			return false
		}
		if vmas[i].end >= p+n {
			return true
		}
		n -= vmas[i].end - p
		p = vmas[i].end
	}
	return true
}

func zeroUser(p, n uintptr) abi.Errno {
	if p == 0 {
		return 0
	}
	if !userW(p, n) {
		return abi.EFAULT
	}
	clear(bytesAt(p, int(n)))
	return 0
}

// userPath is the NUL-terminated path at p.
func userPath(p uintptr) ([]byte, abi.Errno) {
	for n := uintptr(0); n < fs.PathMax; n++ {
		if (p+n)%pageSize == 0 || n == 0 {
			if !userOK(p+n, 1) {
				return nil, abi.EFAULT
			}
		}
		if *at[byte](p + n) == 0 {
			return bytesAt(p, int(n)), 0
		}
	}
	return nil, abi.Errno(unix.ENAMETOOLONG)
}

// userBuf is the n bytes at p, checked.
func userBuf(p, n uintptr) ([]byte, abi.Errno) { return userBufNeed(p, n, protRead) }

// userBufW is userBuf for a buffer the kernel writes.
func userBufW(p, n uintptr) ([]byte, abi.Errno) { return userBufNeed(p, n, protWrite) }

func userBufNeed(p, n uintptr, need uint32) ([]byte, abi.Errno) {
	if n == 0 {
		return nil, 0
	}
	if int(n) < 0 || !userRange(p, n, need) {
		return nil, abi.EFAULT
	}
	return bytesAt(p, int(n)), 0
}
