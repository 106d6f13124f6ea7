// Package nic is the machine's network device as the network service
// sees it: one virtio-net NIC (drivers/virtionet), its interrupt handler,
// which moves received frames into the driver's ring and signals the
// eventfd the service named (SysNICNotify), which its goroutine waits on
// through Go's netpoller, and the NIC's private calls (abi.SysNIC*):
// frames in and out in batches, not a system call per frame
// (SysNICRecv, SysNICSendRecords). Production calls: not gated by abi.TestCalls (Inject is a test
// call, which the kernel gates).
//
// Finding the device at boot, routing its interrupt and the line the
// console prints are the kernel's (nic_$GOARCH.go, nic.go, virtio.go);
// so are descriptors and the command line's address, which it reaches
// through its type parameter (Env, an empty struct in kernel/).
//
// Kernel-context Go, as package kernel: nothing here allocates on the
// Go heap, stores a Go pointer into memory or calls the runtime's
// scheduler. kernel/kcontext_test.go checks this on a built image.
package nic

import (
	"sync/atomic"
	"unsafe"

	"yolk/drivers/virtio"
	"yolk/drivers/virtionet"
	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
)

// Env is what the kernel supplies. It must be a value type without
// pointers (in the kernel an empty struct).
type Env interface {
	virtionet.Mem // the driver's queues and buffers
	// IsEventfd reports whether descriptor fd is an eventfd.
	IsEventfd(fd int) bool
	// Signal adds 1 to eventfd fd, as a write(2) of 1 would, if fd is
	// an eventfd still (one the program closed and reused for another
	// eventfd gets the wake-up instead, which costs it a spurious read
	// and nothing else). It is called from the interrupt handler.
	Signal(fd int)
	// Conf is the address the command line gave (yolk.net).
	Conf() Conf
}

// Conf is yolk.net=ADDR/PREFIX,GATEWAY[,DNS]: Prefix 0 for none.
type Conf struct {
	Addr, Gateway, DNS [4]byte
	Prefix             int
}

// NIC is the network device and the service's eventfd.
type NIC[E Env] struct {
	env  E
	dev  virtionet.NIC
	lock sched.TWALock // every call on dev: the handler and the system calls run on different CPUs
	// rxBusy is 1 while a Recv copies frames out of the ring (atomic):
	// one taker at a time, which reads the ring's slots without lock.
	rxBusy uint32
	// eventfd is 1 + the eventfd descriptor the handler signals, 0 for
	// none (atomic).
	eventfd int32
}

// Open opens the network device d (at boot, before the service runs):
// te says more of a transport error.
func (n *NIC[E]) Open(d virtio.Device, te *virtio.Error) virtionet.Error {
	return virtionet.Open(&n.dev, d, n.env, te)
}

// Present reports whether there is a NIC; MAC and LinkUp are its
// address and its link's state (at boot: Addr under the lock).
func (n *NIC[E]) Present() bool { return n.dev.Present() }
func (n *NIC[E]) MAC() [6]byte  { return n.dev.MAC() }
func (n *NIC[E]) LinkUp() bool  { return n.dev.LinkUp() }

// Offload reports whether the device took the transmit offloads
// (checksum and TCP segmentation: virtionet.FOffload).
func (n *NIC[E]) Offload() bool { return n.dev.Offload() }

// RxOffload reports whether the device took the receive offloads
// (virtionet.FRxOffload).
func (n *NIC[E]) RxOffload() bool { return n.dev.RxOffload() }

// Addr is the NIC's MAC address and whether there is one.
func (n *NIC[E]) Addr() (mac [6]byte, present bool) {
	n.lock.Lock()
	mac, present = n.dev.MAC(), n.dev.Present()
	n.lock.Unlock()
	return mac, present
}

// Interrupt is the NIC's interrupt handler (the caller ends the
// interrupt at the controller): frames into the ring, buffers back to the
// device, and the service's eventfd signalled if anything arrived.
func (n *NIC[E]) Interrupt() {
	n.lock.Lock()
	got := n.dev.Interrupt()
	n.lock.Unlock()
	if got > 0 {
		n.signal()
	}
}

// signal adds 1 to the service's eventfd.
func (n *NIC[E]) signal() {
	fd := int(atomic.LoadInt32(&n.eventfd)) - 1
	if fd < 0 {
		return
	}
	n.env.Signal(fd)
}

