package jbd2

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The tests against e2fsprogs: images made by mkfs.ext4, transactions
// written by debugfs (or by this package), replayed by e2fsck. Test-only
// code reads what it needs of an image through debugfs and dumpe2fs.

func tool(t *testing.T, name string) string {
	t.Helper()
	for _, p := range []string{name, "/sbin/" + name, "/usr/sbin/" + name} {
		if q, err := exec.LookPath(p); err == nil {
			return q
		}
	}
	t.Skipf("%s not installed (e2fsprogs)", name)
	return ""
}

func run(t *testing.T, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(tool(t, name), args...)
	cmd.Env = append(os.Environ(), "E2FSPROGS_FAKE_TIME=1700000000", "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	rc := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%s: %v", name, err)
		}
		rc = ee.ExitCode()
	}
	return string(out), rc
}

func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, rc := run(t, name, args...)
	if rc != 0 {
		t.Fatalf("%s %q: exit %d\n%s", name, args, rc, out)
	}
	return out
}

// image is an ext4 image file and what the tests know of it.
type image struct {
	path    string
	bs      int
	journal []uint64 // inode 8's blocks
	free    []uint64 // free blocks to journal into
}

// mkfs makes an image of size with mkfs.ext4's args and reads its block
// size, its journal's extents and a run of free blocks.
func mkfs(t *testing.T, size string, args ...string) *image {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fs.img")
	a := append([]string{"-q", "-F", "-E", "root_owner=0:0"}, args...)
	mustRun(t, "mkfs.ext4", append(a, p, size)...)
	im := &image{path: p}
	out := mustRun(t, "dumpe2fs", "-h", p)
	m := regexp.MustCompile(`Block size:\s+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no block size in\n%s", out)
	}
	im.bs, _ = strconv.Atoi(m[1])
	im.journal = journalExtents(t, p)
	out = mustRun(t, "debugfs", "-R", "ffb 300 2000", p)
	for _, f := range strings.Fields(strings.TrimPrefix(strings.TrimSpace(out[strings.Index(out, "Free blocks found:"):]), "Free blocks found:")) {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			t.Fatalf("ffb: %q", out)
		}
		im.free = append(im.free, n)
	}
	if len(im.free) != 300 {
		t.Fatalf("ffb found %d blocks", len(im.free))
	}
	return im
}

// journalExtents reads inode 8's extents from debugfs's stat.
func journalExtents(t *testing.T, p string) []uint64 {
	out := mustRun(t, "debugfs", "-R", "stat <8>", p)
	var blocks []uint64
	re := regexp.MustCompile(`\((\d+)(?:-(\d+))?\):(\d+)(?:-(\d+))?`)
	for _, m := range re.FindAllStringSubmatch(out[strings.Index(out, "EXTENTS:"):], -1) {
		lo, _ := strconv.ParseUint(m[1], 10, 64)
		hi := lo
		if m[2] != "" {
			hi, _ = strconv.ParseUint(m[2], 10, 64)
		}
		phys, _ := strconv.ParseUint(m[3], 10, 64)
		if uint64(len(blocks)) != lo {
			t.Fatalf("journal extents not contiguous in logical order: %q", m[0])
		}
		for i := lo; i <= hi; i++ {
			blocks = append(blocks, phys+i-lo)
		}
	}
	if len(blocks) < 1024 {
		t.Fatalf("journal of %d blocks from\n%s", len(blocks), out)
	}
	return blocks
}

func (im *image) read(t *testing.T) []byte {
	b, err := os.ReadFile(im.path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// copyTo writes the image's bytes b to a new file beside it.
func (im *image) copyTo(t *testing.T, name string, b []byte) *image {
	c := *im
	c.path = filepath.Join(filepath.Dir(im.path), name)
	if err := os.WriteFile(c.path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return &c
}

// debugfsW runs debugfs -w with the commands, one a line.
func (im *image) debugfsW(t *testing.T, cmds ...string) string {
	f := filepath.Join(filepath.Dir(im.path), "cmds")
	if err := os.WriteFile(f, []byte(strings.Join(cmds, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return mustRun(t, "debugfs", "-w", "-f", f, im.path)
}

// dataFile writes n blocks of seeded bytes (block i's first word the
// journal magic when i is in magic) and returns its path and contents.
func (im *image) dataFile(t *testing.T, name string, n int, seed int64, magic ...int) (string, [][]byte) {
	var all []byte
	var blocks [][]byte
	for i := range n {
		b := make([]byte, im.bs)
		for k := range b {
			b[k] = byte(seed*131 + int64(i)*17 + int64(k)*7 + int64(k>>8))
		}
		for _, m := range magic {
			if m == i {
				be.PutUint32(b, Magic)
			}
		}
		blocks = append(blocks, b)
		all = append(all, b...)
	}
	p := filepath.Join(filepath.Dir(im.path), name)
	if err := os.WriteFile(p, all, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, blocks
}

// ourReplay loads the image's bytes, replays, and returns the result.
func (im *image) ourReplay(t *testing.T, b []byte) ([]byte, Report) {
	d := newMemDev(t, bytes.Clone(b), im.journal)
	_, r := replay(t, d, im.bs)
	if len(d.pending) != 0 {
		t.Fatal("Replay returned with writes not flushed")
	}
	return d.disk, r
}

// e2fsckReplay runs e2fsck -fy on a copy of b and returns the result.
func (im *image) e2fsckReplay(t *testing.T, b []byte) []byte {
	c := im.copyTo(t, "e2fsck.img", b)
	out, rc := run(t, "e2fsck", "-fy", c.path)
	if rc > 1 {
		t.Fatalf("e2fsck -fy: exit %d\n%s", rc, out)
	}
	return c.read(t)
}

// sameExceptSuper compares two images but for the ext4 superblock (bytes
// 1024-2047, which e2fsck updates: needs_recovery, its check times).
func sameExceptSuper(t *testing.T, ours, theirs []byte, bs int) {
	t.Helper()
	if len(ours) != len(theirs) {
		t.Fatalf("sizes %d, %d", len(ours), len(theirs))
	}
	o, th := bytes.Clone(ours[1024:2048]), bytes.Clone(theirs[1024:2048])
	clear(ours[1024:2048])
	clear(theirs[1024:2048])
	defer copy(ours[1024:], o)
	defer copy(theirs[1024:], th)
	for off := 0; off < len(ours); off += bs {
		if !bytes.Equal(ours[off:off+bs], theirs[off:off+bs]) {
			t.Fatalf("block %d differs from e2fsck's replay", off/bs)
		}
	}
}

// fsckClean clears needs_recovery (the file system's business, not the
// journal's) on a copy of b and checks e2fsck -fn finds nothing.
func (im *image) fsckClean(t *testing.T, b []byte) {
	c := im.copyTo(t, "clean.img", b)
	c.debugfsW(t, "feature ^needs_recovery")
	if out, rc := run(t, "e2fsck", "-fn", c.path); rc != 0 {
		t.Fatalf("e2fsck -fn after our replay: exit %d\n%s", rc, out)
	}
}

func joinBlocks(bs []uint64) string {
	var s []string
	for _, b := range bs {
		s = append(s, fmt.Sprint(b))
	}
	return strings.Join(s, ",")
}

var imageKinds = []struct {
	name    string
	mkfs    []string
	open    string // debugfs's journal_open
	bigJrnl bool
}{
	{"4k-csum3", []string{"-b", "4096"}, "journal_open -c -v 3", false},
	{"4k-csum2", []string{"-b", "4096"}, "journal_open -c -v 2", false},
	{"4k-plain", []string{"-b", "4096"}, "journal_open", false},
	{"4k-old-nocsum-32bit", []string{"-b", "4096", "-O", "^metadata_csum,^64bit"}, "journal_open", false},
	{"1k-csum3", []string{"-b", "1024"}, "journal_open -c -v 3", false},
}

// TestReplayMatchesE2fsck: transactions debugfs wrote (journaled blocks,
// one escaped, a revoke, a block journaled again after its revoke; then
// either nothing more, an uncommitted transaction, or the last commit
// block zeroed) and left unreplayed: our Replay leaves the image as
// e2fsck -fy leaves a copy, and e2fsck -fn finds it clean.
func TestReplayMatchesE2fsck(t *testing.T) {
	for _, k := range imageKinds {
		for _, end := range []string{"committed", "uncommitted-last", "zeroed-commit", "wrapped"} {
			t.Run(k.name+"/"+end, func(t *testing.T) {
				im := mkfs(t, "32M", k.mkfs...)
				f := im.free
				d1, _ := im.dataFile(t, "d1", 3, 1, 1)
				d2, _ := im.dataFile(t, "d2", 2, 2)
				d3, _ := im.dataFile(t, "d3", 2, 3, 0)
				d4, _ := im.dataFile(t, "d4", 2, 4)
				cmds := []string{
					k.open,
					"journal_write -b " + joinBlocks(f[0:3]) + " " + d1,
					"journal_write -r " + joinBlocks(f[0:1]) + " " + d2,
					"journal_write -b " + joinBlocks(f[3:5]) + " " + d2,
					"journal_write -b " + joinBlocks([]uint64{f[0], f[5]}) + " " + d3,
				}
				if end == "uncommitted-last" {
					cmds = append(cmds, "journal_write -c -b "+joinBlocks(f[6:8])+" "+d4)
				}
				cmds = append(cmds, "journal_close")
				im.debugfsW(t, cmds...)
				b := im.read(t)
				switch end {
				case "zeroed-commit":
					zeroLastCommit(t, im, b)
				case "wrapped":
					rotateLog(im, b, 3)
				}
				ours, rep := im.ourReplay(t, b)
				t.Logf("%+v", rep)
				want := uint32(4)
				if end == "zeroed-commit" {
					want = 3
				}
				torn := end == "uncommitted-last" || end == "zeroed-commit"
				if rep.Transactions != want || rep.Torn != torn {
					t.Errorf("report %+v, want %d transactions, torn %v", rep, want, torn)
				}
				theirs := im.e2fsckReplay(t, b)
				sameExceptSuper(t, ours, theirs, im.bs)
				// The revoked then re-journaled block is T4's; the
				// uncommitted blocks are still zero.
				if end != "zeroed-commit" {
					_, d3b := im.dataFile(t, "d3", 2, 3, 0)
					got := ours[f[0]*uint64(im.bs):][:im.bs]
					if !bytes.Equal(got, d3b[0]) {
						t.Errorf("block %d is not the last transaction's (escaped) contents", f[0])
					}
				}
				for _, blk := range f[6:8] {
					if !bytes.Equal(ours[blk*uint64(im.bs):][:im.bs], make([]byte, im.bs)) {
						t.Errorf("uncommitted block %d written", blk)
					}
				}
				im.fsckClean(t, ours)
			})
		}
	}
}

// rotateLog moves the log debugfs wrote (from s_first) round the
// circular log so that it starts k blocks before the journal's end and
// wraps: every log block i goes to s_first + (i - s_first + len - k) mod
// len, and s_start follows (the superblock's checksum redone). Nothing
// in a log block depends on where it is, so the log is as valid there.
func rotateLog(im *image, b []byte, k int) {
	bs := uint64(im.bs)
	sb := b[im.journal[0]*bs:][:sbSize]
	first, maxlen := be.Uint32(sb[sbFirst:]), be.Uint32(sb[sbMaxLen:])
	n := int(maxlen - first)
	blocks := make([][]byte, n)
	for i := range n {
		blocks[i] = bytes.Clone(b[im.journal[int(first)+i]*bs:][:bs])
	}
	shift := n - k
	for i := range n {
		copy(b[im.journal[int(first)+(i+shift)%n]*bs:], blocks[i])
	}
	be.PutUint32(sb[sbStart:], first+uint32(shift))
	if be.Uint32(sb[sbIncompat:])&(FeatureCsumV2|FeatureCsumV3) != 0 {
		be.PutUint32(sb[sbChecksum:], superCsum(sb))
	}
}

// zeroLastCommit zeroes the commit block of the last transaction in the
// log (found by logdump) in the image bytes b.
func zeroLastCommit(t *testing.T, im *image, b []byte) {
	out := mustRun(t, "debugfs", "-R", "logdump", im.path)
	re := regexp.MustCompile(`type 2 \(commit block\) at block (\d+)`)
	m := re.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		t.Fatalf("no commit block in\n%s", out)
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	off := im.journal[n] * uint64(im.bs)
	clear(b[off : off+uint64(im.bs)])
}

// TestReplayCorruptE2fsck: a damaged log (csum v3) is judged as Linux
// and e2fsck judge it. A logged block failing its tag checksum: the
// others are replayed, it is not, EBADMSG. A commit block failing its
// checksum: the transactions before it are replayed, EUCLEAN naming it.
// A descriptor failing its checksum in a transaction whose commit is not
// older: nothing is replayed, EBADMSG. Each time the file system's
// blocks are those e2fsck -fy leaves (it goes on to check the file
// system; the superblocks, the ext4 one and the journal's, it marks).
func TestReplayCorruptE2fsck(t *testing.T) {
	for _, c := range []struct {
		name    string
		at      *regexp.Regexp // the log block to damage: logdump's line, last match
		off     int
		errno   uint32
		trans   uint32
		written bool // blocks reach home
	}{
		{"bad-tag", regexp.MustCompile(`FS block \d+ logged at journal block (\d+)`), 100, uint32(EBADMSG), 4, true},
		{"bad-commit", regexp.MustCompile(`type 2 \(commit block\) at block (\d+)`), 200, uint32(EUCLEAN), 3, true},
		{"bad-descriptor", regexp.MustCompile(`type 1 \(descriptor block\) at block (\d+)`), 900, uint32(EBADMSG), 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			im := mkfs(t, "32M", "-b", "4096")
			f := im.free
			d1, _ := im.dataFile(t, "d1", 3, 1)
			d2, _ := im.dataFile(t, "d2", 2, 2)
			im.debugfsW(t, "journal_open -c -v 3",
				"journal_write -b "+joinBlocks(f[0:3])+" "+d1,
				"journal_write -b "+joinBlocks(f[3:5])+" "+d2,
				"journal_write -b "+joinBlocks(f[5:7])+" "+d2,
				"journal_write -b "+joinBlocks(f[7:10])+" "+d1,
				"journal_close")
			out := mustRun(t, "debugfs", "-R", "logdump -a", im.path)
			m := c.at.FindAllStringSubmatch(out, -1)
			n, _ := strconv.Atoi(m[len(m)-1][1])
			b := im.read(t)
			b[im.journal[n]*uint64(im.bs)+uint64(c.off)] ^= 0x40
			d := newMemDev(t, bytes.Clone(b), im.journal)
			j := load(t, d, im.bs)
			rep, e := j.Replay()
			t.Logf("%+v errno %d", rep, e)
			if uint32(e) != c.errno || rep.Transactions != c.trans {
				t.Fatalf("Replay: %+v errno %d, want errno %d, %d transactions", rep, e, c.errno, c.trans)
			}
			if got := !bytes.Equal(d.block(f[0], im.bs), b[f[0]*uint64(im.bs):][:im.bs]); got != c.written {
				t.Fatalf("blocks written: %v, want %v", got, c.written)
			}
			if e := j.Commit(1, 0); e != EBUSY {
				t.Fatalf("Commit after a failed replay: %d, want EBUSY", e)
			}
			theirs := im.e2fsckReplay(t, b)
			js := im.journal[0] * uint64(im.bs)
			copy(d.disk[js:js+uint64(im.bs)], theirs[js:])
			sameExceptSuper(t, d.disk, theirs, im.bs)
		})
	}
}
