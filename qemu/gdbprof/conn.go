// Package gdbprof is a sampling profiler of a yolk guest through QEMU's gdb
// stub, for the time the guest spends inside the kernel: kernel code runs
// with interrupts off, so Go's own profiler (SIGPROF) never sees it and
// charges it to the program's PC at the system call. It runs on the host.
//
// Conn is a small client of GDB's remote serial protocol (packets with
// checksums, no-ack mode, continue, interrupt, registers, memory, threads),
// every read under a deadline so that a dead guest never hangs it. Sample
// stops the running guest every interval, reads each vCPU's PC and frame
// pointer, walks the frame-pointer chain in guest memory and lets the guest
// go on. NewProfile turns the stacks into a pprof profile whose functions,
// files and lines (inlined calls too, from the image's DWARF when it has
// some) come from the image itself (Symbolizer: its .gopclntab), so that
// "go tool pprof -top FILE" needs no binary.
//
// The guest's architecture is amd64 or arm64. On amd64 the 'g' packet
// starts rax rbx rcx rdx rsi rdi rbp rsp r8..r15 rip, 8 bytes each; on
// arm64 (QEMU's aarch64 target) x0..x30, sp, pc. Go keeps a frame-pointer
// chain on both (cmd/compile/abi-internal.md; runtime/traceback.go): on
// amd64 a function pushes BP on entry and points BP at the saved word; on
// arm64 a function with a frame saves R30 (LR) at 0(RSP) and R29 (FP) at
// -8(RSP) and sets R29 = RSP-8, which "happens to end up mimicking the x86
// layout". On both, then, [FP] is the caller's FP and [FP+8] the return
// address into the caller, and one walk serves both.
//
// What the walk cannot see: a leaf function without a frame (Go omits it
// for small leaves) has not saved a frame pointer, so FP is still its
// caller's and the chain starts at the caller's caller. Given a FuncEntry
// (Symbolizer.FuncEntry) the sampler recovers that caller: on amd64 from
// the return address at [SP], on arm64 from LR, taken only when the
// instruction before it is a direct call (CALL rel32, BL) of the function
// holding the PC. An indirect call of such a leaf, and the instructions of
// a prologue between saving FP and setting it, lose that one frame.
// A chain ends where the code that made it started one afresh: yolk's
// arm64 trap entry does (a kernel stack there ends at trapSave), its amd64
// system-call entry does not (the stack goes on into the program's).
// Under TCG a vCPU stops at the start of a translation block, so the PCs
// are biased toward the first instruction of each block: the functions are
// right, the lines within one less so. Each stop samples every vCPU,
// idle ones included (they show as the kernel's idle loop).
package gdbprof

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds every read of a reply unless Conn.Timeout says
// otherwise.
const DefaultTimeout = 10 * time.Second

// ErrExited is returned when the stub reports that the guest has ended
// (a 'W' or 'X' stop reply).
var ErrExited = errors.New("gdbprof: the guest has exited")

// ReplyError is an error reply ("Enn") of the stub to a command.
type ReplyError struct {
	Cmd  string // the command, e.g. "m1000,10"
	Code int    // nn
}

func (e *ReplyError) Error() string {
	return fmt.Sprintf("gdbprof: %s: error reply E%02x", e.Cmd, e.Code)
}

// Conn is a connection to a GDB remote stub.
type Conn struct {
	// Arch is the guest's architecture, "amd64" or "arm64": it decides
	// how Registers reads the 'g' packet.
	Arch string
	// Timeout bounds each wait for a reply (default DefaultTimeout).
	Timeout time.Duration

	c     net.Conn
	r     *bufio.Reader
	noAck bool
	pkt   []byte // scratch for send
}

