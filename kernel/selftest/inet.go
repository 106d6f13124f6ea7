package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"yolk/internal/iproute"
	"yolk/kernel/abi"
	"yolk/netsvc"
)

// TCP and UDP on the machine's own addresses (kernel/net's loopback)
// through package net and net/http: echo over many connections at once,
// IPv6 and dual-stack listeners, deadlines, half-close, RST, refused
// connections, EADDRINUSE, a full backlog, UDP's addresses and
// ECONNREFUSED.

// echoServer accepts on ln until it closes; each connection echoes until
// EOF, then closes.
func echoServer(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			io.Copy(c, c)
			c.Close()
		}()
	}
}

// echoMany dials addr conns times at once and checks each echoes msg.
func echoMany(t *T, network, addr string, conns int, msg []byte) {
	errs := make(chan error, conns)
	for range conns {
		go func() {
			c, err := net.Dial(network, addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			go func() {
				c.Write(msg)
				c.(*net.TCPConn).CloseWrite()
			}()
			got, err := io.ReadAll(c)
			if err == nil && !bytes.Equal(got, msg) {
				err = fmt.Errorf("echo of %d bytes came back as %d", len(msg), len(got))
			}
			errs <- err
		}()
	}
	for range conns {
		if err := <-errs; err != nil {
			t.Errorf("%s %s: %v", network, addr, err)
		}
	}
}

func testTCPLoopback(t *T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	if _, err := net.Listen("tcp", addr); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("second Listen on %s: %v, want EADDRINUSE", addr, err)
	}
	go echoServer(ln)
	echoMany(t, "tcp", addr, 8, bytes.Repeat([]byte("echo over loopback TCP "), 10000)) // 230 kB each

	// Addresses as both ends see them.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if c.RemoteAddr().String() != addr || !strings.HasPrefix(c.LocalAddr().String(), "127.0.0.1:") {
		t.Errorf("Dial's addresses: local %v remote %v, want 127.0.0.1:* and %s", c.LocalAddr(), c.RemoteAddr(), addr)
	}
	// A read deadline.
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	b := make([]byte, 16)
	if _, err := c.Read(b); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read past its deadline: %v, want a timeout", err)
	}
	c.Close()

	// Connection refused: a port nobody listens on.
	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l2.Addr().String()
	l2.Close()
	if _, err := net.Dial("tcp", closed); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Dial %s (closed): %v, want ECONNREFUSED", closed, err)
	}
	// A RST: the server closes with SO_LINGER 0, once it has the
	// client's byte (so that the dial has returned).
	rst, _ := net.Listen("tcp", "127.0.0.1:0")
	defer rst.Close()
	go func() {
		s, err := rst.Accept()
		if err == nil {
			s.Read(make([]byte, 1))
			s.(*net.TCPConn).SetLinger(0)
			s.Close()
		}
	}()
	if c, err := net.Dial("tcp", rst.Addr().String()); err != nil {
		t.Errorf("Dial: %v", err)
	} else {
		c.Write([]byte("x"))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(b); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("Read after the peer's RST: %v, want ECONNRESET", err)
		}
		c.Close()
	}
	// Options Go sets, as a program sets them.
	c, _ = net.Dial("tcp", addr)
	tc := c.(*net.TCPConn)
	for _, err := range []error{tc.SetNoDelay(false), tc.SetKeepAlive(true), tc.SetKeepAlivePeriod(30 * time.Second),
		tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: time.Second, Count: 3}),
		tc.SetReadBuffer(1 << 16), tc.SetWriteBuffer(1 << 16)} {
		if err != nil {
			t.Errorf("option: %v", err)
		}
	}
	c.Close()
}

