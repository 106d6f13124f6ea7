package kernel

import (
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
	l := int32(*at[uint32](lp))
	if l < 0 {
		return 0, abi.EINVAL
	}
	return int(l), 0
}

// copyLen copies b to the program's buffer p and stores n at lp (checked
// by userLen).
func copyLen(b []byte, p, lp uintptr, n int) abi.Errno {
	u, e := mm.UserBufW(p, uintptr(len(b)))
	if e != 0 {
		return e
	}
	copy(u, b)
	*at[uint32](lp) = uint32(n)
	return 0
}

// userIov checks the program's iovec array of cnt entries at p and every
// buffer in it (write: the kernel fills them), as Linux's import_iovec:
// EINVAL for more than 1024 entries or a negative length, EFAULT for bad
// memory; the total is cut at maxRW.
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
		base, l := *at[uintptr](p + i*16), *at[uintptr](p + i*16 + 8)
		if int64(l) < 0 {
			return net.Iov{}, abi.EINVAL
		}
		if _, e := userBuf(base, l, write); e != 0 {
			return net.Iov{}, e
		}
		total += int(min(l, uintptr(maxRW-total)))
	}
	return net.Iov{Vec: p, N: int(cnt), Len: total}, 0
}

// userMsghdr reads the program's msghdr at p and its iovecs.
func userMsghdr(p uintptr, write bool) (*msghdr, net.Iov, abi.Errno) {
	if !mm.UserOK(p, msghdrSize) || write && !mm.UserW(p, msghdrSize) {
		return nil, net.Iov{}, abi.EFAULT
	}
	h := at[msghdr](p)
	if h.iovlen > uioMaxIov {
		return nil, net.Iov{}, abi.Errno(unix.EMSGSIZE)
	}
	v, e := userIov(h.iov, h.iovlen, write)
	return h, v, e
}

// userBuf is the program's n bytes at p, checked for reading or, if write
// (the kernel fills them), writing.
func userBuf(p, n uintptr, write bool) ([]byte, abi.Errno) {
	if write {
		return mm.UserBufW(p, n)
	}
	return mm.UserBuf(p, n)
}
