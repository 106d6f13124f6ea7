package netsvc

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// TestOffloadEcho: with a NIC that takes offload records, the service's
// TCP leaves checksums and segmentation to the device — its segments of
// up to 64 KiB go out as single records, which the harness's device cuts
// into frames as virtio-net behind a tap does — and 2 MiB echoed over
// IPv4 and over IPv6 come back whole to a peer that checks every
// checksum. Without the NIC's offload, no record carries a header.
func TestOffloadEcho(t *testing.T) {
	for _, offload := range []bool{true, false} {
		h := newHosted(t, hostedOpts{offload: offload})
		r := rand.New(rand.NewSource(7))
		for _, c := range []*gonet.TCPConn{h.tcp4, h.tcp6} {
			msg := make([]byte, 2<<20)
			r.Read(msg)
			c.SetDeadline(time.Now().Add(4 * bound))
			werr := make(chan error, 1)
			go func() { _, err := c.Write(msg); werr <- err }()
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(c, got); err != nil {
				t.Fatalf("offload %v, %v: read: %v", offload, c.RemoteAddr(), err)
			}
			if err := <-werr; err != nil {
				t.Fatalf("offload %v, %v: write: %v", offload, c.RemoteAddr(), err)
			}
			if !bytes.Equal(got, msg) {
				t.Fatalf("offload %v, %v: the echo differs from what was sent", offload, c.RemoteAddr())
			}
			c.SetDeadline(time.Time{})
		}
		recs, gso, segs := h.k.Offloads()
		t.Logf("offload %v: %d offload records, %d segmented into %d frames", offload, recs, gso, segs)
		if offload && (gso == 0 || segs < 2*gso) {
			t.Errorf("with offload: %d records, %d segmented into %d frames; want segments of many frames", recs, gso, segs)
		}
		if !offload && recs != 0 {
			t.Errorf("without offload: %d offload records", recs)
		}
		if err := h.health(); err != nil {
			t.Errorf("offload %v: after the echo: %v", offload, err)
		}
		h.finish()
	}
}

// TestRxCsumOK: a frame the NIC flags (abi.NICRecordCsumOK: the host
// verified its checksum, or left it partial as its own stack's) reaches
// TCP unchecked, and only that frame: the same SYN with a wrong checksum
// unflagged is dropped, as before and after it; a flagged one whose IPv4
// header checksum is wrong is dropped too (the flag vouches for the
// transport checksum only).
func TestRxCsumOK(t *testing.T) {
	l, _, _ := linkStack(t)
	syn := func(port uint16, badCsum, badIP bool) []byte {
		f := make([]byte, 14+20+20)
		copy(f[0:], svcMAC[:])
		copy(f[6:], peerMAC[:])
		f[12], f[13] = 0x08, 0x00
		ip := header.IPv4(f[14:])
		ip.Encode(&header.IPv4Fields{TotalLength: 40, TTL: 64, Protocol: 6, SrcAddr: tcpip.AddrFrom4(peerIP), DstAddr: tcpip.AddrFrom4(svcIP)})
		ip.SetChecksum(^ip.CalculateChecksum())
		tc := header.TCP(f[34:])
		tc.Encode(&header.TCPFields{SrcPort: port, DstPort: 80, SeqNum: 1, DataOffset: 20, Flags: header.TCPFlagSyn, WindowSize: 65535})
		xsum := header.PseudoHeaderChecksum(6, tcpip.AddrFrom4(peerIP), tcpip.AddrFrom4(svcIP), 20)
		tc.SetChecksum(^checksum.Checksum(tc, xsum))
		if badCsum {
			tc.SetChecksum(tc.Checksum() ^ 0x5a5a)
		}
		if badIP {
			ip.SetChecksum(ip.Checksum() ^ 0x0101)
		}
		return f
	}
	// answered waits for the stack's answer (from its own goroutines):
	// up to 5 s for one that must come, 300 ms for one that must not.
	answered := func(want bool) bool {
		wait := 300 * time.Millisecond
		if want {
			wait = 5 * time.Second
		}
		for end := time.Now().Add(wait); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if _, n := l.takeTx(nil); n > 0 {
				return true
			}
		}
		return false
	}
	d := l.dispatcherOf()
	for i, c := range []struct {
		bad, badIP, flagged, want bool
	}{
		{false, false, false, true},
		{true, false, false, false},
		{true, false, true, true},
		{true, false, false, false},
		{false, true, true, false},
		{false, false, true, true},
	} {
		l.deliver(d, syn(40000+uint16(i), c.bad, c.badIP), c.flagged, true)
		l.flushRx()
		if got := answered(c.want); got != c.want {
			t.Errorf("SYN %d (TCP checksum wrong %v, IP's wrong %v, flagged %v): answered %v, want %v", i, c.bad, c.badIP, c.flagged, got, c.want)
		}
	}
}

// TestRXChecksumCapabilityReaders: the link says "checksum checked" for
// one frame by reporting CapabilityRXChecksumOffload while the stack
// takes it (nicLink.rxCsumOK). That is sound only while gVisor reads the
// capability where a NIC takes a frame and nowhere else — not, say, in
// a transmit path another goroutine runs meanwhile. This looks at the
// module in use: a gVisor that reads it elsewhere fails here before it
// can mark other packets checked.
func TestRXChecksumCapabilityReaders(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "gvisor.dev/gvisor").Output()
	if err != nil {
		t.Skipf("go list -m gvisor.dev/gvisor: %v", err)
	}
	root := filepath.Join(strings.TrimSpace(string(out)), "pkg", "tcpip")
	var readers []string
	err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(rel, "link"+string(filepath.Separator)) {
			return nil // link endpoints declare it; they are not the stack
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "CapabilityRXChecksumOffload") && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				readers = append(readers, fmt.Sprintf("%s:%d: %s", rel, i+1, strings.TrimSpace(line)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"pkt.RXChecksumValidated = n.NetworkLinkEndpoint.Capabilities()&CapabilityRXChecksumOffload != 0": true, // stack/nic.go, DeliverNetworkPacket
		"CapabilityRXChecksumOffload": true, // its declaration
		"return CapabilityRXChecksumOffload | CapabilitySaveRestore | CapabilityResolutionRequired": true, // the bridge's own capabilities
	}
	seen := 0
	for _, r := range readers {
		line := r[strings.Index(r, ": ")+2:]
		if !want[line] {
			t.Errorf("gVisor reads CapabilityRXChecksumOffload where the link's per-frame answer does not hold: %s", r)
		}
		if strings.HasPrefix(line, "pkt.RXChecksumValidated") {
			seen++
		}
	}
	if seen != 1 {
		t.Errorf("the NIC's read of the capability for each frame taken found %d times, want 1 (%v)", seen, readers)
	}
}
