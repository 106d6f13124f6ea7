package netsvc

import (
	"bytes"
	"errors"
	"math/rand"
	"syscall"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"

	"yolk/kernel/abi"
)

// ringKernel plays the kernel's side of one stream socket for the
// service, as kernel/net's serve does: NetRx into a receive ring that
// takes up to room bytes (kept in got), NetTx from a transmit ring
// holding what the program wrote (ring), with Left.
type ringKernel struct {
	kernelCalls
	room  int
	got   []byte
	ring  []byte
	calls int
}

func (k *ringKernel) Net(c abi.NetCall, buf []byte) (abi.NetCall, syscall.Errno) {
	k.calls++
	switch c.Op {
	case abi.NetRx:
		n := min(k.room, len(buf))
		k.got = append(k.got, buf[:n]...)
		k.room -= n
		c.N = uintptr(n)
	case abi.NetTx:
		n := copy(buf, k.ring)
		k.ring = k.ring[n:]
		c.N, c.Left = uintptr(n), uintptr(len(k.ring))
	default:
		return c, syscall.EINVAL
	}
	return c, 0
}

// TestRxWriter: views of random sizes handed to the writer as gVisor's
// Read hands them (what Write took is consumed; on an error the rest of
// the view stays and Read stops), with the ring's room running out and
// coming back at random. The ring gets the stream in order, nothing
// twice, nothing lost: what it took plus the writer's gathered rest plus
// what stays in the endpoint is the whole stream. Views of rxDirect or
// more go in one call each; smaller ones are gathered.
func TestRxWriter(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var stream []byte
	for i := 0; i < 4000; i++ {
		n := 1 + r.Intn(1500)
		if r.Intn(4) == 0 {
			n = rxDirect + r.Intn(60<<10)
		}
		v := make([]byte, n)
		r.Read(v)
		stream = append(stream, v...)
	}
	k := &ringKernel{}
	w := &rxWriter{k: k}
	var kept []byte // the service's c.rx: gathered, not taken
	pos := 0        // the endpoint's read position
	for rounds := 0; pos < len(stream); rounds++ {
		if rounds > 100000 {
			t.Fatal("no progress")
		}
		k.room += r.Intn(96 << 10)
		if len(kept) > 0 {
			n := min(k.room, len(kept))
			k.got = append(k.got, kept[:n]...)
			k.room -= n
			if kept = kept[n:]; len(kept) > 0 {
				continue
			}
		}
		// One Read: views of the queued bytes, each at most 64 KiB.
		w.start(7)
		for pos < len(stream) {
			v := stream[pos:min(pos+1+r.Intn(64<<10), len(stream))]
			before := k.calls
			n, err := w.Write(v)
			pos += n
			if err != nil {
				if !errors.Is(err, errRxFull) || n == len(v) {
					t.Fatalf("Write(%d bytes) = %d, %v", len(v), n, err)
				}
				break
			}
			if n != len(v) {
				t.Fatalf("Write(%d bytes) = %d, nil: a short write without an error", len(v), n)
			}
			if len(v) >= rxDirect && k.calls-before > 2 {
				t.Fatalf("a view of %d bytes took %d calls", len(v), k.calls-before)
			}
		}
		w.flush()
		if w.err != nil {
			t.Fatal(w.err)
		}
		if len(w.buf) > 0 {
			if !w.full {
				t.Fatal("gathered bytes left without the ring full")
			}
			kept = bytes.Clone(w.buf)
		}
	}
	all := append(append([]byte(nil), k.got...), kept...)
	if !bytes.Equal(all, stream) {
		t.Fatalf("the ring got %d bytes and %d are kept, of %d; they differ from the stream", len(k.got), len(kept), len(stream))
	}
	if k.calls > len(stream)/1000 {
		t.Errorf("%d NetRx calls for %d bytes: small views are not gathered", k.calls, len(stream))
	}
}

