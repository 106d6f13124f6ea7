package main

import (
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
)

// The files under /etc that the kernel makes at boot (kernel/etc.go) as
// Go's resolver reads them: names from /etc/hosts and ports from
// /etc/services, found without a socket (the pure-Go resolver reads the
// files first and finds these names there).

func testEtcFiles(t *T) {
	for _, f := range []string{"/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/services", "/etc/protocols"} {
		if b, err := os.ReadFile(f); err != nil || len(b) == 0 {
			t.Errorf("ReadFile(%s): %d bytes, %v", f, len(b), err)
		}
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
