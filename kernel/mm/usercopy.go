package mm

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
)

// Copies to and from the program's memory. The user-memory rule
// (usermem.go) is checked when a call starts, but another thread may
// unmap the range afterwards — while the call blocks, or between the
// check and the copy on another CPU. So the kernel never reads or writes
// the program's memory through a plain pointer: it copies, with the one
// routine of the architecture's package (arch/$GOARCH CopyUser), and a
// page fault inside that routine at an address of the areas' range does
// not stop the machine: the trap handler asks UserFixup where to resume
// (Linux's exception table, for one routine), and the copy returns the bytes it
// did not copy, which the call reports as EFAULT. The copy returns
// normally, so whatever lock its caller holds is released on the caller's
// ordinary path; a fault anywhere else is still a kernel fault.

// Bounds of one call's transfer: MaxRW is Linux's MAX_RW_COUNT, the
// bytes one call moves at most; MaxIov is UIO_MAXIOV, the iovecs it
// takes.
const (
	MaxRW  = 1<<31 - 1 - (PageSize - 1)
	MaxIov = 1024
)

// Fixable reports whether a kernel-mode fault at addr, inside the user
// copy, may be fixed up: an address of the areas' range (below it, the
// image never faults for a checked range; above it, the kernel's own
// memory is never the program's).
func Fixable(addr uintptr) bool { return addr >= userMin && addr < userMax+PageSize }

// CopyOut copies b to the program's memory at p: EFAULT unless the
// kernel may write there and the copy completes.
func CopyOut(p uintptr, b []byte) abi.Errno {
	if len(b) == 0 {
		return 0
	}
	if !UserW(p, uintptr(len(b))) || copyUser(p, addrOf(b), uintptr(len(b))) != 0 {
		return abi.EFAULT
	}
	return 0
}

// CopyIn copies the program's len(b) bytes at p into b: EFAULT unless
// they may be read and the copy completes.
func CopyIn(b []byte, p uintptr) abi.Errno {
	if len(b) == 0 {
		return 0
	}
	if !UserOK(p, uintptr(len(b))) || copyUser(addrOf(b), p, uintptr(len(b))) != 0 {
		return abi.EFAULT
	}
	return 0
}

// CopyOutPart and CopyInPart copy what they can: the bytes copied before
// a fault (the range is checked as CopyOut's; a refused range copies 0).
func CopyOutPart(p uintptr, b []byte) int {
	if len(b) == 0 || !UserW(p, uintptr(len(b))) {
		return 0
	}
	return len(b) - int(copyUser(p, addrOf(b), uintptr(len(b))))
}

func CopyInPart(b []byte, p uintptr) int {
	if len(b) == 0 || !UserOK(p, uintptr(len(b))) {
		return 0
	}
	return len(b) - int(copyUser(addrOf(b), p, uintptr(len(b))))
}

// Get is the program's T at p (a plain value type: no pointers).
func Get[T any](p uintptr) (v T, e abi.Errno) {
	e = CopyIn(unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v)), p)
	return v, e
}

// Put stores v, a plain value type, at p in the program's memory.
func Put[T any](p uintptr, v T) abi.Errno {
	return CopyOut(p, unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v)))
}

// zeros is the source ZeroUser copies from.
var zeros [512]byte

// ZeroUser clears the n bytes at p, if p is not 0: EFAULT unless the
// kernel may write them.
func ZeroUser(p, n uintptr) abi.Errno {
	if p == 0 {
		return 0
	}
	if !UserW(p, n) {
		return abi.EFAULT
	}
	for n > 0 {
		c := min(n, uintptr(len(zeros)))
		if copyUser(p, addrOf(zeros[:]), c) != 0 {
			return abi.EFAULT
		}
		p, n = p+c, n-c
	}
	return 0
}

// UserPath copies the NUL-terminated path at p into buf, page by page,
// and returns it without the NUL: EFAULT, or ENAMETOOLONG without a NUL
// in fs.PathMax bytes.
func UserPath(p uintptr, buf *[fs.PathMax]byte) ([]byte, abi.Errno) {
	for n := uintptr(0); n < fs.PathMax; {
		c := min(PageSize-(p+n)%PageSize, fs.PathMax-n)
		if CopyIn(buf[n:n+c], p+n) != 0 {
			return nil, abi.EFAULT
		}
		for i := n; i < n+c; i++ {
			if buf[i] == 0 {
				return buf[:i], 0
			}
		}
		n += c
	}
	return nil, abi.Errno(unix.ENAMETOOLONG)
}

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// Copy copies n bytes from src to dst, where either may be the program's
// memory already checked by the caller, and reports false if a fault
// there (another thread unmapped it since) stopped the copy.
func Copy(dst, src uintptr, n int) bool { return n <= 0 || copyUser(dst, src, uintptr(n)) == 0 }
