package conin

import (
	"bytes"
	"testing"
)

// uart is a fake UART: the bytes still to receive and the receive
// interrupt's state.
var uart struct {
	in  []byte
	off bool
}

type fake struct{}

func (fake) Get() (byte, bool) {
	if len(uart.in) == 0 {
		return 0, false
	}
	b := uart.in[0]
	uart.in = uart.in[1:]
	return b, true
}
func (fake) Enable(on bool) { uart.off = !on }
func (fake) Lock()          {}
func (fake) Unlock()        {}

func TestFraming(t *testing.T) {
	var c In[fake]
	uart.in = []byte{'a', 0xFF, 0x00, 'b', 0xFF, 'c', 0xFF, 0x01, 'd'}
	if !c.Receive() {
		t.Fatal("Receive found nothing new")
	}
	b := make([]byte, 16)
	n, eof, _ := c.Take(b)
	if want := []byte{'a', 0xFF, 'b', 'c'}; !bytes.Equal(b[:n], want) || !eof {
		t.Errorf("took %q, eof %v; want %q and the end (0xFF 0x01), nothing after it", b[:n], eof, want)
	}
}

func TestFullRingStallsTheUART(t *testing.T) {
	var c In[fake]
	uart.in = bytes.Repeat([]byte{'x'}, Size+100)
	c.Receive()
	if !uart.off || len(uart.in) != 100 {
		t.Fatalf("a full ring: interrupt off %v, %d bytes left in the UART; want off and 100", uart.off, len(uart.in))
	}
	b := make([]byte, 512)
	total := 0
	for {
		n, _, _ := c.Take(b)
		if n == 0 {
			break
		}
		total += n
	}
	if total != Size+100 || uart.off {
		t.Errorf("read %d bytes, interrupt off %v; want every byte and the interrupt back on", total, uart.off)
	}
}

func TestSeqMovesOnlyWithNews(t *testing.T) {
	var c In[fake]
	uart.in = nil
	if c.Receive() {
		t.Error("an interrupt with nothing received reported news")
	}
	_, _, s0 := c.Take(make([]byte, 1))
	uart.in = []byte{0xFF} // an escape alone: nothing for readers yet
	if c.Receive() {
		t.Error("a lone escape reported news")
	}
	uart.in = []byte{'z'}
	c.Receive()
	if _, _, s1 := c.Take(make([]byte, 1)); s1 == s0 {
		t.Error("the sequence did not move with a byte")
	}
}