// Dial connects to the stub at addr (host:port), waiting at most timeout
// for the connection, and switches to no-ack mode.
func Dial(addr, arch string, timeout time.Duration) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c, err := NewConn(nc, arch)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// NewConn wraps an established connection to a stub and switches it to
// no-ack mode (QStartNoAckMode); a stub that does not support it is used
// with acks.
func NewConn(nc net.Conn, arch string) (*Conn, error) {
	if arch != "amd64" && arch != "arm64" {
		return nil, fmt.Errorf("gdbprof: architecture %q: want amd64 or arm64", arch)
	}
	c := &Conn{Arch: arch, c: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	reply, err := c.Command("QStartNoAckMode")
	if err != nil {
		return nil, err
	}
	// The stub acknowledged our packet and we acknowledged its reply
	// (recv): from here on neither side sends acks. An empty reply means
	// the stub does not know the command.
	c.noAck = reply == "OK"
	return c, nil
}

// Close closes the connection (the guest stays as it is: see Detach).
func (c *Conn) Close() error { return c.c.Close() }

func (c *Conn) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// send writes one packet, "$data#cs", and in ack mode waits for its '+'.
func (c *Conn) send(data string) error {
	var sum byte
	for i := 0; i < len(data); i++ {
		sum += data[i]
	}
	c.pkt = append(c.pkt[:0], '$')
	c.pkt = append(c.pkt, data...)
	c.pkt = append(c.pkt, '#', hexDigits[sum>>4], hexDigits[sum&15])
	if err := c.write(c.pkt); err != nil {
		return err
	}
	if c.noAck {
		return nil
	}
	for {
		b, err := c.readByte()
		if err != nil {
			return err
		}
		switch b {
		case '+':
			return nil
		case '-':
			if err := c.write(c.pkt); err != nil {
				return err
			}
		}
		// Anything else before the ack is noise.
	}
}

func (c *Conn) write(b []byte) error {
	c.c.SetWriteDeadline(time.Now().Add(c.timeout()))
	if _, err := c.c.Write(b); err != nil {
		return fmt.Errorf("gdbprof: write: %w", err)
	}
	return nil
}

func (c *Conn) readByte() (byte, error) {
	c.c.SetReadDeadline(time.Now().Add(c.timeout()))
	b, err := c.r.ReadByte()
	if err != nil {
		if err == io.EOF {
			return 0, fmt.Errorf("gdbprof: the stub closed the connection: %w", io.ErrUnexpectedEOF)
		}
		return 0, fmt.Errorf("gdbprof: read: %w", err)
	}
	return b, nil
}

// recv reads one packet and returns its data, run-length encoding and
// escapes undone; acks ('+') before the '$' are skipped. In ack mode it
// acknowledges the packet.
func (c *Conn) recv() (string, error) {
	for {
		b, err := c.readByte()
		if err != nil {
			return "", err
		}
		if b == '$' {
			break
		}
	}
	var raw []byte
	var sum byte
	for {
		b, err := c.readByte()
		if err != nil {
			return "", err
		}
		if b == '#' {
			break
		}
		sum += b
		raw = append(raw, b)
	}
	var cs [2]byte
	for i := range cs {
		b, err := c.readByte()
		if err != nil {
			return "", err
		}
		cs[i] = b
	}
	want, err := strconv.ParseUint(string(cs[:]), 16, 8)
	if err != nil || byte(want) != sum {
		return "", fmt.Errorf("gdbprof: bad packet checksum %q (computed %02x) on %.40q", cs[:], sum, raw)
	}
	if !c.noAck {
		if err := c.write([]byte{'+'}); err != nil {
			return "", err
		}
	}
	return decode(raw)
}

// decode undoes the packet body's escapes ('}' x: x^0x20) and run-length
// encoding (c '*' n: c repeated n-29 more times).
func decode(raw []byte) (string, error) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		switch b := raw[i]; b {
		case '}':
			if i+1 == len(raw) {
				return "", errors.New("gdbprof: packet ends in an escape")
			}
			i++
			out = append(out, raw[i]^0x20)
		case '*':
			if len(out) == 0 || i+1 == len(raw) || raw[i+1] < 29 {
				return "", fmt.Errorf("gdbprof: bad run-length encoding in %.40q", raw)
			}
			i++
			last := out[len(out)-1]
			for n := int(raw[i]) - 29; n > 0; n-- {
				out = append(out, last)
			}
		default:
			out = append(out, b)
		}
	}
	return string(out), nil
}

const hexDigits = "0123456789abcdef"

// isError reports whether reply is an error reply "Enn" and its code.
func isError(reply string) (int, bool) {
	if len(reply) != 3 || reply[0] != 'E' {
		return 0, false
	}
	n, err := strconv.ParseUint(reply[1:], 16, 8)
	return int(n), err == nil
}

// Command sends one command and returns the stub's reply; an error reply
// ("Enn") is a *ReplyError.
func (c *Conn) Command(cmd string) (string, error) {
	if err := c.send(cmd); err != nil {
		return "", err
	}
	reply, err := c.recv()
	if err != nil {
		return "", fmt.Errorf("%s: %w", cmd, err)
	}
	if code, ok := isError(reply); ok {
		return "", &ReplyError{Cmd: cmd, Code: code}
	}
	return reply, nil
}

// Continue resumes the guest ('c'). The stub answers only when the guest
// stops again: Interrupt reads that answer.
func (c *Conn) Continue() error { return c.send("c") }

// Interrupt stops the running guest (the 0x03 byte) and returns the stop
// reply ("T02thread:01;" or "S02"). A 'W' or 'X' reply, the guest's end,
// is ErrExited.
func (c *Conn) Interrupt() (string, error) {
	if err := c.write([]byte{0x03}); err != nil {
		return "", err
	}
	return c.waitStop()
}

