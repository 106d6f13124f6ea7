package kernel

import (
	"unsafe"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/kernel/net"
)

// The kernel's checked views of the program's memory for the system
// calls: buffers and iovec arrays (the socket calls' lengths and msghdr
// structures are kernel/socket's). Every address goes through kernel/mm's user-memory rule.

// userIov checks the program's iovec array of cnt entries at p and every
// buffer in it (write: the kernel fills them), as Linux's import_iovec:
// EINVAL for more than 1024 entries or a negative length, EFAULT for bad
// memory; the total is cut at mm.MaxRW. The transfer reads the array again
// as it goes (it may change meanwhile) and copies through the checks of
// kernel/mm's user copy.
func userIov(p, cnt uintptr, write bool) (net.Iov, abi.Errno) {
	if cnt > mm.MaxIov {
		return net.Iov{}, abi.EINVAL
	}
	if cnt == 0 {
		return net.Iov{}, 0
	}
	if !mm.UserOK(p, cnt*16) {
		return net.Iov{}, abi.EFAULT
	}
	total := 0
	for i := uintptr(0); i < cnt; i++ {
		iov, e := mm.Get[[2]uintptr](p + i*16)
		if e != 0 {
			return net.Iov{}, e
		}
		base, l := iov[0], iov[1]
		if int64(l) < 0 {
			return net.Iov{}, abi.EINVAL
		}
		if !userRange(base, l, write) {
			return net.Iov{}, abi.EFAULT
		}
		total += int(min(l, uintptr(mm.MaxRW-total)))
	}
	return net.Iov{Vec: p, N: int(cnt), Len: total}, 0
}

// userRange reports whether the program's n bytes at p may be read or,
// if write (the kernel fills them), written: any p for n 0, as Linux's
// access_ok (read(fd, NULL, 0) is 0, not EFAULT).
func userRange(p, n uintptr, write bool) bool {
	if n == 0 {
		return true
	}
	if int(n) < 0 {
		return false
	}
	if write {
		return mm.UserW(p, n)
	}
	return mm.UserOK(p, n)
}

// noEscape is b, hidden from escape analysis, for a call through a func
// value the compiler cannot see into (the *at handlers' op, which does
// not keep it): else a local buffer would move to the heap.
func noEscape(b []byte) []byte {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return unsafe.Slice(at[byte](p), len(b))
}

// noEscapeP is p, hidden from escape analysis, for a call through a
// kind's table (fileops.go), which the compiler cannot see into and
// which does not keep it: else the caller's local would move to the heap.
func noEscapeP[T any](p *T) *T { return at[T](uintptr(unsafe.Pointer(p))) }
