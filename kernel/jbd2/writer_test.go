package jbd2

import (
	"bytes"
	"math/rand"
	"testing"

	"yolk/kernel/abi"
)

// synth is a synthetic disk: nblocks of bs bytes, the journal at the
// device blocks jstart.. (jlen of them, in two pieces to exercise the
// map), home blocks below jstart.
type synth struct {
	bs      int
	img     []byte
	journal []uint64
}

func newSynth(bs, nblocks, jstart, jlen int, incompat uint32) synth {
	s := synth{bs: bs, img: make([]byte, bs*nblocks)}
	half := jlen / 2
	for i := range jlen {
		b := jstart + i
		if i >= half {
			b += 3 // a hole between the two extents
		}
		s.journal = append(s.journal, uint64(b))
	}
	makeJournal(s.img, bs, s.journal, incompat, 1)
	return s
}

func load(t testing.TB, d *memDev, bs int) *Journal[tenv] {
	t.Helper()
	j := new(Journal[tenv])
	if why, e := j.Load(tenv{d}, uint32(bs)); e != 0 {
		t.Fatalf("Load: %s (errno %d)", why, e)
	}
	return j
}

func replay(t testing.TB, d *memDev, bs int) (*Journal[tenv], Report) {
	t.Helper()
	j := load(t, d, bs)
	r, e := j.Replay()
	if e != 0 {
		t.Fatalf("Replay: errno %d", e)
	}
	return j, r
}

var featureSets = []struct {
	name     string
	incompat uint32
}{
	{"plain", 0},
	{"revoke", FeatureRevoke},
	{"64bit", FeatureRevoke | Feature64bit},
	{"csum2", FeatureRevoke | Feature64bit | FeatureCsumV2},
	{"csum3", FeatureRevoke | Feature64bit | FeatureCsumV3},
	{"csum3-32", FeatureRevoke | FeatureCsumV3},
}

// TestRoundTrip: transactions committed by the writer and not
// checkpointed are replayed by a fresh Journal to the latest committed
// contents, revoked blocks left alone, escaped blocks restored; a second
// replay finds nothing; a checkpointed log replays nothing.
func TestRoundTrip(t *testing.T) {
	for _, bs := range []int{1024, 4096} {
		for _, fs := range featureSets {
			t.Run(fs.name, func(t *testing.T) {
				s := newSynth(bs, 400, 200, 150, fs.incompat)
				d := newMemDev(t, s.img, s.journal)
				j, _ := replay(t, d, bs)
				if fs.incompat != 0 {
					if e := j.SetFeatures(fs.incompat); e != 0 {
						t.Fatalf("SetFeatures: %d", e)
					}
				}
				r := rand.New(rand.NewSource(7))
				want := map[uint64][]byte{}
				bufs := []pageBuf{}
				put := func(home uint64, escape bool) {
					b := newPageBuf(bs)
					r.Read(b)
					if escape {
						be.PutUint32(b, Magic)
					}
					bufs = append(bufs, b)
					if e := j.Add(home, b.addr()); e != 0 {
						t.Fatalf("Add %d: %d", home, e)
					}
					want[home] = bytes.Clone(b)
				}
				orig5 := bytes.Clone(d.block(5, bs))
				for tx := range 6 {
					for k := range 7 {
						put(uint64(1+(tx*3+k)%40), k == 2)
					}
					if tx == 3 && fs.incompat&FeatureRevoke != 0 {
						if e := j.Revoke(5); e != 0 {
							t.Fatal(e)
						}
						delete(want, 5)
					}
					if e := j.Commit(uint64(1700000000+tx), 0); e != 0 {
						t.Fatalf("Commit %d: %d", tx, e)
					}
				}
				// Uncommitted: must not reach home.
				put(100, false)
				delete(want, 100)
				dur := bytes.Clone(d.disk)
				d2 := newMemDev(t, dur, s.journal)
				_, rep := replay(t, d2, bs)
				if rep.Transactions != 6 {
					t.Fatalf("replayed %d transactions, want 6 (%+v)", rep.Transactions, rep)
				}
				for home, w := range want {
					if !bytes.Equal(d2.block(home, bs), w) {
						t.Fatalf("block %d not as committed", home)
					}
				}
				if fs.incompat&FeatureRevoke != 0 {
					if !bytes.Equal(d2.block(5, bs), orig5) {
						t.Fatalf("revoked block 5 replayed")
					}
				}
				if !bytes.Equal(d2.block(100, bs), make([]byte, bs)) {
					t.Fatalf("uncommitted block 100 replayed")
				}
				_, rep = replay(t, d2, bs)
				if rep.Transactions != 0 || rep.Blocks != 0 {
					t.Fatalf("second replay: %+v", rep)
				}
				// The writer's own checkpoint puts the same contents home.
				if e := j.Checkpoint(); e != 0 {
					t.Fatal(e)
				}
				for home, w := range want {
					if !bytes.Equal(d.block(home, bs), w) {
						t.Fatalf("checkpoint: block %d not as committed", home)
					}
				}
				_, rep = replay(t, newMemDev(t, bytes.Clone(d.disk), s.journal), bs)
				if rep.Transactions != 0 {
					t.Fatalf("replay after checkpoint: %+v", rep)
				}
			})
		}
	}
}

