package netsvc

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/link/ethernet"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"

	"yolk/kernel/abi"
	"yolk/kernel/net"
	"yolk/kernel/net/nettest"
)

// The service on the host: kernel/net/nettest plays the kernel (the
// socket layer and the NIC's calls), the service runs against it as in an
// image, its NIC's wire ends at a second gVisor stack (the peer: the
// gateway, 10.0.2.2), and "programs" serve TCP and UDP echo on port 7
// through the socket layer's calls, as the kernel's handlers make them.

var (
	svcMAC  = [6]byte{0x52, 0x54, 0, 0x12, 0x34, 0x56}
	peerMAC = [6]byte{0x52, 0x55, 10, 0, 2, 2}
	svcIP   = [4]byte{10, 0, 2, 15}
	peerIP  = [4]byte{10, 0, 2, 2}
	dnsIP   = [4]byte{10, 0, 2, 3}
	svcLL   = header.LinkLocalAddr(tcpip.LinkAddress(svcMAC[:])).As16()
	peerLL  = header.LinkLocalAddr(tcpip.LinkAddress(peerMAC[:])).As16()
)

const (
	echoPort = 7
	bound    = 10 * time.Second // what a round trip may take before the test calls it a stall
)

type hostedOpts struct {
	dhcp bool // the address from the service's DHCP client (the harness's server answers)
	// tap sees every frame on the wire (out: from the service); it runs
	// in the goroutine that moves the frame and must not block.
	tap func(frame []byte, out bool)
	// wrap, if set, stands between the service and the kernel.
	wrap func(kernelCalls) kernelCalls
	// dhcpOpts, if set, are the options (after the type) of the DHCP
	// server's OFFERs and ACKs; resolv is where the service writes
	// resolv.conf ("": nowhere).
	dhcpOpts []byte
	resolv   string
	offload  bool // the NIC takes offload records (NICInfo's Offload), as virtio-net behind a tap
}

type hosted struct {
	t     testing.TB
	k     *nettest.Kernel
	s     *service
	lease Lease

	peer   *stack.Stack
	plink  *channel.Endpoint
	cancel context.CancelFunc
	pumpWG sync.WaitGroup

	tap func(frame []byte, out bool)

	dhcpOpts []byte
	renewals atomic.Int64 // REQUESTs with ciaddr set (RENEWING's, REBINDING's) the DHCP server answered
	dhcpMute atomic.Bool  // the DHCP server answers nothing
	heard    atomic.Int64 // DHCP messages the server got

	quit  chan struct{} // the programs stop
	progs sync.WaitGroup
	l, u  int // the programs' listener and UDP socket

	tcp4, tcp6 *gonet.TCPConn // the health checks' connections
	udp4       *gonet.UDPConn
	rnd        *rand.Rand // the health checks' bytes
	worst      time.Duration
	peakSocks  int // the most sockets and ring pages a health check saw
	peakPages  int

	served, echoed, echoing atomic.Int64 // connections the TCP program served, datagrams the UDP one echoed

	socks0, pages0, arena0 int // the pools before the programs
}

func newHosted(t testing.TB, o hostedOpts) *hosted {
	h := &hosted{t: t, quit: make(chan struct{}), rnd: rand.New(rand.NewSource(1)), tap: o.tap, dhcpOpts: o.dhcpOpts}
	h.k = nettest.New(t, 16384)
	h.k.Info.MAC = svcMAC
	if o.offload {
		h.k.Info.Offload = abi.NICOffloadTx
	}
	if !o.dhcp {
		h.k.Info.Addr, h.k.Info.Prefix, h.k.Info.Gateway, h.k.Info.DNS = svcIP, 24, peerIP, dnsIP
	}
	h.newPeer()
	t.Cleanup(h.shut)
	h.k.Out = h.fromService
	h.socks0, h.pages0 = h.k.Sockets.Usage()
	h.arena0 = h.k.Pages()

	var k kernelCalls = h.k
	if o.wrap != nil {
		k = o.wrap(k)
	}
	s, l, err := open(k, openConf{seed: 1, resolv: o.resolv})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	h.s, h.lease = s, l
	if o.dhcp && o.dhcpOpts == nil {
		want := Lease{Addr: svcIP, Mask: [4]byte{255, 255, 255, 0}, Router: peerIP, DNS: [][4]byte{dnsIP}, Server: dnsIP, Prefix: 24, Seconds: 86400}
		if !reflect.DeepEqual(l, want) {
			t.Fatalf("DHCP lease %+v, want %+v", l, want)
		}
	}
	h.programs()
	h.dialHealth()
	return h
}

