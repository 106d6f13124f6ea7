// Package nettest runs the socket layer (kernel/net) on the host for the
// tests of what sits on it: a Net with an Env of pages from an arena, and
// the kernel's side of the TCP/IP service's private calls (abi.SysNet,
// abi.SysNIC*, as kernel/socket/svc.go and kernel/nic answer them)
// with a NIC whose wire is the test's. netsvc's hosted tests run the
// service against it.
//
// The eventfds are the host's: the service makes them as in an image, and
// the kernel here signals its own duplicates of them (so a descriptor the
// service closes and the process reuses is never written to). The buffers
// the service's calls name come as Go slices and reach the socket layer as
// kernel memory (Iov.One): nothing here makes a pointer of an address, as
// the user-memory rule (kernel/usermem_rule_test.go) wants of every
// package under kernel/.
//
// For hosted tests only: it imports testing (through envtest).
package nettest

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/internal/envtest"
	"yolk/kernel/net"
)

// Env is kernel/net's environment on the host: an arena's pages, a lock,
// wake-ups that Kernel.Do waits for, and NotifyService signalling the
// service's eventfd. A value without pointers, as Env must be.
type Env struct{ envtest.Env[state] }

type state struct {
	mu      sync.Mutex
	ch      chan struct{} // closed at the next wake-up that has waiters
	waiters bool
	netfd   atomic.Int32 // the service's eventfd (our duplicate), -1: none
}

// Wake wakes every waiter, whatever socket changed: a waiter looks
// again.
func (e Env) Wake(int) {
	s := e.State()
	s.mu.Lock()
	if s.waiters {
		close(s.ch)
		s.ch, s.waiters = make(chan struct{}), false
	}
	s.mu.Unlock()
}

// wakeup is what the next wake-up closes.
func (e Env) wakeup() <-chan struct{} {
	s := e.State()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiters = true
	return s.ch
}

func (e Env) NotifyService() { sig(int(e.State().netfd.Load())) }

// CopyIn and CopyOut: no program's memory here (every buffer is Iov.One).
func (Env) CopyIn(b []byte, p uintptr) int  { return 0 }
func (Env) CopyOut(p uintptr, b []byte) int { return 0 }
func (Env) Hold(kind, h int)                {}
func (Env) Drop(kind, h int)                {}

var one = [8]byte{1}

// sig adds 1 to eventfd fd, if any (non-blocking: the service made it so).
func sig(fd int) {
	if fd >= 0 {
		unix.Write(fd, one[:])
	}
}

var _ net.Env = Env{}

// RingFrames is the NIC's receive ring, in frames, as the virtio-net
// driver's.
const RingFrames = 512

// Kernel is the kernel as the TCP/IP service sees it: the socket layer
// (Sockets) and the NIC. It implements the service's calls (netsvc's
// kernelCalls) with the kernel's answers.
type Kernel struct {
	Sockets *net.Net[Env]
	Env     Env

	// Info is what NICInfo reports (Present and MTU are set by New):
	// set the address before the service starts, or leave Prefix 0 for
	// its DHCP client.
	Info abi.NICInfo

	// Out receives each frame the service sends, a copy it may keep. It
	// runs in the service's goroutine; nil drops them.
	Out func(frame []byte)

	// The device's work on offload records (Info.Offload): under mu.
	OffloadRecords, GSORecords, TxSegments uint64

	rx      chan []byte // the NIC's receive ring
	pending []byte      // a frame taken from rx that the last NICRecv had no room for
	mu      sync.Mutex  // guards pending, the counters, nicfd and up
	nicfd   int         // SysNICNotify's eventfd (our duplicate), -1: none
	up      bool
}

