package qemu

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"yolk/netsvc/wiregen"
)

// TestWireFuzzTap: the wire as an attacker, in the guest (issue 33). The
// guest (qemu/testdata/wirefuzz) serves TCP and UDP echo on port 7 over
// IPv4 and IPv6 with netsvc's stack on a tap link the test makes; the
// host writes netsvc/wiregen's random and mutated frames into the tap (a
// packet socket bound to it: Ethernet, ARP, IPv4 and IPv6 with options,
// fragments and extension headers, TCP, UDP, ICMP, NDP and DHCP replies,
// replays, and the fuzzer's hosts' answers to what the guest sends them),
// YOLK_WIRE_FRAMES of them (5,000 unless set: make test; make
// wirefuzz: 1,000,000) from a fixed seed (YOLK_WIRE_SEED, 1). The host's
// own kernel is the peer: every YOLK_WIRE_EVERY frames (2,000) it makes
// real round trips — on a TCP connection held from the start, a new TCP
// connection and a UDP datagram, each over IPv4 and over IPv6
// (link-local) — each within wireBound (a TCP answer later than that is
// waited for a minute more, to tell a late answer from a stall), or the
// test fails naming the check and the frame count. At the end the host
// quits the guest, which closes its sockets and reports the kernel's
// sockets and ring pages before and after; they must match, and the
// guest must exit 0 (a kernel fault is exit 125).
//
// The frames are paced by the tap: at most 128 written and not yet taken
// by QEMU (the tap's tx_packets), so that its queue does not overflow and
// drop the host's own frames of the health checks; frames it drops
// anyway (tx_dropped) do not count. The guest's address
// (192.168.79.2/24) has as gateway an address no host has (.254), so
// nothing the guest answers to the fuzzer's off-link sources goes to the
// host; no frame of the fuzzer carries the host's addresses, and a frame
// written into the tap reaches only QEMU.
// Needs root for the tap and the packet socket; skips with the reason
// otherwise.
func TestWireFuzzTap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots an image")
	}
	needQEMU(t)
	const (
		tap   = "yolkwire0"
		host  = "192.168.79.1"
		guest = "192.168.79.2"
	)
	if os.Geteuid() != 0 {
		t.Skip("not root: the tap device and the packet socket need it")
	}
	frames := envInt("YOLK_WIRE_FRAMES", 5000)
	every := envInt("YOLK_WIRE_EVERY", 2000)
	seed := int64(envInt("YOLK_WIRE_SEED", 1))
	tapLink(t, tap, host+"/24")
	ifi, err := net.InterfaceByName(tap)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, int(htons(syscall.ETH_P_ALL)))
	if err != nil {
		t.Skipf("no packet socket (%v): root is needed", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(syscall.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		t.Fatal(err)
	}
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &syscall.Timeval{Usec: 200000})

	arch, machine := "amd64", "microvm"
	if os.Getenv("YOLK_WIRE_ARCH") == "arm64" {
		arch, machine = "arm64", "virt"
	}
	img := fixtureImage(t, "yolk/qemu/testdata/wirefuzz", t.TempDir(), arch)
	var (
		mu     sync.Mutex
		serial bytes.Buffer
		once   sync.Once
		result = make(chan *wireRun, 1)
	)
	timeout := time.Duration(envInt("YOLK_WIRE_MINUTES", 10)) * time.Minute
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res, err := Run(ctx, Config{Image: img, Arch: arch, Machine: machine, SMP: 2, Memory: "512M",
		Net: NetTap + tap, Env: []string{"yolk.net=" + guest + "/24,192.168.79.254"}, Timeout: timeout,
		Stdout: &lockedWriter{&mu, &serial}, Stderr: &lockedWriter{&mu, &serial},
		OnLine: func(l string) {
			if l == "wirefuzz: serving" {
				once.Do(func() {
					go func() {
						w := &wireRun{tap: tap, ifi: ifi, fd: fd, host: host, guest: guest, frames: frames, every: every, seed: seed}
						w.run()
						result <- w
						if w.err != nil {
							cancel() // the guest will not be told to quit
						}
					}()
				})
			}
		}})
	mu.Lock()
	out := serial.String()
	mu.Unlock()
	var w *wireRun
	select {
	case w = <-result:
	case <-time.After(time.Minute): // the guest exits as its "bye" goes; the host's side ends just after
		t.Fatalf("the guest never served, or the host's side did not finish (%v):\n%s", err, tail(out, 60))
	}
	if w.g != nil {
		t.Logf("%s", w.report())
	}
	if w.err != nil {
		t.Fatalf("%v\nguest's diag: %s\nguest:\n%s", w.err, w.diag, tail(out, 60))
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("the guest exited %d (125: a kernel fault):\n%s", res.ExitCode, tail(out, 60))
	}
	before := regexp.MustCompile(`wirefuzz: before sockets (\d+) pages (\d+) free (\d+)`).FindStringSubmatch(out)
	after := regexp.MustCompile(`wirefuzz: after sockets (\d+) pages (\d+) free (\d+) \(in ([^)]*)\)`).FindStringSubmatch(out)
	if before == nil || after == nil {
		t.Fatalf("the guest did not report its pools:\n%s", tail(out, 60))
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "wirefuzz: ") {
			t.Log(strings.TrimSpace(l))
		}
	}
	if before[1] != after[1] || before[2] != after[2] {
		t.Errorf("the kernel's pools after the sockets closed: %d sockets, %d ring pages; before the program opened any: %d, %d",
			atoiOr(after[1]), atoiOr(after[2]), atoiOr(before[1]), atoiOr(before[2]))
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func atoiOr(s string) int { n, _ := strconv.Atoi(s); return n }

// tail is the last n lines of s.
func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// wireBound is the longest a health check's round trip may take: TCG on
// a shared 2-core host (the hosted fuzzer's is 10 s too).
const wireBound = 10 * time.Second

// wireRun is the host's side of TestWireFuzzTap.
type wireRun struct {
	tap                  string
	ifi                  *net.Interface
	fd                   int
	host, guest          string
	frames, every        int
	seed                 int64
	hostLL               string // the host's link-local address on the tap; "" if it has none (no IPv6 checks)
	g                    *wiregen.Gen
	written, tooLong     int           // frames the tap took; frames longer than its MTU (never written)
	dropped              int           // of those written, dropped by the tap's queue to QEMU
	waits                int           // pauses for a full queue
	observed             atomic.Int64  // frames the packet socket saw from the guest
	checks               int           // rounds of health checks
	slowest              time.Duration // the slowest check's round trip
	slowestName          string
	elapsed              time.Duration
	statsStart, statsEnd string // the guest's pools as the control line reports them, before the frames and after
	diag                 string
	err                  error
}

func (w *wireRun) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d frames written into the tap in %v (%.0f/s), %d dropped by its queue (%d delivered), %d waits, %d too long for the link; %d mutated, %d handshakes completed; %d frames seen from the guest; %d rounds of health checks, the slowest %v (%s); IPv6 checks: %v",
		w.written, w.elapsed.Round(time.Millisecond), float64(w.written)/max(w.elapsed.Seconds(), 1e-9), w.dropped, w.written-w.dropped, w.waits, w.tooLong,
		w.g.Mutated, w.g.Handshakes(), w.observed.Load(), w.checks, w.slowest.Round(time.Millisecond), w.slowestName, w.hostLL != "")
	fmt.Fprintf(&b, "\npools at the start: %s; after the frames: %s\nguest's diag: %s\nframes by kind:", w.statsStart, w.statsEnd, w.diag)
	for k, c := range w.g.Count {
		fmt.Fprintf(&b, " %s %d;", wiregen.KindNames[k], c)
	}
	return b.String()
}