// newPeer makes the stack at the wire's other end.
func (h *hosted) newPeer() {
	h.peer = stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocolWithOptions(ipv6.Options{AutoGenLinkLocal: true}), arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol, icmp.NewProtocol4, icmp.NewProtocol6},
	})
	h.plink = channel.New(4096, 1500, tcpip.LinkAddress(peerMAC[:]))
	if e := h.peer.CreateNIC(1, ethernet.New(h.plink)); e != nil {
		h.t.Fatal(e)
	}
	if e := h.peer.AddProtocolAddress(1, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4(peerIP), PrefixLen: 24}}, stack.AddressProperties{}); e != nil {
		h.t.Fatal(e)
	}
	sub4, _ := tcpip.NewSubnet(tcpip.AddrFrom4([4]byte{10, 0, 2, 0}), tcpip.MaskFromBytes([]byte{255, 255, 255, 0}))
	sub6, _ := tcpip.NewSubnet(tcpip.AddrFrom16([16]byte{0xfe, 0x80}), tcpip.MaskFromBytes(bytes.Repeat([]byte{0xff}, 8)))
	h.peer.SetRouteTable([]tcpip.Route{{Destination: sub4, NIC: 1}, {Destination: sub6, NIC: 1}})
	sack := tcpip.TCPSACKEnabled(true)
	h.peer.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.pumpWG.Go(func() {
		for {
			pkt := h.plink.ReadContext(ctx)
			if pkt == nil {
				return
			}
			v := pkt.ToView()
			f := bytes.Clone(v.AsSlice())
			v.Release()
			pkt.DecRef()
			if h.tap != nil {
				h.tap(f, false)
			}
			if !h.k.Inject(f, bound) {
				h.t.Errorf("the NIC's receive ring stayed full for %v: the service stopped taking frames", bound)
				return
			}
		}
	})
}

// fromService takes a frame the service sent: DHCP's to the harness's
// server while the client runs, the rest to the peer.
func (h *hosted) fromService(f []byte) {
	if h.dhcpServe(f) { // only the DHCP client sends from port 68 to 67
		return
	}
	if h.tap != nil {
		h.tap(f, true)
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(f)})
	h.plink.InjectInbound(0, pkt)
	pkt.DecRef()
}

// dhcpServe answers a DHCP client's message f as a server (10.0.2.3)
// leasing 10.0.2.15/24 for a day (or with h.dhcpOpts): first some
// answers the client must ignore (another client's, a bad checksum,
// truncated, a NAK to another transaction), then the answer.
func (h *hosted) dhcpServe(f []byte) bool {
	k := h.k
	if len(f) < 14+20+8+240 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[14+9] != 17 ||
		binary.BigEndian.Uint16(f[14+20:]) != 68 || binary.BigEndian.Uint16(f[14+22:]) != 67 {
		return false
	}
	m := f[14+20+8:]
	xid := binary.BigEndian.Uint32(m[4:])
	h.heard.Add(1)
	if h.dhcpMute.Load() {
		return true
	}
	var typ byte
	switch dhcpType(m) {
	case dhcpDiscover:
		typ = dhcpOffer
	case dhcpRequest:
		typ = dhcpAck
	default:
		return true
	}
	if typ == dhcpAck && [4]byte(m[12:16]) != ([4]byte{}) {
		h.renewals.Add(1)
	}
	good := dhcpReply(svcMAC, xid, typ, svcIP, h.dhcpOpts)
	other := dhcpReply(svcMAC, xid+1, typ, [4]byte{10, 0, 2, 99}, nil)
	badSum := dhcpReply(svcMAC, xid, typ, [4]byte{10, 0, 2, 98}, nil)
	badSum[14+10] ^= 1
	short := dhcpReply(svcMAC, xid, typ, [4]byte{10, 0, 2, 97}, nil)[:14+20+8+200]
	otherMAC := dhcpReply([6]byte{2, 0, 0, 0, 0, 1}, xid, typ, [4]byte{10, 0, 2, 96}, nil)
	nak := dhcpReply(svcMAC, xid+2, dhcpNak, [4]byte{}, nil)
	for _, r := range [][]byte{other, badSum, short, otherMAC, nak, good} {
		k.Inject(r, time.Second)
	}
	return true
}

