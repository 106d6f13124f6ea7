package virtionet

import (
	"bytes"
	"testing"
	"unsafe"
)

// withRing gives n a ring of Go memory and puts frames in it as the
// interrupt handler would.
func withRing(t *testing.T, n *NIC, frames ...[]byte) {
	t.Helper()
	mem := make([]byte, RingFrames*bufSize)
	for i := range n.ring {
		n.ring[i] = uintptr(unsafe.Pointer(&mem[i*bufSize]))
	}
	t.Cleanup(func() { _ = mem[0] })
	n.present = true
	for _, f := range frames {
		s := n.ringW % RingFrames
		copy(mem[int(s)*bufSize:], f)
		n.ringLen[s] = uint32(len(f))
		n.ringW++
	}
}

func frame(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

// Recv takes the oldest frame, truncating the copy but reporting the
// length; RecvPeek and RecvPop see the same frames in order.
func TestRecv(t *testing.T) {
	var n NIC
	fs := [][]byte{frame(14, 1), frame(61, 2), frame(MaxFrame, 3), frame(60, 4)}
	withRing(t, &n, fs...)
	if l, fl, ok := n.RecvPeek(); !ok || l != 14 || fl != 0 {
		t.Errorf("RecvPeek = %d %d %v, want 14 0 true", l, fl, ok)
	}
	n.RecvPop()
	n.RecvPop()
	q := make([]byte, 100)
	if l, ok := n.Recv(q); !ok || l != MaxFrame || !bytes.Equal(q, frame(100, 3)) {
		t.Errorf("Recv = %d %v, want %d true and the frame's start", l, ok, MaxFrame)
	}
	if l, ok := n.Recv(q); !ok || l != 60 || !bytes.Equal(q[:60], fs[3]) {
		t.Errorf("Recv = %d %v, want 60 true", l, ok)
	}
	if _, ok := n.Recv(q); ok || n.Pending() != 0 {
		t.Errorf("empty ring: Recv ok %v, %d pending", ok, n.Pending())
	}
	if _, _, ok := n.RecvPeek(); ok {
		t.Errorf("empty ring: RecvPeek ok")
	}
}

// The ring's counters wrap around the slots.
func TestRingWraps(t *testing.T) {
	var n NIC
	withRing(t, &n)
	n.ringR, n.ringW = ^uint32(0)-2, ^uint32(0)-2 // near the 32-bit wrap
	mem := make([]byte, 64)
	for i := 0; i < 3*RingFrames; i++ {
		s := n.ringW % RingFrames
		*at[byte](n.ring[s]) = byte(i)
		n.ringLen[s] = 14
		n.ringW++
		if l, ok := n.Recv(mem); !ok || l != 14 || mem[0] != byte(i) {
			t.Fatalf("frame %d: Recv %d %v, first byte %d", i, l, ok, mem[0])
		}
	}
}

// Send refuses frames out of range, and everything without a device.
func TestSendChecks(t *testing.T) {
	var n NIC
	if e := n.Send(frame(60, 0)); e != ErrBroken {
		t.Errorf("no NIC: %v, want ErrBroken", e)
	}
	if got := n.Interrupt(); got != 0 || n.Stats().Interrupts != 0 {
		t.Errorf("no NIC: Interrupt %d, counted %d; want nothing (and no register touched)", got, n.Stats().Interrupts)
	}
	n.present = true
	for _, l := range []int{0, MinFrame - 1, MaxFrame + 1} {
		if e := n.Send(frame(l, 0)); e != ErrSize {
			t.Errorf("%d bytes: %v, want ErrSize", l, e)
		}
	}
}
