package socket

import (
	"testing"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// TestSockType checks socket's type argument as Linux's __sys_socket
// reads it: unknown flags EINVAL first, then a family beyond NPROTO
// EAFNOSUPPORT, a type beyond SOCK_MAX EINVAL, and a family yolk does not
// have EAFNOSUPPORT.
func TestSockType(t *testing.T) {
	for _, c := range []struct {
		domain, typ int
		t           int
		nb          bool
		e           abi.Errno
	}{
		{unix.AF_UNIX, unix.SOCK_STREAM, unix.SOCK_STREAM, false, 0},
		{unix.AF_INET, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, unix.SOCK_DGRAM, true, 0},
		{unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.SOCK_RAW, false, 0},
		{unix.AF_UNIX, unix.SOCK_STREAM | 0x100, 0, false, abi.EINVAL},
		{afMax, 0x100, 0, false, abi.EINVAL},
		{afMax, unix.SOCK_STREAM, 0, false, abi.Errno(unix.EAFNOSUPPORT)},
		{-1, unix.SOCK_STREAM, 0, false, abi.Errno(unix.EAFNOSUPPORT)},
		{unix.AF_UNIX, 11, 0, false, abi.EINVAL},
		{unix.AF_PACKET, 11, 0, false, abi.EINVAL},
		{unix.AF_PACKET, unix.SOCK_RAW, 0, false, abi.Errno(unix.EAFNOSUPPORT)},
	} {
		typ, nb, e := sockType(c.domain, c.typ)
		if e != c.e || e == 0 && (typ != c.t || nb != c.nb) {
			t.Errorf("sockType(%d, %#x) = %d, %v, %v; want %d, %v, %v", c.domain, c.typ, typ, nb, e, c.t, c.nb, c.e)
		}
	}
}