// dhcpReply is a server's (10.0.2.3) DHCP message of type typ to the
// client mac, transaction xid, leasing yiaddr; opts, if given, replaces
// the options after the message type.
func dhcpReply(mac [6]byte, xid uint32, typ byte, yiaddr [4]byte, opts []byte) []byte {
	b := make([]byte, 240, 400)
	b[0], b[1], b[2] = 2, 1, 6
	binary.BigEndian.PutUint32(b[4:], xid)
	copy(b[16:], yiaddr[:])
	copy(b[20:], dnsIP[:])
	copy(b[28:], mac[:])
	binary.BigEndian.PutUint32(b[236:], dhcpMagic)
	b = append(b, 53, 1, typ)
	if opts == nil {
		b = append(b, 1, 4, 255, 255, 255, 0, 3, 4, 10, 0, 2, 2, 6, 4, 10, 0, 2, 3, 51, 4, 0, 1, 0x51, 0x80, 54, 4, 10, 0, 2, 3, 255)
	} else {
		b = append(b, opts...)
	}
	return udp4Frame(svcMAC, [6]byte{0x52, 0x55, 10, 0, 2, 3}, dnsIP, [4]byte{255, 255, 255, 255}, 67, 68, b)
}

// udp4Frame is an Ethernet frame of a UDP datagram, checksums right.
func udp4Frame(dst, src [6]byte, sip, dip [4]byte, sport, dport uint16, data []byte) []byte {
	u := make([]byte, 8, 8+len(data))
	binary.BigEndian.PutUint16(u, sport)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(8+len(data)))
	u = append(u, data...)
	f := eth(dst, src, 0x0800, ip4(sip, dip, 17, 64, 0, 0, nil, u))
	fixSums(f)
	return f
}

// programs starts the serving programs: a TCP echo on [::]:7 (dual
// stack), a UDP echo on 0.0.0.0:7, each a goroutine per socket making
// blocking socket calls.
func (h *hosted) programs() {
	n := h.k.Sockets
	l, e := n.Socket(unix.AF_INET6, unix.SOCK_STREAM, 0, false)
	if e != 0 {
		h.t.Fatal(e)
	}
	sa6 := make([]byte, 28)
	binary.LittleEndian.PutUint16(sa6, unix.AF_INET6)
	binary.BigEndian.PutUint16(sa6[2:], echoPort)
	if e := n.BindInet(l, sa6); e != 0 {
		h.t.Fatalf("bind [::]:7: %v", e)
	}
	if e := n.Listen(l, 16); e != 0 {
		h.t.Fatalf("listen: %v", e)
	}
	u, e := n.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0, false)
	if e != 0 {
		h.t.Fatal(e)
	}
	if e := n.BindInet(u, sin4([4]byte{}, echoPort)); e != 0 {
		h.t.Fatalf("bind 0.0.0.0:7 (UDP): %v", e)
	}
	h.l, h.u = l, u
	h.progs.Go(h.tcpServer)
	h.progs.Go(h.udpServer)
}

func sin4(ip [4]byte, port uint16) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint16(b, unix.AF_INET)
	binary.BigEndian.PutUint16(b[2:], port)
	copy(b[4:], ip[:])
	return b
}

func (h *hosted) stopping() bool {
	select {
	case <-h.quit:
		return true
	default:
		return false
	}
}

// tcpServer accepts and serves each connection in a goroutine of its
// own; it closes the listener when the programs stop.
func (h *hosted) tcpServer() {
	n := h.k.Sockets
	defer n.Close(h.l)
	for !h.stopping() {
		var a int
		e := h.k.Do(100*time.Millisecond, func() (w net.Wait, e net.Errno) {
			a, w, e = n.Accept(h.l)
			return w, e
		})
		if e == unix.EAGAIN {
			continue
		}
		if e != 0 {
			h.t.Errorf("accept: %v", e)
			return
		}
		h.served.Add(1)
		h.progs.Go(func() { h.echo(a) })
	}
}

// echo serves one connection: what it reads it writes back, until end of
// file or an error; then it closes it.
func (h *hosted) echo(a int) {
	n := h.k.Sockets
	h.echoing.Add(1)
	defer h.echoing.Add(-1)
	defer n.Close(a)
	buf := make([]byte, 16<<10)
	for {
		var m net.Msg
		e := h.k.Do(100*time.Millisecond, func() (net.Wait, net.Errno) { return n.Recv(a, &net.Iov{One: buf, Len: len(buf)}, 0, &m) })
		if e == unix.EAGAIN {
			if h.stopping() {
				return
			}
			continue
		}
		if e != 0 || m.N == 0 {
			return // reset, or end of file
		}
		for off := 0; off < m.N; {
			var k int
			e := h.k.Do(bound, func() (w net.Wait, e net.Errno) {
				k, w, e = n.Send(a, &net.Iov{One: buf[off:m.N], Len: m.N - off}, 0, 0, nil)
				return w, e
			})
			if e == unix.EAGAIN && !h.stopping() {
				continue // a peer that does not read (the fuzzer's connections)
			}
			if e != 0 {
				return
			}
			off += k
		}
	}
}

