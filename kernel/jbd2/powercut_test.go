package jbd2

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand"
	"testing"
)

// The power-cut simulation: a fixed sequence of transactions (journaled
// metadata, blocks freed by a revoke then written as data, checkpoints
// asked for and forced by a full log, the log wrapping) runs on a
// device that loses every write after the Kth, for every K, and with it
// all, none or a seeded random subset of the writes not yet flushed.
// Each time Replay must leave the metadata exactly as a prefix of the
// committed transactions left it, at least every transaction whose
// Commit returned, and a freed block's data written and flushed after
// its revoke committed must not be overwritten by its old journaled
// copy.

const (
	pcBS      = 1024
	pcBlocks  = 160
	pcJStart  = 90
	pcJLen    = 64
	pcMeta    = 30 // metadata blocks 1..pcMeta
	pcFreed   = 40 // blocks freed and reused as data: pcFreed..
	pcTx      = 24
	pcSeedTxn = 99
)

// pcEvent is what the scenario knows of the run at the crash point.
type pcScenario struct {
	states     []map[uint64][]byte // metadata after the first p transactions
	durableAt  []int               // operations done when Commit p+1 returned
	freed      []pcFreedBlock
	totalWrite int
}

type pcFreedBlock struct {
	block     uint64
	data      []byte
	durableAt int // operations done once the data write and its flush were
}

// runScenario runs the transactions on d; with a crashing d it stops at
// the first error after the crash (an error before it fails the test).
func runScenario(t *testing.T, d *memDev, features uint32) pcScenario {
	var sc pcScenario
	j := new(Journal[tenv])
	if why, e := j.Load(tenv{d}, pcBS); e != 0 {
		t.Fatalf("Load: %s", why)
	}
	if _, e := j.Replay(); e != 0 {
		t.Fatalf("Replay: %d", e)
	}
	if e := j.SetFeatures(features); e != 0 && !d.crashed {
		t.Fatalf("SetFeatures: %d", e)
	}
	r := rand.New(rand.NewSource(pcSeedTxn))
	state := map[uint64][]byte{}
	for b := uint64(1); b <= pcMeta; b++ {
		state[b] = make([]byte, pcBS)
	}
	sc.states = append(sc.states, clone(state))
	fail := func(what string, e uint64) bool {
		if !d.crashed {
			t.Fatalf("%s: errno %d before the power cut", what, e)
		}
		return true
	}
	var keep []pageBuf
	nextFreed := uint64(pcFreed)
	var toRevoke []pcFreedBlock
	lim := j.Limit()
	for tx := 0; tx < pcTx; tx++ {
		n := 1 + r.Intn(lim-1)
		pend := map[uint64][]byte{}
		for range n - 1 {
			h := uint64(1 + r.Intn(pcMeta))
			b := newPageBuf(pcBS)
			r.Read(b)
			if r.Intn(5) == 0 {
				be.PutUint32(b, Magic)
			}
			keep = append(keep, b)
			if e := j.Add(h, b.addr()); e != 0 {
				t.Fatalf("Add: %d", e)
			}
			pend[h] = b
		}
		// Every third transaction journals a block that a later one
		// frees; the one after revokes the last.
		var revoked []pcFreedBlock
		if tx%3 == 0 {
			b := pageBuf(bytes.Repeat([]byte{byte(tx + 1)}, pcBS))
			keep = append(keep, b)
			j.Add(nextFreed, b.addr())
			toRevoke = append(toRevoke, pcFreedBlock{block: nextFreed})
			nextFreed++
		} else if len(toRevoke) > 0 {
			f := toRevoke[0]
			toRevoke = toRevoke[1:]
			if e := j.Revoke(f.block); e != 0 {
				t.Fatalf("Revoke: %d", e)
			}
			revoked = append(revoked, f)
		}
		if e := j.Commit(uint64(1700000000+tx), 0); e != 0 && fail("Commit", uint64(e)) {
			return sc
		}
		for h, b := range pend {
			state[h] = bytes.Clone(b)
		}
		sc.states = append(sc.states, clone(state))
		sc.durableAt = append(sc.durableAt, d.ops)
		// The freed blocks are data now: written in place, flushed
		// (ordered mode: before the next commit).
		for _, f := range revoked {
			f.data = bytes.Repeat([]byte{0xd0 ^ byte(f.block)}, pcBS)
			tenv{d}.WriteAt(f.data, f.block*pcBS)
			tenv{d}.Flush()
			f.durableAt = d.ops
			sc.freed = append(sc.freed, f)
		}
		if tx%5 == 4 {
			if e := j.Checkpoint(); e != 0 && fail("Checkpoint", uint64(e)) {
				return sc
			}
		}
	}
	sc.totalWrite = d.ops
	return sc
}