// New makes a Kernel with an arena of pages pages; its descriptors are
// closed when t ends.
func New(t testing.TB, pages int) *Kernel {
	k := &Kernel{Sockets: new(net.Net[Env]), rx: make(chan []byte, RingFrames), nicfd: -1}
	k.Env = Env{envtest.NewEnv(t, pages, &state{ch: make(chan struct{})})}
	k.Env.State().netfd.Store(-1)
	k.Sockets.Init(k.Env)
	k.Info = abi.NICInfo{Present: 1, LinkUp: 1, MTU: 1500, MAC: [6]byte{0x52, 0x54, 0, 0x12, 0x34, 0x56}}
	t.Cleanup(func() {
		k.mu.Lock()
		if k.nicfd >= 0 {
			unix.Close(k.nicfd)
			k.nicfd = -1
		}
		k.mu.Unlock()
		if fd := k.Env.State().netfd.Swap(-1); fd >= 0 {
			unix.Close(int(fd))
		}
	})
	return k
}

// Waiting is the number of frames in the NIC's receive ring.
func (k *Kernel) Waiting() int { return len(k.rx) }

// Pages is the number of the arena's pages in use (the page supplier's
// count).
func (k *Kernel) Pages() int { return k.Env.InUse() }

// Inject is a frame arriving at the NIC, as the driver's interrupt
// handler takes it: runts and oversize frames are dropped (and counted).
// It waits up to d for room in the receive ring (the driver would drop:
// a test's wire is lossless) and is false if none came; the frame is the
// ring's from then on.
func (k *Kernel) Inject(frame []byte, d time.Duration) bool {
	if len(frame) < 14 || len(frame) > abi.NICMaxFrame {
		k.mu.Lock()
		k.Info.Dropped++
		k.mu.Unlock()
		return true
	}
	select {
	case k.rx <- frame:
	default:
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case k.rx <- frame:
		case <-t.C:
			return false
		}
	}
	k.mu.Lock()
	k.Info.RxFrames++
	k.Info.Interrupts++
	sig(k.nicfd)
	k.mu.Unlock()
	return true
}

// Do makes a socket call as the kernel's handler for a blocking socket
// does: again after each EAGAIN, once something changed. (The kernel
// waits for the counter the call's Wait names; here any socket's change
// wakes the caller, which looks again: a wake-up that comes after the
// call looked is never lost, since the caller took the wake-up to wait
// for before it.) d bounds the whole (EAGAIN then).
func (k *Kernel) Do(d time.Duration, call func() (net.Wait, net.Errno)) net.Errno {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		ch := k.Env.wakeup()
		w, e := call()
		if e != unix.EAGAIN || w.Addr == 0 {
			return e
		}
		select {
		case <-ch:
		case <-t.C:
			return unix.EAGAIN
		}
	}
}

// The service's calls (netsvc's kernelCalls).

func (k *Kernel) NICInfo() (abi.NICInfo, syscall.Errno) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.Info, 0
}

// NICNotify: an eventfd to signal when frames arrive (-1: none).
func (k *Kernel) NICNotify(fd int) syscall.Errno {
	d := -1
	if fd >= 0 {
		var err error
		if d, err = unix.Dup(fd); err != nil {
			return unix.EBADF
		}
	}
	k.mu.Lock()
	if k.nicfd >= 0 {
		unix.Close(k.nicfd)
	}
	k.nicfd = d
	if len(k.rx) > 0 || k.pending != nil {
		sig(d) // what came meanwhile
	}
	k.mu.Unlock()
	return 0
}

// NICSend sends a frame: to Out.
func (k *Kernel) NICSend(b []byte) syscall.Errno {
	if len(b) < 14 || len(b) > abi.NICMaxFrame {
		return unix.EINVAL
	}
	k.mu.Lock()
	k.Info.TxFrames++
	k.mu.Unlock()
	if k.Out != nil {
		k.Out(append([]byte(nil), b...))
	}
	return 0
}

