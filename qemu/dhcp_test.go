package qemu

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestDHCPTap: DHCP as GCE serves it (issue 31), against Debian's
// dnsmasq on a tap link the test makes. dnsmasq, in the foreground,
// without DNS (port 0), reading no resolv.conf or hosts file, bound to
// the tap alone, answers as GCE's metadata server does: a /32 lease, the
// gateway's host route and the default route through it in option 121
// (and a router option the client must ignore), MTU 1460, two DNS
// servers, a domain and a search list, and a lease of 120 s (dnsmasq's
// shortest) whose T1 is dhcpT1 seconds. The guest (qemu/testdata/dhcp),
// booted without yolk.net, prints its address, MTU, routes and
// resolv.conf, says hello to a listener on the host's tap address, and
// serves; after T1 dnsmasq logs the renewal (a second DHCPREQUEST and
// DHCPACK of the same address) and the guest still answers. A packet
// socket on the tap sees the guest's REQUESTs: the first broadcast, the
// renewal unicast to the server from the address held. Skips, with the
// reason, when not root or when the tap cannot be made; fails without
// dnsmasq (make qemu, so make test, installs dnsmasq-base). No traffic
// leaves the tap link.
func TestDHCPTap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots an image")
	}
	needQEMU(t)
	const (
		tap    = "yolkdhcp0"
		host   = "192.168.78.1"
		guest  = "192.168.78.5"
		dhcpT1 = 8
	)
	if os.Geteuid() != 0 {
		t.Skip("not root: the tap device needs it")
	}
	tapLink(t, tap, host+"/24")
	dnsmasq, err := exec.LookPath("dnsmasq")
	if err != nil {
		if dnsmasq, err = exec.LookPath("/usr/sbin/dnsmasq"); err != nil {
			t.Fatal("no dnsmasq: make qemu installs Debian's dnsmasq-base (apt-get install dnsmasq-base)")
		}
	}
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hello := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		l, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Fprintf(c, "ok\n")
		hello <- strings.TrimSpace(l)
	}()

	requests := captureRequests(t, tap)

	dir := t.TempDir()
	var (
		mu    sync.Mutex
		dlog  bytes.Buffer
		acks  int
		acked = make(chan struct{}, 8)
	)
	cmd := exec.Command(dnsmasq, "--keep-in-foreground", "--log-facility=-", "--log-dhcp", "--conf-file=/dev/null",
		"--port=0", "--no-resolv", "--no-hosts", "--interface="+tap, "--bind-interfaces", "--except-interface=lo",
		"--user=root", "--pid-file="+filepath.Join(dir, "pid"), "--dhcp-leasefile="+filepath.Join(dir, "leases"),
		"--dhcp-range="+guest+","+guest+",2m",
		"--dhcp-option=1,255.255.255.255",
		"--dhcp-option=3,192.168.78.99", // option 121 is there: ignored
		"--dhcp-option=121,"+host+"/32,0.0.0.0,0.0.0.0/0,"+host,
		"--dhcp-option=26,1460",
		"--dhcp-option=6,192.168.78.53,192.168.78.54",
		"--dhcp-option=15,c.yolk-test.internal",
		"--dhcp-option=119,c.yolk-test.internal,google.internal",
		fmt.Sprintf("--dhcp-option=58,%d", dhcpT1),
		"--dhcp-option=59,100")
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("dnsmasq: %v", err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l := sc.Text()
			mu.Lock()
			dlog.WriteString(l + "\n")
			if strings.Contains(l, "DHCPACK("+tap+") "+guest) {
				acks++
				select {
				case acked <- struct{}{}:
				default:
				}
			}
			mu.Unlock()
		}
	}()
	defer func() {
		cmd.Process.Kill()
		<-scanned
		cmd.Wait()
	}()

	// amd64 on microvm; YOLK_DHCP_ARCH=arm64: arm64 on virt.
	arch, machine := "amd64", "microvm"
	if os.Getenv("YOLK_DHCP_ARCH") == "arm64" {
		arch, machine = "arm64", "virt"
	}
	img := fixtureImage(t, "yolk/qemu/testdata/dhcp", t.TempDir(), arch)
	var (
		serial   bytes.Buffer
		smu      sync.Mutex
		once     sync.Once
		served   = make(chan string, 1)
		pingErr  error
		renewals int
	)
	renewed := make(chan struct{}, 1)
	client := func() {
		// The renewal: dnsmasq's second ACK of the address, after T1,
		// and the guest's line saying it took it.
		deadline := time.Now().Add(dhcpT1*time.Second + time.Minute)
		for n := 0; n < 2; {
			select {
			case <-acked:
				n++
			case <-time.After(time.Until(deadline)):
				n = 2
			}
		}
		select {
		case <-renewed:
		case <-time.After(time.Until(deadline)):
		}
		mu.Lock()
		renewals = acks - 1
		mu.Unlock()
		var r string
		r, pingErr = askLine(guest+":8080", "ping")
		served <- r
		askLine(guest+":8080", "quit")
	}
	t0 := time.Now()
	res, err := Run(t.Context(), Config{Image: img, Arch: arch, Machine: machine, SMP: 1,
		Net: NetTap + tap, Env: []string{"DHCP_HOST=" + ln.Addr().String()}, Timeout: 3 * time.Minute,
		Stdout: &lockedWriter{&smu, &serial}, Stderr: &lockedWriter{&smu, &serial},
		OnLine: func(l string) {
			if l == "dhcp: serving" {
				once.Do(func() { go client() })
			}
			if strings.HasPrefix(l, "netsvc: DHCP: renewed ") {
				select {
				case renewed <- struct{}{}:
				default:
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	smu.Lock()
	console := serial.String()
	smu.Unlock()
	mu.Lock()
	log := dlog.String()
	mu.Unlock()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\nguest:\n%s\ndnsmasq:\n%s", append(args, console, log)...)
	}
	var lines []string
	for _, l := range strings.Split(console, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "dhcp: "); ok {
			lines = append(lines, rest)
		}
	}
	want := []string{
		"mtu 1460",
		"addr " + guest + "/32",
		"route default via " + host + " dev eth0 proto dhcp src " + guest,
		"route " + host + " dev eth0 proto dhcp scope link src " + guest,
		"resolv # DHCP (yolk netsvc)",
		"resolv nameserver 192.168.78.53",
		"resolv nameserver 192.168.78.54",
		"resolv search c.yolk-test.internal google.internal",
		`host said "ok" (<nil>)`,
		"serving",
		"done",
	}
	if !slices.Equal(lines, want) {
		fail("the guest printed\n  %s\nwant\n  %s", strings.Join(lines, "\n  "), strings.Join(want, "\n  "))
	}
	select {
	case h := <-hello:
		if h != "hello from "+guest {
			fail("the host's listener got %q", h)
		}
	default:
		fail("the host's listener got nothing")
	}
	var pong string
	select {
	case pong = <-served:
	default:
	}
	if pong != "pong "+guest {
		fail("after the renewal the guest answered %q (%v); %d ACKs", pong, pingErr, acks)
	}
	if res.ExitCode != 0 {
		fail("exit %d", res.ExitCode)
	}
	if !strings.Contains(console, "netsvc: DHCP: "+guest+"/32 from "+host+", lease 120 s") || !strings.Contains(console, "netsvc: DHCP: renewed "+guest+"/32") {
		fail("the console lacks the lease's and the renewal's lines")
	}
	if n := strings.Count(log, "DHCPREQUEST("+tap+") "+guest); n < 2 {
		fail("dnsmasq logged %d DHCPREQUESTs of %s, want the first and a renewal", n, guest)
	}
	// The renewal went to the server (unicast, from the address held);
	// the first REQUEST was broadcast from 0.0.0.0.
	reqs := requests()
	if len(reqs) < 2 || reqs[0] != "REQUEST 0.0.0.0 -> 255.255.255.255 (broadcast) ciaddr 0.0.0.0" ||
		!slices.Contains(reqs, "REQUEST "+guest+" -> "+host+" (unicast) ciaddr "+guest) {
		fail("the guest's REQUESTs on the tap:\n  %s\nwant a broadcast one, then a renewal unicast to %s", strings.Join(reqs, "\n  "), host)
	}
	seen := slices.Clone(reqs)
	for _, l := range strings.Split(console, "\n") {
		if strings.Contains(l, "netsvc: DHCP:") {
			seen = append(seen, strings.TrimSpace(l))
		}
	}
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "DHCPREQUEST(") || strings.Contains(l, "DHCPACK(") {
			seen = append(seen, l)
		}
	}
	t.Logf("leased, renewed %d times, still serving, in %v:\n%s", renewals, time.Since(t0).Round(time.Second), strings.Join(seen, "\n"))
}