// testTCPBacklog: a listener whose queue is full leaves the next dial
// waiting (here, until its timeout), and accept makes room.
func testTCPBacklog(t *T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	if err := syscall.Listen(fd, 0); err != nil { // room for one
		t.Fatalf("listen: %v", err)
	}
	sa, _ := syscall.Getsockname(fd)
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("Dial into an empty queue: %v", err)
	}
	defer first.Close()
	if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		c.Close()
		t.Errorf("Dial into a full queue connected")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Errorf("Dial into a full queue: %v, want a timeout", err)
	}
	nfd, _, err := syscall.Accept(fd)
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	syscall.Close(nfd)
	if c, err := net.DialTimeout("tcp", addr, 10*time.Second); err != nil {
		t.Errorf("Dial after accept made room: %v", err)
	} else {
		c.Close()
	}
}

func testTCP6(t *T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatalf("Listen [::1]: %v", err)
	}
	go echoServer(ln)
	echoMany(t, "tcp", ln.Addr().String(), 2, []byte("over IPv6"))
	ln.Close()
	// A dual-stack listener takes IPv4 and IPv6; Go shows the IPv4 peer
	// unmapped.
	ds, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatalf("Listen :0: %v", err)
	}
	defer ds.Close()
	port := ds.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ds.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "%s", c.RemoteAddr().(*net.TCPAddr).IP)
			c.Close()
		}
	}()
	for _, host := range []string{"127.0.0.1", "::1", "localhost"} {
		c, err := net.Dial("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
		if err != nil {
			t.Errorf("Dial %s: %v", host, err)
			continue
		}
		got, _ := io.ReadAll(c)
		c.Close()
		want := host
		if host == "localhost" {
			want = c.LocalAddr().(*net.TCPAddr).IP.String()
		}
		if string(got) != want {
			t.Errorf("the server saw %s as %q, want %q", host, got, want)
		}
	}
}

func testUDPLoopback(t *T) {
	a, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatalf("ListenUDP: %v", err)
	}
	defer a.Close()
	b, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatalf("ListenUDP: %v", err)
	}
	defer b.Close()
	for i := range 50 {
		msg := fmt.Sprintf("datagram %d", i)
		if _, err := b.WriteTo([]byte(msg), a.LocalAddr()); err != nil {
			t.Fatalf("WriteTo: %v", err)
		}
		buf := make([]byte, 64)
		a.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, from, err := a.ReadFromUDP(buf)
		if err != nil || string(buf[:n]) != msg || from.String() != b.LocalAddr().String() {
			t.Fatalf("ReadFrom = %q from %v, %v; want %q from %v", buf[:n], from, err, msg, b.LocalAddr())
		}
	}
	a.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, _, err := a.ReadFrom(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("ReadFrom past its deadline: %v, want a timeout", err)
	}
	// A connected socket to a port nobody has learns ECONNREFUSED.
	l, _ := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	gone := l.LocalAddr().(*net.UDPAddr)
	l.Close()
	c, err := net.DialUDP("udp", nil, gone)
	if err != nil {
		t.Fatalf("DialUDP: %v", err)
	}
	defer c.Close()
	c.Write([]byte("anyone?"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 8)); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Read on a UDP socket connected to nobody: %v, want ECONNREFUSED", err)
	}
	// IPv6, and a datagram larger than a page.
	s6, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Fatalf("ListenUDP [::1]: %v", err)
	}
	defer s6.Close()
	big := bytes.Repeat([]byte{7}, 60000)
	if _, err := b.WriteTo(big, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: a.LocalAddr().(*net.UDPAddr).Port}); err != nil {
		t.Errorf("WriteTo 60000 bytes: %v", err)
	}
	buf := make([]byte, 65536)
	a.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, _, err := a.ReadFrom(buf); err != nil || n != len(big) {
		t.Errorf("ReadFrom of 60000 bytes: %d, %v", n, err)
	}
}

