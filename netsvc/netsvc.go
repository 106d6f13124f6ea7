// Package netsvc is yolk's TCP/IP service: gVisor's netstack, run as
// ordinary goroutines of the program, behind the kernel's sockets
// (docs/net.md). The kernel owns descriptors, socket state, the port
// table and the per-connection rings, and keeps loopback to itself; this
// package moves bytes between those rings and netstack endpoints, and
// frames between the netstack and the NIC, through the kernel's private
// calls (abi.SysNet, abi.SysNIC*). It runs only when the image has a NIC.
//
// Ordinary Go, not kernel context: it allocates, locks and blocks like
// any program. It must not be imported by the kernel; an image links it
// when the program uses package net (yolk build sees that), or by a blank
// import.
//
// Goroutines: a fixed set started at init (none per connection): the
// service loop, one waiter on each of the two eventfds the kernel
// signals, the DHCP client's when the address came from DHCP
// (dhcprun.go), and the netstack's own.
package netsvc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"

	"yolk/kernel/abi"
)

const (
	orphanTimeout = 60 * time.Second // a closed connection's unsent bytes wait at most this for the peer
	nicID         = 1
	chunk         = 64 << 10 // bytes moved per NetRx or NetTx
	maxDgram      = 65535
)

// Started reports whether the service runs (a NIC with an address was
// there at init); Err says why not, if it does not.
var (
	Started bool
	Err     error
)

func init() {
	if err := start(); err != nil {
		Err = err
		if !errors.Is(err, errNoNIC) {
			fmt.Fprintf(os.Stderr, "netsvc: %v\n", err)
		}
		return
	}
	Started = true
}

var errNoNIC = errors.New("no NIC")

type service struct {
	k     kernelCalls
	ndp   *ndp
	nicMu sync.Mutex // held while a round uses the NIC; Exclusive takes it
	nicfd int
	st    *stack.Stack
	link  *nicLink
	kick  chan struct{}
	// nicWork and kernWork are set when the NIC's eventfd, or the
	// socket layer's, was signalled (waitFD), and cleared by the round
	// that looks there (framesIn, kernelWork): a round another source
	// kicked makes no system call to find nothing.
	nicWork, kernWork atomic.Bool
	// waitLost is set if an eventfd's waiter stopped on an error:
	// every round then looks at both, as no signal says when.
	waitLost atomic.Bool
	// pending is set by every source of work (wake, waitFD) and
	// cleared at each round's start; busy while a goroutine runs rounds
	// (rounds). A source sets pending, then kicks the loop only if no
	// goroutine runs rounds: the one that does looks again.
	pending, busy atomic.Bool
	mu            sync.Mutex
	dirty         map[*conn]bool
	// dirtyNext is the set a round hands dirty's writers while it serves
	// dirty's, so that no round makes a map. dirtyLooking is set from a
	// round's start until it takes dirty: a connection marked then needs
	// no kick (markDirty).
	dirtyNext    map[*conn]bool
	dirtyLooking bool
	conns        map[uint64]*conn
	buf          []byte // NetTx's and NetDgramOut's buffer
	// dgramIn is where a datagram read from an endpoint waits for
	// NetDgramIn (dgrams), kept so that reading costs no allocation.
	dgramIn struct {
		buf bytes.Buffer
		w   tcpip.LimitedWriter
	}
	rxbuf []byte // SysNICRecv's: many frames a call
	// rxRecs is the frames of rxbuf's batch; acksThinned counts the
	// plain ACKs later ones superseded (scanBatch).
	rxRecs      []rxRec
	acksThinned uint64
	rxw         rxWriter         // the endpoints' reads into the kernel's rings
	txr         txReader         // the endpoints' writes from the kernel's rings
	evs         [64]abi.NetEvent // NetPoll's

	// The frames to send, as SysNICSendRecords's records (the link's
	// batch taken by framesOut), from txOff on; with the NIC's transmit
	// queue full (its transmit interrupts are off: nothing says when it
	// has room) they wait here, sent before any other, while the loop
	// goes on with frames in and the kernel's work; txRetry wakes the
	// loop to try again. The link fills the other buffer meanwhile.
	txOut   []byte
	txOff   int
	txRetry *time.Timer

	flood synFlood // SYN cookies for every SYN while a flood lasts (synflood.go)

	// twCap is how many connections may be closing before one that
	// enters TIME_WAIT leaves it at once; twShort is whether the
	// netstack is set so (timewait.go).
	twCap   int64
	twShort bool
	// The netstack's counters timeWaitCheck reads (Stats copies them all).
	tcpConnected, tcpEstablished *tcpip.StatCounter

	// Stopping, which only a hosted test does (hosted_test.go): quit
	// ends the goroutines, which wg counts; files are the eventfds.
	quit  chan struct{}
	wg    sync.WaitGroup
	files [2]*os.File

	// DHCP (dhcprun.go): the client, when the address came from it, and
	// the frames to port 68 the loop hands it; the lease applied (nil:
	// none); the device's MTU, and whether the link's was set; where
	// resolv.conf goes ("": nowhere).
	dhcp   *dhcpClient
	dhcpIn chan []byte
	lease  *Lease
	devMTU uint32
	mtuSet bool
	resolv string
}