// captureRequests reads the DHCP REQUESTs that come in on the tap (a
// packet socket bound to it) until the test ends; the function it
// returns gives them so far, each as "REQUEST SRC -> DST (broadcast or
// unicast) ciaddr A".
func captureRequests(t *testing.T, tap string) func() []string {
	ifi, err := net.InterfaceByName(tap)
	if err != nil {
		t.Fatal(err)
	}
	proto := uint16(syscall.ETH_P_IP<<8&0xff00 | syscall.ETH_P_IP>>8) // network order
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, int(proto))
	if err != nil {
		t.Skipf("no packet socket (%v): root is needed", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &syscall.Timeval{Usec: 200000})
	var (
		mu   sync.Mutex
		got  []string
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		b := make([]byte, 2048)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, _, err := syscall.Recvfrom(fd, b, 0)
			if err != nil || n < 14+20+8+240 {
				continue
			}
			f := b[:n]
			ip := f[14:]
			ihl := int(ip[0]&15) * 4
			if ip[9] != 17 || len(ip) < ihl+8+240 {
				continue
			}
			udp := ip[ihl:]
			m := udp[8:]
			if binary.BigEndian.Uint16(udp) != 68 || binary.BigEndian.Uint16(udp[2:]) != 67 || m[0] != 1 || !bytes.Contains(m[240:], []byte{53, 1, 3}) {
				continue
			}
			kind := "unicast"
			if bytes.Equal(f[:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
				kind = "broadcast"
			}
			mu.Lock()
			got = append(got, fmt.Sprintf("REQUEST %v -> %v (%s) ciaddr %v", net.IP(ip[12:16]), net.IP(ip[16:20]), kind, net.IP(m[12:16])))
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		syscall.Close(fd)
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// askLine sends msg and a newline to the guest's line service at addr
// (testdata/dhcp's: "ping", "quit") over a connection of its own and
// returns its one-line answer.
func askLine(addr, msg string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "%s\n", msg)
	l, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(l), err
}