// testHTTPLoopback: net/http's server and client over loopback, with
// keep-alive and without.
func testHTTPLoopback(t *T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s from %s", r.URL.Path, r.Host)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String()
	for _, keep := range []bool{true, false} {
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: !keep}, Timeout: 30 * time.Second}
		for i := range 20 {
			resp, err := client.Get(fmt.Sprintf("%s/%d", url, i))
			if err != nil {
				t.Fatalf("GET (keep-alive %v): %v", keep, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := fmt.Sprintf("hello /%d from %s", i, ln.Addr()); err != nil || string(body) != want {
				t.Fatalf("GET = %q, %v; want %q", body, err, want)
			}
		}
		client.CloseIdleConnections()
	}
}

// testInterfaces: net.Interfaces and its addresses through netlink's
// route dumps: loopback always (and the NIC when there is one, with its
// routes).
func testInterfaces(t *T) {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatalf("Interfaces: %v", err)
	}
	var lo *net.Interface
	for i := range ifs {
		if ifs[i].Flags&net.FlagLoopback != 0 {
			lo = &ifs[i]
		}
	}
	if lo == nil || lo.Name != "lo" || lo.Index != 1 || lo.Flags&net.FlagUp == 0 || lo.MTU != 65536 {
		t.Fatalf("Interfaces = %+v, want lo (index 1, up, MTU 65536)", ifs)
	}
	addrs, err := lo.Addrs()
	if err != nil {
		t.Fatalf("lo.Addrs: %v", err)
	}
	got := fmt.Sprint(addrs)
	if got != "[127.0.0.1/8 ::1/128]" {
		t.Errorf("lo's addresses = %s, want [127.0.0.1/8 ::1/128]", got)
	}
	if byName, err := net.InterfaceByName("lo"); err != nil || byName.Index != 1 {
		t.Errorf("InterfaceByName(lo) = %v, %v", byName, err)
	}
	if all, err := net.InterfaceAddrs(); err != nil || len(all) < 2 {
		t.Errorf("InterfaceAddrs = %v, %v", all, err)
	}
	if !netsvc.Started {
		return
	}
	eth, err := net.InterfaceByName("eth0")
	if err != nil || eth.Flags&net.FlagUp == 0 || eth.MTU != 1500 || len(eth.HardwareAddr) != 6 {
		t.Fatalf("eth0 = %+v, %v; want the NIC, up, MTU 1500", eth, err)
	}
	// 10.0.2.15/24 from yolk.net; an IPv6 address once the router's
	// advertisement has come (TestWireTCP6Out waits for it).
	addrs, err = eth.Addrs()
	if err != nil || len(addrs) == 0 || addrs[0].String() != "10.0.2.15/24" {
		t.Errorf("eth0's addresses = %v, %v; want 10.0.2.15/24 first", addrs, err)
	}
	for _, a := range addrs[min(1, len(addrs)):] {
		if ipn, ok := a.(*net.IPNet); !ok || ipn.IP.To4() != nil {
			t.Errorf("eth0's address %v: want IPv6 after the IPv4 one", a)
		}
	}
	// The routes yolk.net makes, as `ip route` prints an RTM_GETROUTE
	// dump: the subnet's (proto kernel) and the default (proto boot,
	// which ip route does not print); slirp's DHCP makes the same
	// (proto dhcp) where the image's command line has no yolk.net.
	proto := ""
	if nicInfo(t).Prefix == 0 {
		proto = " proto dhcp"
	}
	want := []string{"default via 10.0.2.2 dev eth0" + proto + " src 10.0.2.15", "10.0.2.0/24 dev eth0 proto kernel scope link src 10.0.2.15"}
	if got, err := iproute.Routes(); err != nil || !slices.Equal(got, want) {
		t.Errorf("routes %q, %v; want %q", got, err, want)
	}
}

