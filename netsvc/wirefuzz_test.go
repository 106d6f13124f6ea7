package netsvc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"yolk/netsvc/wiregen"
)

// The wire as an attacker: random and mutated frames into the NIC's
// receive path while the programs serve TCP and UDP, mixed with the
// peer's real connections, which must go on answering with their bytes
// intact; afterwards the socket layer's pools are as they were. The
// frames are netsvc/wiregen's (its package comment says how they are
// made); the guest's fuzzer over a tap link (qemu/wirefuzz_test.go)
// uses the same generator.

// wireAddrs is the hosted link as the generator sees it.
var wireAddrs = wiregen.Addrs{SvcMAC: svcMAC, SvcIP: svcIP, SvcLL: svcLL, PeerMAC: peerMAC, PeerIP: peerIP, PeerLL: peerLL,
	DHCPServer: dnsIP, DHCPServerMAC: [6]byte{0x52, 0x55, 10, 0, 2, 3}, EchoPort: echoPort}

// The frame builders the other tests use.
var (
	eth     = wiregen.Eth
	ip4     = wiregen.IP4
	ip6     = wiregen.IP6
	tcpSeg  = wiregen.TCPSeg
	udpSeg  = wiregen.UDPSeg
	fixSums = wiregen.FixSums
	hostMAC = wiregen.HostMAC
	newGen  = func(seed int64) *wiregen.Gen { return wiregen.New(seed, wireAddrs) }
)

// The tests.

// wireFrames is how many frames TestWireFuzz sends: YOLK_WIRE_FRAMES if
// set (docs/net.md's run: 1000000), else a few seconds' worth.
func wireFrames(t *testing.T) int {
	if v := os.Getenv("YOLK_WIRE_FRAMES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("YOLK_WIRE_FRAMES=%q: %v", v, err)
		}
		return n
	}
	if testing.Short() {
		return 2000
	}
	return 5000
}

// TestWireFuzz: the service, its address from DHCP, serves TCP and UDP
// echo to the peer's health checks and connection churn while the
// fuzzer's frames come in; every 500 frames each health connection makes
// a round trip within bound; afterwards the pools are as they were.
func TestWireFuzz(t *testing.T) {
	frames := wireFrames(t)
	g := newGen(1)
	h := newHosted(t, hostedOpts{dhcp: true, tap: g.Observe})
	stop := make(chan struct{})
	churned := h.churn(2, stop)
	t0 := time.Now()
	sent, checks := 0, 0
	for sent < frames {
		_, fs := g.Next()
		for _, f := range fs {
			if m := dhcpAnswer(f, svcMAC, g.XID); m != nil { // the DHCP client's parser, as at boot
				dhcpType(m)
				parseLease(m)
				parseSearch(m[240:])
				parseClassless(m[240:])
			}
			if len(f) >= 14 && !h.k.Inject(f, bound) {
				t.Fatalf("frame %d: the NIC's receive ring stayed full for %v: the service stopped taking frames", sent, bound)
			}
			sent++
		}
		if sent/500 > checks {
			checks = sent / 500
			if err := h.health(); err != nil {
				t.Fatalf("after %d frames: %v\n%s", sent, err, h.diag())
			}
		}
	}
	if err := h.health(); err != nil {
		t.Fatalf("after all %d frames: %v\n%s", sent, err, h.diag())
	}
	d := time.Since(t0)
	close(stop)
	conns, err := churned()
	if err != nil {
		t.Fatalf("churn: %v\n%s", err, h.diag())
	}
	h.finish()
	info, _ := h.k.NICInfo()
	hs := g.Handshakes()
	t.Logf("%d frames in %v (%.0f/s), %d mutated, %d handshakes completed; %d health checks, the slowest %v; %d churn connections; the TCP program served %d connections, the UDP one echoed %d datagrams; the service sent %d frames",
		sent, d.Round(time.Millisecond), float64(sent)/d.Seconds(), g.Mutated, hs, checks+1, h.worst.Round(time.Microsecond), conns, h.served.Load(), h.echoed.Load(), info.TxFrames)
	var b bytes.Buffer
	for k, c := range g.Count {
		fmt.Fprintf(&b, " %s %d;", wiregen.KindNames[k], c)
	}
	t.Logf("frames by kind:%s", b.String())
}

// FuzzFrames injects the frames an input holds (each a big-endian
// 16-bit length and its bytes) into a fresh hosted service with the
// programs serving, then checks that the health connections answer and
// the pools come back. The seed corpus (a burst of each kind from the
// generator) runs in go test; go test -fuzz=FuzzFrames explores.
func FuzzFrames(f *testing.F) {
	g := newGen(3)
	for k := 0; k < wiregen.KAnswer; k++ {
		var in []byte
		for _, fr := range g.Build(k) {
			in = binary.BigEndian.AppendUint16(in, uint16(len(fr)))
			in = append(in, fr...)
		}
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h := newHosted(t, hostedOpts{})
		for len(in) >= 2 {
			l := min(int(binary.BigEndian.Uint16(in)), len(in)-2)
			fr := bytes.Clone(in[2 : 2+l])
			in = in[2+l:]
			if m := dhcpAnswer(fr, svcMAC, 0x5eed); m != nil {
				dhcpType(m)
				parseLease(m)
				parseSearch(m[240:])
				parseClassless(m[240:])
			}
			h.k.Inject(fr, bound) // runts and oversize frames: dropped as the driver drops them
		}
		if err := h.health(); err != nil {
			t.Fatal(err)
		}
		h.finish()
	})
}
