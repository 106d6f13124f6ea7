package jbd2

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"sync"
	"testing"
)

// The replay scan against damaged logs: any bytes in the journal give
// no panic, no read outside the device or beyond the journal's blocks,
// and at most three reads of each log block (the three passes) — a
// bound on time whatever the log holds.

const (
	fzBS     = 1024
	fzBlocks = 128
	fzJStart = 64
	fzJLen   = 48
)

var (
	fzOnce  sync.Once
	fzBases [2]synth // a log of committed transactions: no checksums, csum v3
)

// fuzzBases writes, once, a few transactions (escaped blocks, revokes,
// a torn last one) into two journals, not checkpointed.
func fuzzBases(t testing.TB) [2]synth {
	fzOnce.Do(func() {
		for i, f := range []uint32{FeatureRevoke, FeatureRevoke | Feature64bit | FeatureCsumV3} {
			s := newSynth(fzBS, fzBlocks, fzJStart, fzJLen, 0)
			d := newMemDev(t, s.img, s.journal)
			j, _ := replay(t, d, fzBS)
			j.SetFeatures(f)
			r := rand.New(rand.NewSource(5))
			var keep []pageBuf
			for tx := range 5 {
				for k := range 3 {
					b := newPageBuf(fzBS)
					r.Read(b)
					if k == 1 {
						be.PutUint32(b, Magic)
					}
					keep = append(keep, b)
					j.Add(uint64(1+r.Intn(20)), b.addr())
				}
				if tx == 2 {
					j.Revoke(3)
				}
				if tx < 4 {
					j.Commit(uint64(tx), 0)
				}
			}
			// The last transaction's blocks written, its commit lost.
			d.crashAfter = d.ops + 5
			j.Commit(9, 0)
			d.crashed = false
			d.powerCut(nil, 1)
			fzBases[i] = synth{bs: fzBS, img: d.disk, journal: s.journal}
		}
	})
	return fzBases
}

// replayDamaged applies edits — (offset, xor) pairs taken from p, the
// offsets within the journal's blocks — to a base log and replays it.
func replayDamaged(t *testing.T, p []byte) {
	if len(p) == 0 {
		return
	}
	base := fuzzBases(t)[p[0]&1]
	img := bytes.Clone(base.img)
	p = p[1:]
	jbytes := fzJLen * fzBS
	for len(p) >= 3 {
		off := int(binary.LittleEndian.Uint16(p)) * 7 % jbytes
		blk := base.journal[off/fzBS]
		img[int(blk)*fzBS+off%fzBS] ^= p[2]
		p = p[3:]
	}
	d := newMemDev(t, img, base.journal)
	d.readLimit = 3*fzJLen + 1
	j := new(Journal[tenv])
	if _, e := j.Load(tenv{d}, fzBS); e != 0 {
		return
	}
	j.Replay()
}

func FuzzReplay(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1})
	f.Add([]byte{0, 28, 0, 0x80})                   // the superblock's s_start
	f.Add([]byte{1, 0x92, 0x00, 0x01})              // inside the first descriptor
	f.Add([]byte{0, 0x92, 0x00, 0xff, 1, 2, 3, 44}) // two edits
	f.Fuzz(func(t *testing.T, p []byte) { replayDamaged(t, p) })
}

// TestReplayDamaged runs seeded random damage over both logs (the fuzz
// target's checks, without -fuzz): many small edits, whole blocks, and
// sequences and magic numbers copied where they fool the scan most.
func TestReplayDamaged(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for i := range 3000 {
		n := 1 + r.Intn(8)
		p := []byte{byte(i)}
		for range n {
			var e [3]byte
			r.Read(e[:])
			p = append(p, e[:]...)
		}
		replayDamaged(t, p)
	}
	// Every block of the log made to look like a descriptor of the next
	// sequence, or a commit block: the scan still stops within a lap.
	for i, typ := range []uint32{blockDescriptor, blockCommit, blockRevoke} {
		base := fuzzBases(t)[i&1]
		img := bytes.Clone(base.img)
		seq := be.Uint32(img[base.journal[0]*fzBS+sbSequence:])
		for n := 1; n < fzJLen; n++ {
			b := img[base.journal[n]*fzBS:][:fzBS]
			clear(b)
			be.PutUint32(b, Magic)
			be.PutUint32(b[4:], typ)
			be.PutUint32(b[8:], seq)
			be.PutUint32(b[12:], 16)
		}
		sb := img[base.journal[0]*fzBS:][:sbSize]
		be.PutUint32(sb[sbStart:], 1)
		be.PutUint32(sb[sbIncompat:], FeatureRevoke)
		d := newMemDev(t, img, base.journal)
		d.readLimit = 3*fzJLen + 1
		j := new(Journal[tenv])
		if why, e := j.Load(tenv{d}, fzBS); e != 0 {
			t.Fatalf("Load: %s", why)
		}
		rep, e := j.Replay()
		t.Logf("all blocks of type %d: %+v errno %d, %d reads", typ, rep, e, d.reads)
	}
}
