package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"yolk/kernel/abi"
	"yolk/netsvc"
)

// TCP and UDP through the NIC and QEMU's user network (the TCP/IP
// service, netsvc): a client reaching servers the host harness runs on
// its loopback (10.0.2.2 from the guest), and a server the harness
// reaches through a port forward. All traffic stays between the guest
// and the host's 127.0.0.1. The harness (qemu/wire_test.go) names its
// servers and the forwarded port in the environment.

const (
	envHostTCP   = "YOLK_TEST_HOST_TCP"  // 10.0.2.2:PORT: a TCP echo server on the host's loopback
	envHostUDP   = "YOLK_TEST_HOST_UDP"  // 10.0.2.2:PORT: a UDP echo server there
	envFwdPort   = "YOLK_TEST_FWD_PORT"  // a guest port the host forwards to: serve one echo connection on it
	envHostSink  = "YOLK_TEST_HOST_SINK" // 10.0.2.2:PORT: counts what a connection brings; the guest writes wireSinkSize bytes and closes
	wireTimeout  = 60 * time.Second
	wireInSize   = 100000 // bytes the host sends through the forward
	wireSinkSize = 200000 // bytes the guest writes to the host's sink before it closes
)

func wireEnv(t *T, key string) string {
	v := os.Getenv(key)
	if v == "" {
		t.Skipf("%s not set: the host harness (qemu TestGuest) runs the servers this test needs", key)
	}
	if !netsvc.Started {
		t.Fatalf("%s is set but the TCP/IP service did not start: %v", key, netsvc.Err)
	}
	return v
}

