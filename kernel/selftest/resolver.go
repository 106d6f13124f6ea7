package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The files under /etc that the kernel makes at boot (kernel/etc.go) as
// Go's resolver reads them: names from /etc/hosts and ports from
// /etc/services, found without a socket (the pure-Go resolver reads the
// files first and finds these names there).

func testEtcFiles(t *T) {
	for _, f := range []string{"/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/services", "/etc/protocols", "/etc/passwd", "/etc/group"} {
		if b, err := os.ReadFile(f); err != nil || len(b) == 0 {
			t.Errorf("ReadFile(%s): %d bytes, %v", f, len(b), err)
		}
	}
	// os/user finds the user the program runs as, from /etc/passwd (a
	// program without cgo has no other way but $USER and $HOME, which
	// the kernel does not set).
	if u, err := user.Current(); err != nil || u.Uid != "0" || u.Username != "root" || u.HomeDir != "/root" {
		t.Errorf("user.Current() = %+v, %v; want root, uid 0, home /root", u, err)
	} else if fi, err := os.Stat(u.HomeDir); err != nil || !fi.IsDir() {
		t.Errorf("root's home %s: %v", u.HomeDir, err)
	}
	if g, err := user.LookupGroupId("0"); err != nil || g.Name != "root" {
		t.Errorf("user.LookupGroupId(0) = %+v, %v; want root", g, err)
	}
	// /proc/self/cmdline: the arguments, each ended by a NUL.
	want := strings.Join(os.Args, "\x00") + "\x00"
	if b, err := os.ReadFile("/proc/self/cmdline"); err != nil || string(b) != want {
		t.Errorf("/proc/self/cmdline = %q, %v; want %q", b, err, want)
	}
	if b, _ := os.ReadFile("/etc/nsswitch.conf"); !strings.Contains(string(b), "hosts: files dns\n") {
		t.Errorf("/etc/nsswitch.conf: %q, want hosts: files dns", b)
	}
	addrs, err := net.LookupHost("localhost")
	if err != nil || !slices.Equal(addrs, []string{"127.0.0.1", "::1"}) {
		t.Errorf("LookupHost(localhost) = %q, %v; want 127.0.0.1 and ::1", addrs, err)
	}
	var un syscall.Utsname
	if err := syscall.Uname(&un); err != nil {
		t.Fatalf("uname: %v", err)
	}
	var node []byte
	for _, c := range un.Nodename {
		if c == 0 {
			break
		}
		node = append(node, byte(c))
	}
	host, err := os.Hostname()
	if err != nil || host != string(node) || host == "" {
		t.Errorf("os.Hostname() = %q, %v; uname's nodename %q", host, err, node)
	}
	// The node's own name resolves, from /etc/hosts, as Debian has it.
	if addrs, err := net.LookupHost(host); err != nil || !slices.Equal(addrs, []string{"127.0.1.1"}) {
		t.Errorf("LookupHost(%q) = %q, %v; want 127.0.1.1", host, addrs, err)
	}
	if names, err := net.LookupAddr("127.0.0.1"); err != nil || !slices.Contains(names, "localhost") {
		t.Errorf("LookupAddr(127.0.0.1) = %q, %v; want localhost", names, err)
	}
	for _, c := range []struct {
		network, service string
		port             int
	}{{"tcp", "http", 80}, {"tcp", "https", 443}, {"udp", "domain", 53}, {"tcp", "ssh", 22}, {"tcp", "postgresql", 5432}} {
		if p, err := net.LookupPort(c.network, c.service); err != nil || p != c.port {
			t.Errorf("LookupPort(%s, %s) = %d, %v; want %d", c.network, c.service, p, err, c.port)
		}
	}
}

// testDNSLocal: Go's DNS client against a DNS server this test runs in
// the guest (UDP on 127.0.0.1): A and AAAA answers, NXDOMAIN, and a
// truncated UDP answer that makes the client retry over TCP (the same
// server on TCP). Nothing leaves the machine.
func testDNSLocal(t *T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("ListenPacket: %v", err)
	}
	defer pc.Close()
	port := pc.LocalAddr().(*net.UDPAddr).Port
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("Listen tcp :%d: %v", port, err)
	}
	defer ln.Close()
	go func() { // UDP
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if ans := dnsAnswer(buf[:n], true); ans != nil {
				pc.WriteTo(ans, from)
			}
		}
	}()
	go func() { // TCP: two-byte length, then the message
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				var l [2]byte
				if _, err := io.ReadFull(c, l[:]); err != nil {
					return
				}
				q := make([]byte, int(l[0])<<8|int(l[1]))
				if _, err := io.ReadFull(c, q); err != nil {
					return
				}
				ans := dnsAnswer(q, false)
				c.Write(append([]byte{byte(len(ans) >> 8), byte(len(ans))}, ans...))
			}()
		}
	}()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	addrs, err := r.LookupHost(ctx, "svc.yolk.test")
	slices.Sort(addrs)
	if err != nil || !slices.Equal(addrs, []string{"192.0.2.7", "2001:db8::7"}) {
		t.Errorf("LookupHost(svc.yolk.test) = %q, %v; want 192.0.2.7 and 2001:db8::7", addrs, err)
	}
	if _, err := r.LookupHost(ctx, "missing.yolk.test"); !isNotFound(err) {
		t.Errorf("LookupHost(missing.yolk.test) = %v, want not found", err)
	}
	// big.yolk.test's UDP answer is truncated: the client asks again over TCP.
	addrs, err = r.LookupHost(ctx, "big.yolk.test")
	if err != nil || len(addrs) != 40 {
		t.Errorf("LookupHost(big.yolk.test) = %d addresses, %v; want 40 (over TCP after a truncated UDP answer)", len(addrs), err)
	}
}

func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// dnsAnswer answers DNS query q for the zone yolk.test: svc has an A and
// an AAAA record, big 40 A records (truncated over UDP), anything else is
// NXDOMAIN. nil for what is no query.
func dnsAnswer(q []byte, udp bool) []byte {
	if len(q) < 12 || q[2]&0x80 != 0 || q[5] != 1 {
		return nil
	}
	// The question: labels, then type and class.
	i := 12
	var name []string
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		name = append(name, strings.ToLower(string(q[i+1:i+1+l])))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qtype := int(q[i+1])<<8 | int(q[i+2])
	question := q[12 : i+5]
	var rdata [][]byte
	rcode := byte(3) // NXDOMAIN
	switch strings.Join(name, ".") {
	case "svc.yolk.test":
		rcode = 0
		if qtype == 1 {
			rdata = append(rdata, []byte{192, 0, 2, 7})
		} else if qtype == 28 {
			rdata = append(rdata, []byte{0x20, 0x01, 0x0d, 0xb8, 14: 0, 15: 7})
		}
	case "big.yolk.test":
		rcode = 0
		if qtype == 1 {
			for k := range 40 {
				rdata = append(rdata, []byte{198, 51, 100, byte(k + 1)})
			}
		}
	}
	tc := byte(0)
	if udp && len(rdata) > 20 {
		rdata, tc = rdata[:20], 0x02
	}
	a := []byte{q[0], q[1], 0x84 | tc, rcode, 0, 1, 0, byte(len(rdata)), 0, 0, 0, 0}
	a = append(a, question...)
	for _, rd := range rdata {
		a = append(a, 0xc0, 12, byte(qtype>>8), byte(qtype), 0, 1, 0, 0, 0, 60, 0, byte(len(rd)))
		a = append(a, rd...)
	}
	return a
}