// NICSendRecords sends the frames in b, records (abi.NICRecord*), as
// the kernel's SysNICSendRecords: each to Out; the bytes of the records
// sent, EINVAL for a malformed first record (a later one ends the batch).
// With Info.Offload set it takes offload records as the device does
// (offload.go), counting them in GSORecords and TxSegments.
func (k *Kernel) NICSendRecords(b []byte) (int, syscall.Errno) {
	done := 0
	for done < len(b) {
		if len(b)-done < abi.NICRecordAlign {
			break
		}
		w := binary.LittleEndian.Uint32(b[done:])
		l, hl := int(w&^abi.NICRecordOffload), 0
		if w&abi.NICRecordOffload != 0 {
			if k.Info.Offload == 0 {
				break
			}
			hl = abi.NICOffloadLen
		}
		rec := (abi.NICRecordAlign + hl + l + abi.NICRecordAlign - 1) &^ (abi.NICRecordAlign - 1)
		if l < 14 || l > abi.NICMaxGSOFrame || rec > len(b)-done {
			break
		}
		f := b[done+abi.NICRecordAlign+hl : done+abi.NICRecordAlign+hl+l]
		if hl == 0 {
			if l > abi.NICMaxFrame {
				break
			}
			k.NICSend(f)
		} else {
			h := parseOffload(b[done+abi.NICRecordAlign:])
			frames, ok := segment(h, append([]byte(nil), f...))
			if !ok {
				break
			}
			k.mu.Lock()
			k.OffloadRecords++
			if h.gsoType != 0 {
				k.GSORecords++
				k.TxSegments += uint64(len(frames))
			}
			k.mu.Unlock()
			for _, s := range frames {
				k.NICSend(s)
			}
		}
		done += rec
	}
	if done == 0 {
		return 0, unix.EINVAL
	}
	return done, 0
}

// Offloads is what the device did for offload records: records taken,
// segmented ones, the frames those made.
func (k *Kernel) Offloads() (records, gso, segments uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.OffloadRecords, k.GSORecords, k.TxSegments
}

// NICRecv moves waiting frames into b as records (abi.NICRecord*).
func (k *Kernel) NICRecv(b []byte) (int, syscall.Errno) {
	if len(b) < abi.NICRecordMax {
		return 0, unix.EINVAL
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for {
		f := k.pending
		if f == nil {
			select {
			case f = <-k.rx:
			default:
			}
		}
		if f == nil {
			break
		}
		rec := (4 + len(f) + abi.NICRecordAlign - 1) &^ (abi.NICRecordAlign - 1)
		if n+rec > len(b) {
			k.pending = f
			break
		}
		k.pending = nil
		b[n], b[n+1], b[n+2], b[n+3] = byte(len(f)), byte(len(f)>>8), byte(len(f)>>16), byte(len(f)>>24)
		clear(b[n+4+copy(b[n+4:], f) : n+rec])
		n += rec
	}
	if n == 0 {
		return 0, unix.EAGAIN
	}
	return n, 0
}

// Net is abi.SysNet, as kernel/socket/svc.go answers it; buf is the
// buffer the call names.
func (k *Kernel) Net(c abi.NetCall, buf []byte) (abi.NetCall, syscall.Errno) {
	if c.Op == abi.NetUp {
		d, err := unix.Dup(int(c.Buf))
		if err != nil {
			return c, unix.EBADF
		}
		if old := k.Env.State().netfd.Swap(int32(d)); old >= 0 {
			unix.Close(int(old))
		}
		addr := [4]byte(c.Local[12:])
		k.mu.Lock()
		first := !k.up
		k.up = true
		k.mu.Unlock()
		if first {
			k.Sockets.AddNIC(k.Info.MAC, int(k.Info.MTU), addr, int(c.Len))
		}
		k.Sockets.ServiceUp(addr, int(c.Len))
		sig(d)
		return c, 0
	}
	var v net.Iov
	switch c.Op {
	case abi.NetPoll, abi.NetRx, abi.NetTx, abi.NetDgramIn, abi.NetDgramOut, abi.NetRoutes4:
		b := buf[:min(len(buf), 1<<20)]
		v = net.Iov{One: b, Len: len(b)}
	}
	e := k.Sockets.Service(&c, &v)
	return c, e
}