// openConf is how open starts the service: resolv.conf's path for DHCP's
// servers ("": not written) and the DHCP client's seed.
type openConf struct {
	resolv string
	seed   int64
}

// kernelCalls is the kernel as the service reaches it: the NIC's
// private calls and abi.SysNet. In an image they are system calls
// (sysCalls); a hosted test plays the kernel (kernel/net/nettest) and
// runs the service on the host. The NetCall goes by value, so that it
// stays on the caller's stack as the system call's argument did; Net's
// buf, if not empty, is the buffer the call names (Buf, Len), as a slice
// so that a hosted kernel reaches it as Go memory.
type kernelCalls interface {
	NICInfo() (abi.NICInfo, syscall.Errno)
	NICNotify(fd int) syscall.Errno
	NICSend(frame []byte) syscall.Errno
	NICRecv(buf []byte) (int, syscall.Errno)
	NICSendRecords(recs []byte) (int, syscall.Errno)
	Net(c abi.NetCall, buf []byte) (abi.NetCall, syscall.Errno)
}

// sysCalls is the kernel's: the system calls.
type sysCalls struct{}

func (sysCalls) NICInfo() (info abi.NICInfo, e syscall.Errno) {
	_, _, e = syscall.Syscall(abi.SysNICInfo, uintptr(unsafe.Pointer(&info)), 0, 0)
	return info, e
}

func (sysCalls) NICNotify(fd int) syscall.Errno {
	_, _, e := syscall.Syscall(abi.SysNICNotify, uintptr(fd), 0, 0)
	return e
}