func testWireTCPOut(t *T) {
	addr := wireEnv(t, envHostTCP)
	c, err := net.DialTimeout("tcp", addr, wireTimeout)
	if err != nil {
		t.Fatalf("Dial %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wireTimeout))
	msg := bytes.Repeat([]byte("through the NIC "), 20000) // 320 kB: many segments, windows, the rings wrapping
	go func() {
		c.Write(msg)
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo through %s: %d bytes of %d, %v", addr, len(got), len(msg), err)
	}
	if la := c.LocalAddr().(*net.TCPAddr); !la.IP.Equal(net.IPv4(10, 0, 2, 15)) {
		t.Errorf("local address %v, want 10.0.2.15", la)
	}
	// Written and closed at once, as an HTTP server with Connection:
	// close does: the bytes still go (the harness's sink counts them).
	if sink := os.Getenv(envHostSink); sink != "" {
		s, err := net.DialTimeout("tcp", sink, wireTimeout)
		if err != nil {
			t.Fatalf("Dial %s: %v", sink, err)
		}
		if _, err := s.Write(make([]byte, wireSinkSize)); err != nil {
			t.Errorf("write to the sink: %v", err)
		}
		s.Close()
	}
	// A port nobody listens on is refused by the host (slirp's RST).
	if c, err := net.DialTimeout("tcp", "10.0.2.2:1", wireTimeout); err == nil {
		c.Close()
		t.Errorf("Dial 10.0.2.2:1 connected")
	}
}

func testWireUDPOut(t *T) {
	addr := wireEnv(t, envHostUDP)
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatalf("Dial udp %s: %v", addr, err)
	}
	defer c.Close()
	// First the largest IPv4 datagram, 65,507 bytes, fragmented on the
	// wire both ways, into the socket's fresh receive ring; then
	// ordinary ones behind it.
	big := make([]byte, 65507)
	for i := range big {
		big[i] = byte(i * 7)
	}
	buf := make([]byte, 70000)
	bigOK := false
	for range 3 { // UDP may drop a fragment
		if k, err := c.Write(big); k != len(big) || err != nil {
			t.Fatalf("write %d bytes: %d, %v", len(big), k, err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(buf); err == nil && n == len(big) && bytes.Equal(buf[:n], big) {
			bigOK = true
			break
		}
	}
	if !bigOK {
		t.Errorf("the largest datagram never came back whole from %s", addr)
	}
	got := 0
	for i := range 20 {
		msg := fmt.Sprintf("datagram %d", i)
		c.Write([]byte(msg))
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, err := c.Read(buf)
		if err == nil && string(buf[:n]) == msg {
			got++
		}
	}
	if got < 15 { // UDP may drop; a few losses are the network's right
		t.Errorf("%d of 20 datagrams came back from %s", got, addr)
	}
}

func testWireTCPIn(t *T) {
	port := wireEnv(t, envFwdPort)
	if _, err := strconv.Atoi(port); err != nil {
		t.Fatalf("%s=%q", envFwdPort, port)
	}
	ln, err := net.Listen("tcp", ":"+port)
	if err != nil {
		t.Fatalf("Listen :%s: %v", port, err)
	}
	defer ln.Close()
	fmt.Printf("yolk-test: listening on %s\n", port)
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(wireTimeout))
	for {
		c, err := ln.Accept()
		if err != nil {
			t.Fatalf("Accept on :%s: %v (the host never connected)", port, err)
		}
		c.SetDeadline(time.Now().Add(wireTimeout))
		// The host sends wireInSize bytes and waits for them back before
		// it closes: this test ends (and QEMU with it) only when the
		// host has the whole echo.
		n, err := io.CopyN(c, c, wireInSize)
		if err != nil {
			c.Close() // a probe before the listener was up, or a broken one
			continue
		}
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("after the echo: %v, want the host's close", err)
		}
		c.Close()
		t.Logf("echoed %d bytes for %v", n, c.RemoteAddr())
		return
	}
}

// testNICMalformed feeds the receive path frames the wire should not
// carry — truncated headers, bad lengths and checksums, fragments that
// overlap or never complete, and a flood of garbage — as if the device
// had received them (abi.SysNICInject), then checks that the TCP/IP
// service still answers: a valid ICMP echo request from the gateway draws
// frames out.
func testNICMalformed(t *T) {
	if !netsvc.Started {
		t.Skipf("no TCP/IP service (no NIC: boot with yolk run -net user): %v", netsvc.Err)
	}
	in := nicInfo(t)
	gwMAC := [6]byte{0x52, 0x55, 10, 0, 2, 2}
	eth := func(typ uint16, payload []byte) []byte {
		f := append(append(append([]byte{}, in.MAC[:]...), gwMAC[:]...), byte(typ>>8), byte(typ))
		return append(f, payload...)
	}
	ipv4 := func(proto byte, id uint16, frag uint16, total int, payload []byte) []byte {
		h := make([]byte, 20)
		h[0], h[8], h[9] = 0x45, 64, proto
		binary.BigEndian.PutUint16(h[2:], uint16(total))
		binary.BigEndian.PutUint16(h[4:], id)
		binary.BigEndian.PutUint16(h[6:], frag)
		copy(h[12:], slirpGateway[:])
		copy(h[16:], slirpGuest[:])
		binary.BigEndian.PutUint16(h[10:], ^uint16(csum(0, h)))
		return append(h, payload...)
	}
	inject := func(f []byte) {
		for try := 0; ; try++ {
			_, _, e := syscall.Syscall(abi.SysNICInject, uintptr(unsafe.Pointer(&f[0])), uintptr(len(f)), 0)
			if e == 0 || e == syscall.EINVAL {
				return
			}
			if e != syscall.EAGAIN || try > 1000 {
				t.Fatalf("SysNICInject: %v", e)
			}
			time.Sleep(time.Millisecond) // the ring is full: let the service drain it
		}
	}
	tcp := make([]byte, 20)
	binary.BigEndian.PutUint16(tcp[0:], 40000)
	binary.BigEndian.PutUint16(tcp[2:], 9)
	tcp[12], tcp[13] = 5<<4, 0x02 // SYN, checksum left wrong
	good := ipv4(6, 1, 0, 40, tcp)
	badIHL := append([]byte{}, good...)
	badIHL[0] = 0x43
	badSum := append([]byte{}, good...)
	badSum[10] ^= 0xff
	frames := [][]byte{
		eth(0x0800, nil),                             // an Ethernet header alone
		eth(0x0800, good[:12]),                       // a truncated IPv4 header
		eth(0x0800, badIHL),                          // IHL below 5
		eth(0x0800, ipv4(6, 2, 0, 1500, tcp)),        // a total length beyond the frame
		eth(0x0800, ipv4(6, 3, 0, 10, tcp)),          // a total length below the header
		eth(0x0800, badSum),                          // a bad header checksum
		eth(0x0800, good),                            // a TCP SYN with a bad checksum
		eth(0x0800, ipv4(17, 4, 0, 24, tcp[:4])),     // a truncated UDP header
		eth(0x0806, []byte{0, 1, 8, 0, 6, 4, 0}),     // a truncated ARP packet
		eth(0x86dd, make([]byte, 20)),                // a truncated IPv6 header
		eth(0x0800, ipv4(1, 5, 0x2000, 28, tcp[:8])), // a first fragment whose rest never comes
	}
	// Overlapping fragments of one datagram.
	for off := 0; off < 64; off++ {
		frames = append(frames, eth(0x0800, ipv4(17, 6, 0x2000|uint16(off), 20+64, make([]byte, 64))))
	}
	for _, f := range frames {
		inject(f)
	}
	// A flood of garbage behind a valid Ethernet header.
	rng := uint64(0x9e3779b97f4a7c15)
	for range 5000 {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		b := make([]byte, 14+int(rng%1400))
		for j := 14; j < len(b); j++ {
			b[j] = byte(rng >> (j % 56))
		}
		typ := []uint16{0x0800, 0x0806, 0x86dd}[rng%3]
		copy(b, eth(typ, nil))
		if typ == 0x0800 && len(b) >= 34 {
			// From the gateway: whatever the service answers (a RST, an
			// ICMP error) goes to slirp, never to an address outside.
			copy(b[26:30], slirpGateway[:])
		}
		inject(b)
	}
	// The service still answers: an echo request draws a reply (or an
	// ARP request first) out of the NIC.
	before := nicInfo(t).TxFrames
	icmp := make([]byte, 16)
	icmp[0] = 8 // echo request
	binary.BigEndian.PutUint16(icmp[4:], 0x1234)
	binary.BigEndian.PutUint16(icmp[2:], ^uint16(csum(0, icmp)))
	deadline := time.Now().Add(20 * time.Second)
	for nicInfo(t).TxFrames == before {
		if time.Now().After(deadline) {
			t.Fatalf("no frame out for an echo request after the malformed ones (TCP/IP service stuck?)")
		}
		inject(eth(0x0800, ipv4(1, 7, 0, 20+len(icmp), icmp)))
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d malformed frames and 5000 of garbage; the service answered (%d frames out)", len(frames), nicInfo(t).TxFrames-before)
}

// testDHCP: netsvc's DHCP client against slirp's server (the service,
// which has its address from yolk.net, lends the NIC meanwhile).
func testDHCP(t *T) {
	if !netsvc.Started {
		t.Skipf("no TCP/IP service (no NIC: boot with yolk run -net user): %v", netsvc.Err)
	}
	in := nicInfo(t)
	var l netsvc.Lease
	var err error
	netsvc.Exclusive(func() { l, err = netsvc.DHCP(in.MAC) })
	if err != nil {
		t.Fatalf("DHCP: %v", err)
	}
	if l.Addr != slirpGuest || l.Prefix != 24 || l.Router != slirpGateway || l.Server != slirpGateway || l.Seconds == 0 {
		t.Errorf("lease %+v: want 10.0.2.15/24, router and server 10.0.2.2, a lease time", l)
	}
	t.Logf("lease %v/%d router %v dns %v for %ds", l.Addr, l.Prefix, l.Router, l.DNS, l.Seconds)
}

const envHostTCP6 = "YOLK_TEST_HOST_TCP6" // [fec0::2]:PORT: a TCP echo server on the host's ::1

// testWireTCP6Out: IPv6 through the NIC: the address autoconfigured
// from slirp's router advertisement (fec0::/64), and an echo through a
// server on the host's ::1, reached as fec0::2.
func testWireTCP6Out(t *T) {
	addr := wireEnv(t, envHostTCP6)
	var v6 net.IP
	deadline := time.Now().Add(30 * time.Second)
	for v6 == nil {
		if time.Now().After(deadline) {
			t.Fatalf("eth0 has no global IPv6 address 30 s after boot (router advertisement, SLAAC)")
		}
		if eth, err := net.InterfaceByName("eth0"); err == nil {
			addrs, _ := eth.Addrs()
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() == nil && ipn.IP.IsGlobalUnicast() {
					v6 = ipn.IP
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c, err := net.DialTimeout("tcp", addr, wireTimeout)
	if err != nil {
		t.Fatalf("Dial %s from %v: %v", addr, v6, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wireTimeout))
	msg := bytes.Repeat([]byte("IPv6 through the NIC "), 5000)
	go func() {
		c.Write(msg)
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo through %s: %d bytes of %d, %v", addr, len(got), len(msg), err)
	}
	if la := c.LocalAddr().(*net.TCPAddr); !la.IP.Equal(v6) {
		t.Errorf("local address %v, want eth0's %v", la, v6)
	}
	t.Logf("eth0's %v to %s", v6, addr)
}