// Info is abi.SysNICInfo: the NIC's state and counters, and the
// command line's address, into the program's NICInfo at p.
func (n *NIC[E]) Info(p uintptr) abi.Errno {
	if !mm.UserW(p, unsafe.Sizeof(abi.NICInfo{})) {
		return abi.EFAULT
	}
	var in abi.NICInfo
	n.lock.Lock()
	if n.dev.Present() {
		in.Present = 1
		if n.dev.LinkUp() {
			in.LinkUp = 1
		}
		if n.dev.IsPCI() {
			in.PCI = 1
		}
		if n.dev.Offload() {
			in.Offload |= abi.NICOffloadTx
		}
		if n.dev.RxOffload() {
			in.Offload |= abi.NICOffloadRx
		}
		in.MAC = n.dev.MAC()
		in.MTU = virtionet.MTU
		s := n.dev.Stats()
		in.RxFrames, in.TxFrames, in.Dropped, in.Interrupts, in.TxFull = s.RxFrames, s.TxFrames, s.Dropped, s.Interrupts, s.TxFull
	}
	n.lock.Unlock()
	if c := n.env.Conf(); c.Prefix != 0 {
		in.Prefix, in.Addr, in.Gateway, in.DNS = uint32(c.Prefix), c.Addr, c.Gateway, c.DNS
	}
	return mm.Put(p, in)
}

// Send is abi.SysNICSend: the program's frame of n bytes at p out.
func (n *NIC[E]) Send(p, size uintptr) abi.Errno {
	if size < virtionet.MinFrame || size > virtionet.MaxFrame {
		return abi.EINVAL
	}
	if !mm.UserOK(p, size) {
		return abi.EFAULT
	}
	var buf [virtionet.MaxFrame]byte
	if e := mm.CopyIn(buf[:size], p); e != 0 { // before the lock: the copy may fault a page in
		return e
	}
	n.lock.Lock()
	e := virtionet.ErrBroken
	if n.dev.Present() {
		e = n.dev.Send(buf[:size])
	}
	n.lock.Unlock()
	switch e {
	case virtionet.OK:
		return 0
	case virtionet.ErrFull:
		return abi.EAGAIN
	}
	return abi.ENODEV
}

// SendRecords is abi.SysNICSendRecords: the frames in the program's
// size bytes at p, as records (abi.NICRecord*), out, with one
// notification of the device for all of them. It returns the bytes of
// the records sent: fewer than size when the transmit queue filled (the
// caller sends the rest later); EAGAIN when it was full at the first,
// EINVAL when the first record is malformed (a later malformed record
// ends the batch before it, and the next call says EINVAL). Each frame
// is copied once, from the program straight into the device's buffer
// (taken under the lock, filled without it: the copy may fault a page
// in).
func (n *NIC[E]) SendRecords(p, size uintptr) (uintptr, abi.Errno) {
	if size > 1<<20 {
		size = 1 << 20
	}
	if !mm.UserOK(p, size) {
		return 0, abi.EFAULT
	}
	done, errno := uintptr(0), abi.Errno(0)
	for done < size && errno == 0 {
		var w [abi.NICRecordAlign + abi.NICOffloadLen]byte
		if size-done < abi.NICRecordAlign {
			errno = abi.EINVAL
			break
		}
		if e := mm.CopyIn(w[:abi.NICRecordAlign], p+done); e != 0 {
			errno = e
			break
		}
		word := uint32(w[0]) | uint32(w[1])<<8 | uint32(w[2])<<16 | uint32(w[3])<<24
		l, hl := uintptr(word&^abi.NICRecordOffload), uintptr(0)
		var h virtionet.Hdr
		if word&abi.NICRecordOffload != 0 {
			hl = abi.NICOffloadLen
			if size-done < abi.NICRecordAlign+hl {
				errno = abi.EINVAL
				break
			}
			if e := mm.CopyIn(w[abi.NICRecordAlign:], p+done+abi.NICRecordAlign); e != 0 {
				errno = e
				break
			}
			g := w[abi.NICRecordAlign:]
			u16 := func(o int) uint16 { return uint16(g[o]) | uint16(g[o+1])<<8 }
			h = virtionet.Hdr{Flags: g[0], GSOType: g[1], HdrLen: u16(2), GSOSize: u16(4), CsumStart: u16(6), CsumOffset: u16(8)}
			if u16(10) != 0 {
				errno = abi.EINVAL
				break
			}
		}
		rec := (abi.NICRecordAlign + hl + l + abi.NICRecordAlign - 1) &^ (abi.NICRecordAlign - 1)
		if l < virtionet.MinFrame || l > virtionet.MaxGSOFrame || rec > size-done {
			errno = abi.EINVAL
			break
		}
		n.lock.Lock()
		t, e := virtionet.TxBuf{}, virtionet.ErrBroken
		if n.dev.Present() {
			t, e = n.dev.TxAlloc(h, int(l))
		}
		n.lock.Unlock()
		if e == virtionet.OK {
			src := p + done + abi.NICRecordAlign + hl
			for i, off := 0, uintptr(0); off < l; i++ {
				s := n.dev.TxSegment(t, i) // t's pages are the caller's until commit: no lock
				if ce := mm.CopyIn(s, src+off); ce != 0 {
					errno = ce
					break
				}
				off += uintptr(len(s))
			}
			n.lock.Lock()
			if errno != 0 {
				n.dev.TxDrop(t)
			} else {
				e = n.dev.TxCommit(t)
			}
			n.lock.Unlock()
			if errno != 0 {
				break
			}
		}
		switch e {
		case virtionet.OK:
			done += rec
		case virtionet.ErrFull:
			errno = abi.EAGAIN
		case virtionet.ErrSize, virtionet.ErrHdr:
			errno = abi.EINVAL
		default:
			errno = abi.ENODEV
		}
	}
	n.lock.Lock()
	n.dev.Kick()
	n.lock.Unlock()
	if done > 0 {
		return done, 0
	}
	return 0, errno
}

