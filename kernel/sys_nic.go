package kernel

import (
	"sync/atomic"
	"unsafe"

	"yolk/drivers/virtionet"
	"yolk/kernel/abi"
	"yolk/kernel/mm"
)

// The NIC's private calls (abi.SysNIC*), for the network service: frames
// in and out of the NIC (nic.go) without a system call per frame on the
// receive side. Production calls: not gated by abi.TestCalls.

func sysNICInfo(p uintptr) abi.Errno {
	if !mm.UserW(p, unsafe.Sizeof(abi.NICInfo{})) {
		return abi.EFAULT
	}
	var in abi.NICInfo
	nicLock.Lock()
	if nic.Present() {
		in.Present = 1
		if nic.LinkUp() {
			in.LinkUp = 1
		}
		if nic.IsPCI() {
			in.PCI = 1
		}
		in.MAC = nic.MAC()
		in.MTU = virtionet.MTU
		s := nic.Stats()
		in.RxFrames, in.TxFrames, in.Dropped, in.Interrupts, in.TxFull = s.RxFrames, s.TxFrames, s.Dropped, s.Interrupts, s.TxFull
	}
	nicLock.Unlock()
	if netConf.prefix != 0 {
		in.Prefix, in.Addr, in.Gateway, in.DNS = uint32(netConf.prefix), netConf.addr, netConf.gw, netConf.dns
	}
	return mm.Put(p, in)
}

func sysNICSend(p, n uintptr) abi.Errno {
	if n < virtionet.MinFrame || n > virtionet.MaxFrame {
		return abi.EINVAL
	}
	if !mm.UserOK(p, n) {
		return abi.EFAULT
	}
	var buf [virtionet.MaxFrame]byte
	if e := mm.CopyIn(buf[:n], p); e != 0 { // before the lock: the copy may fault a page in
		return e
	}
	nicLock.Lock()
	e := virtionet.ErrBroken
	if nic.Present() {
		e = nic.Send(buf[:n])
	}
	nicLock.Unlock()
	switch e {
	case virtionet.OK:
		return 0
	case virtionet.ErrFull:
		return abi.EAGAIN
	}
	return abi.ENODEV
}

// sysNICRecv moves waiting frames into the program's buffer as records,
// through a bounce buffer on the kernel stack (the user copy is made
// without the lock held, since it may fault a page in).
func sysNICRecv(p, n uintptr) (uintptr, abi.Errno) {
	if n < abi.NICRecordMax {
		return 0, abi.EINVAL
	}
	n = min(n, 1<<20)
	if !mm.UserW(p, n) {
		return 0, abi.EFAULT
	}
	if !nic.Present() {
		return 0, abi.ENODEV
	}
	var bounce [abi.NICRecordMax + 512]byte
	done := uintptr(0)
	for n-done >= abi.NICRecordAlign+virtionet.MinFrame {
		nicLock.Lock()
		used, _ := nic.RecvRecords(bounce[:min(uintptr(len(bounce)), n-done)])
		nicLock.Unlock()
		if used == 0 {
			break
		}
		if mm.CopyOut(p+done, bounce[:used]) != 0 {
			return partial(done, abi.EFAULT) // the frames are lost, as a full ring's
		}
		done += uintptr(used)
	}
	if done == 0 {
		return 0, abi.EAGAIN
	}
	return done, 0
}

func sysNICNotify(fd int) abi.Errno {
	if fd == -1 {
		atomic.StoreInt32(&nicEventfd, 0)
		return 0
	}
	if !nic.Present() {
		return abi.ENODEV
	}
	fileLock.Lock()
	ok := getFile(fd, fileEventfd) != nil
	fileLock.Unlock()
	if !ok {
		return abi.EBADF
	}
	atomic.StoreInt32(&nicEventfd, int32(fd)+1)
	nicLock.Lock()
	pending := nic.Pending()
	nicLock.Unlock()
	if pending > 0 {
		nicSignal() // frames that came before: the service looks at once
	}
	return 0
}

// sysNICInject is the test call that makes a frame arrive as if the
// device had received it, for tests of the receive path with frames the
// wire would not carry.
func sysNICInject(p, n uintptr) abi.Errno {
	if n < virtionet.MinFrame || n > virtionet.MaxFrame {
		return abi.EINVAL
	}
	if !mm.UserOK(p, n) {
		return abi.EFAULT
	}
	if !nic.Present() {
		return abi.ENODEV
	}
	var buf [virtionet.MaxFrame]byte
	if e := mm.CopyIn(buf[:n], p); e != 0 {
		return e
	}
	nicLock.Lock()
	ok := nic.Inject(buf[:n])
	nicLock.Unlock()
	if !ok {
		return abi.EAGAIN
	}
	nicSignal()
	return 0
}
