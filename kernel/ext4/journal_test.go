package ext4_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"yolk/kernel/ext4"
)

// state is the root directory's files: name → contents.
type state map[string]string

func (s state) clone() state {
	c := state{}
	for k, v := range s {
		c[k] = v
	}
	return c
}

// crashOps runs a fixed sequence of creates, appends, atomic replaces
// (write a temporary file, rename it over) and unlinks on fs, each one
// call, and a Sync after about a third of them; states[i] is the tree
// after call i returned (states[0] before any), marks[i] the disk's
// write count then; syncs holds, for each Sync, the state it made
// durable and the write count when it returned. It stops at the first
// error (after a cut, reads may see a disk without the dropped writes).
func crashOps(fs *ext4.FS[env], d *disk, seed int64) (states []state, marks []int, syncs [][2]int) {
	r := rand.New(rand.NewSource(seed))
	s := state{"f0": "hello"}
	states, marks = []state{s.clone()}, []int{d.writes}
	done := func() {
		states = append(states, s.clone())
		marks = append(marks, d.writes)
		if r.Intn(3) == 0 && fs.Sync() == 0 {
			syncs = append(syncs, [2]int{len(states) - 1, d.writes})
		}
	}
	ino := func(name string) uint32 {
		i, e := fs.Lookup(ext4.RootIno, []byte(name))
		if e != 0 {
			return 0
		}
		return i
	}
	data := func(n int) []byte {
		b := make([]byte, n)
		r.Read(b)
		return b
	}
	for op := 0; op < 60; op++ {
		var e ext4.Errno
		switch k := r.Intn(5); {
		case k == 0: // create and fill
			name := fmt.Sprintf("f%d", op)
			if _, e = fs.Mknod(ext4.RootIno, []byte(name), ext4.SIFREG|0o644, 0, 0, 0); e != 0 {
				return
			}
			s[name] = ""
			done()
			b := data(r.Intn(9000))
			if _, e = fs.WriteAt(ino(name), b, 0); e != 0 {
				return
			}
			s[name] = string(b)
		case k == 1 || k == 2: // append to the log
			if _, ok := s["log"]; !ok {
				if _, e = fs.Mknod(ext4.RootIno, []byte("log"), ext4.SIFREG|0o644, 0, 0, 0); e != 0 {
					return
				}
				s["log"] = ""
				done()
			}
			b := data(100 + r.Intn(3000))
			if _, e = fs.WriteAt(ino("log"), b, uint64(len(s["log"]))); e != 0 {
				return
			}
			s["log"] += string(b)
		case k == 3: // atomic replace of "cur"
			if _, e = fs.Mknod(ext4.RootIno, []byte("tmp"), ext4.SIFREG|0o644, 0, 0, 0); e != 0 {
				return
			}
			s["tmp"] = ""
			done()
			b := data(1 + r.Intn(6000))
			if _, e = fs.WriteAt(ino("tmp"), b, 0); e != 0 {
				return
			}
			s["tmp"] = string(b)
			done()
			if e = fs.Rename(ext4.RootIno, []byte("tmp"), ext4.RootIno, []byte("cur")); e != 0 {
				return
			}
			s["cur"] = s["tmp"]
			delete(s, "tmp")
		default: // unlink a file
			var names []string
			for n := range s {
				if n != "log" && n != "cur" {
					names = append(names, n)
				}
			}
			if len(names) == 0 {
				continue
			}
			sort.Strings(names)
			n := names[r.Intn(len(names))]
			if e = fs.Unlink(ext4.RootIno, []byte(n)); e != 0 {
				return
			}
			delete(s, n)
		}
		done()
	}
	return
}

// readState is the root directory of fs as a state (lost+found left out).
func readState(t *testing.T, fs *ext4.FS[env]) state {
	t.Helper()
	s := state{}
	c := list(t, fs, ext4.RootIno, 50)
	for i, n := range c.names {
		if n == "." || n == ".." || n == "lost+found" {
			continue
		}
		st, e := fs.Stat(uint32(c.inos[i]))
		if e != 0 {
			t.Fatalf("stat %s: %v", n, e)
		}
		b := make([]byte, st.Size)
		if k, e := fs.ReadAt(uint32(c.inos[i]), b, 0); e != 0 || k != len(b) {
			t.Fatalf("read %s: %d %v", n, k, e)
		}
		s[n] = string(b)
	}
	return s
}

