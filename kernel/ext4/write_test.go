package ext4_test

import (
	"bytes"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"yolk/kernel/ext4"
)

// twin applies each change to the image (through the FS) and to a copy
// of the tree on the host, which the image must equal afterwards.
type twin struct {
	maps  bool // block maps: no fallocate
	t     *testing.T
	fs    *ext4.FS[env]
	model string
	r     *rand.Rand
}

func (w *twin) ino(path string) uint32 {
	w.t.Helper()
	ino := uint32(ext4.RootIno)
	for _, c := range strings.Split(path, "/") {
		if c == "" {
			continue
		}
		var e ext4.Errno
		if ino, e = w.fs.Lookup(ino, []byte(c)); e != 0 {
			w.t.Fatalf("lookup %s: %v", path, e)
		}
	}
	return ino
}

func (w *twin) ok(what string, e ext4.Errno, err error) {
	w.t.Helper()
	if n := w.fs.Pinned(); n != 0 {
		w.t.Fatalf("%s: %d buffers left pinned or dirty", what, n)
	}
	if e != 0 || err != nil {
		w.t.Fatalf("%s: %v / host %v", what, e, err)
	}
}

func (w *twin) host(p string) string { return filepath.Join(w.model, p) }

func (w *twin) create(p string, size int) {
	_, e := w.fs.Mknod(w.ino(filepath.Dir(p)), []byte(filepath.Base(p)), ext4.SIFREG|0o644, 0, 0, 0)
	err := os.WriteFile(w.host(p), nil, 0o644)
	if err == nil {
		err = os.Chmod(w.host(p), 0o644)
	}
	w.ok("create "+p, e, err)
	if size > 0 {
		w.write(p, 0, size)
	}
}

func (w *twin) write(p string, off, n int) {
	b := make([]byte, n)
	w.r.Read(b)
	k, e := w.fs.WriteAt(w.ino(p), b, uint64(off))
	if k != n && e == 0 {
		e = ext4.EIO
	}
	fd, err := os.OpenFile(w.host(p), os.O_WRONLY, 0)
	if err == nil {
		_, err = fd.WriteAt(b, int64(off))
		fd.Close()
	}
	w.ok("write "+p, e, err)
}

func (w *twin) mknod(p string, mode uint32, dev uint64) {
	_, e := w.fs.Mknod(w.ino(filepath.Dir(p)), []byte(filepath.Base(p)), mode, dev, 0, 0)
	err := unix.Mknod(w.host(p), mode, int(dev))
	if err == nil {
		err = unix.Chmod(w.host(p), mode&0o7777)
	}
	w.ok("mknod "+p, e, err)
}

func (w *twin) mkdir(p string) {
	_, e := w.fs.Mkdir(w.ino(filepath.Dir(p)), []byte(filepath.Base(p)), 0o750, 0, 0)
	err := os.Mkdir(w.host(p), 0o750)
	if err == nil {
		err = os.Chmod(w.host(p), 0o750)
	}
	w.ok("mkdir "+p, e, err)
}

func (w *twin) symlink(target, p string) {
	_, e := w.fs.Symlink(w.ino(filepath.Dir(p)), []byte(filepath.Base(p)), []byte(target), 0, 0)
	w.ok("symlink "+p, e, os.Symlink(target, w.host(p)))
}

func (w *twin) link(old, p string) {
	e := w.fs.Link(w.ino(old), w.ino(filepath.Dir(p)), []byte(filepath.Base(p)))
	w.ok("link "+p, e, os.Link(w.host(old), w.host(p)))
}

func (w *twin) unlink(p string) {
	e := w.fs.Unlink(w.ino(filepath.Dir(p)), []byte(filepath.Base(p)))
	w.ok("unlink "+p, e, os.Remove(w.host(p)))
}

func (w *twin) rmdir(p string) {
	e := w.fs.Rmdir(w.ino(filepath.Dir(p)), []byte(filepath.Base(p)))
	w.ok("rmdir "+p, e, os.Remove(w.host(p)))
}

func (w *twin) rename(a, b string) {
	e := w.fs.Rename(w.ino(filepath.Dir(a)), []byte(filepath.Base(a)), w.ino(filepath.Dir(b)), []byte(filepath.Base(b)))
	w.ok("rename "+a+" "+b, e, unix.Rename(w.host(a), w.host(b)))
}

func (w *twin) truncate(p string, size int) {
	e := w.fs.Truncate(w.ino(p), uint64(size))
	w.ok("truncate "+p, e, os.Truncate(w.host(p), int64(size)))
}