func clone(m map[uint64][]byte) map[uint64][]byte {
	c := map[uint64][]byte{}
	for k, v := range m {
		c[k] = v
	}
	return c
}

func TestPowerCut(t *testing.T) {
	for _, fs := range []struct {
		name     string
		features uint32
	}{{"revoke-32bit", FeatureRevoke}, {"csum3-64bit", FeatureRevoke | Feature64bit | FeatureCsumV3}} {
		t.Run(fs.name, func(t *testing.T) {
			s := newSynth(pcBS, pcBlocks, pcJStart, pcJLen, 0)
			full := runScenario(t, newMemDev(t, bytes.Clone(s.img), s.journal), fs.features)
			if len(full.durableAt) != pcTx {
				t.Fatalf("scenario committed %d", len(full.durableAt))
			}
			runs := 0
			for k := 0; k <= full.totalWrite; k++ {
				for mode := -1; mode <= 1; mode++ {
					d := newMemDev(t, bytes.Clone(s.img), s.journal)
					d.crashAfter = k
					sc := runScenario(t, d, fs.features)
					d.crashed = false
					d.powerCut(rand.New(rand.NewSource(int64(k))), mode)
					checkCut(t, fmt.Sprintf("K=%d mode=%d", k, mode), d, s, k, full, sc)
					runs++
				}
			}
			t.Logf("%d power cuts over %d writes and flushes", runs, full.totalWrite)
		})
	}
}

func checkCut(t *testing.T, at string, d *memDev, s synth, k int, full, sc pcScenario) {
	img := newMemDev(t, d.disk, s.journal)
	img.crashAfter = -1
	j, rep := replay(t, img, pcBS)
	durable := 0
	for _, w := range full.durableAt {
		if k >= w {
			durable++
		}
	}
	p := -1
	for q := len(full.states) - 1; q >= 0; q-- {
		if sameMeta(img, full.states[q]) {
			p = q
			break
		}
	}
	if p < 0 {
		t.Fatalf("%s: metadata is no prefix of the committed transactions (report %+v)", at, rep)
	}
	if p < durable {
		t.Fatalf("%s: metadata of %d transactions, but %d commits had returned", at, p, durable)
	}
	for _, f := range full.freed {
		if k >= f.durableAt && !bytes.Equal(img.block(f.block, pcBS), f.data) {
			t.Fatalf("%s: freed block %d's data, flushed after its revoke, replaced", at, f.block)
		}
	}
	// Replay again: nothing; and the journal takes a transaction.
	_, rep2 := replay(t, newMemDev(t, bytes.Clone(img.disk), s.journal), pcBS)
	if rep2.Transactions != 0 || rep2.Blocks != 0 {
		t.Fatalf("%s: second replay %+v", at, rep2)
	}
	b := pageBuf(bytes.Repeat([]byte{0xee}, pcBS))
	if e := j.Add(1, b.addr()); e != 0 {
		t.Fatalf("%s: Add after replay: %d", at, e)
	}
	if e := j.Commit(1, 1); e != 0 {
		t.Fatalf("%s: Commit after replay: %d", at, e)
	}
	_, rep3 := replay(t, newMemDev(t, bytes.Clone(img.disk), s.journal), pcBS)
	if rep3.Transactions != 1 {
		t.Fatalf("%s: the transaction after replay: %+v", at, rep3)
	}
}

func sameMeta(d *memDev, st map[uint64][]byte) bool {
	for b, want := range st {
		if !bytes.Equal(d.block(b, pcBS), want) {
			return false
		}
	}
	return true
}

