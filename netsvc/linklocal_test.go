package netsvc

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"

	"yolk/kernel/net"
)

// TestUDPLinkLocal: a UDP program on [::] answers a datagram that came
// from a peer's IPv6 link-local address, on a link where the machine has
// no IPv6 address but its own link-local one, as Linux does (the
// fe80::/64 route of the interface). Before, the answer's sendto failed
// with ENETUNREACH: the kernel knew no IPv6 address of the NIC (the
// service tells it only the global ones), and the service's netstack
// finds no route to fe80::/10 without a NIC named. Found by the guest's
// wire fuzzer over a tap link (qemu/wirefuzz_test.go), whose UDP health
// check over IPv6 went unanswered.
func TestUDPLinkLocal(t *testing.T) {
	h := newHosted(t, hostedOpts{})
	n := h.k.Sockets
	u, e := n.Socket(unix.AF_INET6, unix.SOCK_DGRAM, 0, false)
	if e != 0 {
		t.Fatal(e)
	}
	sa6 := make([]byte, 28)
	binary.LittleEndian.PutUint16(sa6, unix.AF_INET6)
	binary.BigEndian.PutUint16(sa6[2:], 9)
	if e := n.BindInet(u, sa6); e != 0 {
		t.Fatalf("bind [::]:9: %v", e)
	}
	to := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom16(svcLL), Port: 9}
	c, err := gonet.DialUDP(h.peer, nil, &to, ipv6.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The service opens its endpoint for the socket after the bind:
	// the peer sends until one datagram arrives.
	buf := make([]byte, 64)
	var m net.Msg
	for end := time.Now().Add(bound); ; {
		c.Write([]byte("hello")) // refused (port unreachable) until the endpoint is there
		e := h.k.Do(100*time.Millisecond, func() (net.Wait, net.Errno) { return n.Recv(u, &net.Iov{One: buf, Len: len(buf)}, 0, &m) })
		if e == 0 && m.N == 5 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("recvfrom: %d bytes, %v", m.N, e)
		}
	}
	if from := m.Addr[8:24]; !bytes.Equal(from, peerLL[:]) {
		t.Fatalf("recvfrom's address %x, want the peer's %x", from, peerLL)
	}
	back := net.Addr{Raw: bytes.Clone(m.Addr[:m.AddrLen])}
	if _, _, e := n.Send(u, &net.Iov{One: buf[:m.N], Len: m.N}, 0, unix.MSG_DONTWAIT, &back); e != 0 {
		t.Fatalf("sendto the peer's link-local address: %v (Linux: the datagram goes)", e)
	}
	c.SetReadDeadline(time.Now().Add(bound))
	k, err := c.Read(buf)
	if err != nil || string(buf[:k]) != "hello" {
		t.Fatalf("the peer got %q, %v; want the datagram back", buf[:k], err)
	}
	n.Close(u)
	h.finish()
}
