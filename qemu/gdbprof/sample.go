package gdbprof

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// DefaultMaxDepth is the deepest stack the sampler walks unless
// Sampler.MaxDepth says otherwise.
const DefaultMaxDepth = 64

// Sampler takes stack samples of a running guest.
type Sampler struct {
	Conn     *Conn
	Interval time.Duration // between continuing the guest and stopping it again
	MaxDepth int           // frames per stack (default DefaultMaxDepth)

	// FuncEntry, if set, returns the entry address of the function that
	// holds pc (Symbolizer.FuncEntry). With it the sampler recovers the
	// caller of a leaf without a frame (see the package comment) and
	// ends a walk at a return address outside every function.
	FuncEntry func(pc uint64) (entry uint64, ok bool)

	threads []string // the vCPUs' thread ids, read at the first stop
}

// Sample takes n samples of the running guest c, one every interval: it
// stops the guest, reads every vCPU's stack (innermost PC first, then the
// return addresses, as found) and continues the guest. The guest must be
// running (Continue) and is running again when Sample returns without an
// error. On an error (the guest exited: ErrExited; the connection broke
// or timed out) Sample returns the stacks taken so far with it.
func Sample(c *Conn, n int, interval time.Duration) ([][]uint64, error) {
	s := &Sampler{Conn: c, Interval: interval}
	return s.Sample(n)
}

// Sample is the package's Sample with s's settings.
func (s *Sampler) Sample(n int) ([][]uint64, error) {
	var stacks [][]uint64
	for i := 0; i < n; i++ {
		time.Sleep(s.Interval)
		if _, err := s.Conn.Interrupt(); err != nil {
			return stacks, err
		}
		got, err := s.Stop()
		stacks = append(stacks, got...)
		if err != nil {
			return stacks, err
		}
		if err := s.Conn.Continue(); err != nil {
			return stacks, err
		}
	}
	return stacks, nil
}

// CPUs is the number of vCPUs each stop samples (0 before the first).
func (s *Sampler) CPUs() int { return len(s.threads) }

// Stop reads the stacks of every vCPU of the stopped guest.
func (s *Sampler) Stop() ([][]uint64, error) {
	c := s.Conn
	if s.threads == nil {
		ids, err := c.Threads()
		var re *ReplyError
		if err != nil && !errors.As(err, &re) {
			return nil, err
		}
		if len(ids) == 0 {
			ids = []string{""} // no thread list: the current thread only
		}
		s.threads = ids
	}
	var stacks [][]uint64
	for _, id := range s.threads {
		if len(s.threads) > 1 {
			if err := c.SetThread(id); err != nil {
				return stacks, err
			}
		}
		st, err := s.Stack()
		if err != nil {
			return stacks, err
		}
		stacks = append(stacks, st)
	}
	return stacks, nil
}

// Stack reads the current thread's registers and walks its frame-pointer
// chain: the PC, then the return addresses. A frame pointer that is zero,
// misaligned or unreadable ends the walk (a read's error reply is no
// error of Stack's); a broken connection is.
func (s *Sampler) Stack() ([]uint64, error) {
	c := s.Conn
	r, err := c.Registers()
	if err != nil {
		return nil, err
	}
	max := s.MaxDepth
	if max <= 0 {
		max = DefaultMaxDepth
	}
	pcs := []uint64{r.PC}
	fp := r.FP
	next, ret, ok, err := s.frame(fp)
	if err != nil {
		return pcs, err
	}
	if s.FuncEntry != nil {
		caller, err := s.leafCaller(r, ret, ok)
		if err != nil {
			return pcs, err
		}
		if caller != 0 {
			pcs = append(pcs, caller)
		}
	}
	for ok && len(pcs) < max {
		if s.FuncEntry != nil {
			if _, in := s.FuncEntry(ret - 1); !in {
				break
			}
		}
		pcs = append(pcs, ret)
		if next == fp {
			break
		}
		fp = next
		if next, ret, ok, err = s.frame(fp); err != nil {
			return pcs, err
		}
	}
	return pcs, nil
}

// frame reads the frame record at fp: the caller's frame pointer and the
// return address. ok is false when there is none to read.
func (s *Sampler) frame(fp uint64) (next, ret uint64, ok bool, err error) {
	if fp == 0 || fp%8 != 0 {
		return 0, 0, false, nil
	}
	b, err := s.Conn.ReadMemory(fp, 16)
	if err != nil {
		var re *ReplyError
		if errors.As(err, &re) {
			return 0, 0, false, nil
		}
		return 0, 0, false, err
	}
	next, ret = le64(b[:8]), le64(b[8:])
	return next, ret, ret != 0, nil
}

// leafCaller returns the return address into the caller of the function
// at r.PC when that function has not (yet) saved a frame pointer: the word
// at SP (amd64) or LR (arm64), if the instruction before it is a direct
// call of the function holding r.PC. ret is the return address the chain
// starts with (ok: there is one); it is not returned twice. 0: none.
func (s *Sampler) leafCaller(r Regs, ret uint64, ok bool) (uint64, error) {
	entry, in := s.FuncEntry(r.PC)
	if !in {
		return 0, nil
	}
	var cand, target uint64
	switch s.Conn.Arch {
	case "amd64":
		b, err := s.readOK(r.SP, 8)
		if b == nil {
			return 0, err
		}
		cand = le64(b)
		if cand < 5 {
			return 0, nil
		}
		// CALL rel32: e8 and the displacement from the next instruction.
		insn, err := s.readOK(cand-5, 5)
		if insn == nil {
			return 0, err
		}
		if insn[0] != 0xe8 {
			return 0, nil
		}
		target = cand + uint64(int64(int32(binary.LittleEndian.Uint32(insn[1:]))))
	case "arm64":
		cand = r.LR
		if cand < 4 || cand%4 != 0 {
			return 0, nil
		}
		// BL imm26: 100101 and a word displacement from the BL itself.
		insn, err := s.readOK(cand-4, 4)
		if insn == nil {
			return 0, err
		}
		w := binary.LittleEndian.Uint32(insn)
		if w>>26 != 0x25 {
			return 0, nil
		}
		off := int64(int32(w<<6) >> 6) // sign-extend imm26
		target = cand - 4 + uint64(off*4)
	default:
		return 0, fmt.Errorf("gdbprof: architecture %q: want amd64 or arm64", s.Conn.Arch)
	}
	if target != entry || (ok && cand == ret) {
		return 0, nil
	}
	// A call from the function itself (recursion) is a stale return
	// address, not its caller: a leaf makes no calls.
	if e, in := s.FuncEntry(cand - 1); !in || e == entry {
		return 0, nil
	}
	return cand, nil
}

// readOK reads guest memory; an error reply is (nil, nil).
func (s *Sampler) readOK(addr uint64, n int) ([]byte, error) {
	b, err := s.Conn.ReadMemory(addr, n)
	if err != nil {
		var re *ReplyError
		if errors.As(err, &re) {
			return nil, nil
		}
		return nil, err
	}
	return b, nil
}