// between says whether got is next, or next with a write in progress:
// a file's contents from prev's to next's, a prefix of next's.
func between(got, prev, next state) bool {
	if len(got) != len(next) {
		return false
	}
	for k, v := range next {
		w, ok := got[k]
		if !ok || w != v && !(len(w) >= len(prev[k]) && v[:min(len(w), len(v))] == w && w[:len(prev[k])] == prev[k]) {
			return false
		}
	}
	return true
}

func equal(a, b state) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestJournalCrash cuts the power after the K-th write of a sequence of
// calls, for many K: the mount replays the journal, the tree is the one
// after some call from the last one a Sync made durable before the cut
// to the last that returned before it, or that call's with the next
// call's write in progress (calls commit together, at a Sync or when
// the journal's rules say: each is all there or not at all), and
// e2fsck -fn finds the image clean. Where the replay found
// committed transactions, e2fsck's replay (-fy -E journal_only) on a
// copy of the crashed image leaves the same bytes as ours after the same
// e2fsck (but for the superblock).
func TestJournalCrash(t *testing.T) {
	haveTools(t)
	// Cuts per image: nearly every one leaves committed transactions
	// (checkpoints are lazy), each compared with e2fsck's replay.
	const cuts = 24
	for _, cf := range []struct {
		name string
		opts []string
	}{
		{"1k", []string{"-t", "ext4"}},
		{"4k-nocsum", []string{"-t", "ext4", "-b", "4096", "-O", "^metadata_csum,^64bit"}},
		{"4k", []string{"-t", "ext4", "-b", "4096"}},
	} {
		t.Run(cf.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "f0"), []byte("hello"), 0o644)
			path := makeImage(t, dir, "24M", cf.opts...)
			base, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// The journal superblock: its s_sequence after a replay is
			// any later one (e2fsck bumps it again over our mounted
			// image's needs_recovery), so the comparison leaves it out.
			out := strings.Fields(run(t, 0, "debugfs", "-R", "bmap <8> 0", path))
			jsb, err := strconv.Atoi(out[len(out)-1])
			if err != nil {
				t.Fatal(err)
			}
			bs := 1024
			if strings.Contains(strings.Join(cf.opts, " "), "4096") {
				bs = 4096
			}
			mountMem := func(img []byte, cut int) (*ext4.FS[env], *disk, ext4.Refusal) {
				d := &disk{mem: img, size: int64(len(img))}
				fs, _, r, e := mountDisk(t, d, false)
				if e != 0 || fs.ReadOnly() {
					t.Fatalf("mount: %v %+v", e, r)
				}
				d.cut = cut
				if cut > 0 {
					d.cut += d.writes
				}
				return fs, d, r
			}
			// The whole sequence once: its states and its writes.
			img := bytes.Clone(base)
			fs, d, _ := mountMem(img, 0)
			start := d.writes
			states, marks, syncs := crashOps(fs, d, 30)
			if len(states) < 60 || len(syncs) < 10 {
				t.Fatalf("the sequence stopped after %d calls", len(states))
			}
			if e := fs.Unmount(); e != 0 {
				t.Fatal(e)
			}
			fsckMem(t, img, "-fn")
			total := d.writes - start
			r := rand.New(rand.NewSource(36))
			compared := 0
			for run := 0; run < cuts; run++ {
				k := 1 + r.Intn(total)
				img := bytes.Clone(base)
				fs, d, _ := mountMem(img, k)
				crashOps(fs, d, 30)
				// The last call whose return came before the cut, and
				// the last one a Sync made durable before it.
				last, durable := 0, 0
				for i, m := range marks {
					if m-start <= k {
						last = i
					}
				}
				for _, s := range syncs {
					if s[1]-start <= k {
						durable = s[0]
					}
				}
				crashed := bytes.Clone(img)
				fs2, _, rep := mountMem(img, 0)
				got := readState(t, fs2)
				found := false
				for j := durable; j <= last && !found; j++ {
					found = equal(got, states[j]) || j+1 < len(states) && between(got, states[j], states[j+1])
				}
				if !found {
					t.Fatalf("cut at write %d (after call %d, call %d synced): the tree is no call's from %d on:\n%s\n%s", k, last, durable, durable, diff(got, states[durable]), diff(got, states[last]))
				}
				if rep.Journal.Transactions != 0 {
					// e2fsck's replay of the same log.
					fixed := bytes.Clone(crashed)
					fsckMem(t, fixed, "-fy", "-E", "journal_only")
					// The same e2fsck over ours: what it changes beyond
					// the replay (bg_itable_unused) changes both alike.
					replayed := bytes.Clone(img)
					fsckMem(t, replayed, "-fy", "-E", "journal_only")
					for _, b := range [][]byte{fixed, replayed} {
						clear(b[1024:2048]) // the superblock: needs_recovery, times
						clear(b[jsb*bs : jsb*bs+1024])
					}
					if !bytes.Equal(fixed, replayed) {
						for i := 0; i < len(fixed); i += 512 {
							if !bytes.Equal(fixed[i:i+512], replayed[i:i+512]) {
								for j := i; j < i+512; j++ {
									if fixed[j] != replayed[j] {
										t.Logf("byte %d: e2fsck %#x, ours %#x", j, fixed[j], replayed[j])
									}
								}
							}
						}
						t.Fatalf("cut at write %d: e2fsck -fy's replay differs from ours (%d transactions)", k, rep.Journal.Transactions)
					}
					compared++
				}
				if e := fs2.Unmount(); e != 0 {
					t.Fatal(e)
				}
				fsckMem(t, img, "-fn")
			}
			t.Logf("%d writes, %d cuts, %d replays compared with e2fsck's", total, cuts, compared)
			if compared == 0 {
				t.Fatal("no cut left a committed transaction to replay")
			}
		})
	}
}

