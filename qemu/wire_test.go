package qemu

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The host's side of the guest's TestWire* (kernel/selftest/wire.go):
// a TCP and a UDP echo server on the host's loopback, which the guest
// reaches as 10.0.2.2 through QEMU's user network, and a client that
// reaches the guest's server through a port forward on 127.0.0.1 once the
// guest says it listens. Nothing here talks to any other address; every
// server and the client stop by themselves with the test.

const (
	wireGuestPort = 8080
	wireInSize    = 100000 // as the guest's wireInSize
	wireListening = "yolk-test: listening on 8080"
)

type wire struct {
	sinkMu sync.Mutex
	sunk   []int64 // bytes each sink connection brought
	env    []string
	env6   string // the IPv6 server's variable, "" if the host has no ::1
	fwds   []Forward
	once   sync.Once
	res    chan error // the forward client's outcome
	lns    []io.Closer
}

func startWire(t *testing.T) *wire {
	w := &wire{res: make(chan error, 1)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go echoTCP(ln)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(buf[:n], from)
		}
	}()
	// A free port on the host's loopback for the forward.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hostPort := probe.Addr().(*net.TCPAddr).Port
	probe.Close()
	// A sink: counts what a connection brings until EOF (the guest
	// writes and closes at once: what it wrote must all arrive).
	sink, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := sink.Accept()
			if err != nil {
				return
			}
			go func() {
				c.SetDeadline(time.Now().Add(2 * time.Minute))
				n, _ := io.Copy(io.Discard, c)
				c.Close()
				w.sinkMu.Lock()
				w.sunk = append(w.sunk, n)
				w.sinkMu.Unlock()
			}()
		}
	}()
	w.lns = []io.Closer{ln, pc, sink}
	// IPv6: a TCP echo on the host's ::1, the guest's fec0::2 (if the
	// host has IPv6 loopback).
	if ln6, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		w.lns = append(w.lns, ln6)
		go echoTCP(ln6)
		w.env6 = "YOLK_TEST_HOST_TCP6=[fec0::2]:" + strconv.Itoa(ln6.Addr().(*net.TCPAddr).Port)
	}
	t.Cleanup(func() {
		for _, l := range w.lns {
			l.Close()
		}
	})
	w.env = []string{
		"YOLK_TEST_HOST_TCP=10.0.2.2:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port),
		"YOLK_TEST_HOST_UDP=10.0.2.2:" + strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port),
		"YOLK_TEST_FWD_PORT=" + strconv.Itoa(wireGuestPort),
		"YOLK_TEST_HOST_SINK=10.0.2.2:" + strconv.Itoa(sink.Addr().(*net.TCPAddr).Port),
	}
	if w.env6 != "" {
		w.env = append(w.env, w.env6)
	}
	w.fwds = []Forward{{HostAddr: "127.0.0.1", HostPort: hostPort, GuestPort: wireGuestPort}}
	return w
}

// echoTCP echoes every connection ln accepts until ln closes; each for
// two minutes at most.
func echoTCP(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			c.SetDeadline(time.Now().Add(2 * time.Minute))
			io.Copy(c, c)
			c.Close()
		}()
	}
}

// line watches the guest's output: when its server listens, the client
// starts.
func (w *wire) line(l string) {
	if l == wireListening {
		w.once.Do(func() { go func() { w.res <- w.client() }() })
	}
}

// client sends wireInSize bytes through the forward and checks the echo;
// it retries a connection slirp accepted before the guest's listener was
// up (slirp then closes it), for up to a minute.
func (w *wire) client() error {
	msg := make([]byte, wireInSize)
	for i := range msg {
		msg[i] = byte(i % 251)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", w.fwds[0].HostPort)
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			last = err
			time.Sleep(200 * time.Millisecond)
			continue
		}
		c.SetDeadline(time.Now().Add(time.Minute))
		go c.Write(msg)
		got := make([]byte, len(msg))
		n, err := io.ReadFull(c, got)
		c.Close()
		if err == nil && bytes.Equal(got, msg) {
			return nil
		}
		last = fmt.Errorf("echo through %s: %d of %d bytes, %v", addr, n, len(msg), err)
		time.Sleep(200 * time.Millisecond)
	}
	return last
}

// wireSinkSize is what the guest writes to the sink before it closes.
const wireSinkSize = 200000

// checkSink reports whether the guest's write-and-close reached the host
// whole, if the guest's test ran.
func (w *wire) checkSink(t *testing.T, ran bool) {
	if !ran {
		return
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		w.sinkMu.Lock()
		got := slices.Clone(w.sunk)
		w.sinkMu.Unlock()
		if slices.Contains(got, wireSinkSize) {
			return
		}
	}
	t.Errorf("host side of TestWireTCPOut: the sink got %v bytes, want %d (the guest wrote and closed)", w.sunk, wireSinkSize)
}

// check reports the client's outcome, if the guest's server ran.
func (w *wire) check(t *testing.T, serverRan bool) {
	if !serverRan {
		return
	}
	select {
	case err := <-w.res:
		if err != nil {
			t.Errorf("host side of TestWireTCPIn: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("host side of TestWireTCPIn: the guest listened but the host's client never finished")
	}
}