// TestRelease: a caller that writes committed blocks home itself and
// calls Release leaves a log that replays nothing (the tail moved, no
// block read back); before Release the log replays, over whatever the
// caller wrote home; Free grows back to the whole log and Checkpoints
// counts it.
func TestRelease(t *testing.T) {
	const bs = 1024
	s := newSynth(bs, 400, 200, 150, FeatureRevoke)
	d := newMemDev(t, s.img, s.journal)
	j, _ := replay(t, d, bs)
	if e := j.SetFeatures(FeatureRevoke); e != 0 {
		t.Fatal(e)
	}
	whole := j.Free()
	var bufs []pageBuf
	for tx := range 3 {
		for k := range 4 {
			b := pageBuf(bytes.Repeat([]byte{byte(1 + tx*4 + k)}, bs))
			bufs = append(bufs, b)
			if e := j.Add(uint64(10+k), b.addr()); e != 0 {
				t.Fatal(e)
			}
		}
		if e := j.Commit(uint64(1700000000+tx), 0); e != 0 {
			t.Fatal(e)
		}
	}
	if j.Free() >= whole {
		t.Fatalf("free %d of %d after three commits", j.Free(), whole)
	}
	// A cut before Release: the log replays the last transaction's
	// blocks over what the caller may have half-written home.
	cut := newMemDev(t, bytes.Clone(d.disk), s.journal)
	copy(cut.block(10, bs), bytes.Repeat([]byte{0xEE}, bs))
	if _, rep := replay(t, cut, bs); rep.Transactions != 3 || cut.block(10, bs)[0] != 9 {
		t.Fatalf("before Release: %+v, block 10 holds %#x", rep, cut.block(10, bs)[0])
	}
	// The caller's checkpoint: its copies home, flushed, then Release.
	for k := range 4 {
		copy(d.block(uint64(10+k), bs), bufs[8+k])
	}
	before, reads := j.Checkpoints(), d.reads
	if e := j.Release(); e != 0 {
		t.Fatal(e)
	}
	if d.reads != reads {
		t.Errorf("Release read %d blocks", d.reads-reads)
	}
	if j.Checkpoints() != before+1 || j.Free() != whole {
		t.Errorf("after Release: %d checkpoints (was %d), free %d of %d", j.Checkpoints(), before, j.Free(), whole)
	}
	after := newMemDev(t, bytes.Clone(d.disk), s.journal)
	if _, rep := replay(t, after, bs); rep.Transactions != 0 {
		t.Fatalf("replay after Release: %+v", rep)
	}
	for k := range 4 {
		if got := after.block(uint64(10+k), bs)[0]; got != byte(9+k) {
			t.Errorf("block %d holds %#x after Release, want %#x", 10+k, got, 9+k)
		}
	}
}

