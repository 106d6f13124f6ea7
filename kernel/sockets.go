package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtionet"
	"yolk/kernel/abi"
	"yolk/kernel/epoll"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/kernel/namei"
	"yolk/kernel/net"
	"yolk/kernel/procfs"
	"yolk/kernel/socket"
	"yolk/sched"
)

// Sockets: the socket layer is package net (sockets), its system calls
// package socket (sockCalls, which syscall.go dispatches to); a socket is
// a descriptor of kind fileSocket whose h is the socket. This is their
// environment (netenv: net.Env and socket.Env): the lock, a wait queue
// per socket on which blocking calls block with the change counter net
// names (net.Wait) as the condition, the descriptor table, path names as
// socket nodes of the file system (vfs.BindSocket, vfs.SocketAt), the
// descriptors in flight (kinds besides net.KindSocket: fs open files and
// the console), and the TCP/IP service's eventfd (abi.SysNet).

type netenv struct{ pageSupplier }

var (
	sockLock  sched.TWALock
	sockWQ    [net.NumSockets]sched.WaitQueue
	sockets   net.Net[netenv]
	sockCalls socket.Calls[netenv]
)

func (netenv) Net() *net.Net[netenv] { return &sockets }

func (netenv) Lock() { sockLock.Lock() }

func (netenv) Unlock() { sockLock.Unlock() }

func (netenv) Wake(s int) {
	sockWQ[s].Wake(0, len(files))
	epollNotify(sockets.SeqAddr(s))
}

func (netenv) NotifyService() { netSignal() }

// AllocPage gives a ring its page unzeroed: a ring's bytes are read only
// where they were written (mm.AllocFrameDirty).
func (netenv) AllocPage() uintptr {
	if f := mm.AllocFrameDirty(); f != 0 {
		return mm.Phys(f)
	}
	return 0
}

func (netenv) CopyIn(b []byte, p uintptr) int  { return mm.CopyInPart(b, p) }
func (netenv) CopyOut(p uintptr, b []byte) int { return mm.CopyOutPart(p, b) }

func (netenv) Now() int64 { return nanotime() }

func (netenv) UserRange(p, n uintptr, write bool) bool { return userRange(p, n, write) }

func (netenv) UserIov(p, cnt uintptr, write bool) (net.Iov, abi.Errno) {
	return userIov(p, cnt, write)
}

// Get is the socket behind fd with a reference of the caller's own
// (sockPut); for another descriptor ENOTSOCK, for none EBADF.
func (netenv) Get(fd int) (int, abi.Errno) {
	s := handleRef(fd, fileSocket)
	if s < 0 {
		return -1, badFD(fd, abi.Errno(unix.ENOTSOCK))
	}
	return s, 0
}

func sockPut(s int) { sockets.Close(s) }

func (netenv) Install(s int) (uintptr, abi.Errno) { return installHandle(fileSocket, s) }

func (netenv) ReserveFD() (int, abi.Errno) { return reserveFD() }

func (netenv) InstallAt(fd, s int) { installFD(fd, fileSocket, int32(s)) }

func (netenv) Unreserve(fd int) { unreserveFD(fd) }

func (netenv) InstallPair(a, b int, p uintptr, cloexec bool) abi.Errno {
	return installPair(fileSocket, a, b, p, cloexec)
}

func (netenv) CloseFD(fd int) { sysClose(fd) }

func (netenv) Block(w net.Wait, deadline int64) abi.Errno {
	if w.Addr == 0 {
		return abi.EAGAIN
	}
	switch blockIntr(&sockWQ[w.Sock], 0, w.Addr, w.Val, deadline) {
	case sched.WakeTimeout:
		return abi.EAGAIN
	case sched.WakeSignal:
		if deadline != 0 {
			return abi.EINTR
		}
		return errRestartSys
	}
	return 0
}

// A unix socket's node is the in-memory file system's (it holds the
// socket's ID): a path that resolves elsewhere — a disk, a share, /proc,
// or with a disk as the root anything outside /dev and /tmp — cannot be
// bound (EPERM, Linux's answer on a file system without special files),
// and connect finds no socket there (ECONNREFUSED, or the lookup's
// error).
func (netenv) BindPath(name []byte, id uint64) net.Errno {
	if !sockNode(name) {
		return unix.EPERM
	}
	e := vfs.BindSocket(fs.AtCWD, name, 0o777, id)
	if e == fs.ECross {
		return unix.EPERM
	}
	return e
}

func (netenv) UnbindPath(name []byte) { vfs.Unlink(fs.AtCWD, name, 0) }

func (netenv) SocketAt(name []byte) (uint64, net.Errno) {
	if sockNode(name) {
		if id, e := vfs.SocketAt(fs.AtCWD, name); e != fs.ECross {
			return id, e
		}
	}
	if _, e := onPath(unix.AT_FDCWD, name, namei.OpStat, &namei.Args{}); e != 0 {
		return 0, net.Errno(e)
	}
	return 0, unix.ECONNREFUSED
}

