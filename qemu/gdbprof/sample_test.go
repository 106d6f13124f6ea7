package gdbprof

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Two vCPUs, each with a frame-pointer chain of three records: a stop
// yields both stacks, PC first, then the return addresses up to the
// record whose caller FP is 0 (its return address still counts).
func TestSampleAmd64(t *testing.T) {
	s := newFakeStub(t, "amd64",
		Regs{PC: 0x401000, SP: 0x7ff0, FP: 0x8000},
		Regs{PC: 0x501000, SP: 0x9ff0, FP: 0xa000})
	s.frames([]uint64{0x8000, 0x8100, 0x8200}, []uint64{0x402005, 0x403005, 0x404005})
	s.frames([]uint64{0xa000, 0xa100}, []uint64{0x502005, 0x503005})
	c := dialFake(t, s)
	if err := c.Continue(); err != nil {
		t.Fatal(err)
	}
	stacks, err := Sample(c, 3, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	want0 := []uint64{0x401000, 0x402005, 0x403005, 0x404005}
	want1 := []uint64{0x501000, 0x502005, 0x503005}
	want := [][]uint64{want0, want1, want0, want1, want0, want1}
	if !reflect.DeepEqual(stacks, want) {
		t.Errorf("stacks:\n got %x\nwant %x", stacks, want)
	}
	// The last continue is on its way.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n := s.conts
		s.mu.Unlock()
		if n == 4 {
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stops != 3 || s.conts != 4 {
		t.Errorf("%d interrupts and %d continues, want 3 and 4 (the guest runs on after Sample)", s.stops, s.conts)
	}
	if got := strings.Count(strings.Join(s.cmds, " "), "qfThreadInfo"); got != 1 {
		t.Errorf("the thread list was asked %d times, want once", got)
	}
}

// On arm64 the 'g' packet is x0..x30, sp, pc: FP is x29, and the frame
// record at FP is laid out as amd64's.
func TestSampleArm64(t *testing.T) {
	s := newFakeStub(t, "arm64", Regs{PC: 0x40210000, SP: 0x7fe0, FP: 0x7fd8, LR: 0x40210100})
	s.frames([]uint64{0x7fd8, 0x8058}, []uint64{0x40220008, 0x40230008})
	c := dialFake(t, s)
	c.Continue()
	stacks, err := Sample(c, 1, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]uint64{{0x40210000, 0x40220008, 0x40230008}}
	if !reflect.DeepEqual(stacks, want) {
		t.Errorf("stacks:\n got %x\nwant %x", stacks, want)
	}
}

// A frame pointer into unmapped memory (the stub's E14) ends the walk
// there, and so does one that is not 8-byte aligned; the stacks are what
// was read before.
func TestSampleUnmappedFrame(t *testing.T) {
	s := newFakeStub(t, "amd64",
		Regs{PC: 0x401000, FP: 0x8000},
		Regs{PC: 0x501000, FP: 0xa000},
		Regs{PC: 0x601000, FP: 0})
	s.put64(0x8000, 0xdead000) // unmapped
	s.put64(0x8008, 0x402005)
	s.frames([]uint64{0xa000, 0xa104}, []uint64{0x502005, 0x503005}) // 0xa104 misaligned
	c := dialFake(t, s)
	c.Continue()
	stacks, err := Sample(c, 1, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]uint64{{0x401000, 0x402005}, {0x501000, 0x502005}, {0x601000}}
	if !reflect.DeepEqual(stacks, want) {
		t.Errorf("stacks:\n got %x\nwant %x", stacks, want)
	}
}

// An error reply to 'g' is an error of Sample's, a *ReplyError with the
// stub's code.
func TestSampleErrorReply(t *testing.T) {
	s := newFakeStub(t, "amd64", Regs{PC: 0x401000})
	s.errOn["g"] = "E01"
	c := dialFake(t, s)
	c.Continue()
	stacks, err := Sample(c, 2, time.Millisecond)
	var re *ReplyError
	if !errors.As(err, &re) || re.Code != 1 || re.Cmd != "g" {
		t.Fatalf("Sample: %v (%d stacks), want the E01 reply to g", err, len(stacks))
	}
	// The error names the command and the code.
	if !strings.Contains(err.Error(), "E01") {
		t.Errorf("error %q does not say E01", err)
	}
}

// The stub's connection closes at the third interrupt (QEMU ended): Sample
// returns the two stops' stacks and an error, without waiting for the
// timeout.
func TestSampleClosedConnection(t *testing.T) {
	s := newFakeStub(t, "amd64", Regs{PC: 0x401000})
	s.closeAfterStops = 3
	c := dialFake(t, s)
	c.Timeout = time.Minute
	c.Continue()
	start := time.Now()
	stacks, err := Sample(c, 5, time.Millisecond)
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Sample: %v, want the connection's end", err)
	}
	if len(stacks) != 2 {
		t.Errorf("%d stacks, want the 2 before the end", len(stacks))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Sample took %v", d)
	}
}

// A 'W' stop reply (the guest exited) is ErrExited.
func TestSampleExited(t *testing.T) {
	s := newFakeStub(t, "amd64", Regs{PC: 0x401000})
	s.exitAtStop = 2
	c := dialFake(t, s)
	c.Continue()
	stacks, err := Sample(c, 5, time.Millisecond)
	if !errors.Is(err, ErrExited) || len(stacks) != 1 {
		t.Errorf("Sample: %d stacks, %v; want 1 and ErrExited", len(stacks), err)
	}
}

// A stub that never answers the interrupt (a hung QEMU) costs one timeout,
// not a hang.
func TestSampleTimeout(t *testing.T) {
	s := newFakeStub(t, "amd64", Regs{PC: 0x401000})
	s.silent = true
	c := dialFake(t, s)
	c.Timeout = 200 * time.Millisecond
	c.Continue()
	start := time.Now()
	_, err := Sample(c, 1, time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("Sample: %v, want a timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Sample took %v with a 200ms timeout", d)
	}
}

// Detach sends 'D' (QEMU then lets the guest run on without a debugger).
func TestDetach(t *testing.T) {
	s := newFakeStub(t, "amd64", Regs{PC: 0x401000})
	c := dialFake(t, s)
	c.Continue()
	if _, err := c.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if err := c.Detach(); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.detached {
		t.Error("the stub saw no D")
	}
}

// A leaf without a frame has not saved a frame pointer: FP is its
// caller's. With FuncEntry the sampler takes the caller's return address
// from [SP] (amd64) or LR (arm64) when the instruction before it is a
// direct call of the leaf; without FuncEntry, or when the instruction is
// no such call, the chain is all there is.
func TestLeafCaller(t *testing.T) {
	const (
		leaf      = 0x401000 // the leaf's entry; PC is inside it
		pc        = 0x401010
		caller    = 0x402000 // the caller's entry
		callerRet = 0x402040 // the return address into the caller
		grandRet  = 0x403020 // the caller's own return address (in its frame record)
	)
	entries := func(p uint64) (uint64, bool) {
		switch {
		case p >= leaf && p < leaf+0x100:
			return leaf, true
		case p >= caller && p < caller+0x100:
			return caller, true
		case p >= 0x403000 && p < 0x403100:
			return 0x403000, true
		}
		return 0, false
	}
	for _, tc := range []struct {
		arch string
		regs Regs
		code func(s *fakeStub) // the call instruction before callerRet
	}{
		{"amd64", Regs{PC: pc, SP: 0x7000, FP: 0x8000}, func(s *fakeStub) {
			s.put64(0x7000, callerRet)
			insn := []byte{0xe8, 0, 0, 0, 0}
			rel := int64(leaf) - int64(callerRet)
			binary.LittleEndian.PutUint32(insn[1:], uint32(int32(rel)))
			s.putBytes(callerRet-5, insn)
		}},
		{"arm64", Regs{PC: pc, SP: 0x7000, FP: 0x8000, LR: callerRet}, func(s *fakeStub) {
			off := (int64(leaf) - int64(callerRet-4)) / 4
			insn := make([]byte, 4)
			binary.LittleEndian.PutUint32(insn, 0x94000000|uint32(off)&0x03ffffff)
			s.putBytes(callerRet-4, insn)
		}},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			for _, sub := range []struct {
				name      string
				funcEntry bool
				callsLeaf bool
				want      []uint64
			}{
				{"recovered", true, true, []uint64{pc, callerRet, grandRet}},
				{"no FuncEntry", false, true, []uint64{pc, grandRet}},
				{"not a call of the leaf", true, false, []uint64{pc, grandRet}},
			} {
				t.Run(sub.name, func(t *testing.T) {
					s := newFakeStub(t, tc.arch, tc.regs)
					s.frames([]uint64{0x8000}, []uint64{grandRet})
					tc.code(s)
					if !sub.callsLeaf {
						// The same call instruction, to another function.
						s.mu.Lock()
						if tc.arch == "amd64" {
							s.mem[callerRet-4] += 0x10
						} else {
							s.mem[callerRet-4] += 4
						}
						s.mu.Unlock()
					}
					sp := &Sampler{Conn: dialFake(t, s)}
					if sub.funcEntry {
						sp.FuncEntry = entries
					}
					sp.Conn.Continue()
					sp.Conn.Interrupt()
					got, err := sp.Stack()
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, sub.want) {
						t.Errorf("stack %x, want %x", got, sub.want)
					}
				})
			}
		})
	}
}

// Packets: the checksum is checked, escapes and run-length encoding undone.
func TestDecode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"OK", "OK"},
		{"0* ", "0000"},      // ' ' is 32: 3 more
		{"ab}]cd", "ab}cd"},  // '}' ^ 0x20 = ']'
		{"x*\"y", "xxxxxxy"}, // '"' is 34: 5 more
		{"T02thread:01;", "T02thread:01;"},
	} {
		got, err := decode([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("decode(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"*a", "ab}", "a*"} {
		if got, err := decode([]byte(bad)); err == nil {
			t.Errorf("decode(%q) = %q, want an error", bad, got)
		}
	}
}

func TestBadChecksum(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := &Conn{Arch: "amd64", c: a, noAck: true, Timeout: time.Second}
	c.r = bufio.NewReader(a)
	go b.Write([]byte("$OK#00"))
	if _, err := c.recv(); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("recv of a bad checksum: %v", err)
	}
}