// TestTransactionFull: Add answers ENOSPC at Limit blocks; a committed
// full transaction replays.
func TestTransactionFull(t *testing.T) {
	s := newSynth(1024, 400, 200, 64, FeatureRevoke)
	d := newMemDev(t, s.img, s.journal)
	j, _ := replay(t, d, 1024)
	lim := j.Limit()
	if lim < 4 || lim > 16 {
		t.Fatalf("Limit %d for a 64-block log", lim)
	}
	b := newPageBuf(1024)
	for i := range lim {
		if e := j.Add(uint64(1+i), b.addr()); e != 0 {
			t.Fatalf("Add %d: %d", i, e)
		}
	}
	if e := j.Add(uint64(1+lim), b.addr()); e != ENOSPC {
		t.Fatalf("Add past the limit: %d, want ENOSPC", e)
	}
	if e := j.Add(1, b.addr()); e != 0 {
		t.Fatalf("Add of a block already in: %d", e)
	}
	// The log wraps and fills: Commit checkpoints by itself, and the
	// last contents of every block reach home or replay.
	laps := 0
	for c := range 20 {
		clear(b)
		b[0] = byte(c)
		for i := range lim {
			j.Add(uint64(1+i), b.addr())
		}
		before := j.tail
		if e := j.Commit(1, 0); e != 0 {
			t.Fatal(e)
		}
		if j.tail != before {
			laps++
		}
	}
	if laps < 3 {
		t.Fatalf("%d checkpoints forced by a full log in 20 commits of %d blocks to a %d-block log", laps, lim, j.logLen())
	}
	d2 := newMemDev(t, bytes.Clone(d.disk), s.journal)
	replay(t, d2, 1024)
	for i := range lim {
		if got := d2.block(uint64(1+i), 1024)[0]; got != 19 {
			t.Fatalf("after replay block %d holds commit %d's contents, want 19's", 1+i, got)
		}
	}
}

// TestRevokeTableFull: the writer checkpoints before its log holds more
// revoke records than a replay's table does; a log that holds more
// (made here by copying a transaction of revokes) refuses replay
// (ENOMEM) rather than replay a revoked block. Close leaves a clean log
// that replays nothing.
func TestRevokeTableFull(t *testing.T) {
	s := newSynth(4096, 400, 100, 150, 0)
	d := newMemDev(t, s.img, s.journal)
	j, _ := replay(t, d, 4096)
	j.SetFeatures(FeatureRevoke | Feature64bit)
	next := uint64(1000)
	for range RevokeMax / TxRevokeMax {
		for range TxRevokeMax {
			if e := j.Revoke(next); e != 0 {
				t.Fatal(e)
			}
			next++
		}
		if e := j.Commit(1, 0); e != 0 {
			t.Fatalf("Commit with %d revokes in the log: %d", j.logRevokes, e)
		}
	}
	if j.logRevokes > RevokeMax*3/4 {
		t.Fatalf("%d revoke records in the log", j.logRevokes)
	}
	if e := j.Close(); e != 0 {
		t.Fatal(e)
	}
	_, r := replay(t, newMemDev(t, bytes.Clone(d.disk), s.journal), 4096)
	if r.Transactions != 0 || j.Super().Start != 0 {
		t.Fatalf("after Close: %+v, s_start %d", r, j.Super().Start)
	}
	// One transaction of revokes at the log's head, copied 12 times
	// after itself with the next IDs and other blocks.
	j, _ = replay(t, d, 4096)
	start, seq := j.head, j.seq
	for range TxRevokeMax {
		j.Revoke(next)
		next++
	}
	if e := j.Commit(1, 0); e != 0 {
		t.Fatal(e)
	}
	tx := int(j.head - start) // revoke blocks and the commit block
	for k := 1; k <= 12; k++ {
		for i := range tx {
			src := d.block(s.journal[int(start)+i], 4096)
			dst := d.block(s.journal[int(start)+k*tx+i], 4096)
			copy(dst, src)
			be.PutUint32(dst[headerSequence:], seq+uint32(k))
			if be.Uint32(dst[headerBlockType:]) == blockRevoke {
				for off := 16; off+8 <= int(be.Uint32(dst[12:])); off += 8 {
					be.PutUint64(dst[off:], be.Uint64(dst[off:])+uint64(k*TxRevokeMax))
				}
			}
		}
	}
	_, e := load(t, newMemDev(t, bytes.Clone(d.disk), s.journal), 4096).Replay()
	if e != abi.ENOMEM {
		t.Fatalf("Replay of %d revoke records: errno %d, want ENOMEM", 13*TxRevokeMax, e)
	}
}