func (sysCalls) NICSend(b []byte) syscall.Errno {
	_, _, e := syscall.Syscall(abi.SysNICSend, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
	return e
}

func (sysCalls) NICSendRecords(b []byte) (int, syscall.Errno) {
	r, _, e := syscall.Syscall(abi.SysNICSendRecords, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
	return int(r), e
}

func (sysCalls) NICRecv(b []byte) (int, syscall.Errno) {
	r, _, e := syscall.Syscall(abi.SysNICRecv, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
	return int(r), e
}

func (sysCalls) Net(c abi.NetCall, buf []byte) (abi.NetCall, syscall.Errno) {
	if len(buf) > 0 {
		c.Buf, c.Len = uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf))
	}
	_, _, e := syscall.Syscall(abi.SysNet, uintptr(unsafe.Pointer(&c)), 0, 0)
	runtime.KeepAlive(buf) // c.Buf names it
	return c, e
}

func start() error {
	s, _, err := open(sysCalls{}, openConf{resolv: "/etc/resolv.conf", seed: time.Now().UnixNano()})
	if err != nil {
		return err
	}
	writeProcNet(s.link.LinkAddress())
	svc = s
	return nil
}

// open starts a service on the NIC k reaches; the lease is DHCP's, if
// the address came from there.
func open(k kernelCalls, o openConf) (*service, Lease, error) {
	var l Lease
	info, e := k.NICInfo()
	if e != 0 {
		return nil, l, fmt.Errorf("%w: SysNICInfo: %v", errNoNIC, e)
	}
	if info.Present == 0 {
		return nil, l, errNoNIC
	}
	s := &service{k: k, kick: make(chan struct{}, 1), dirty: map[*conn]bool{}, dirtyNext: map[*conn]bool{}, conns: map[uint64]*conn{}, buf: make([]byte, chunk), rxbuf: make([]byte, 128<<10),
		quit: make(chan struct{}), devMTU: info.MTU, resolv: o.resolv, rxw: rxWriter{k: k, buf: make([]byte, 0, chunk)}, txr: txReader{k: k}}
	if info.Prefix == 0 {
		// No yolk.net: ask DHCP, as a machine on a LAN or in a cloud
		// does, before the netstack takes the NIC.
		c, err := dhcpAcquire(k, info.MAC, o.seed, dhcpBootLimit)
		if err != nil {
			return nil, l, fmt.Errorf("no address: yolk.net not given and %v", err)
		}
		l = c.lease
		dhcpLog("%s", l.describe())
		info.Addr, info.Prefix = l.Addr, uint32(l.Prefix)
		s.dhcp, s.dhcpIn = c, make(chan []byte, 16)
	}
	if err := s.up(&info); err != nil {
		return s, l, err
	}
	if s.dhcp != nil {
		s.lease = &Lease{Addr: l.Addr, Prefix: l.Prefix} // up gave the address
		s.setLease(&l)
		s.wg.Go(s.dhcpRun)
	} else {
		s.setRoutes(leaseRoutes(&Lease{Addr: info.Addr, Prefix: int(info.Prefix), Router: info.Gateway}, rtprotBoot))
	}
	return s, l, nil
}

// up makes the netstack on the NIC info describes and starts the
// service's goroutines.
func (s *service) up(info *abi.NICInfo) error {
	s.ndp = &ndp{s: s}
	s.st = stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocolWithOptions(ipv6Options(s.ndp)), arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol, icmp.NewProtocol4},
	})
	s.link = newNICLink(info.MTU, tcpip.LinkAddress(info.MAC[:]), info.Offload&abi.NICOffloadTx != 0, s.wake)
	if e := s.st.CreateNIC(nicID, s.link); e != nil {
		return fmt.Errorf("CreateNIC: %v", e)
	}
	if err := s.addAddr4(info.Addr, int(info.Prefix)); err != nil {
		return err
	}
	sack := tcpip.TCPSACKEnabled(true)
	s.st.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	s.flood.st = s.st
	s.twCap = timeWaitCap(memTotal())
	s.tcpConnected, s.tcpEstablished = s.st.Stats().TCP.CurrentConnected, s.st.Stats().TCP.CurrentEstablished

	nicfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return err
	}
	s.files[0] = os.NewFile(uintptr(nicfd), "netsvc-nic") // registered with the netpoller
	s.nicWork.Store(true)
	if e := s.k.NICNotify(nicfd); e != 0 {
		return fmt.Errorf("SysNICNotify: %v", e)
	}
	s.nicfd = nicfd
	netfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return err
	}
	s.files[1] = os.NewFile(uintptr(netfd), "netsvc-net")
	s.kernWork.Store(true)
	up := abi.NetCall{Op: abi.NetUp, Buf: uintptr(netfd), Len: uintptr(info.Prefix)}
	copy(up.Local[:], v4Mapped(info.Addr))
	if err := s.call(&up); err != nil {
		return fmt.Errorf("NetUp: %v", err)
	}
	s.wg.Go(func() { s.waitFD(s.files[0], &s.nicWork) })
	s.wg.Go(func() { s.waitFD(s.files[1], &s.kernWork) })
	s.wg.Go(s.loop)
	return nil
}

