package kernel

import (
	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/kernel/net"
)

// uio is the program's buffers of one transfer, in order: one buffer
// (read, write, pread, pwrite), or readv's and writev's iovec array,
// whose entries are read again as the transfer reaches them (userIov
// checked them and counted left; the copies check each range again).
type uio struct {
	vec, cnt uintptr // the iovec entries not reached yet
	base, n  uintptr // the rest of the current buffer
	left     uintptr // the bytes still to move, at most mm.MaxRW
	asked    uintptr // one buffer: its length as the program gave it
	checked  bool    // the ranges were checked (userIov, or the handler)
}

// oneBuf is read's or write's buffer [p, p+n), of which one call moves at
// most mm.MaxRW bytes (Linux's MAX_RW_COUNT); its range is not checked yet.
func oneBuf(p, n uintptr) uio {
	k := min(n, mm.MaxRW)
	return uio{base: p, n: k, left: k, asked: n}
}

// check is EFAULT unless the buffer is the program's (write: the kernel
// writes it), checked whole as Linux's access_ok checks read's count
// before cutting it to MAX_RW_COUNT; readv's were checked by userIov.
func (u *uio) check(write bool) abi.Errno {
	if u.checked || userRange(u.base, u.asked, write) {
		return 0
	}
	return abi.EFAULT
}

// next is the current buffer, the next non-empty iovec once it is done
// (ok false when none is left or an iovec went bad).
func (u *uio) next() (p, n uintptr, ok bool) {
	for u.n == 0 {
		if u.cnt == 0 || u.left == 0 {
			return 0, 0, false
		}
		iov, e := mm.Get[[2]uintptr](u.vec)
		if e != 0 {
			return 0, 0, false
		}
		u.vec, u.cnt = u.vec+16, u.cnt-1
		u.base, u.n = iov[0], min(iov[1], u.left)
	}
	return u.base, u.n, true
}

// skip records that k bytes of the current buffer moved.
func (u *uio) skip(k uintptr) {
	u.base, u.n, u.left = u.base+k, u.n-k, u.left-k
}

// move copies b into the buffers (out) or fills b from them, as far as
// left goes, and returns the bytes moved: fewer at a fault.
func (u *uio) move(b []byte, out bool) int {
	done := 0
	for done < len(b) {
		p, n, ok := u.next()
		if !ok {
			break
		}
		k := int(min(uintptr(len(b)-done), n))
		var c int
		if out {
			c = mm.CopyOutPart(p, b[done:done+k])
		} else {
			c = mm.CopyInPart(b[done:done+k], p)
		}
		done += c
		u.skip(uintptr(c))
		if c < k {
			break
		}
	}
	return done
}

// each moves the buffers one at a time with f (first: nothing moved
// yet), until one is short or fails: the bytes moved in all, as Linux's
// readv and writev on a file without read_iter or write_iter.
func (u *uio) each(f func(p, n uintptr, first bool) (uintptr, abi.Errno)) (uintptr, abi.Errno) {
	done := uintptr(0)
	for {
		p, n, ok := u.next()
		if !ok {
			return done, 0
		}
		c, e := f(p, n, done == 0)
		if e != 0 {
			return partial(done, e)
		}
		done += c
		u.skip(c)
		if c < n {
			return done, 0
		}
	}
}

// eachAt is each for a transfer at file offset off (< 0: at the open
// file's own): f is given each buffer and where it goes (at < 0: the
// file's offset).
func (u *uio) eachAt(off int64, f func(p, n uintptr, at int64) (uintptr, abi.Errno)) (uintptr, abi.Errno) {
	done := int64(0)
	return u.each(func(p, n uintptr, _ bool) (uintptr, abi.Errno) {
		at := off
		if off >= 0 {
			at = off + done
		}
		c, e := f(p, n, at)
		done += int64(c)
		return c, e
	})
}

// iov is u as the socket layer takes the program's buffers.
func (u *uio) iov() net.Iov {
	if u.vec != 0 {
		return net.Iov{Vec: u.vec, N: int(u.cnt), Len: int(u.left)}
	}
	return net.Iov{User: u.base, Len: int(u.n)}
}

// partial is a transfer's result after done bytes and then error e: the
// bytes, or the error if there are none.
func partial(done uintptr, e abi.Errno) (uintptr, abi.Errno) {
	if done > 0 {
		return done, 0
	}
	return 0, e
}