func (w *twin) fallocate(p string, off, n int, keep bool) {
	if w.maps {
		if e := w.fs.Fallocate(w.ino(p), uint64(off), uint64(n), keep); e != ext4.EOPNOTSUPP {
			w.t.Fatalf("fallocate on a block map: %v", e)
		}
		return
	}
	e := w.fs.Fallocate(w.ino(p), uint64(off), uint64(n), keep)
	fd, err := os.OpenFile(w.host(p), os.O_WRONLY, 0)
	if err == nil {
		mode := uint32(0)
		if keep {
			mode = unix.FALLOC_FL_KEEP_SIZE
		}
		err = unix.Fallocate(int(fd.Fd()), mode, int64(off), int64(n))
		fd.Close()
	}
	w.ok("fallocate "+p, e, err)
}

func (w *twin) chmod(p string, mode uint32, uid, gid uint32) {
	e := w.fs.Setattr(w.ino(p), ext4.Attr{Mask: ext4.AttrMode | ext4.AttrUid | ext4.AttrGid, Mode: mode, Uid: uid, Gid: gid})
	err := os.Chmod(w.host(p), os.FileMode(mode&0o777))
	if err == nil {
		err = unix.Lchown(w.host(p), int(uid), int(gid))
	}
	if err == nil && mode&0o4000 != 0 {
		err = unix.Chmod(w.host(p), mode)
	}
	w.ok("setattr "+p, e, err)
}

// TestWrite changes an image of the test tree through the FS, the same
// on a copy of the tree, and checks that e2fsck finds the image clean
// and that it reads back equal to the copy.
func TestWrite(t *testing.T) {
	haveTools(t)
	if os.Getuid() != 0 {
		t.Skip("the tree's owners need root")
	}
	src := tree(t)
	for _, cf := range []struct {
		name string
		opts []string
	}{
		{"default", []string{"-t", "ext4"}},
		{"nocsum", []string{"-t", "ext4", "-O", "^metadata_csum,^64bit,^flex_bg"}},
		{"1k", []string{"-t", "ext4", "-b", "1024"}},
		{"ext3", []string{"-t", "ext3"}}, // block maps
		{"ext2-1k", []string{"-t", "ext2", "-b", "1024"}},
	} {
		t.Run(cf.name, func(t *testing.T) {
			img := makeImage(t, src, "1G", cf.opts...)
			model := filepath.Join(t.TempDir(), "model")
			if out, err := exec.Command("cp", "-a", src, model).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			fs, _, r, e := mount(t, img, false)
			if e != 0 || fs.ReadOnly() {
				t.Fatalf("mount: %v %s", e, r.Msg)
			}
			w := &twin{t: t, fs: fs, model: model, r: rand.New(rand.NewSource(36)), maps: strings.HasPrefix(cf.name, "ext")}
			changes(w)
			if e := fs.Unmount(); e != 0 {
				t.Fatal(e)
			}
			fsck(t, img)
			fs2, _, _, e := mount(t, img, true)
			if e != 0 {
				t.Fatal(e)
			}
			noTimes = true
			defer func() { noTimes = false }()
			// The indexed directory kept its index through its leaves'
			// splits: every name is found through it. (With 1 KiB blocks
			// its index node fills, and it is made linear instead; ext3's
			// and ext2's images are checked by e2fsck and the compare.)
			many := mustLookup(t, fs2, "wideparent", "many")
			ents, _ := os.ReadDir(filepath.Join(model, "wideparent", "many"))
			for _, en := range ents {
				if cf.name != "default" && cf.name != "nocsum" {
					break
				}
				ino, indexed, e := fs2.DxLookup(many, []byte(en.Name()))
				if !indexed || e != 0 || ino == 0 {
					t.Fatalf("many/%s through the index: %d %v %v", en.Name(), ino, indexed, e)
				}
			}
			// The indexed directory, moved under another: its index
			// root's ".." names the new parent.
			wp, _ := fs2.Lookup(ext4.RootIno, []byte("wideparent"))
			moved, _ := fs2.Lookup(wp, []byte("many"))
			if up, e := fs2.Lookup(moved, []byte("..")); up != wp || e != 0 || moved != many {
				t.Errorf("wideparent/many/.. = %d, %v; want %d (many %d, moved %d)", up, e, wp, many, moved)
			}
			// huge-sparse is 5 GiB long: its data only is compared.
			compareTree(t, fs2, model, ext4.RootIno, true, map[uint64]uint32{}, "huge-sparse")
			want := make([]byte, 200)
			hf, err := os.Open(filepath.Join(model, "huge-sparse"))
			if err != nil {
				t.Fatal(err)
			}
			hf.ReadAt(want, 5<<30-50)
			hf.Close()
			got := make([]byte, 200)
			ino, _ := fs2.Lookup(ext4.RootIno, []byte("huge-sparse"))
			st, _ := fs2.Stat(ino)
			if n, e := fs2.ReadAt(ino, got, 5<<30-50); n != 153 || e != 0 || !bytes.Equal(got, want) || st.Size != 5<<30+103 {
				t.Errorf("huge-sparse: read %d %v, size %d", n, e, st.Size)
			}
		})
	}
}