// writeProcNet writes /proc/net/igmp and /proc/net/igmp6 as Linux has
// them for lo and eth0 (the all-hosts groups, and eth0's solicited-node
// group), which net.Interface.MulticastAddrs reads.
func writeProcNet(mac tcpip.LinkAddress) {
	if err := os.MkdirAll("/proc/net", 0o555); err != nil {
		return
	}
	igmp := "Idx\tDevice    : Count Querier\tGroup    Users Timer\tReporter\n"
	for i, dev := range []string{"lo", "eth0"} {
		igmp += fmt.Sprintf("%d\t%-10s:     1      V3\n\t\t\t\t010000E0     1 0:00000000\t\t0\n", i+1, dev)
	}
	igmp6 := fmt.Sprintf("1    %-16s%s     1 0000000C 0\n", "lo", "ff020000000000000000000000000001") +
		fmt.Sprintf("2    %-16s%s     1 0000000C 0\n", "eth0", "ff020000000000000000000000000001") +
		fmt.Sprintf("2    %-16sff0200000000000000000001ff%02x%02x%02x     1 00000004 0\n", "eth0", mac[3], mac[4], mac[5])
	os.WriteFile("/proc/net/igmp", []byte(igmp), 0o444)
	os.WriteFile("/proc/net/igmp6", []byte(igmp6), 0o444)
}

func net4Mask(prefix int) []byte {
	m := make([]byte, 4)
	for i := 0; i < prefix; i++ {
		m[i/8] |= 0x80 >> (i % 8)
	}
	return m
}

func v4Mapped(a [4]byte) []byte { return append([]byte{10: 0xff, 11: 0xff}, a[:]...) }

var svc *service

// Exclusive runs f while the service leaves the NIC alone (a test that
// sends and receives frames itself), then gives it back: frames that
// came meanwhile and were not f's are the service's again.
func Exclusive(f func()) {
	if svc == nil {
		f()
		return
	}
	svc.nicMu.Lock()
	defer func() {
		svc.k.NICNotify(svc.nicfd)
		svc.nicWork.Store(true)
		svc.nicMu.Unlock()
		svc.wake()
	}()
	f()
}

// Offline runs f with every address but the machine's own unreachable
// (ENETUNREACH), so that nothing f does leaves the machine: a test that
// makes random system calls.
func Offline(f func()) {
	if svc == nil {
		f()
		return
	}
	offlineMu.Lock()
	if offlineN++; offlineN == 1 {
		svc.call(&abi.NetCall{Op: abi.NetOffline, Len: 1})
	}
	offlineMu.Unlock()
	defer func() {
		offlineMu.Lock()
		if offlineN--; offlineN == 0 {
			svc.call(&abi.NetCall{Op: abi.NetOffline, Len: 0})
		}
		offlineMu.Unlock()
	}()
	f()
}

var (
	offlineMu sync.Mutex
	offlineN  int // Offline calls running
)

// call makes the service's private call; callBuf one that names a
// buffer.
func (s *service) call(c *abi.NetCall) error { return s.callBuf(c, nil) }

func (s *service) callBuf(c *abi.NetCall, buf []byte) error {
	r, e := s.k.Net(*c, buf)
	*c = r
	if e != 0 {
		return e
	}
	return nil
}

// markDirty has the loop serve c: in the round under way if that round
// has not taken the dirty set yet, else in one it is kicked for.
func (s *service) markDirty(c *conn) {
	s.mu.Lock()
	s.dirty[c] = true
	kick := !s.dirtyLooking
	s.mu.Unlock()
	if kick {
		s.wake()
	}
}

// wake has a round run after every source's work so far: the one
// running now looks again (rounds), or the loop is kicked.
func (s *service) wake() {
	s.pending.Swap(true) // not Store: see rounds
	if s.busy.Load() {
		return
	}
	s.kickLoop()
}

