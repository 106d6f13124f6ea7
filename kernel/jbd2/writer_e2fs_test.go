package jbd2

import (
	"bytes"
	"math/rand"
	"regexp"
	"strings"
	"testing"
)

var writerKinds = []struct {
	name     string
	mkfs     []string
	features uint32
}{
	{"4k-default", []string{"-b", "4096"}, FeatureRevoke | Feature64bit | FeatureCsumV3},
	{"4k-old-nocsum-32bit", []string{"-b", "4096", "-O", "^metadata_csum,^64bit"}, FeatureRevoke},
	{"1k-default", []string{"-b", "1024"}, FeatureRevoke | Feature64bit | FeatureCsumV3},
}

// writerRun is a journal writing into an image's journal, and what the
// image's blocks should hold after the committed transactions replay.
type writerRun struct {
	t    *testing.T
	im   *image
	d    *memDev
	j    *Journal[tenv]
	r    *rand.Rand
	want map[uint64][]byte
	keep []pageBuf
}

func newWriterRun(t *testing.T, im *image, features uint32) *writerRun {
	w := &writerRun{t: t, im: im, d: newMemDev(t, im.read(t), im.journal), r: rand.New(rand.NewSource(42)), want: map[uint64][]byte{}}
	w.j, _ = replay(t, w.d, im.bs)
	if e := w.j.SetFeatures(features); e != 0 {
		t.Fatalf("SetFeatures: %d", e)
	}
	return w
}

func (w *writerRun) add(home uint64, magic bool) []byte {
	b := newPageBuf(w.im.bs)
	w.r.Read(b)
	if magic {
		be.PutUint32(b, Magic)
	}
	w.keep = append(w.keep, b)
	if e := w.j.Add(home, b.addr()); e != 0 {
		w.t.Fatalf("Add %d: %d", home, e)
	}
	return b
}

func (w *writerRun) commit(sec uint64) {
	if e := w.j.Commit(sec, 123456789); e != 0 {
		w.t.Fatalf("Commit: %d", e)
	}
}

// finish writes the durable image with needs_recovery set (ext4's
// part), checks logdump parses the log, then e2fsck -fy's replay of a
// copy and ours agree with each other and with want, and e2fsck -fn is
// clean after.
func (w *writerRun) finish(commits int) {
	t, im := w.t, w.im
	w.d.powerCut(nil, -1) // what was not flushed is lost
	im.copyTo(t, "fs.img", w.d.disk)
	im.debugfsW(t, "feature needs_recovery")
	img := im.read(t)

	out := mustRun(t, "debugfs", "-R", "logdump", im.path)
	got := regexp.MustCompile(`Found expected sequence (\d+), type 2 \(commit block\)`).FindAllStringSubmatch(out, -1)
	if len(got) != commits || strings.Contains(strings.ToLower(out), "checksum") {
		t.Fatalf("logdump found %d commits, want %d:\n%s", len(got), commits, out)
	}

	theirs := im.e2fsckReplay(t, img)
	for home, b := range w.want {
		if !bytes.Equal(theirs[home*uint64(im.bs):][:im.bs], b) {
			t.Fatalf("after e2fsck's replay block %d is not as committed", home)
		}
	}
	e := im.copyTo(t, "e2fsck-done.img", theirs)
	if out, rc := run(t, "e2fsck", "-fn", e.path); rc != 0 {
		t.Fatalf("e2fsck -fn after its replay: exit %d\n%s", rc, out)
	}
	ours, rep := im.ourReplay(t, img)
	if int(rep.Transactions) != commits {
		t.Fatalf("our replay: %+v, want %d transactions", rep, commits)
	}
	sameExceptSuper(t, ours, theirs, im.bs)
}

// TestWriterE2fsck: transactions this package commits and does not
// checkpoint are what e2fsck -fy replays (escaped block, revoke, block
// journaled again after its revoke), debugfs's logdump parses them, and
// a transaction not committed is not replayed.
func TestWriterE2fsck(t *testing.T) {
	for _, k := range writerKinds {
		t.Run(k.name, func(t *testing.T) {
			im := mkfs(t, "32M", k.mkfs...)
			w := newWriterRun(t, im, k.features)
			f := im.free
			orig0 := bytes.Clone(w.d.block(f[0], im.bs))
			for i := range 6 {
				w.want[f[i]] = w.add(f[i], i == 2)
			}
			w.commit(1700000001)
			if e := w.j.Revoke(f[0]); e != 0 {
				t.Fatal(e)
			}
			w.want[f[0]] = orig0
			w.want[f[6]] = w.add(f[6], false)
			w.commit(1700000002)
			w.want[f[1]] = w.add(f[1], true)
			w.want[f[7]] = w.add(f[7], false)
			w.commit(1700000003)
			w.want[f[0]] = w.add(f[0], false)
			w.commit(1700000004)
			// Not committed: stays as it was.
			w.want[f[8]] = bytes.Clone(w.d.block(f[8], im.bs))
			w.add(f[8], false)
			w.finish(4)
		})
	}
}

// TestWriterWrapE2fsck: the log wraps (transactions with checkpoints in
// between go round the journal); the last ones, not checkpointed,
// straddle the log's end, and e2fsck and our Replay agree on them.
func TestWriterWrapE2fsck(t *testing.T) {
	for _, k := range writerKinds {
		t.Run(k.name, func(t *testing.T) {
			im := mkfs(t, "32M", k.mkfs...)
			w := newWriterRun(t, im, k.features)
			homes := im.free
			lim := w.j.Limit()
			per := min(lim, 100)
			commits, wrapped := 0, false
			for tx := 0; tx < 200 && !(wrapped && commits >= 3); tx++ {
				for i := range per {
					h := homes[(tx*7+i)%len(homes)] // homes repeat: the later wins
					w.want[h] = w.add(h, i%9 == 0)
				}
				before := w.j.head
				w.commit(uint64(1700000000 + tx))
				commits++
				if w.j.head < before {
					wrapped = true
				}
				if !wrapped && w.j.used() > w.j.logLen()/2 {
					if e := w.j.Checkpoint(); e != 0 {
						t.Fatal(e)
					}
					commits = 0
				}
			}
			if !wrapped || w.j.head >= w.j.tail {
				t.Fatalf("log did not wrap: tail %d head %d", w.j.tail, w.j.head)
			}
			t.Logf("%d transactions of %d blocks across the wrap (tail %d, head %d, log %d-%d)", commits, per, w.j.tail, w.j.head, w.j.sb.First, w.j.sb.MaxLen)
			w.finish(commits)
		})
	}
}
