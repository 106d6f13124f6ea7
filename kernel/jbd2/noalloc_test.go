package jbd2

import (
	"testing"

	"yolk/kernel/abi"
)

// flatEnv is a device without a cache or bookkeeping: nothing it does
// allocates, so what AllocsPerRun counts is the journal's.
type flatEnv struct{ s *synth }

func (e flatEnv) ReadAt(b []byte, off uint64) abi.Errno  { copy(b, e.s.img[off:]); return 0 }
func (e flatEnv) WriteAt(b []byte, off uint64) abi.Errno { copy(e.s.img[off:], b); return 0 }
func (e flatEnv) Flush() abi.Errno                       { return 0 }
func (e flatEnv) JournalBlock(n uint32) (uint64, bool) {
	if int(n) >= len(e.s.journal) {
		return 0, false
	}
	return e.s.journal[n], true
}

// TestNoAlloc: Load, Replay, Add, Revoke, Commit and Checkpoint allocate
// nothing (kernel context; the compiler's escape analysis agrees: go
// build -gcflags=-m reports nothing of this package escaping).
func TestNoAlloc(t *testing.T) {
	s := newSynth(4096, 300, 100, 150, 0)
	j := new(Journal[flatEnv])
	b := newPageBuf(4096)
	be.PutUint32(b, Magic) // escaped: the copy path too
	if _, e := j.Load(flatEnv{&s}, 4096); e != 0 {
		t.Fatal(e)
	}
	if _, e := j.Replay(); e != 0 {
		t.Fatal(e)
	}
	j.SetFeatures(FeatureRevoke | Feature64bit | FeatureCsumV3)
	n := testing.AllocsPerRun(20, func() {
		for i := range 40 {
			j.Add(uint64(1+i), b.addr())
		}
		j.Revoke(7)
		if e := j.Commit(1, 2); e != 0 {
			t.Fatal(e)
		}
		if e := j.Checkpoint(); e != 0 {
			t.Fatal(e)
		}
		j.Add(3, b.addr())
		j.Commit(3, 4)
		if _, e := j.Load(flatEnv{&s}, 4096); e != 0 {
			t.Fatal(e)
		}
		if r, e := j.Replay(); e != 0 || r.Transactions != 1 {
			t.Fatal(r, e)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations a run", n)
	}
}
