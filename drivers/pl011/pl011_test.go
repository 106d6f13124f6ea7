package pl011

import (
	"fmt"
	"testing"
)

// model is a PL011 at base 0x1000 as far as the driver can observe it: a
// transmit FIFO that fills after txCap writes and drains when the test
// says, a receive FIFO, interrupt mask and raw status, and a log of every
// write.
type model struct {
	t      *testing.T
	tx     []byte
	txCap  int
	rx     []uint32
	imsc   uint32
	ris    uint32
	regs   map[uintptr]uint32
	writes []string
	busy   int // FR.BUSY reads left before the transmitter is idle
}

const base = 0x1000

func newModel(t *testing.T) *model {
	m := &model{t: t, txCap: 4, regs: map[uintptr]uint32{}}
	read32 = m.read
	write32 = m.write
	t.Cleanup(func() { read32, write32 = nil, nil })
	return m
}

func (m *model) read(a uintptr) uint32 {
	switch a - base {
	case regFR:
		var fr uint32
		if len(m.tx) >= m.txCap {
			fr |= frTXFF
		}
		if len(m.rx) == 0 {
			fr |= frRXFE
		}
		if m.busy > 0 {
			m.busy--
			fr |= frBUSY
		}
		return fr
	case regDR:
		if len(m.rx) == 0 {
			m.t.Fatal("DR read with the receive FIFO empty")
		}
		d := m.rx[0]
		m.rx = m.rx[1:]
		if len(m.rx) == 0 {
			m.ris &^= IntRX | IntRT
		}
		return d
	case regIMSC:
		return m.imsc
	case regMIS:
		return m.ris & m.imsc
	}
	return m.regs[a-base]
}

func (m *model) write(a uintptr, v uint32) {
	off := a - base
	m.writes = append(m.writes, fmt.Sprintf("%#x=%#x", off, v))
	switch off {
	case regDR:
		if len(m.tx) >= m.txCap {
			m.t.Fatal("DR written with the transmit FIFO full")
		}
		m.tx = append(m.tx, byte(v))
	case regIMSC:
		m.imsc = v
	case regICR:
		m.ris &^= v
	default:
		m.regs[off] = v
	}
}

func TestDivisor(t *testing.T) {
	for _, tc := range []struct{ clk, baud, i, f uint32 }{
		{24_000_000, 115200, 13, 1}, // 13.0208: .0208*64 = 1.33
		{48_000_000, 115200, 26, 3}, // 26.0417: 2.67 rounds up (Raspberry Pi's clock)
		{3_000_000, 115200, 1, 40},  // 1.6276: 40.17
		{7_372_800, 115200, 4, 0},   // exact
		{24_000_000, 9600, 156, 16}, // 156.25
		{1_000_000, 31250, 2, 0},    // exact
		{100, 3, 2, 5},              // 2.0833: 5.33
	} {
		if i, f := Divisor(tc.clk, tc.baud); i != tc.i || f != tc.f {
			t.Errorf("Divisor(%d, %d) = %d+%d/64, want %d+%d/64", tc.clk, tc.baud, i, f, tc.i, tc.f)
		}
	}
}

func TestInit(t *testing.T) {
	m := newModel(t)
	m.busy = 3
	UART{base}.Init(VirtClock, 115200)
	if m.busy != 0 {
		t.Errorf("Init did not wait for the transmitter (%d BUSY reads left)", m.busy)
	}
	want := []string{"0x30=0x0", "0x2c=0x0", "0x24=0xd", "0x28=0x1", "0x2c=0x70", "0x34=0x0", "0x38=0x0", "0x44=0x7ff", "0x48=0x0", "0x30=0x301"}
	if fmt.Sprint(m.writes) != fmt.Sprint(want) {
		t.Errorf("Init wrote %v\nwant %v", m.writes, want)
	}
	m.writes = nil
	// A transmitter that never drains (BUSY stuck) does not hang Init.
	m.busy = 1 << 30
	UART{base}.Init(0, 0)
	if m.busy == 1<<30 {
		t.Error("Init did not wait at all")
	}
	for _, w := range m.writes {
		if w[:4] == "0x24" || w[:4] == "0x28" {
			t.Errorf("Init(0, 0) changed the divisor: %v", w)
		}
	}
}

func TestWriteWaitsForRoom(t *testing.T) {
	m := newModel(t)
	u := UART{base}
	// The FIFO holds 4; drain it whenever FR is read full, like hardware
	// would, and count how often the driver had to wait.
	waits := 0
	read := m.read
	read32 = func(a uintptr) uint32 {
		v := read(a)
		if a-base == regFR && v&frTXFF != 0 {
			waits++
			m.tx = m.tx[:0]
		}
		return v
	}
	msg := "hello, arm64\n"
	u.Write([]byte(msg))
	if waits == 0 {
		t.Error("never saw the FIFO full: the test is not exercising the wait")
	}
	// Everything written to DR, in order.
	var got []byte
	for _, w := range m.writes {
		var off, v uint32
		fmt.Sscanf(w, "%v=%v", &off, &v)
		if off == regDR {
			got = append(got, byte(v))
		}
	}
	if string(got) != msg {
		t.Errorf("DR got %q, want %q", got, msg)
	}
}

func TestReceive(t *testing.T) {
	m := newModel(t)
	u := UART{base}
	if _, ok, _ := u.Get(); ok {
		t.Fatal("Get with an empty FIFO returned a byte")
	}
	u.EnableRX()
	if m.imsc != IntRX|IntRT {
		t.Errorf("EnableRX: IMSC %#x", m.imsc)
	}
	m.rx = []uint32{'a', 0x400 | 'b', 'c'} // 'b' with a break error
	m.ris = IntRT
	if u.Pending() != IntRT {
		t.Errorf("Pending = %#x, want IntRT", u.Pending())
	}
	var got []byte
	var bad []bool
	for {
		c, ok, b := u.Get()
		if !ok {
			break
		}
		got, bad = append(got, c), append(bad, b)
	}
	if string(got) != "abc" || fmt.Sprint(bad) != "[false true false]" {
		t.Errorf("Get: %q %v", got, bad)
	}
	if _, cleared := m.regs[regRSR]; !cleared {
		t.Error("the error was not cleared through RSR")
	}
	m.ris = IntRX | IntRT
	u.AckRX()
	if m.ris != 0 || u.Pending() != 0 {
		t.Errorf("AckRX left RIS %#x", m.ris)
	}
	m.imsc |= 1 << 5 // TX interrupt, not ours
	u.DisableRX()
	if m.imsc != 1<<5 {
		t.Errorf("DisableRX: IMSC %#x, want only the TX bit left", m.imsc)
	}
}