func (c *Conn) waitStop() (string, error) {
	for {
		reply, err := c.recv()
		if err != nil {
			return "", fmt.Errorf("waiting for the guest to stop: %w", err)
		}
		switch {
		case reply == "":
		case reply[0] == 'T' || reply[0] == 'S':
			return reply, nil
		case reply[0] == 'W' || reply[0] == 'X':
			return reply, ErrExited
		case reply[0] == 'O':
			// Console output of the stub: not a stop.
			continue
		default:
			return reply, fmt.Errorf("gdbprof: unexpected stop reply %.40q", reply)
		}
	}
}

// Detach ends the debugging session ('D'): QEMU lets the guest run on.
func (c *Conn) Detach() error {
	_, err := c.Command("D")
	return err
}

// Threads lists the stub's thread ids (QEMU: one per vCPU) with
// qfThreadInfo and qsThreadInfo. The guest must be stopped.
func (c *Conn) Threads() ([]string, error) {
	var ids []string
	cmd := "qfThreadInfo"
	for {
		reply, err := c.Command(cmd)
		if err != nil {
			return nil, err
		}
		if reply == "" || reply[0] == 'l' {
			if len(reply) > 1 { // "l" may carry the last ids
				ids = append(ids, strings.Split(reply[1:], ",")...)
			}
			return ids, nil
		}
		if reply[0] != 'm' {
			return nil, fmt.Errorf("gdbprof: %s: unexpected reply %.40q", cmd, reply)
		}
		ids = append(ids, strings.Split(reply[1:], ",")...)
		cmd = "qsThreadInfo"
		if len(ids) > 4096 {
			return nil, errors.New("gdbprof: the thread list does not end")
		}
	}
}

// SetThread makes thread id the one Registers and ReadMemory act on
// ("Hg"). The guest must be stopped.
func (c *Conn) SetThread(id string) error {
	reply, err := c.Command("Hg" + id)
	if err != nil {
		return err
	}
	if reply != "OK" {
		return fmt.Errorf("gdbprof: Hg%s: unexpected reply %.40q", id, reply)
	}
	return nil
}

// Regs are the registers the sampler needs. LR is arm64's x30 (0 on
// amd64).
type Regs struct {
	PC, SP, FP, LR uint64
}

// Registers reads the current thread's registers ('g'). The guest must be
// stopped.
func (c *Conn) Registers() (Regs, error) {
	reply, err := c.Command("g")
	if err != nil {
		return Regs{}, err
	}
	var idx struct{ pc, sp, fp, lr int }
	switch c.Arch {
	case "amd64":
		idx.pc, idx.sp, idx.fp, idx.lr = 16, 7, 6, -1 // rip, rsp, rbp
	case "arm64":
		idx.pc, idx.sp, idx.fp, idx.lr = 32, 31, 29, 30 // pc, sp, x29, x30
	default:
		return Regs{}, fmt.Errorf("gdbprof: architecture %q: want amd64 or arm64", c.Arch)
	}
	reg := func(i int) (uint64, error) {
		if i < 0 {
			return 0, nil
		}
		if len(reply) < 16*(i+1) {
			return 0, fmt.Errorf("gdbprof: 'g' reply of %d hex digits is too short for %s register %d", len(reply), c.Arch, i)
		}
		b, err := decodeHex(reply[16*i : 16*(i+1)])
		if err != nil {
			return 0, fmt.Errorf("gdbprof: 'g' reply: %w", err)
		}
		return le64(b), nil
	}
	var r Regs
	for _, f := range []struct {
		i int
		v *uint64
	}{{idx.pc, &r.PC}, {idx.sp, &r.SP}, {idx.fp, &r.FP}, {idx.lr, &r.LR}} {
		if *f.v, err = reg(f.i); err != nil {
			return Regs{}, err
		}
	}
	return r, nil
}

// ReadMemory reads n bytes of guest memory at the virtual address addr,
// through the current thread's page tables ('m'). An unmapped address is
// a *ReplyError.
func (c *Conn) ReadMemory(addr uint64, n int) ([]byte, error) {
	cmd := fmt.Sprintf("m%x,%x", addr, n)
	reply, err := c.Command(cmd)
	if err != nil {
		return nil, err
	}
	b, err := decodeHex(reply)
	if err != nil {
		return nil, fmt.Errorf("gdbprof: %s: %w", cmd, err)
	}
	if len(b) < n {
		return nil, fmt.Errorf("gdbprof: %s: %d bytes read of %d", cmd, len(b), n)
	}
	return b[:n], nil
}

func decodeHex(s string) ([]byte, error) {
	if len(s)%2 != 0 {
		return nil, fmt.Errorf("odd-length hex %.40q", s)
	}
	b := make([]byte, len(s)/2)
	for i := range b {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			// QEMU sends "xx" for a register it cannot read.
			return nil, fmt.Errorf("not hex: %.40q", s)
		}
		b[i] = hi<<4 | lo
	}
	return b, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func le64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}