// fsckMem runs e2fsck with flag (-fn: must be clean; -fy: may fix) and
// args on img, written to a file; img takes what e2fsck left.
func fsckMem(t *testing.T, img []byte, flag string, args ...string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(p, img, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("e2fsck", append(append([]string{flag}, args...), p)...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); err != nil && (flag == "-fn" || !ok || ee.ExitCode() > 1) {
		t.Fatalf("e2fsck %s: %v\n%s", flag, err, out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	copy(img, b)
}

// diff says how got differs from want.
func diff(got, want state) string {
	var b bytes.Buffer
	for k, v := range want {
		if w, ok := got[k]; !ok {
			fmt.Fprintf(&b, "%s missing; ", k)
		} else if w != v {
			n := 0
			for n < len(v) && n < len(w) && v[n] == w[n] {
				n++
			}
			fmt.Fprintf(&b, "%s: %d bytes, want %d, first difference at %d; ", k, len(w), len(v), n)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "%s extra; ", k)
		}
	}
	return b.String()
}

// TestJournalRecoverReadOnly: a read-only mount of a file system whose
// journal holds committed transactions replays them, as Linux's does
// (reading around them would show a tree that never was), and clears
// needs_recovery; on a disk that cannot be written the mount is refused
// with EROFS and nothing is written.
func TestJournalRecoverReadOnly(t *testing.T) {
	haveTools(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f0"), []byte("hello"), 0o644)
	base, err := os.ReadFile(makeImage(t, dir, "24M", "-t", "ext4"))
	if err != nil {
		t.Fatal(err)
	}
	// A cut that leaves committed transactions in the log.
	var crashed []byte
	r := rand.New(rand.NewSource(37))
	for try := 0; try < 200 && crashed == nil; try++ {
		img := bytes.Clone(base)
		d := &disk{mem: img, size: int64(len(img))}
		fs, _, _, e := mountDisk(t, d, false)
		if e != 0 {
			t.Fatal(e)
		}
		d.cut = d.writes + 1 + r.Intn(400)
		crashOps(fs, d, 30)
		probe := &disk{mem: bytes.Clone(img), size: int64(len(img))}
		if _, _, rep, e := mountDisk(t, probe, false); e == 0 && rep.Journal.Transactions != 0 {
			crashed = img
		}
	}
	if crashed == nil {
		t.Fatal("no cut left committed transactions in the log")
	}
	// The reference: a read-write mount's replay.
	rw := &disk{mem: bytes.Clone(crashed), size: int64(len(crashed))}
	fsrw, _, rep, e := mountDisk(t, rw, false)
	if e != 0 || rep.Journal.Transactions == 0 {
		t.Fatalf("read-write mount: %v, %+v", e, rep)
	}
	want := readState(t, fsrw)

	ro := &disk{mem: bytes.Clone(crashed), size: int64(len(crashed))}
	fsro, _, rep, e := mountDisk(t, ro, true)
	if e != 0 || !fsro.ReadOnly() || rep.Journal.Transactions == 0 {
		t.Fatalf("read-only mount: %v, read-only %v, %+v", e, fsro.ReadOnly(), rep)
	}
	if got := readState(t, fsro); !equal(got, want) {
		t.Fatalf("read-only mount's tree differs from the read-write one's:\n%s", diff(got, want))
	}
	if out, err := exec.Command("dumpe2fs", "-h", writeTemp(t, ro.mem)).CombinedOutput(); err != nil || strings.Contains(string(out), "needs_recovery") {
		t.Fatalf("after the read-only mount's replay: %v\n%s", err, out)
	}
	fsckMem(t, bytes.Clone(ro.mem), "-fn")

	dev := &disk{mem: bytes.Clone(crashed), size: int64(len(crashed))}
	if _, _, r, e := mountOpts(t, dev, ext4.MountRODevice); e != ext4.EROFS || !strings.Contains(r.Msg, "needs recovery") {
		t.Fatalf("a read-only device needing recovery: %v %q, want EROFS", e, r.Msg)
	}
	if dev.writes != 0 || !bytes.Equal(dev.mem, crashed) {
		t.Fatalf("the refused mount wrote %d times", dev.writes)
	}
}

// writeTemp writes b to a new file and returns its path.
func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFreedJournaledBlock: a directory's block, committed and not yet
// checkpointed (the log holds it), is freed by rmdir and used again as a
// file's data; after a cut (the disk as it is, synced) the replay must
// not write the old directory block over the file. On block-mapped
// directories (no extents) a directory's own blocks were freed without
// a revoke; with extents they were revoked already.
func TestFreedJournaledBlock(t *testing.T) {
	haveTools(t)
	for _, cf := range []struct {
		name string
		opts []string
	}{
		{"blockmap", []string{"-t", "ext4", "-O", "^extent,^flex_bg,^64bit", "-b", "4096"}},
		{"extents", []string{"-t", "ext4", "-b", "4096"}},
	} {
		t.Run(cf.name, func(t *testing.T) {
			img, err := os.ReadFile(makeImage(t, t.TempDir(), "16M", cf.opts...))
			if err != nil {
				t.Fatal(err)
			}
			fs, d, _ := mountRW(t, img)
			dir, e := fs.Mkdir(ext4.RootIno, []byte("d"), 0o755, 0, 0)
			if e != 0 {
				t.Fatal(e)
			}
			for i := 0; i < 5; i++ {
				if _, e := fs.Mknod(dir, []byte(fmt.Sprintf("entry-%d", i)), ext4.SIFREG|0o644, 0, 0, 0); e != 0 {
					t.Fatal(e)
				}
			}
			if e := fs.Sync(); e != 0 { // the directory's block committed: in the log, not home
				t.Fatal(e)
			}
			for i := 0; i < 5; i++ {
				if e := fs.Unlink(dir, []byte(fmt.Sprintf("entry-%d", i))); e != 0 {
					t.Fatal(e)
				}
			}
			if e := fs.Rmdir(ext4.RootIno, []byte("d")); e != 0 {
				t.Fatal(e)
			}
			ino, e := fs.Mknod(ext4.RootIno, []byte("f"), ext4.SIFREG|0o644, 0, 0, 0)
			if e != 0 {
				t.Fatal(e)
			}
			data := bytes.Repeat([]byte{0xAB}, 64<<10)
			if _, e := fs.WriteAt(ino, data, 0); e != 0 {
				t.Fatal(e)
			}
			if e := fs.Sync(); e != 0 {
				t.Fatal(e)
			}
			fs2, _, r := mountRW(t, bytes.Clone(d.mem)) // the cut: the disk as it is
			if r.Journal.Transactions == 0 {
				t.Fatal("the cut left nothing to replay: the test tests nothing")
			}
			got := make([]byte, len(data))
			f, e := fs2.Lookup(ext4.RootIno, []byte("f"))
			if e != 0 {
				t.Fatal(e)
			}
			if n, e := fs2.ReadAt(f, got, 0); e != 0 || n != len(data) {
				t.Fatalf("read: %d %v", n, e)
			}
			if i := bytes.IndexFunc(got, func(r rune) bool { return r != 0xAB }); !bytes.Equal(got, data) {
				t.Fatalf("after the replay the file's data differs at byte %d (block %d): the freed directory block was replayed over it", i, i/4096)
			}
		})
	}
}