// testMulticastAddrs: net.Interface.MulticastAddrs, which reads
// /proc/net/igmp and igmp6: the groups Linux's kernel joins by itself,
// 224.0.0.1 and ff02::1 (and ff01::1) on lo and on the NIC, and on the
// NIC each IPv6 address's solicited-node group.
func testMulticastAddrs(t *T) {
	names := []string{"lo"}
	if netsvc.Started {
		names = append(names, "eth0")
	}
	for _, name := range names {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			t.Fatalf("InterfaceByName(%s): %v", name, err)
		}
		want := []string{"224.0.0.1", "ff02::1", "ff01::1"}
		if name == "eth0" {
			for _, ip := range eth0IPv6(t, ifi) {
				want = append(want, net.IP{0xff, 2, 10: 0, 11: 1, 12: 0xff, 13: ip[13], 14: ip[14], 15: ip[15]}.String())
			}
		}
		ifmat, err := ifi.MulticastAddrs()
		if err != nil {
			t.Fatalf("%s.MulticastAddrs: %v", name, err)
		}
		got := map[string]bool{}
		for _, a := range ifmat {
			got[a.String()] = true
		}
		for _, w := range want {
			if !got[w] {
				t.Errorf("%s.MulticastAddrs = %v, want %s among them", name, ifmat, w)
			}
		}
		t.Logf("%s: %v", name, ifmat)
	}
}

// eth0IPv6 is eth0's IPv6 addresses once it has one (the router's
// advertisement may come a few seconds after boot; none after 10 s:
// TestWireTCP6Out is the test that it comes).
func eth0IPv6(t *T, ifi *net.Interface) []net.IP {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var v6 []net.IP
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() == nil {
				v6 = append(v6, ipn.IP.To16())
			}
		}
		if len(v6) > 0 || time.Now().After(deadline) {
			if len(v6) == 0 {
				t.Logf("eth0 has no IPv6 address 10 s on: its solicited-node groups not checked")
			}
			return v6
		}
	}
}

// liveHeap is the Go heap's live bytes, read after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// kstats is the kernel's counters.
func kstats(t *T) abi.Stats {
	var s abi.Stats
	if _, _, e := syscall.Syscall(abi.SysStats, uintptr(unsafe.Pointer(&s)), 0, 0); e != 0 {
		t.Fatalf("SysStats: %v", e)
	}
	return s
}

