package socket

import (
	"unsafe"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/kernel/net"
)

// Net is the TCP/IP service's private call (abi.SysNet): the channel
// between the socket layer (kernel/net, svc.go) and package netsvc. It
// copies the NetCall at p in and out; the buffer it names is the
// program's, copied under the socket lock as the socket calls copy
// theirs. Production call: not gated by abi.TestCalls.
func (k Calls[E]) Net(p uintptr) abi.Errno {
	const size = unsafe.Sizeof(abi.NetCall{})
	if !mm.UserW(p, size) {
		return abi.EFAULT
	}
	c, e := mm.Get[abi.NetCall](p)
	if e != 0 {
		return e
	}
	if c.Op == abi.NetUp {
		return k.env().ServiceUp(c)
	}
	// The buffer the call names is reached through the socket layer's
	// copies (Env.CopyIn, CopyOut), as a socket call's: a bad one is
	// EFAULT. The others' Len is a number.
	var v net.Iov
	switch c.Op {
	case abi.NetPoll, abi.NetRx, abi.NetTx, abi.NetDgramIn, abi.NetDgramOut, abi.NetRoutes4:
		if c.Buf != 0 {
			v = net.Iov{User: c.Buf, Len: int(min(c.Len, 1<<20))}
		}
	}
	e = abi.Errno(k.socks().Service(&c, &v))
	if pe := mm.Put(p, c); pe != 0 {
		return pe
	}
	return e
}