// Recv is abi.SysNICRecv: it moves waiting frames into the program's
// buffer of size bytes at p as records, each copied once, from the ring's
// slots straight to the program: without the lock (the copy may fault a
// page in), while no other Recv runs (a second one meanwhile gets EAGAIN:
// the service has one taker) — harvest writes only slots past the ones
// waiting, and a frame leaves the ring (RecvPop, under the lock) only
// once copied.
func (n *NIC[E]) Recv(p, size uintptr) (uintptr, abi.Errno) {
	if !n.dev.Present() {
		if size < abi.NICRecordMax {
			return 0, abi.EINVAL
		}
		return 0, abi.ENODEV
	}
	need := uintptr(abi.NICRecordMax)
	if n.dev.RxOffload() {
		need = abi.NICRecordMaxGSO
	}
	if size < need {
		return 0, abi.EINVAL
	}
	size = min(size, 1<<20)
	if !mm.UserW(p, size) {
		return 0, abi.EFAULT
	}
	if !atomic.CompareAndSwapUint32(&n.rxBusy, 0, 1) {
		return 0, abi.EAGAIN
	}
	done, e := n.recv(p, size)
	atomic.StoreUint32(&n.rxBusy, 0)
	return done, e
}

// recv is Recv's copying, with rxBusy held.
func (n *NIC[E]) recv(p, size uintptr) (uintptr, abi.Errno) {
	done := uintptr(0)
	for {
		n.lock.Lock()
		l, fl, ok := n.dev.RecvPeek()
		n.lock.Unlock()
		if !ok {
			break
		}
		rec := (abi.NICRecordAlign + uintptr(l) + abi.NICRecordAlign - 1) &^ (abi.NICRecordAlign - 1)
		if done+rec > size {
			break
		}
		w := uint32(l)
		if fl&virtionet.RxCsumOK != 0 {
			w |= abi.NICRecordCsumOK
		}
		var pad [2 * abi.NICRecordAlign]byte
		pad[0], pad[1], pad[2], pad[3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
		e := mm.CopyOut(p+done, pad[:abi.NICRecordAlign])
		off := uintptr(abi.NICRecordAlign)
		for i := 0; e == 0 && off < abi.NICRecordAlign+uintptr(l); i++ {
			s := n.dev.RecvSegment(l, i)
			e = mm.CopyOut(p+done+off, s)
			off += uintptr(len(s))
		}
		if e == 0 && rec > off {
			clear(pad[:])
			e = mm.CopyOut(p+done+off, pad[:rec-off])
		}
		n.lock.Lock()
		n.dev.RecvPop() // copied, or lost to a fault, as a full ring's
		n.lock.Unlock()
		if e != 0 {
			if done > 0 {
				return done, 0
			}
			return 0, abi.EFAULT
		}
		done += rec
	}
	if done == 0 {
		return 0, abi.EAGAIN
	}
	return done, 0
}

// Notify is abi.SysNICNotify: the eventfd the handler signals (-1:
// none).
func (n *NIC[E]) Notify(fd int) abi.Errno {
	if fd == -1 {
		atomic.StoreInt32(&n.eventfd, 0)
		return 0
	}
	if !n.dev.Present() {
		return abi.ENODEV
	}
	if !n.env.IsEventfd(fd) {
		return abi.EBADF
	}
	atomic.StoreInt32(&n.eventfd, int32(fd)+1)
	n.lock.Lock()
	pending := n.dev.Pending()
	n.lock.Unlock()
	if pending > 0 {
		n.signal() // frames that came before: the service looks at once
	}
	return 0
}

// Inject is the test call (abi.SysNICInject) that makes a frame arrive
// as if the device had received it, for tests of the receive path with
// frames the wire would not carry.
func (n *NIC[E]) Inject(p, size uintptr) abi.Errno {
	if size < virtionet.MinFrame || size > virtionet.MaxFrame {
		return abi.EINVAL
	}
	if !mm.UserOK(p, size) {
		return abi.EFAULT
	}
	if !n.dev.Present() {
		return abi.ENODEV
	}
	var buf [virtionet.MaxFrame]byte
	if e := mm.CopyIn(buf[:size], p); e != 0 {
		return e
	}
	n.lock.Lock()
	ok := n.dev.Inject(buf[:size])
	n.lock.Unlock()
	if !ok {
		return abi.EAGAIN
	}
	n.signal()
	return 0
}