// testTCPChurn: 10 000 loopback connections (as many as 25 s allow)
// opened, used and closed leave the kernel's memory where it was, and descriptors or sockets run
// out with EMFILE or ENFILE, not a fault; the server answers afterwards.
func testTCPChurn(t *T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer ln.Close()
	go echoServer(ln)
	addr := ln.Addr().String()
	one := func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("x")); err != nil {
			return err
		}
		_, err = io.ReadFull(c, make([]byte, 1))
		return err
	}
	// Warm up (the Go heap's and the server's goroutines' steady state),
	// then 10 000 connections — or as many as fit the time: 4 CPUs
	// under TCG on 2 host cores make a few thousand.
	// More CPUs than the host has cores under TCG make each connection
	// slow (4 vCPUs on 2 cores: ~150/s): there the test runs for a fixed
	// time instead, and says how many it made.
	// The whole 10 000 run at 1 CPU; at 2 CPUs 2000 (make test boots
	// many machines: the count matters once, the check on each).
	// The run after the warm-up is 15 s at most past the least count:
	// with the warm-up and the exhaustion below (16,384 sockets made and
	// closed) the test stays well inside the self-test's minute on a
	// loaded host (at 25 s it ran out of its minute at 30 connections a
	// second).
	// The kernel's own frames are judged with a slack of less than one
	// socket's rings (16 pages): they came back exact at 1, 2 and 4 CPUs.
	warmFor, runFor, least, total := 8*time.Second, 15*time.Second, 1000, 10000
	const slack = 15
	switch {
	case runtime.NumCPU() > 2:
		warmFor, runFor, least = 3*time.Second, 8*time.Second, 200
	case runtime.NumCPU() == 2:
		total = 2000
	}
	warm := time.Now().Add(warmFor)
	for i := 0; i < 1000 && time.Now().Before(warm); i++ {
		if err := one(); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	debug.FreeOSMemory() // the Go heap's free pages back to the kernel (MADV_DONTNEED)
	before, live0 := kstats(t), liveHeap()
	// At least least connections however long they take (a loaded host
	// can stall a TCG guest for seconds: the count is what is checked,
	// not the rate), up to a bound that only a stuck stack reaches.
	conns := 0
	start := time.Now()
	for end := start.Add(runFor); conns < total && (conns < least || time.Now().Before(end)); conns++ {
		if time.Since(start) > 10*runFor {
			t.Fatalf("only %d connections in %v", conns, time.Since(start))
		}
		if err := one(); err != nil {
			t.Fatalf("connection %d: %v", conns, err)
		}
	}
	time.Sleep(100 * time.Millisecond) // the server's goroutines close their ends
	debug.FreeOSMemory()
	after, live1 := kstats(t), liveHeap()
	// Exactly the sockets and ring pages there were (the listener, the
	// warm-up's last connection's ends if not yet closed: compared as
	// counts). The kernel's own frames — free memory's fall less the
	// program's pages, page tables and first-touched BSS — within slack
	// (a socket's rings are 16 pages). The program's pages move with the
	// Go heap (-146 to +20 frames over this test): they are not the
	// kernel's to bound; the network service's state lives in the Go
	// heap, whose live bytes after a collection are bounded instead.
	if after.Sockets > before.Sockets || after.SocketPages > before.SocketPages {
		t.Errorf("%d connections: sockets %d → %d, their pages %d → %d", conns, before.Sockets, after.Sockets, before.SocketPages, after.SocketPages)
	}
	kernelLost := func(a abi.Stats) int64 {
		return before.FramesFree - a.FramesFree - (a.PagesMapped - before.PagesMapped) - (a.TableFrames - before.TableFrames) - (a.BSSFaulted - before.BSSFaulted)
	}
	if kernelLost(after) > slack || live1-live0 > 2<<20 {
		// Look again once the last goroutines have surely finished and
		// the heap is returned once more (100 ms was short once on a
		// loaded host): a leak stays, a late close does not.
		time.Sleep(time.Second)
		runtime.GC()
		debug.FreeOSMemory()
		after2, live2 := kstats(t), liveHeap()
		t.Logf("%d kernel frames and %+d KiB of live heap more at first; a second later %d and %+d KiB",
			kernelLost(after), (live1-live0)>>10, kernelLost(after2), (live2-live0)>>10)
		after, live1 = after2, live2
	}
	if lost := kernelLost(after); lost > slack {
		t.Errorf("%d connections: the kernel holds %d frames more (free %d → %d, program pages %+d, page tables %+d, BSS pages %+d)", conns, lost,
			before.FramesFree, after.FramesFree, after.PagesMapped-before.PagesMapped, after.TableFrames-before.TableFrames, after.BSSFaulted-before.BSSFaulted)
	}
	if grew := live1 - live0; grew > 2<<20 {
		t.Errorf("%d connections: the Go heap's live bytes grew by %d KiB (the network service's state kept?)", conns, grew>>10)
	}
	t.Logf("%d connections; sockets %d → %d, ring pages %d → %d, free frames %d → %d, kernel frames %+d, program pages %+d, live heap %+d KiB", conns,
		before.Sockets, after.Sockets, before.SocketPages, after.SocketPages, before.FramesFree, after.FramesFree,
		kernelLost(after), after.PagesMapped-before.PagesMapped, (live1-live0)>>10)

	// Exhaustion: sockets until the kernel says no.
	var fds []int
	var last error
	for len(fds) < 2*fdTable {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			last = err
			break
		}
		fds = append(fds, fd)
	}
	if last != syscall.EMFILE && last != syscall.ENFILE {
		t.Errorf("after %d sockets: %v, want EMFILE or ENFILE", len(fds), last)
	}
	for _, fd := range fds {
		syscall.Close(fd)
	}
	if err := one(); err != nil {
		t.Errorf("the server after exhaustion: %v", err)
	}
	t.Logf("sockets ran out after %d: %v", len(fds), last)
}