// control is a line exchange on the guest's control port.
type control struct {
	c net.Conn
	r *bufio.Reader
}

func (c *control) ask(q string) (string, error) {
	c.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(c.c, "%s\n", q); err != nil {
		return "", err
	}
	l, err := c.r.ReadString('\n')
	return strings.TrimSpace(l), err
}

func sysCounter(tap, name string) int {
	b, _ := os.ReadFile("/sys/class/net/" + tap + "/statistics/" + name)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// guestMAC is the guest's MAC from the host's ARP table (filled by the
// control connection).
func guestMAC(ip string) (net.HardwareAddr, error) {
	b, err := os.ReadFile("/proc/net/arp")
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 4 && f[0] == ip {
			return net.ParseMAC(f[3])
		}
	}
	return nil, fmt.Errorf("%s is not in the host's ARP table", ip)
}

// linkLocal is the host's IPv6 link-local address on ifi, waiting up to
// 10 s for duplicate address detection.
func linkLocal(ifi *net.Interface) net.IP {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		b, _ := os.ReadFile("/proc/net/if_inet6")
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			// address, index, prefix length, scope (0x20: link), flags (0x40 tentative), name
			if len(f) == 6 && f[5] == ifi.Name && f[3] == "20" {
				fl, _ := strconv.ParseUint(f[4], 16, 32)
				if fl&0x40 != 0 {
					continue
				}
				ip := make(net.IP, 16)
				for i := range ip {
					v, _ := strconv.ParseUint(f[0][2*i:2*i+2], 16, 8)
					ip[i] = byte(v)
				}
				return ip
			}
		}
	}
	return nil
}