// udpServer sends each datagram back to its sender.
func (h *hosted) udpServer() {
	n := h.k.Sockets
	defer n.Close(h.u)
	buf := make([]byte, 64<<10)
	for !h.stopping() {
		var m net.Msg
		e := h.k.Do(100*time.Millisecond, func() (net.Wait, net.Errno) { return n.Recv(h.u, &net.Iov{One: buf, Len: len(buf)}, 0, &m) })
		if e != 0 {
			continue
		}
		to := net.Addr{Raw: bytes.Clone(m.Addr[:m.AddrLen])}
		if _, _, e := n.Send(h.u, &net.Iov{One: buf[:m.N], Len: m.N}, 0, unix.MSG_DONTWAIT, &to); e == 0 {
			h.echoed.Add(1)
		}
	}
}

// dialHealth opens the health checks' connections (IPv4 and IPv6 TCP,
// IPv4 UDP) from the peer. The first connect may come before the service
// has its listener: it tries again.
func (h *hosted) dialHealth() {
	var err error
	h.tcp4, err = h.dial(tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(svcIP), Port: echoPort}, ipv4.ProtocolNumber, 5*time.Second)
	if err != nil {
		h.t.Fatalf("dial 10.0.2.15:7: %v", err)
	}
	h.tcp6, err = h.dial(tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom16(svcLL), Port: echoPort}, ipv6.ProtocolNumber, 5*time.Second)
	if err != nil {
		h.t.Fatalf("dial [%v]:7: %v", tcpip.AddrFrom16(svcLL), err)
	}
	to := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(svcIP), Port: echoPort}
	if h.udp4, err = gonet.DialUDP(h.peer, nil, &to, ipv4.ProtocolNumber); err != nil {
		h.t.Fatal(err)
	}
	if err := h.health(); err != nil {
		h.t.Fatalf("before any fuzzing: %v", err)
	}
}

func (h *hosted) dial(a tcpip.FullAddress, proto tcpip.NetworkProtocolNumber, d time.Duration) (*gonet.TCPConn, error) {
	return h.dialFrom(nil, a, proto, d)
}

// dialFrom is dial with each attempt from the peer's port *ports, which
// it increments (an attempt refused leaves its port taken for a while);
// ports nil: ephemeral ports.
func (h *hosted) dialFrom(ports *uint16, a tcpip.FullAddress, proto tcpip.NetworkProtocolNumber, d time.Duration) (*gonet.TCPConn, error) {
	end := time.Now().Add(d)
	for {
		var from tcpip.FullAddress
		if ports != nil {
			from = tcpip.FullAddress{NIC: a.NIC, Port: *ports}
			*ports++
		}
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		c, err := gonet.DialTCPWithBind(ctx, h.peer, from, a, proto)
		cancel()
		if err == nil || time.Now().After(end) {
			return c, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// health makes a round trip over each health connection, bytes checked,
// each within bound.
func (h *hosted) health() error {
	t0 := time.Now()
	for _, c := range []*gonet.TCPConn{h.tcp4, h.tcp6} {
		msg := make([]byte, 1+h.rnd.Intn(6000))
		h.rnd.Read(msg)
		if err := roundTrip(c, msg); err != nil {
			return fmt.Errorf("TCP health check to %v: %w", c.RemoteAddr(), err)
		}
	}
	msg := make([]byte, 1+h.rnd.Intn(1400))
	h.rnd.Read(msg)
	got := make([]byte, 2000)
	ok := false
	for try := 0; try < 5 && !ok; try++ { // a datagram may be lost: the rings drop when full
		h.udp4.SetDeadline(time.Now().Add(bound / 5))
		if _, err := h.udp4.Write(msg); err != nil {
			return fmt.Errorf("UDP health check: %v", err)
		}
		for {
			k, err := h.udp4.Read(got)
			if err != nil {
				break
			}
			if bytes.Equal(got[:k], msg) {
				ok = true
				break
			}
		}
	}
	if !ok {
		return fmt.Errorf("UDP health check: no echo in 5 tries of %v", bound/5)
	}
	h.worst = max(h.worst, time.Since(t0))
	socks, pages := h.k.Sockets.Usage()
	h.peakSocks, h.peakPages = max(h.peakSocks, socks), max(h.peakPages, pages)
	return nil
}

func roundTrip(c *gonet.TCPConn, msg []byte) error {
	c.SetDeadline(time.Now().Add(bound))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if !bytes.Equal(got, msg) {
		return fmt.Errorf("%d bytes echoed wrong", len(msg))
	}
	return nil
}

// churn opens, uses and closes connections from the peer until stop
// closes: TCP with up to 100 KB echoed and checked (one in eight closed
// with bytes unread, a reset), and UDP from a new port each time. It
// reports the connections it completed; an error stops it.
func (h *hosted) churn(seed int64, stop chan struct{}) (wait func() (int, error)) {
	var done int
	var err error
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewSource(seed))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err = h.churnOne(r, i); err != nil {
				return
			}
			done++
		}
	})
	return func() (int, error) { wg.Wait(); return done, err }
}

