package kernel

import (
	"sync/atomic"
	"unsafe"

	"yolk/drivers/virtionet"
	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/kernel/net"
)

// The TCP/IP service's private call (abi.SysNet): the channel between the
// socket layer (kernel/net, svc.go) and package netsvc. The kernel copies
// the NetCall in and out; the buffer it names is the program's, copied
// under the socket lock as the socket calls copy theirs.
// Production call: not gated by abi.TestCalls.

var (
	netEventfd int32 // the service's eventfd + 1; 0: none
	netUpDone  bool  // eth0 is in netlink's table
)

func sysNet(p uintptr) abi.Errno {
	const size = unsafe.Sizeof(abi.NetCall{})
	if !mm.UserW(p, size) {
		return abi.EFAULT
	}
	c, e := mm.Get[abi.NetCall](p)
	if e != 0 {
		return e
	}
	if c.Op == abi.NetUp {
		return netUp(&c)
	}
	// The buffer the call names is reached through the socket layer's
	// copies (Env.CopyIn, CopyOut), as a socket call's: a bad one is
	// EFAULT. The others' Len is a number.
	var v net.Iov
	switch c.Op {
	case abi.NetPoll, abi.NetRx, abi.NetTx, abi.NetDgramIn, abi.NetDgramOut:
		if c.Buf != 0 {
			v = net.Iov{User: c.Buf, Len: int(min(c.Len, 1<<20))}
		}
	}
	e = abi.Errno(sockets.Service(&c, &v))
	if pe := mm.Put(p, c); pe != 0 {
		return pe
	}
	return e
}

// netUp starts the service's traffic: its eventfd, the NIC's address.
func netUp(c *abi.NetCall) abi.Errno {
	fd := int(c.Buf)
	fileLock.Lock()
	ok := getFile(fd, fileEventfd) != nil
	fileLock.Unlock()
	if !ok {
		return abi.EBADF
	}
	atomic.StoreInt32(&netEventfd, int32(fd)+1)
	addr := [4]byte(c.Local[12:])
	nicLock.Lock()
	mac, present := nic.MAC(), nic.Present()
	nicLock.Unlock()
	if present && !netUpDone {
		netUpDone = true
		sockets.AddNIC(mac, virtionet.MTU, addr, int(c.Len))
	}
	sockets.ServiceUp(addr, int(c.Len))
	netSignal() // what waited for it
	return 0
}

// netSignal adds 1 to the service's eventfd. It runs under the socket
// lock, so it takes no other: the descriptor is read with atomics (a
// descriptor closed and reused meanwhile gets one spurious count).
func netSignal() {
	fd := int(atomic.LoadInt32(&netEventfd)) - 1
	if fd < 0 || fd >= len(files) {
		return
	}
	f := &files[fd]
	if atomic.LoadUint32(&f.kind) != fileEventfd {
		return
	}
	atomic.AddUint64(&f.count, 1)
	atomic.AddUint32(&f.seq, 1)
	epollNotify()
}