func mustLookup(t *testing.T, fs *ext4.FS[env], names ...string) uint32 {
	t.Helper()
	ino := uint32(ext4.RootIno)
	for _, n := range names {
		var e ext4.Errno
		if ino, e = fs.Lookup(ino, []byte(n)); e != 0 {
			t.Fatalf("lookup %v: %v", names, e)
		}
	}
	return ino
}

// changes is the sequence of changes TestWrite makes.
func changes(w *twin) {
	w.create("new-empty", 0)
	w.create("new-small", 100)
	w.create("a/new-5000", 5000)
	w.create("new-big", 3<<20+333)
	w.write("new-big", 1<<20+7, 70000) // over written data
	w.write("new-small", 9000, 10)     // past the end: a hole between
	w.write("f0", 3, 5)                // an existing file
	w.mkdir("d1")
	w.mkdir("d1/d2")
	w.create("d1/d2/x", 10)
	w.symlink("d1/d2/x", "d1/short")
	w.symlink(strings.Repeat("abcdefgh/", 30), "d1/long")
	w.link("new-small", "d1/small-link")
	w.link("a/b/f1", "a/b/c/f1-again")
	w.unlink("hard1")
	w.unlink("a/f0")
	w.rename("new-empty", "renamed-empty")  // same directory
	w.rename("a/new-5000", "d1/moved-5000") // across
	w.create("victim", 50)
	w.rename("new-small", "victim")   // over a file
	w.rename("a/b/c/d", "d1/d-moved") // a directory across (its ..)
	w.mkdir("d1/empty")
	w.rename("d1/d2", "d1/empty") // a directory over an empty one
	w.rmdir("sticky")
	w.truncate("big1", 100000+5) // shrink, mid-block
	w.truncate("new-big", 0)     // to nothing
	w.truncate("exec", 1<<20)    // grow: a hole
	w.create("falloc", 0)
	w.fallocate("falloc", 0, 1<<20, false)      // unwritten, sized
	w.write("falloc", 4096*3+5, 10000)          // into the middle: splits
	w.fallocate("falloc", 1<<20, 256<<10, true) // past the end, size kept
	w.create("huge-sparse", 0)
	w.write("huge-sparse", 5<<30+3, 100) // past 4 GiB: i_size_high, a far extent
	w.mknod("d1/fifo", unix.S_IFIFO|0o640, 0)
	w.mknod("d1/tty", unix.S_IFCHR|0o620, unix.Mkdev(4, 1))
	w.mknod("d1/bigdev", unix.S_IFBLK|0o600, unix.Mkdev(300, 70000))
	w.chmod("a/f2", 0o4711, 1234, 567890)
	w.chmod("d1", 0o700, 0, 0)
	// A file of many extents: a block written, one skipped, so the tree
	// grows a level and its leaves split; then cut in half and removed.
	w.create("frag2", 0)
	bs := int(w.fs.BlockSize())
	for i := 0; i < 1500; i++ {
		w.write("frag2", 2*i*bs+i%bs, 1)
	}
	w.truncate("frag2", 1500*bs)
	w.create("frag3", 0)
	for i := 0; i < 800; i++ {
		w.write("frag3", 2*i*bs, 3)
	}
	w.unlink("frag3")
	// The indexed directory: names added (its leaves fill, and it stops
	// being indexed) and removed.
	for i := 0; i < 1200; i++ {
		w.create("many/added-"+strconv.Itoa(i)+strings.Repeat("y", i%50), i%3)
	}
	ents, _ := os.ReadDir(w.host("many"))
	for i, e := range ents {
		if i%3 == 0 {
			w.unlink("many/" + e.Name())
		}
	}
	// A new directory with enough names to take several blocks.
	w.mkdir("wide")
	for i := 0; i < 300; i++ {
		w.create("wide/n"+strconv.Itoa(i)+strings.Repeat("z", 30), 0)
	}
	for i := 0; i < 300; i += 2 {
		w.unlink("wide/n" + strconv.Itoa(i) + strings.Repeat("z", 30))
	}
	// The indexed directory moved to another parent: its index root's
	// ".." changes.
	w.mkdir("wideparent")
	w.rename("many", "wideparent/many")
}
