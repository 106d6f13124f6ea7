// Package conin is the console's input: bytes the host writes to the
// serial port, taken from the UART by its receive interrupt into a ring
// that the console descriptors' reads take from (kernel/conin.go blocks
// a read until something or the end of input arrives). No polling.
//
// A byte stream has no end of file, so the host frames it (qemu's stdin
// encoder, yolk run): 0xFF is an escape; 0xFF 0x00 is a literal 0xFF,
// 0xFF 0x01 the end of input (reads return 0 from then on); 0xFF before
// any other byte stands for that byte. When the ring is full the
// receive interrupt is turned off and the bytes stay in the UART, whose
// FIFO stops QEMU reading more: nothing is dropped; a read that makes
// room turns it back on.
//
// Kernel context: no allocation; the UART is reached through the type
// parameter (Env), an empty struct in the kernel.
package conin

import (
	"sync/atomic"

	"yolk/sched"
)

// Size is the ring's size in bytes.
const Size = 4096

const (
	esc     = 0xFF
	escByte = 0x00
	escEOF  = 0x01
)

// Env is the UART: Get takes a received byte (false: none waits), Enable
// turns its receive interrupt on or off; and the ring's lock (the
// kernel's spin lock, taken with interrupts off).
type Env interface {
	Get() (byte, bool)
	Enable(on bool)
	Lock()
	Unlock()
}

// In is the console's input. Its zero value is empty, the interrupt on.
type In[E Env] struct {
	buf     [Size]byte
	r, w    uint32 // read and write counts; w-r bytes are in buf
	esc     bool   // the last byte was the escape
	eof     bool
	stalled bool   // ring full: the receive interrupt is off
	Seq     uint32 // atomic: bumped when data or the end arrives (readers block on it)
	WQ      sched.WaitQueue

	IRQs, Waits uint64 // statistics (atomic)
}

// Receive takes what the UART received (the receive interrupt); it
// reports whether readers have something new.
func (c *In[E]) Receive() bool {
	atomic.AddUint64(&c.IRQs, 1)
	var e E
	e.Lock()
	got := c.drain()
	e.Unlock()
	return got
}

// drain moves received bytes into the ring until the UART is empty or the
// ring full; the lock is held. It reports whether readers have something
// new.
func (c *In[E]) drain() bool {
	var uart E
	seq := c.Seq
	for c.w-c.r < Size {
		b, ok := uart.Get()
		if !ok {
			break
		}
		switch {
		case c.esc:
			c.esc = false
			if b == escEOF {
				c.eof = true
				atomic.AddUint32(&c.Seq, 1)
				continue
			}
			if b == escByte {
				b = esc
			}
		case b == esc:
			c.esc = true
			continue
		}
		if c.eof {
			continue // nothing after the end
		}
		c.buf[c.w%Size] = b
		c.w++
		atomic.AddUint32(&c.Seq, 1)
	}
	if full := c.w-c.r == Size; full != c.stalled {
		c.stalled = full
		uart.Enable(!full)
	}
	return c.Seq != seq
}

// Take moves what the ring holds, up to len(b), into b; it says how
// much, whether the input has ended, and the sequence number a reader
// that found nothing blocks on.
func (c *In[E]) Take(b []byte) (n int, eof bool, seq uint32) {
	var e E
	e.Lock()
	for c.r != c.w && n < len(b) {
		b[n] = c.buf[c.r%Size]
		c.r++
		n++
	}
	if n > 0 && c.stalled {
		c.drain() // room again: take what waits in the UART
	}
	eof, seq = c.eof, c.Seq
	e.Unlock()
	return n, eof, seq
}