func (s *service) kickLoop() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// rounds runs rounds until a round finds that no source signalled since
// it began, unless another goroutine runs them: then that one sees
// pending when it ends (or before), and runs another. A source sets
// pending and then reads busy; a runner clears busy and then reads
// pending: both writes are read-modify-writes (Swap, CompareAndSwap), so
// each is visible before the load after it and a source that set pending
// while busy was true is seen by its runner's last look. A plain Store
// would do on amd64 and on Arm's hardware, not under QEMU's TCG
// emulating arm64 on an x86 host, where a store (STLR) can still wait in
// the host's store buffer while a later load of another word reads
// (sync/twa's UnlockSlot has the measurement): both sides would miss
// each other and the work would wait for the next signal.
//
// An eventfd's waiter (own) runs one round at most: while it runs
// rounds nobody reads its eventfd, and its source's signals would go
// unseen (a steady flow on the other source would keep it there); work
// left after its round goes to the loop.
func (s *service) rounds(own bool) {
	for s.pending.Load() {
		if !s.busy.CompareAndSwap(false, true) {
			return
		}
		for {
			s.pending.Store(false)
			if s.round() {
				s.pending.Store(true) // work left behind: another round at once
			}
			if own || !s.pending.Load() {
				break
			}
		}
		s.busy.Swap(false) // not Store: see above
		if own {
			if s.pending.Load() {
				s.kickLoop()
			}
			return
		}
	}
}

// waitFD waits on an eventfd through the netpoller and, at every signal,
// sets work and runs rounds.
func (s *service) waitFD(f *os.File, work *atomic.Bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		Err = err
		return
	}
	var b [8]byte
	for {
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			_, rerr = unix.Read(int(fd), b[:])
			return rerr != unix.EAGAIN
		})
		if err != nil || rerr != nil {
			select {
			case <-s.quit: // stopped
			default:
				fmt.Fprintf(os.Stderr, "netsvc: eventfd: %v %v; the service stops waiting on it and looks at every round\n", err, rerr)
				s.waitLost.Store(true)
				s.wake()
			}
			return
		}
		// The round runs here, not in the loop's goroutine: an
		// interrupt's or a socket's work costs no hand-off between
		// goroutines, which at two CPUs or more woke another thread
		// each time (the Go runtime's wakep).
		work.Store(true)
		s.pending.Store(true)
		s.rounds(true)
	}
}

// loop is the service's own goroutine. ("The loop" elsewhere in this
// package is the service's rounds, whichever goroutine runs them.) At each
// kick it runs rounds (frames in, the kernel's work, the endpoints' events
// and frames out) until no source signalled. The eventfds' waiters run
// their rounds themselves (waitFD), one each, and leave the loop what work
// remains; the loop runs the rounds of the sources that must not: the link
// at each frame the netstack queues and an endpoint's notification (both
// from gVisor's goroutines, holding its locks), the timers that retry.
// Every source of work sets pending when it has some, so a round is not
// followed by one that only looks again: at every wake-up of a quiet
// service that round cost two system calls (NetPoll, NICRecv) and found
// nothing. Nor does a round look where no signal came: NetPoll only after
// the socket layer's eventfd, NICRecv only after the NIC's (nicWork,
// kernWork), and not once more after a batch that left room for any frame.
// A round that left work behind (more of the kernel's events than it takes
// at once) runs again at once.
func (s *service) loop() {
	for {
		select {
		case <-s.kick:
		case <-s.quit:
			return
		}
		s.rounds(false)
	}
}

