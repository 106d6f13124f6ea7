package gdbprof

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeStub is a GDB remote stub served on a loopback listener: vCPUs with
// registers and a sparse guest memory, enough of QEMU's stub for Conn and
// Sample. It answers in ack mode until QStartNoAckMode, as QEMU does.
type fakeStub struct {
	t    *testing.T
	arch string
	l    net.Listener

	mu              sync.Mutex
	cpus            []Regs            // one per thread; thread ids 1, 2, ...
	mem             map[uint64]byte   // guest memory; a missing byte is unmapped
	errOn           map[string]string // command prefix -> the reply to give instead (e.g. "g" -> "E01")
	stops           int               // interrupts answered
	conts           int               // 'c' packets
	cmds            []string          // every command, in order
	closeAfterStops int               // > 0: close the connection at this interrupt instead of answering
	exitAtStop      int               // > 0: answer this interrupt with W00
	silent          bool              // never answer an interrupt
	detached        bool
}

func newFakeStub(t *testing.T, arch string, cpus ...Regs) *fakeStub {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeStub{t: t, arch: arch, l: l, cpus: cpus, mem: map[uint64]byte{}, errOn: map[string]string{}}
	t.Cleanup(func() { l.Close() })
	go s.serve()
	return s
}

func (s *fakeStub) addr() string { return s.l.Addr().String() }

func (s *fakeStub) put64(addr, v uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range 8 {
		s.mem[addr+uint64(i)] = byte(v >> (8 * i))
	}
}

func (s *fakeStub) putBytes(addr uint64, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range b {
		s.mem[addr+uint64(i)] = x
	}
}

// frames writes a frame-pointer chain: at fps[i] the record {fps[i+1],
// rets[i]}; the last record's caller FP is 0.
func (s *fakeStub) frames(fps []uint64, rets []uint64) {
	for i, fp := range fps {
		next := uint64(0)
		if i+1 < len(fps) {
			next = fps[i+1]
		}
		s.put64(fp, next)
		s.put64(fp+8, rets[i])
	}
}

func (s *fakeStub) serve() {
	nc, err := s.l.Accept()
	if err != nil {
		return
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	noAck := false
	cur := 0 // the Hg thread
	write := func(reply string) {
		var sum byte
		for i := 0; i < len(reply); i++ {
			sum += reply[i]
		}
		fmt.Fprintf(nc, "$%s#%02x", reply, sum)
	}
	for {
		b, err := r.ReadByte()
		if err != nil {
			return
		}
		switch b {
		case '+', '-':
			continue
		case 0x03:
			s.mu.Lock()
			s.stops++
			n, closeAt, exitAt, silent := s.stops, s.closeAfterStops, s.exitAtStop, s.silent
			s.mu.Unlock()
			switch {
			case silent:
			case closeAt > 0 && n >= closeAt:
				return
			case exitAt > 0 && n >= exitAt:
				write("W00")
			default:
				write("T02thread:01;")
				cur = 0
			}
			continue
		case '$':
		default:
			s.t.Errorf("fake stub: unexpected byte %#x", b)
			return
		}
		body, err := r.ReadString('#')
		if err != nil {
			return
		}
		body = body[:len(body)-1]
		cs := make([]byte, 2)
		if _, err := r.Read(cs[:1]); err != nil {
			return
		}
		if _, err := r.Read(cs[1:]); err != nil {
			return
		}
		var sum byte
		for i := 0; i < len(body); i++ {
			sum += body[i]
		}
		if want, _ := strconv.ParseUint(string(cs), 16, 8); byte(want) != sum {
			s.t.Errorf("fake stub: packet %q: checksum %s, want %02x", body, cs, sum)
		}
		if !noAck {
			nc.Write([]byte{'+'})
		}
		s.mu.Lock()
		s.cmds = append(s.cmds, body)
		reply, forced := "", false
		for p, r := range s.errOn {
			if strings.HasPrefix(body, p) {
				reply, forced = r, true
			}
		}
		s.mu.Unlock()
		if !forced {
			switch {
			case body == "QStartNoAckMode":
				write("OK")
				// The reply is acked by the client; then no more acks.
				if b, err := r.ReadByte(); err != nil || b != '+' {
					s.t.Errorf("fake stub: no ack of QStartNoAckMode's reply (%q, %v)", b, err)
					return
				}
				noAck = true
				continue
			case body == "c":
				s.mu.Lock()
				s.conts++
				s.mu.Unlock()
				continue // no reply until the next stop
			case body == "qfThreadInfo":
				var ids []string
				for i := range s.cpus {
					ids = append(ids, strconv.Itoa(i+1))
				}
				reply = "m" + strings.Join(ids, ",")
			case body == "qsThreadInfo":
				reply = "l"
			case strings.HasPrefix(body, "Hg"):
				n, err := strconv.Atoi(body[2:])
				if err != nil || n < 1 || n > len(s.cpus) {
					reply = "E22"
					break
				}
				cur, reply = n-1, "OK"
			case body == "g":
				reply = s.regs(s.cpus[cur])
			case strings.HasPrefix(body, "m"):
				reply = s.read(body[1:])
			case body == "D":
				s.mu.Lock()
				s.detached = true
				s.mu.Unlock()
				reply = "OK"
			}
		}
		write(reply)
		if !noAck {
			if b, err := r.ReadByte(); err != nil || b != '+' {
				s.t.Errorf("fake stub: reply to %q not acked (%q, %v)", body, b, err)
				return
			}
		}
	}
}

// regs is the 'g' reply for r: QEMU's x86_64 layout (rax..r15, rip,
// eflags, then more) or aarch64's (x0..x30, sp, pc, cpsr).
func (s *fakeStub) regs(r Regs) string {
	var words []uint64
	switch s.arch {
	case "amd64":
		words = make([]uint64, 17)
		words[6], words[7], words[16] = r.FP, r.SP, r.PC
		for i := range words {
			if words[i] == 0 {
				words[i] = 0x1111111111111111 * uint64(i%15+1) // noise
			}
		}
	case "arm64":
		words = make([]uint64, 33)
		words[29], words[30], words[31], words[32] = r.FP, r.LR, r.SP, r.PC
	}
	var b strings.Builder
	for _, w := range words {
		var x [8]byte
		binary.LittleEndian.PutUint64(x[:], w)
		fmt.Fprintf(&b, "%x", x[:])
	}
	if s.arch == "amd64" {
		b.WriteString("46020000") // eflags
	} else {
		b.WriteString("c5030000") // cpsr
	}
	return b.String()
}

func (s *fakeStub) read(args string) string {
	a, n, ok := strings.Cut(args, ",")
	addr, err1 := strconv.ParseUint(a, 16, 64)
	size, err2 := strconv.ParseUint(n, 16, 64)
	if !ok || err1 != nil || err2 != nil {
		return "E01"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for i := range size {
		x, ok := s.mem[addr+i]
		if !ok {
			return "E14"
		}
		fmt.Fprintf(&b, "%02x", x)
	}
	return b.String()
}

func dialFake(t *testing.T, s *fakeStub) *Conn {
	c, err := Dial(s.addr(), s.arch, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 2 * time.Second
	t.Cleanup(func() { c.Close() })
	return c
}