// sockNode reports whether a unix socket's path starts in the in-memory
// file system.
func sockNode(name []byte) bool {
	if len(name) > 0 && name[0] == '/' {
		return memPath(name)
	}
	return memStart(unix.AT_FDCWD, name)
}

// Kinds of descriptors in flight besides net.KindSocket.
const (
	scmFile    = 2 // an fs open file (fileFS)
	scmConsole = 3
)

func (netenv) Hold(kind, h int) {
	if kind == scmFile {
		vfs.Ref(h)
	}
}

func (netenv) Drop(kind, h int) {
	if kind == scmFile {
		vfs.Close(h)
	}
}

// FDRef is the object behind fd as a descriptor in flight, with a
// reference of its own.
func (netenv) FDRef(fd int) (kind, h int, e abi.Errno) {
	if fd < 0 || fd >= len(files) {
		return 0, 0, abi.EBADF
	}
	fileLock.Lock()
	defer fileLock.Unlock()
	f := &files[fd]
	switch f.kind {
	case fileFS:
		vfs.Ref(int(f.h))
		return scmFile, int(f.h), 0
	case fileSocket:
		sockets.Ref(int(f.h))
		return net.KindSocket, int(f.h), 0
	case fileConsole:
		return scmConsole, 0, 0
	case fileFree:
		return 0, 0, abi.EBADF
	}
	return 0, 0, abi.EINVAL // epoll and eventfd descriptors are the runtime's own
}

// InstallRef gives the object of a descriptor in flight a descriptor.
func (netenv) InstallRef(kind, h int, cloexec bool) (uintptr, abi.Errno) {
	var fd uintptr
	var e abi.Errno
	switch kind {
	case scmFile:
		fd, e = installHandle(fileFS, h)
	case net.KindSocket:
		fd, e = installHandle(fileSocket, h)
	default:
		fd, e = allocFD(fileConsole, 0, 0)
	}
	if e == 0 && cloexec {
		atomic.StoreUint32(&files[fd].fdfl, unix.FD_CLOEXEC)
	}
	return fd, e
}

// CloseRef drops the reference of a descriptor in flight.
func (netenv) CloseRef(kind, h int) {
	switch kind {
	case scmFile:
		closeHandle(fileFS, h)
	case net.KindSocket:
		closeHandle(fileSocket, h)
	}
}

// socketOps: sockets (packages net and socket).
var socketOps = fileOps{
	dupOK: true,
	read:  sockRead,
	write: sockWrite,
	stat: func(o ofile, st *unix.Stat_t) abi.Errno {
		*st = unix.Stat_t{Mode: unix.S_IFSOCK | 0o777, Blksize: mm.PageSize}
		return 0
	},
	statfs: func(o ofile, st *unix.Statfs_t) abi.Errno {
		*st = unix.Statfs_t{Type: sockfsMagic, Bsize: mm.PageSize, Namelen: 255, Frsize: mm.PageSize, Flags: stValid}
		return 0
	},
	getfl:    sockGetfl,
	setfl:    func(o ofile, flags int) abi.Errno { sockets.SetNonblocking(o.h, flags&unix.O_NONBLOCK != 0); return 0 },
	pollable: sockPollable,
	poll:     func(w *epoll.Watch) (uint32, uint32, bool) { return sockets.Poll(int(w.H), w.ID) },
}

// sockfsMagic is the f_type of Linux's sockfs, which fstatfs reports for
// a socket.
const sockfsMagic = 0x534f434b

// sockRead and sockWrite are read and write (and readv, writev) on a
// socket.
func sockRead(o ofile, u *uio) (uintptr, abi.Errno) {
	if e := u.check(true); e != 0 {
		return 0, e
	}
	v := u.iov()
	return sockCalls.Read(o.h, &v)
}

func sockWrite(o ofile, u *uio) (uintptr, abi.Errno) {
	v := u.iov()
	return sockCalls.Write(o.h, &v)
}

func sockGetfl(o ofile) (uintptr, abi.Errno) { return sockCalls.Getfl(o.h), 0 }

func sockPollable(o ofile) (int32, uint64, uintptr, abi.Errno) {
	id, seq := sockets.Pollable(o.h)
	return int32(o.h), id, seq, 0
}

func sockProcFD(o ofile, s *procfs.Snapshot, d *procfs.FD) {
	d.Kind, d.MntID = procfs.FDSocket, procMntSock
	d.Ino, _ = sockets.Pollable(o.h)
}

// The TCP/IP service (abi.SysNet, sockCalls.Net): its eventfd, which the
// socket layer signals when the service has work.
var (
	netEventfd int32 // the service's eventfd + 1; 0: none
	netUpDone  bool  // eth0 is in netlink's table
)

// ServiceUp starts the service's traffic: its eventfd, the NIC's address.
func (netenv) ServiceUp(c abi.NetCall) abi.Errno {
	fd := int(c.Buf)
	if !isEventfd(fd) {
		return abi.EBADF
	}
	atomic.StoreInt32(&netEventfd, int32(fd)+1)
	addr := [4]byte(c.Local[12:])
	mac, present := nicDev.Addr()
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
	epollNotify(f.seqAddr())
}