// TestRxWriterFull: a ring with no room takes nothing, and the writer
// says so at once, for a small view and a large one; a NetRx error ends
// the writer.
func TestRxWriterFull(t *testing.T) {
	k := &ringKernel{}
	w := &rxWriter{k: k}
	w.start(1)
	if n, err := w.Write(make([]byte, 100)); n != 100 || err != nil {
		t.Fatalf("a small view: %d, %v; want gathered", n, err)
	}
	if n, err := w.Write(make([]byte, rxDirect)); n != 0 || !errors.Is(err, errRxFull) {
		t.Fatalf("a large view behind a full ring: %d, %v", n, err)
	}
	if n, err := w.Write(make([]byte, 10)); n != 0 || !errors.Is(err, errRxFull) {
		t.Fatalf("a small view after the ring said full: %d, %v", n, err)
	}
	if len(w.buf) != 100 || !w.full {
		t.Fatalf("%d bytes gathered, full %v; want 100, true", len(w.buf), w.full)
	}
	calls := k.calls
	w.flush()
	if k.calls != calls {
		t.Error("flush called the kernel after it said full")
	}

	w.k = failKernel{}
	w.start(2)
	if n, err := w.Write(make([]byte, rxDirect)); n != 0 || err == nil || w.err == nil {
		t.Fatalf("a failing NetRx: %d, %v, writer's error %v", n, err, w.err)
	}
}

type failKernel struct{ kernelCalls }

func (failKernel) Net(c abi.NetCall, buf []byte) (abi.NetCall, syscall.Errno) {
	return c, syscall.EFAULT
}

// TestTxReader: the netstack's Write reads a stream through txReader as
// gVisor's does (at most min(Len, the room in its send buffer), in views
// of up to 64 KiB), the program writing more between rounds. What the
// netstack gets is the program's stream in order; a round takes the first
// bytes through the service's buffer and the rest straight from the ring,
// one call a view; the reader's count is what it gave.
func TestTxReader(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	var stream, got []byte
	k := &ringKernel{}
	tr := &txReader{k: k}
	sbuf := make([]byte, txFirst)
	var pre []byte
	left := 0
	for round := 0; round < 500; round++ {
		w := make([]byte, r.Intn(200<<10))
		r.Read(w)
		stream, k.ring = append(stream, w...), append(k.ring, w...)
		if len(pre) == 0 && left == 0 {
			t0 := abi.NetCall{Op: abi.NetTx}
			t0, _ = k.Net(t0, sbuf)
			pre, left = bytes.Clone(sbuf[:t0.N]), int(t0.Left)
		}
		room := r.Intn(256 << 10)
		tr.start(1, pre, left)
		before := k.calls
		want := min(room, tr.Len())
		var b buffer.Buffer
		if _, err := b.WriteFromReader(tr, int64(want)); err != nil {
			t.Fatal(err)
		}
		if int(b.Size()) != tr.n || tr.n > want {
			t.Fatalf("round %d: the buffer holds %d bytes, the reader counted %d, %d asked", round, b.Size(), tr.n, want)
		}
		if calls := k.calls - before; calls > want/(16<<10)+2 {
			t.Fatalf("round %d: %d NetTx calls for %d bytes", round, calls, want)
		}
		got = append(got, b.Flatten()...)
		b.Release()
		pre, left = tr.pre, tr.left
	}
	got = append(append(got, pre...), k.ring...)
	if !bytes.Equal(got, stream) {
		t.Fatalf("%d bytes through the reader differ from the %d written", len(got), len(stream))
	}
}

// TestTxReaderShort: the kernel's ring holds fewer bytes than its last
// Left said (it threw them away: a close with bytes unread, a
// disconnect), or a NetTx fails. The netstack's read of the promised
// count ends with an error and the reader says short; before, the reader
// said end of file and gVisor's read loop spun forever.
func TestTxReaderShort(t *testing.T) {
	for _, c := range []struct {
		name string
		k    kernelCalls
	}{
		{"a shorter ring", &ringKernel{ring: make([]byte, 100)}},
		{"a failing NetTx", failKernel{}},
	} {
		tr := &txReader{k: c.k}
		tr.start(1, []byte("pre"), 10000)
		done := make(chan error, 1)
		go func() {
			var b buffer.Buffer
			_, err := b.WriteFromReader(tr, int64(tr.Len()))
			b.Release()
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !tr.short {
				t.Errorf("%s: the read ended with %v, short %v; want an error and short", c.name, err, tr.short)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the netstack's read of %d promised bytes did not end", c.name, tr.Len())
		}
	}
}
