package jbd2

import (
	"bytes"
	"strings"
	"testing"
)

// TestSuperblockFromMkfs: the superblocks mkfs.ext4 and debugfs write
// parse, with the features they set and their checksums checked.
func TestSuperblockFromMkfs(t *testing.T) {
	for _, k := range imageKinds {
		t.Run(k.name, func(t *testing.T) {
			im := mkfs(t, "32M", k.mkfs...)
			d := newMemDev(t, im.read(t), im.journal)
			j := load(t, d, im.bs)
			s := j.Super()
			if s.Version != 2 || int(s.BlockSize) != im.bs || int(s.MaxLen) != len(im.journal) || s.First != 1 || s.Start != 0 || s.Incompat != 0 {
				t.Fatalf("fresh journal: %+v", s)
			}
			im.debugfsW(t, k.open, "journal_close")
			d = newMemDev(t, im.read(t), im.journal)
			s = load(t, d, im.bs).Super()
			want := uint32(0) // debugfs sets revoke with the first revoke record
			if !strings.Contains(k.name, "32bit") {
				want |= Feature64bit
			}
			switch {
			case strings.HasSuffix(k.open, "-v 3"):
				want |= FeatureCsumV3
			case strings.HasSuffix(k.open, "-v 2"):
				want |= FeatureCsumV2
			}
			if s.Incompat != want {
				t.Fatalf("after %q: incompat %#x, want %#x", k.open, s.Incompat, want)
			}
			if s.Incompat&FeatureCsumV3 != 0 {
				// A flipped bit anywhere in the 1,024 bytes fails the checksum.
				off := im.journal[0]*uint64(im.bs) + 300
				d.disk[off] ^= 1
				if why, e := new(Journal[tenv]).Load(tenv{d}, uint32(im.bs)); e != EBADMSG || !strings.Contains(string(why), "checksum") {
					t.Fatalf("corrupt superblock: %q %d", why, e)
				}
			}
		})
	}
}

// TestSuperblockRefusals: what Load refuses, each by name.
func TestSuperblockRefusals(t *testing.T) {
	const bs = 1024
	cases := []struct {
		name  string
		edit  func(b []byte)
		bs    int
		errno uint32
		why   string
	}{
		{"fast_commit", func(b []byte) { be.PutUint32(b[sbIncompat:], FeatureRevoke|FeatureFastCommit) }, bs, uint32(ENOTSUP), "fast_commit"},
		{"unknown incompat", func(b []byte) { be.PutUint32(b[sbIncompat:], 0x100) }, bs, uint32(ENOTSUP), "unknown journal incompat"},
		{"ro_compat", func(b []byte) { be.PutUint32(b[sbROCompat:], 1) }, bs, uint32(ENOTSUP), "ro_compat"},
		{"v2 and v3", func(b []byte) { be.PutUint32(b[sbIncompat:], FeatureCsumV2|FeatureCsumV3) }, bs, uint32(EUCLEAN), "v2 and v3"},
		{"async without csum", func(b []byte) { be.PutUint32(b[sbIncompat:], FeatureAsyncCommit) }, bs, uint32(ENOTSUP), "async_commit"},
		{"external shared", func(b []byte) { be.PutUint32(b[sbNrUsers:], 2) }, bs, uint32(ENOTSUP), "s_nr_users"},
		{"bad magic", func(b []byte) { b[0] = 0 }, bs, uint32(EUCLEAN), "magic"},
		{"block size", func(b []byte) {}, 4096, uint32(EUCLEAN), "block size"},
		{"block size 8k", func(b []byte) { be.PutUint32(b[sbBlockSize:], 8192) }, bs, uint32(ENOTSUP), "block size"},
		{"s_start", func(b []byte) { be.PutUint32(b[sbStart:], 5000) }, bs, uint32(EUCLEAN), "s_start"},
		{"s_first", func(b []byte) { be.PutUint32(b[sbFirst:], 0) }, bs, uint32(EUCLEAN), "geometry"},
		{"longer than mapped", func(b []byte) { be.PutUint32(b[sbMaxLen:], 200) }, bs, uint32(EUCLEAN), "shorter"},
		{"csum type", func(b []byte) {
			be.PutUint32(b[sbIncompat:], FeatureCsumV3)
			b[sbChecksumType] = 1
		}, bs, uint32(ENOTSUP), "checksum type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSynth(bs, 300, 100, 100, 0)
			sb := s.img[s.journal[0]*bs:][:sbSize]
			c.edit(sb)
			// Tests of other fields keep a valid checksum (debugfs's
			// csum type is crc32c).
			if be.Uint32(sb[sbIncompat:])&(FeatureCsumV2|FeatureCsumV3) != 0 && sb[sbChecksumType] == crc32cChksum {
				be.PutUint32(sb[sbChecksum:], superCsum(sb))
			}
			// Read at the block size asked, so "block size" is a mismatch.
			img := s.img
			jm := s.journal
			if c.bs != bs {
				img = make([]byte, len(s.img)*4)
				copy(img[jm[0]*uint64(c.bs):], sb)
			}
			why, e := new(Journal[tenv]).Load(tenv{newMemDev(t, img, jm)}, uint32(c.bs))
			if uint32(e) != c.errno || !strings.Contains(string(why), c.why) {
				t.Fatalf("Load: %q errno %d, want %q errno %d", why, e, c.why, c.errno)
			}
		})
	}
}

// TestSuperblockV1: a v1 superblock (no features) loads, replays and
// takes transactions; features cannot be set on it.
func TestSuperblockV1(t *testing.T) {
	const bs = 1024
	s := newSynth(bs, 300, 100, 100, 0)
	sb := s.img[s.journal[0]*bs:][:sbSize]
	be.PutUint32(sb[headerBlockType:], blockSuperV1)
	be.PutUint32(sb[sbIncompat:], 0xffff) // ignored in v1
	d := newMemDev(t, s.img, s.journal)
	j, _ := replay(t, d, bs)
	if v := j.Super(); v.Version != 1 || v.Incompat != 0 {
		t.Fatalf("%+v", v)
	}
	if e := j.SetFeatures(FeatureCsumV3); e != EROFS {
		t.Fatalf("SetFeatures on v1: %d", e)
	}
	b := pageBuf(bytes.Repeat([]byte{7}, bs))
	j.Add(3, b.addr())
	if e := j.Commit(1, 2); e != 0 {
		t.Fatal(e)
	}
	_, r := replay(t, newMemDev(t, bytes.Clone(d.disk), s.journal), bs)
	if r.Transactions != 1 || r.Blocks != 1 {
		t.Fatalf("%+v", r)
	}
}
