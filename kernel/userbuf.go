package kernel

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/kernel/net"
)

// The kernel's checked views of the program's memory for the system
// calls: buffers, iovec arrays, lengths the call writes back, msghdr
// structures. Every address goes through kernel/mm's user-memory rule.

// userLen is the program's socklen_t at lp, which the call writes back:
// EFAULT if it may not, EINVAL if it is negative.
func userLen(lp uintptr) (int, abi.Errno) {
	if !mm.UserW(lp, 4) {
		return 0, abi.EFAULT
	}
	l, e := mm.Get[int32](lp)
	if e != 0 {
		return 0, e
	}
	if l < 0 {
		return 0, abi.EINVAL
	}
	return int(l), 0
}

// copyLen copies b to the program's buffer p and stores n at lp (checked
// by userLen).
func copyLen(b []byte, p, lp uintptr, n int) abi.Errno {
	if e := mm.CopyOut(p, b); e != 0 {
		return e
	}
	return mm.Put(lp, uint32(n))
}

// userIov checks the program's iovec array of cnt entries at p and every
// buffer in it (write: the kernel fills them), as Linux's import_iovec:
// EINVAL for more than 1024 entries or a negative length, EFAULT for bad
// memory; the total is cut at maxRW. The transfer reads the array again
// as it goes (it may change meanwhile) and copies through the checks of
// kernel/mm's user copy.
func userIov(p, cnt uintptr, write bool) (net.Iov, abi.Errno) {
	if cnt > uioMaxIov {
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
		total += int(min(l, uintptr(maxRW-total)))
	}
	return net.Iov{Vec: p, N: int(cnt), Len: total}, 0
}

// userMsghdr copies in the program's msghdr at p and checks its iovecs
// (write: recvmsg, which fills them and writes the header back).
func userMsghdr(p uintptr, write bool) (msghdr, net.Iov, abi.Errno) {
	if !mm.UserOK(p, msghdrSize) || write && !mm.UserW(p, msghdrSize) {
		return msghdr{}, net.Iov{}, abi.EFAULT
	}
	h, e := mm.Get[msghdr](p)
	if e != 0 {
		return msghdr{}, net.Iov{}, e
	}
	if h.iovlen > uioMaxIov {
		return msghdr{}, net.Iov{}, abi.Errno(unix.EMSGSIZE)
	}
	v, e := userIov(h.iov, h.iovlen, write)
	return h, v, e
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