// round does one pass; true if it left work behind. The kernel's
// requests go to the stack before the frames that came meanwhile, and
// listen returns only once its request was polled (the kernel's
// net.ListenWait): a listen that returned before a peer's SYN was sent
// (the program said it serves, the peer connected) is an endpoint
// listening when the SYN reaches the stack, not a reset.
func (s *service) round() (more bool) {
	s.nicMu.Lock()
	defer s.nicMu.Unlock()
	s.link.lookTx()
	s.mu.Lock()
	s.dirtyLooking = true
	s.mu.Unlock()
	lost := s.waitLost.Load()
	if s.kernWork.Swap(false) || lost {
		more = s.kernelWork()
		if more {
			s.kernWork.Store(true)
		}
	}
	if s.nicWork.Swap(false) || lost {
		if s.framesIn() {
			runtime.Gosched()
		}
	}
	s.ndp.apply(s.st)
	s.timeWaitCheck()
	s.mu.Lock()
	dirty := s.dirty
	s.dirty = s.dirtyNext
	s.dirtyLooking = false
	s.mu.Unlock()
	for c := range dirty {
		s.serve(c)
	}
	if len(dirty) > dirtyKeep {
		// A map costs its largest size to clear and walk ever after:
		// one that held a burst's connections is dropped.
		dirty = map[*conn]bool{}
	} else {
		clear(dirty)
	}
	s.dirtyNext = dirty
	s.framesOut()
	return more
}

// quietSegs is the most TCP segments a batch may hold for framesIn to
// have the round yield for the processors.
const quietSegs = 4

// framesIn takes the NIC's frames to the stack. It reports whether the
// round is to yield for gVisor's TCP processors before it looks at the
// connections they mark.
//
// gVisor's TCP hands each segment to a processor goroutine and wakes it:
// with a P idle, the runtime starts a thread on another CPU for it, which
// processes the segment while the round goes on and marks the connection
// after the round has looked, so the loop runs a second round for it. A
// batch of a few TCP segments (quiet traffic, where that hand-off is most
// of the cost) is delivered with those wake-ups held back, and the round
// yields: the processors run on its thread and their marks land in this
// round. A larger batch is delivered as before: under load the other CPU
// processing segments beside the round is worth its hand-offs, and a
// yield would let every ready goroutine run before the round goes on
// (docs/net-bench.md, "The TCP processors run on the round's thread").
func (s *service) framesIn() (yield bool) {
	var large bool
	buf := s.rxbuf
	d := s.link.dispatcherOf()
	for {
		r, e := s.k.NICRecv(buf)
		if e != 0 {
			return
		}
		// Under a flood this loop does not end while frames come: a
		// listener's queue that overflowed turns cookies on for every
		// SYN here, not after it.
		s.flood.look()
		recs := s.rxRecs[:0]
		for b := buf[:r]; len(b) >= 4; {
			w := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
			l := int(w & abi.NICRecordLenMask)
			if 4+l > len(b) {
				break
			}
			recs = append(recs, rxRec{f: b[4 : 4+l], csumOK: w&abi.NICRecordCsumOK != 0})
			b = b[min((4+l+abi.NICRecordAlign-1)&^(abi.NICRecordAlign-1), len(b)):]
		}
		s.rxRecs = recs
		segs := scanBatch(recs)
		quiet := wakeHold && segs > 0 && segs <= quietSegs
		if quiet {
			holdWakes()
		}
		large = large || segs > quietSegs
		yield = quiet && !large
		for _, rec := range recs {
			switch f := rec.f; {
			case rec.skip:
				s.acksThinned++
			case s.dhcpIn != nil && isDHCPReply(f):
				s.dhcpFrameIn(bytes.Clone(f))
			case !s.flood.admit(f):
				// A flood's SYN the listeners are too far behind for.
			case d != nil:
				s.link.deliver(d, f, rec.csumOK, !rec.noGRO)
			}
		}
		s.link.flushRx()
		if quiet {
			releaseWakes()
		}
		if len(buf)-r >= abi.NICRecordMaxGSO {
			// Room for any frame was left: none waited (SysNICRecv),
			// and the next to come brings a signal.
			return
		}
	}
}