func (w *wireRun) run() {
	w.err = w.fuzz()
}

func (w *wireRun) fuzz() error {
	d := net.Dialer{Timeout: wireBound}
	var ctl *control
	for end := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		c, err := d.Dial("tcp4", w.guest+":8080")
		if err == nil {
			ctl = &control{c, bufio.NewReader(c)}
			break
		}
		if time.Now().After(end) {
			return fmt.Errorf("the control port: %v", err)
		}
	}
	defer ctl.c.Close()
	gmac, err := guestMAC(w.guest)
	if err != nil {
		return err
	}
	addrs := wiregen.Addrs{SvcIP: [4]byte(net.ParseIP(w.guest).To4()), PeerIP: [4]byte(net.ParseIP(w.host).To4()),
		DHCPServer: [4]byte{192, 168, 79, 3}, DHCPServerMAC: [6]byte{0x02, 0xd4, 0xc9, 0x79, 0, 3}, EchoPort: 7}
	copy(addrs.SvcMAC[:], gmac)
	copy(addrs.PeerMAC[:], w.ifi.HardwareAddr)
	addrs.SvcLL = wiregen.LinkLocal(addrs.SvcMAC)
	if ll := linkLocal(w.ifi); ll != nil {
		addrs.PeerLL = [16]byte(ll)
		w.hostLL = ll.String()
	} else {
		addrs.PeerLL = wiregen.LinkLocal(addrs.PeerMAC) // scrubbed all the same
	}
	w.g = wiregen.New(w.seed, addrs)
	if w.statsStart, err = ctl.ask("stats"); err != nil {
		return fmt.Errorf("stats: %v", err)
	}

	// What the guest sends: the fuzzer's hosts answer it (ARP, NDP, the
	// rest of handshakes) and replay it.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 65536)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, _, err := syscall.Recvfrom(w.fd, b, 0)
			if err != nil || n < 14 {
				continue
			}
			out := bytes.Equal(b[6:12], gmac)
			if out {
				w.observed.Add(1)
			}
			w.g.Observe(b[:n], out)
		}
	}()
	defer func() {
		close(stop)
		<-done
	}()

	// The health checks: a connection held throughout, and new ones.
	type target struct{ net, addr string }
	targets := []target{{"4", w.guest}}
	if w.hostLL != "" {
		targets = append(targets, target{"6", fmt.Sprintf("[%s%%%s]", net.IP(addrs.SvcLL[:]), w.tap)})
	}
	held := map[string]net.Conn{}
	for _, tg := range targets {
		c, err := d.Dial("tcp"+tg.net, tg.addr+":7")
		if err != nil {
			return fmt.Errorf("TCP/IPv%s held connection: %v", tg.net, err)
		}
		defer c.Close()
		held[tg.net] = c
	}
	var payload [1400]byte
	roundTrip := func(c net.Conn, n int, stream bool) error {
		msg := payload[:n]
		for i := range msg {
			msg[i] = byte(w.checks + i)
		}
		c.SetDeadline(time.Now().Add(wireBound))
		if _, err := c.Write(msg); err != nil {
			return err
		}
		got := make([]byte, n)
		if stream {
			t0 := time.Now()
			if k, err := readFull(c, got); err != nil {
				// Late, or a stall? Wait a minute more to say which.
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					return err
				}
				c.SetDeadline(time.Now().Add(time.Minute))
				if _, err2 := readFull(c, got[k:]); err2 != nil {
					return fmt.Errorf("%v; no answer %v later either (%v): a stall", err, time.Since(t0).Round(time.Second), err2)
				}
				return fmt.Errorf("%v; the answer came %v after the request", err, time.Since(t0).Round(time.Millisecond))
			}
		} else if m, err := c.Read(got); err != nil {
			return err
		} else if m != n {
			return fmt.Errorf("%d bytes back of %d", m, n)
		}
		if !bytes.Equal(got, msg) {
			return errors.New("the bytes came back changed")
		}
		return nil
	}
	t0 := time.Now()
	health := func() error {
		w.checks++
		for _, tg := range targets {
			for _, ch := range []struct {
				name string
				f    func() error
			}{
				{"TCP/IPv" + tg.net + " held connection", func() error { return roundTrip(held[tg.net], 1+w.checks%1400, true) }},
				{"TCP/IPv" + tg.net + " new connection", func() error {
					c, err := d.Dial("tcp"+tg.net, tg.addr+":7")
					if err != nil {
						return err
					}
					defer c.Close()
					return roundTrip(c, 1+(w.checks*7)%1400, true)
				}},
				{"UDP/IPv" + tg.net, func() error {
					c, err := d.Dial("udp"+tg.net, tg.addr+":7")
					if err != nil {
						return err
					}
					defer c.Close()
					var err2 error
					for try := 0; try < 3; try++ { // a datagram may be lost: the fuzzer's frames fill queues
						if err2 = roundTrip(c, 1+(w.checks*13)%1400, false); err2 == nil {
							return nil
						}
					}
					return err2
				}},
			} {
				t0 := time.Now()
				err := ch.f()
				dt := time.Since(t0)
				if dt > w.slowest {
					w.slowest, w.slowestName = dt, ch.name
				}
				if err != nil {
					w.diag, _ = ctl.ask("diag")
					w.elapsed = time.Since(t0)
					// Is the service stalled, or one connection lost?
					again := "answered"
					if c, err := d.Dial("tcp"+tg.net, tg.addr+":7"); err != nil {
						again = err.Error()
					} else {
						if err := roundTrip(c, 10, true); err != nil {
							again = err.Error()
						}
						c.Close()
					}
					pr, _ := ctl.ask("probe")
					return fmt.Errorf("%s: %v (after %v); a new TCP/IPv%s connection then: %s; the guest's %s", ch.name, err, dt.Round(time.Millisecond), tg.net, again, pr)
				}
			}
		}
		return nil
	}
	if err := health(); err != nil {
		return fmt.Errorf("before any frame: %v", err)
	}

	// Flow control: at most window frames written and not yet read by
	// QEMU (the tap's tx_packets counts what its reader took), so that
	// the tap's queue (500) does not overflow and drop the host's own
	// frames of the health checks.
	const window = 128
	dropped0, taken0 := sysCounter(w.tap, "tx_dropped"), sysCounter(w.tap, "tx_packets")
	t0 = time.Now()
	next := every(w.every)
	for w.written-w.dropped < w.frames {
		_, fs := w.g.Next()
		for _, f := range fs {
			if len(f) < 14 {
				continue
			}
			if len(f) > 14+w.ifi.MTU {
				w.tooLong++
				continue
			}
			for waited := false; ; waited = true {
				w.dropped = sysCounter(w.tap, "tx_dropped") - dropped0
				if w.written-w.dropped-(sysCounter(w.tap, "tx_packets")-taken0) < window {
					break
				}
				if !waited {
					w.waits++
				}
				time.Sleep(500 * time.Microsecond)
			}
			if _, err := syscall.Write(w.fd, f); err != nil {
				return fmt.Errorf("writing frame %d (%d bytes) into the tap: %v", w.written, len(f), err)
			}
			w.g.Observe(f, false)
			w.written++
		}
		if w.written-w.dropped >= next {
			next += w.every
			if w.checks%50 == 0 {
				fmt.Fprintf(os.Stderr, "wirefuzz: %d frames in %v\n", w.written-w.dropped, time.Since(t0).Round(time.Second))
			}
			if err := health(); err != nil {
				return fmt.Errorf("after %d frames: %v", w.written-w.dropped, err)
			}
		}
	}
	w.elapsed = time.Since(t0)
	if err := health(); err != nil {
		return fmt.Errorf("after all %d frames: %v", w.written-w.dropped, err)
	}
	w.statsEnd, _ = ctl.ask("stats")
	w.diag, _ = ctl.ask("diag")
	for _, c := range held {
		c.Close()
	}
	if bye, err := ctl.ask("quit"); err != nil || bye != "bye" {
		return fmt.Errorf("quit: %q, %v", bye, err)
	}
	return nil
}

func every(n int) int { return max(n, 1) }

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
