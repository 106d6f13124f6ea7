package qemu

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
// DHCPACK of the same address) and the guest still answers. Needs root
// (the tap device) and dnsmasq (make test installs dnsmasq-base); skips
// with the reason otherwise. No traffic leaves the tap link.
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
	dnsmasq, err := exec.LookPath("dnsmasq")
	if err != nil {
		if dnsmasq, err = exec.LookPath("/usr/sbin/dnsmasq"); err != nil {
			t.Skip("no dnsmasq (make test installs Debian's dnsmasq-base)")
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the tap device needs it")
	}
	tapLink(t, tap, host+"/24")
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

	img := fixtureImage(t, "yolk/qemu/testdata/dhcp", t.TempDir(), "")
	var (
		serial   bytes.Buffer
		smu      sync.Mutex
		once     sync.Once
		served   = make(chan string, 1)
		pingErr  error
		renewals int
	)
	client := func() {
		// The renewal: dnsmasq's second ACK of the address, after T1.
		end := time.After(dhcpT1*time.Second + time.Minute)
		for n := 0; n < 2; {
			select {
			case <-acked:
				n++
			case <-end:
				n = 2
			}
		}
		mu.Lock()
		renewals = acks - 1
		mu.Unlock()
		ask := func(msg string) (string, error) {
			c, err := net.DialTimeout("tcp", guest+":8080", 10*time.Second)
			if err != nil {
				return "", err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "%s\n", msg)
			l, err := bufio.NewReader(c).ReadString('\n')
			return strings.TrimSpace(l), err
		}
		var r string
		r, pingErr = ask("ping")
		served <- r
		ask("quit")
	}
	t0 := time.Now()
	res, err := Run(t.Context(), Config{Image: img, Arch: "amd64", Machine: "microvm", SMP: 1,
		Net: NetTap + tap, Env: []string{"DHCP_HOST=" + ln.Addr().String()}, Timeout: 3 * time.Minute,
		Stdout: &lockedWriter{&smu, &serial}, Stderr: &lockedWriter{&smu, &serial},
		OnLine: func(l string) {
			if l == "dhcp: serving" {
				once.Do(func() { go client() })
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
	var seen []string
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
