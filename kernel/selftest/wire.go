package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"yolk/netsvc"
)

// TCP and UDP through the NIC and QEMU's user network (the TCP/IP
// service, netsvc): a client reaching servers the host harness runs on
// its loopback (10.0.2.2 from the guest), and a server the harness
// reaches through a port forward. All traffic stays between the guest
// and the host's 127.0.0.1. The harness (qemu/wire_test.go) names its
// servers and the forwarded port in the environment.

const (
	envHostTCP  = "YOLK_TEST_HOST_TCP" // 10.0.2.2:PORT: a TCP echo server on the host's loopback
	envHostUDP  = "YOLK_TEST_HOST_UDP" // 10.0.2.2:PORT: a UDP echo server there
	envFwdPort  = "YOLK_TEST_FWD_PORT" // a guest port the host forwards to: serve one echo connection on it
	wireTimeout = 60 * time.Second
	wireInSize  = 100000 // bytes the host sends through the forward
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
	buf := make([]byte, 2048)
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