// framesOut sends the link's batch of frames, many a system call.
func (s *service) framesOut() bool {
	did := false
	for {
		if s.txOff == len(s.txOut) {
			s.txOut, _ = s.link.takeTx(s.txOut) // the one sent goes back to the link
			s.txOff = 0
			if len(s.txOut) == 0 {
				return did
			}
		}
		n, e := s.k.NICSendRecords(s.txOut[s.txOff:])
		if e == unix.EAGAIN {
			// Keep them: dropping one costs the connection a
			// retransmission timeout (a second or more), and spinning
			// here stopped frames coming in (the receive ring then
			// overflowed).
			if s.txRetry == nil {
				s.txRetry = time.AfterFunc(txRetry, s.wake)
			} else {
				s.txRetry.Reset(txRetry)
			}
			return did
		}
		if e != 0 {
			// A record the NIC refused (it cannot happen: the link
			// makes them within the NIC's limits): the batch goes.
			fmt.Fprintf(os.Stderr, "netsvc: SysNICSendRecords: %v; %d bytes of frames dropped\n", e, len(s.txOut)-s.txOff)
			s.txOff = len(s.txOut)
			continue
		}
		did = true
		s.txOff += n
	}
}

// txRetry is how long a frame the full transmit queue refused waits
// before the next try (QEMU's device takes a kick's frames in well
// under this).
const txRetry = 200 * time.Microsecond

// dirtyKeep is the most connections a dirty set may have held and
// still be reused (round).
const dirtyKeep = 1024

// kernelWork takes the kernel's pending work and starts it; true if
// there may be more (it took as many events as it has room for).
func (s *service) kernelWork() bool {
	c := abi.NetCall{Op: abi.NetPoll}
	if err := s.callBuf(&c, unsafe.Slice((*byte)(unsafe.Pointer(&s.evs)), unsafe.Sizeof(s.evs))); err != nil || c.N == 0 {
		return false
	}
	for _, ev := range s.evs[:c.N] {
		s.event(&ev)
	}
	return int(c.N) == len(s.evs)
}

// Diag is a line about the service for a person reading a test's log:
// its TCP endpoints by state, the netstack's TCP counters (listen
// overflows and SYN cookies among them) and the NIC's.
func Diag() string {
	if svc == nil {
		return "netsvc: not started"
	}
	s := svc
	states := map[string]int{}
	held := 0
	s.nicMu.Lock()
	thinned := s.acksThinned
	for _, c := range s.conns {
		if c.typ == unix.SOCK_STREAM {
			states[tcp.EndpointState(c.ep.State()).String()]++
		}
		if c.held != nil {
			held++
		}
	}
	s.nicMu.Unlock()
	st := s.st.Stats().TCP
	info, _ := s.k.NICInfo()
	s.flood.mu.Lock()
	floods, flooding, early := s.flood.engaged, s.flood.on, s.flood.dropped
	s.flood.mu.Unlock()
	s.link.txMu.Lock()
	txDropped := s.link.txDropped
	s.link.txMu.Unlock()
	return fmt.Sprintf("netsvc: endpoints %v, %d held for a full queue; TCP: %d established, %d passive opens, %d resets sent, %d received, "+
		"listen overflows %d SYNs dropped, %d ACKs dropped, SYN cookies sent %d, received %d, cookies for every SYN %d times (now %v), %d SYNs dropped early, "+
		"%d retransmits, %d timeouts; NIC: %d frames in, %d out, %d dropped, %d transmit-full, %d dropped by the link's queue, %d plain ACKs thinned",
		states, held, st.CurrentEstablished.Value(), st.PassiveConnectionOpenings.Value(), st.ResetsSent.Value(), st.ResetsReceived.Value(),
		st.ListenOverflowSynDrop.Value(), st.ListenOverflowAckDrop.Value(), st.ListenOverflowSynCookieSent.Value(), st.ListenOverflowSynCookieRcvd.Value(),
		floods, flooding, early, st.Retransmits.Value(), st.Timeouts.Value(), info.RxFrames, info.TxFrames, info.Dropped, info.TxFull, txDropped, thinned)
}