// TestCrashBeforeCommitBlock: a transaction whose blocks reached the log
// (flushed) but whose commit block did not is not replayed.
func TestCrashBeforeCommitBlock(t *testing.T) {
	for _, fs := range featureSets {
		t.Run(fs.name, func(t *testing.T) {
			s := newSynth(pcBS, pcBlocks, pcJStart, pcJLen, 0)
			d := newMemDev(t, s.img, s.journal)
			j, _ := replay(t, d, pcBS)
			if fs.incompat != 0 {
				j.SetFeatures(fs.incompat)
			}
			b := pageBuf(bytes.Repeat([]byte{1}, pcBS))
			j.Add(3, b.addr())
			j.Commit(1, 0)
			b2 := pageBuf(bytes.Repeat([]byte{2}, pcBS))
			j.Add(3, b2.addr())
			j.Add(4, b2.addr())
			// desc + 2 blocks, the flush: the commit block is the fifth
			// operation of this commit; the power goes before it.
			d.crashAfter = d.ops + 4
			j.Commit(2, 0)
			d.crashed = false
			d.powerCut(nil, 1)
			_, rep := replay(t, newMemDev(t, d.disk, s.journal), pcBS)
			if rep.Transactions != 1 || !rep.Torn || d.block(3, pcBS)[0] != 1 || d.block(4, pcBS)[0] != 0 {
				t.Fatalf("report %+v, block 3 %d, block 4 %d", rep, d.block(3, pcBS)[0], d.block(4, pcBS)[0])
			}
		})
	}
}

// TestCheckpointTailFlush: the crash the checkpoint's second flush is
// for. The log is checkpointed with its head near the end; the next
// transaction wraps onto the old tail's blocks; the power goes before
// that transaction's first flush, and of the writes not flushed, the
// cache kept all but the new superblock and the new block over the old
// tail's descriptor. Without the flush, the old superblock leads replay
// to the old descriptor, whose blocks are now the new transaction's:
// uncommitted contents would reach home (no checksums to tell).
func TestCheckpointTailFlush(t *testing.T) {
	s := newSynth(pcBS, pcBlocks, pcJStart, pcJLen, 0)
	d := newMemDev(t, s.img, s.journal)
	j, _ := replay(t, d, pcBS)
	j.SetFeatures(FeatureRevoke)
	lim := j.Limit()
	want := map[uint64]byte{}
	var keep []pageBuf
	fill := func(c byte, base uint64) {
		for i := range lim {
			b := pageBuf(bytes.Repeat([]byte{c}, pcBS))
			keep = append(keep, b)
			j.Add(base+uint64(i), b.addr())
			want[base+uint64(i)] = c
		}
	}
	// The first transaction's blocks are journaled once: a replay of
	// it with other contents shows.
	for c := byte(1); j.head < j.sb.MaxLen-uint32(lim); c++ {
		fill(c, 1+20*uint64(min(c, 2)-1))
		if e := j.Commit(1, 0); e != 0 {
			t.Fatal(e)
		}
	}
	if j.tail != j.sb.First {
		t.Fatalf("tail %d", j.tail)
	}
	if e := j.Checkpoint(); e != 0 {
		t.Fatal(e)
	}
	committed := maps.Clone(want)
	fill(0xee, 1)
	d.crashAfter = d.ops + 1 + lim // its descriptor and blocks, not its flush
	j.Commit(2, 0)
	if !d.crashed || len(d.pending) < 1+lim {
		t.Fatalf("power cut with %d writes pending, want the transaction's %d", len(d.pending), 1+lim)
	}
	d.crashed = false
	sbOff := s.journal[0] * pcBS
	oldTail := s.journal[j.sb.First] * pcBS
	for _, w := range d.pending {
		if w.off != sbOff && w.off != oldTail {
			copy(d.disk[w.off:], w.data)
		}
	}
	d.pending = nil
	img := newMemDev(t, d.disk, s.journal)
	if _, e := load(t, img, pcBS).Replay(); e != 0 {
		t.Fatalf("Replay: %d", e)
	}
	for b, c := range committed {
		if got := img.block(b, pcBS)[0]; got != c {
			t.Fatalf("block %d holds %#x, want %#x (the last committed)", b, got, c)
		}
	}
}