func (h *hosted) churnOne(r *rand.Rand, i int) error {
	if i%4 == 3 {
		to := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(svcIP), Port: echoPort}
		u, err := gonet.DialUDP(h.peer, nil, &to, ipv4.ProtocolNumber)
		if err != nil {
			return err
		}
		defer u.Close()
		msg := make([]byte, 1+r.Intn(8000)) // fragmented beyond 1472
		r.Read(msg)
		got := make([]byte, 9000)
		for try := 0; try < 5; try++ {
			u.SetDeadline(time.Now().Add(bound / 5))
			u.Write(msg)
			if k, err := u.Read(got); err == nil && bytes.Equal(got[:k], msg) {
				return nil
			}
		}
		return fmt.Errorf("churn: UDP echo of %d bytes never came", len(msg))
	}
	a := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(svcIP), Port: echoPort}
	proto := tcpip.NetworkProtocolNumber(ipv4.ProtocolNumber)
	if i%2 == 1 {
		a.Addr, proto = tcpip.AddrFrom16(svcLL), ipv6.ProtocolNumber
	}
	c, err := h.dial(a, proto, bound)
	if err != nil {
		return fmt.Errorf("churn: dial %v: %v", a.Addr, err)
	}
	defer c.Close()
	msg := make([]byte, 1+r.Intn(100<<10))
	r.Read(msg)
	if i%8 == 2 {
		c.Write(msg[:min(len(msg), 1000)])
		return nil // closed with the echo unread: a reset
	}
	c.SetDeadline(time.Now().Add(bound))
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(msg)
		if err == nil {
			err = c.CloseWrite()
		}
		werr <- err
	}()
	got, err := io.ReadAll(c)
	if e := <-werr; e != nil {
		return fmt.Errorf("churn: write: %v", e)
	}
	if err != nil {
		return fmt.Errorf("churn: read: %v after %d of %d bytes", err, len(got), len(msg))
	}
	if !bytes.Equal(got, msg) {
		return fmt.Errorf("churn: %d bytes echoed as %d, not the same", len(msg), len(got))
	}
	return nil
}

// diag is the state to report with a failure: the socket layer's pools,
// the connections the programs serve, the service's connections by
// state, its TCP counters.
func (h *hosted) diag() string {
	socks, pages := h.k.Sockets.Usage()
	states := map[string]int{}
	h.s.nicMu.Lock()
	for _, c := range h.s.conns {
		if c.typ == unix.SOCK_STREAM {
			states[tcp.EndpointState(c.ep.State()).String()]++
		}
	}
	h.s.nicMu.Unlock()
	st := h.s.st.Stats().TCP
	return fmt.Sprintf("socket layer: %d sockets, %d ring pages; %d connections served; the service's TCP endpoints %v; its TCP counters: %d established, %d passive opens, %d resets sent, %d received, %d established resets, SYN cookies sent %d, received %d",
		socks, pages, h.echoing.Load(), states, st.CurrentEstablished.Value(), st.PassiveConnectionOpenings.Value(), st.ResetsSent.Value(), st.ResetsReceived.Value(),
		st.EstablishedResets.Value(), st.ListenOverflowSynCookieSent.Value(), st.ListenOverflowSynCookieRcvd.Value())
}

