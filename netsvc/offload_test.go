package netsvc

import (
	"bytes"
	"io"
	"math/rand"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
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
