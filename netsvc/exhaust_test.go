package netsvc

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"

	"yolk/kernel/net"
)

// TestWireSocketsExhausted: hosts on the wire open connections to the
// program and go silent, more than the kernel has sockets (its pool, here
// limited to 512, for every family). They take at most all but net.WireReserve: the
// service refuses (resets) the rest, the program can still make sockets
// of its own, the connections already open keep working, nothing leaks;
// once the hosts reset theirs, new connections are served again and the
// pools are as they were. (Before the reserve, the wire took every slot
// and the program could not make even an AF_UNIX socket.)
func TestWireSocketsExhausted(t *testing.T) {
	var mu sync.Mutex
	var acks [][]byte // the hosts' answers to the service's SYN-ACKs
	type conn struct {
		ip       [4]byte
		port     uint16
		seq, ack uint32
	}
	var est []conn
	tap := func(f []byte, out bool) {
		if !out || len(f) < 54 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[23] != 6 {
			return
		}
		ip := f[14:]
		s := ip[int(ip[0]&15)*4:]
		dst := [4]byte(ip[16:20])
		if s[13] != 0x12 || dst == peerIP {
			return
		}
		c := conn{dst, binary.BigEndian.Uint16(s[2:]), binary.BigEndian.Uint32(s[8:]), binary.BigEndian.Uint32(s[4:]) + 1}
		a := eth(svcMAC, hostMAC(dst[:]), 0x0800, ip4(dst, svcIP, 6, 64, 0, 0, nil, tcpSeg(c.port, echoPort, c.seq, c.ack, 0x10, 65535, nil, nil)))
		fixSums(a)
		mu.Lock()
		acks = append(acks, a)
		est = append(est, c)
		mu.Unlock()
	}
	h := newHosted(t, hostedOpts{tap: tap})
	h.k.Sockets.SetLimit(512) // a smaller pool, so that 600 hosts overfill it
	socks0, _ := h.k.Sockets.Usage()
	const hosts = 600
	for i := 0; i < hosts; i++ {
		src := [4]byte{198, 51, byte(100 + i/250), byte(1 + i%250)} // off the link: through the gateway, no ARP
		syn := eth(svcMAC, hostMAC(src[:]), 0x0800, ip4(src, svcIP, 6, 64, 0, 0, nil, tcpSeg(40000, echoPort, uint32(i)<<20, 0, 0x02, 65535, nil, nil)))
		fixSums(syn)
		h.k.Inject(syn, bound)
		for end := time.Now().Add(bound); ; time.Sleep(time.Millisecond) {
			mu.Lock()
			n := len(acks)
			mu.Unlock()
			if n > 0 || time.Now().After(end) {
				break
			}
		}
		mu.Lock()
		for _, a := range acks {
			h.k.Inject(a, bound)
		}
		acks = nil
		mu.Unlock()
	}
	end := time.Now().Add(bound)
	full := h.k.Sockets.Limit() - net.WireReserve
	for socks, _ := h.k.Sockets.Usage(); socks < full && time.Now().Before(end); socks, _ = h.k.Sockets.Usage() {
		time.Sleep(10 * time.Millisecond)
	}
	socks, _ := h.k.Sockets.Usage()
	t.Logf("%d silent connections from %d hosts: the socket layer has %d sockets (%d before); %s", len(est), hosts, socks, socks0, h.diag())
	if socks > full {
		t.Errorf("the wire's connections took %d sockets, more than the %d outside the program's reserve", socks, full)
	}
	if err := h.health(); err != nil {
		t.Fatalf("the connections already open, with every socket taken: %v", err)
	}
	// The program still has sockets of its own.
	for i := 0; i < net.WireReserve-4; i++ {
		a, b, e := h.k.Sockets.Pair(unix.SOCK_STREAM, 0, true)
		if e != 0 {
			t.Fatalf("socketpair %d with the wire's sockets taken: %v", i, e)
		}
		h.k.Sockets.Close(a)
		h.k.Sockets.Close(b)
	}
	// A new connection: the netstack completes the handshake, the kernel
	// has no socket for it (ENFILE), the service resets it. (Linux would
	// keep it queued until accept had a descriptor for it.)
	if c, err := h.dial(tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(svcIP), Port: echoPort}, ipv4.ProtocolNumber, 0); err != nil {
		t.Logf("a new connection with every socket taken: %v", err)
	} else {
		t.Logf("a new connection with every socket taken: %v", roundTrip(c, []byte("full")))
		c.Close()
	}
	// The hosts reset their connections: the program's reads fail, it
	// closes them.
	for _, c := range est {
		r := eth(svcMAC, hostMAC(c.ip[:]), 0x0800, ip4(c.ip, svcIP, 6, 64, 0, 0, nil, tcpSeg(c.port, echoPort, c.seq, 0, 0x04, 0, nil, nil)))
		fixSums(r)
		h.k.Inject(r, bound)
	}
	for end := time.Now().Add(bound); ; time.Sleep(10 * time.Millisecond) {
		if socks, _ := h.k.Sockets.Usage(); socks == socks0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("after the resets: %s; %d sockets before", h.diag(), socks0)
		}
	}
	c, err := h.dial(tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(svcIP), Port: echoPort}, ipv4.ProtocolNumber, bound)
	if err != nil {
		t.Fatalf("a new connection after the resets: %v", err)
	}
	if err := roundTrip(c, []byte("again")); err != nil {
		t.Fatalf("a new connection after the resets: %v", err)
	}
	c.Close()
	h.finish()
}