// finish closes the health connections, stops the programs and checks
// that the socket layer's slots and ring pages and the page supplier's
// pages come back to where they were before the programs, and that the
// service forgot every socket.
func (h *hosted) finish() {
	t := h.t
	h.tcp4.Close()
	h.tcp6.Close()
	h.udp4.Close()
	close(h.quit)
	done := make(chan struct{})
	go func() { h.progs.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("the programs did not finish in %v", bound)
	}
	end := time.Now().Add(bound)
	for {
		socks, pages := h.k.Sockets.Usage()
		arena := h.k.Pages()
		h.s.nicMu.Lock()
		conns := len(h.s.conns)
		h.s.nicMu.Unlock()
		if socks == h.socks0 && pages == h.pages0 && arena == h.arena0 && conns == 0 {
			t.Logf("pools: %d sockets, %d ring pages, %d arena pages before (at most %d sockets and %d ring pages meanwhile); the same after; the service holds nothing",
				socks, pages, arena, h.peakSocks, h.peakPages)
			return
		}
		if time.Now().After(end) {
			t.Fatalf("after closing: %d sockets, %d ring pages, %d arena pages, %d service conns; before: %d, %d, %d, 0",
				socks, pages, arena, conns, h.socks0, h.pages0, h.arena0)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// shut stops the service and the peer (a test's cleanup).
func (h *hosted) shut() {
	select {
	case <-h.quit:
	default:
		close(h.quit)
	}
	h.progs.Wait()
	if h.s != nil {
		h.s.stop()
	}
	h.cancel()
	h.pumpWG.Wait()
	h.peer.Destroy()
}

// stop ends the service's goroutines and its netstack's.
func (s *service) stop() {
	close(s.quit)
	s.flood.stop()
	s.wake()
	for _, f := range s.files {
		f.Close() // the waiters' reads end
	}
	s.wg.Wait()
	s.st.Destroy()
}

// TestListenAgain: a listener stopped (shutdown SHUT_RD) and listening
// again before the service looked gets both requests in one event
// (NetOpAbort with NetOpListen): the old endpoint goes first and the new
// listen stands. Before, the service listened and then aborted and
// released the endpoint, and the kernel's socket was no longer the
// service's: the peer's connections were refused for good although
// listen had returned.
func TestListenAgain(t *testing.T) {
	h := newHosted(t, hostedOpts{})
	n := h.k.Sockets
	const port = 8081
	l, e := n.Socket(unix.AF_INET, unix.SOCK_STREAM, 0, false)
	if e != 0 {
		t.Fatal(e)
	}
	defer n.Close(l)
	if e := n.BindInet(l, sin4([4]byte{}, port)); e != 0 {
		t.Fatalf("bind: %v", e)
	}
	if e := n.Listen(l, 16); e != 0 {
		t.Fatalf("listen: %v", e)
	}
	to := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(svcIP), Port: port}
	c, err := h.dial(to, ipv4.ProtocolNumber, 5*time.Second)
	if err != nil {
		t.Fatalf("the first listen: %v", err)
	}
	c.Close()
	h.s.nicMu.Lock() // the service's round waits: both requests in one poll
	e1 := n.Shutdown(l, unix.SHUT_RD)
	e2 := n.Listen(l, 16)
	h.s.nicMu.Unlock()
	if e1 != 0 || e2 != 0 {
		t.Fatalf("shutdown: %v, listen again: %v", e1, e2)
	}
	if c, err = h.dial(to, ipv4.ProtocolNumber, 5*time.Second); err != nil {
		t.Fatalf("after listening again: %v", err)
	}
	c.Close()
}

// TestRxNoPages: when the kernel has no page for a connection's empty
// ring (NetRx says ENOBUFS), the service tries again by itself — no
// NetOpRxRoom comes for a ring no reader will empty — and once pages
// are to be had the echo comes back whole.
func TestRxNoPages(t *testing.T) {
	h := newHosted(t, hostedOpts{})
	held := h.k.Env.AllocPage() // the limit needs a page in use (0 is none)
	h.k.Env.SetLimit(h.k.Env.InUse())
	msg := bytes.Repeat([]byte("no pages "), 1000)
	c := h.tcp4
	c.SetDeadline(time.Now().Add(4 * bound))
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * rxRetry) // NetRx refused a few times
	h.k.Env.SetLimit(0)
	h.k.Env.FreePage(held)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("echo after the pages came back: %v", err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("the echo differs from what was sent")
	}
	c.SetDeadline(time.Time{})
	if err := h.health(); err != nil {
		t.Error(err)
	}
	h.finish()
}
