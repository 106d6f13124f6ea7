package ext4_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"yolk/kernel/ext4"
)

// makeTree writes the test tree under dir from a fixed seed: nested
// directories, a directory of 2,000 names (some with bytes >= 0x80, so
// that signed and unsigned hashes differ), empty, sparse and large files,
// short and long symbolic links, hard links, special files, modes and
// owners.
func makeTree(t testing.TB, dir string) {
	r := rand.New(rand.NewSource(30))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	file := func(p string, n int, mode os.FileMode) {
		b := make([]byte, n)
		r.Read(b)
		must(os.WriteFile(filepath.Join(dir, p), b, 0o644))
		must(os.Chmod(filepath.Join(dir, p), mode))
	}
	must(os.MkdirAll(filepath.Join(dir, "a/b/c/d"), 0o755))
	for i, d := range []string{".", "a", "a/b", "a/b/c", "a/b/c/d"} {
		for k := 0; k < 4; k++ {
			file(fmt.Sprintf("%s/f%d", d, k), r.Intn(10000)+i, 0o644)
		}
		file(d+"/tiny", 17+i, 0o600)
	}
	file("empty", 0, 0o644)
	file("a/empty2", 0, 0o444)
	file("exec", 100, 0o755)
	file("setuid", 30, 0o4755)
	file("big1", 1<<20+1<<19, 0o644)
	file("a/big2", 3<<20+17, 0o640)
	// Sparse: data at 0 and past 70 MiB (with 1 KiB blocks and block
	// maps, a triple-indirect block), and a file that is only a hole.
	sp, err := os.Create(filepath.Join(dir, "sparse"))
	must(err)
	b := make([]byte, 5000)
	r.Read(b)
	_, err = sp.WriteAt(b, 0)
	must(err)
	_, err = sp.WriteAt(b[:3000], 70<<20+4321)
	must(err)
	must(sp.Truncate(72<<20 + 11))
	sp.Close()
	must(os.WriteFile(filepath.Join(dir, "hole"), nil, 0o644))
	must(os.Truncate(filepath.Join(dir, "hole"), 3<<20))
	// Links.
	must(os.Symlink("a/b", filepath.Join(dir, "short-link")))
	long := strings.Repeat("long/path/segment/", 11) + "end"
	must(os.Symlink(long, filepath.Join(dir, "a/long-link")))
	must(os.Symlink("nowhere", filepath.Join(dir, "dangling")))
	must(os.Link(filepath.Join(dir, "a/f1"), filepath.Join(dir, "hard1")))
	must(os.Link(filepath.Join(dir, "a/f1"), filepath.Join(dir, "a/b/hard2")))
	// Special files and owners (root can make them).
	if os.Getuid() == 0 {
		must(unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
		must(unix.Mknod(filepath.Join(dir, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
		must(os.Lchown(filepath.Join(dir, "a/f2"), 1000, 1001))
		must(os.Lchown(filepath.Join(dir, "a/b/f3"), 70000, 70001))
	}
	// Fragmented: a byte every 8 KiB, so the extent tree has a level of
	// index below the inode.
	fr, err := os.Create(filepath.Join(dir, "frag"))
	must(err)
	for i := 0; i < 40; i++ {
		_, err = fr.WriteAt([]byte{byte(i + 1)}, int64(i)*8192+100)
		must(err)
	}
	fr.Close()
	must(os.Mkdir(filepath.Join(dir, "sticky"), 0o755))
	must(os.Chmod(filepath.Join(dir, "sticky"), 0o1777|os.ModeSticky))
	// The big directory.
	must(os.Mkdir(filepath.Join(dir, "many"), 0o755))
	for i := 0; i < 2000; i++ {
		name := fmt.Sprintf("entry-%04d-%s", i, strings.Repeat("x", r.Intn(40)))
		if i%7 == 0 {
			name += "-\xc3\xa9\xff"
		}
		file("many/"+name, r.Intn(3), 0o644)
	}
}

func haveTools(t testing.TB) {
	for _, tool := range []string{"mkfs.ext4", "e2fsck", "debugfs"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (e2fsprogs): %v", tool, err)
		}
	}
}

var treeDir string

// noTimes: compareTree leaves mtimes out (the write test's clock is not
// the host's).
var noTimes bool

// tree is the source tree, made once.
func tree(t testing.TB) string {
	if treeDir == "" {
		d, err := os.MkdirTemp("", "ext4tree")
		if err != nil {
			t.Fatal(err)
		}
		makeTree(t, d)
		treeDir = d
	}
	return treeDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if treeDir != "" {
		os.RemoveAll(treeDir)
	}
	os.Exit(code)
}

// makeImage makes an image of the tree with mkfs.ext4's options, indexes
// its directories (e2fsck -fyD) and checks it is clean.
func makeImage(t testing.TB, src string, size string, opts ...string) string {
	haveTools(t)
	img := filepath.Join(t.TempDir(), "img")
	args := append([]string{"-q", "-F", "-d", src}, opts...)
	args = append(args, img, size)
	run(t, 0, "mkfs.ext4", args...)
	run(t, 1, "e2fsck", "-fyD", img)
	fsck(t, img)
	return img
}

// run runs a tool, failing on an exit code above okCode.
func run(t testing.TB, okCode int, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > okCode {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	return string(out)
}

// fsck fails the test unless e2fsck -fn finds img clean.
func fsck(t testing.TB, img string) {
	t.Helper()
	if _, err := exec.LookPath("e2fsck"); err != nil {
		t.Skipf("e2fsck not installed: %v", err)
	}
	out, err := exec.Command("e2fsck", "-fn", img).CombinedOutput()
	if err != nil {
		t.Fatalf("e2fsck -fn: %v\n%s", err, out)
	}
}

// collector is a Filler keeping up to room entries a call.
type collector struct {
	room  int
	names []string
	inos  []uint64
	types []uint8
	next  []uint64
}

func (c *collector) Fill(ino, next uint64, typ uint8, name []byte) bool {
	if c.room == 0 {
		return false
	}
	c.room--
	c.names = append(c.names, string(name))
	c.inos = append(c.inos, ino)
	c.types = append(c.types, typ)
	c.next = append(c.next, next)
	return true
}

// list reads directory ino whole, room entries a call.
func list(t testing.TB, fs *ext4.FS[env], ino uint32, room int) *collector {
	t.Helper()
	c := &collector{}
	cookie := uint64(0)
	for n := 0; ; n++ {
		if n > 100000 {
			t.Fatal("readdir does not end")
		}
		c.room = room
		next, e := ext4.Readdir(fs, ino, cookie, c)
		if e != 0 {
			t.Fatalf("readdir %d at %d: %v", ino, cookie, e)
		}
		if next == ext4.ReaddirEnd {
			return c
		}
		if c.room == room {
			t.Fatalf("readdir %d: no progress at %d", ino, cookie)
		}
		cookie = next
	}
}

// compareTree checks that directory ino of fs holds what src holds.
func compareTree(t *testing.T, fs *ext4.FS[env], src string, ino uint32, root bool, links map[uint64]uint32, skip string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range ents {
		want = append(want, e.Name())
	}
	c := list(t, fs, ino, 7)
	var got []string
	byName := map[string]int{}
	for i, n := range c.names {
		if n == "." || n == ".." || root && n == "lost+found" {
			continue
		}
		got = append(got, n)
		byName[n] = i
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("%s: names differ: %d on disk, %d in the source", src, len(got), len(want))
	}
	for _, name := range want {
		p := filepath.Join(src, name)
		child, e := fs.Lookup(ino, []byte(name))
		if e != 0 {
			t.Fatalf("lookup %s: %v", p, e)
		}
		if uint64(child) != c.inos[byName[name]] {
			t.Fatalf("%s: lookup %d, readdir %d", p, child, c.inos[byName[name]])
		}
		st, e := fs.Stat(child)
		if e != 0 {
			t.Fatalf("stat %s: %v", p, e)
		}
		var sst syscall.Stat_t
		if err := syscall.Lstat(p, &sst); err != nil {
			t.Fatal(err)
		}
		if st.Mode != sst.Mode || st.Nlink != uint32(sst.Nlink) || st.Uid != sst.Uid || st.Gid != sst.Gid ||
			st.Mtime.Sec != sst.Mtim.Sec && !noTimes {
			t.Errorf("%s: mode %o nlink %d uid %d gid %d mtime %d, want %o %d %d %d %d", p, st.Mode, st.Nlink,
				st.Uid, st.Gid, st.Mtime.Sec, sst.Mode, sst.Nlink, sst.Uid, sst.Gid, sst.Mtim.Sec)
		}
		if typ := c.types[byName[name]]; typ != 0 && uint32(typ) != st.Mode>>12 {
			t.Errorf("%s: d_type %d, mode %o", p, typ, st.Mode)
		}
		if sst.Nlink > 1 && sst.Mode&unix.S_IFMT != unix.S_IFDIR {
			if prev, ok := links[sst.Ino]; ok && prev != child {
				t.Errorf("%s: hard link is inode %d, its other name's %d", p, child, prev)
			}
			links[sst.Ino] = child
		}
		switch sst.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			compareTree(t, fs, p, child, false, links, skip)
		case unix.S_IFREG:
			if root && name == skip {
				continue
			}
			if st.Size != uint64(sst.Size) {
				t.Fatalf("%s: size %d, want %d", p, st.Size, sst.Size)
			}
			compareFile(t, fs, p, child)
		case unix.S_IFLNK:
			target, _ := os.Readlink(p)
			b := make([]byte, 4096)
			n, e := fs.Readlink(child, b)
			if e != 0 || string(b[:n]) != target || st.Size != uint64(len(target)) {
				t.Errorf("%s: readlink %q %v, want %q", p, b[:n], e, target)
			}
		case unix.S_IFCHR, unix.S_IFBLK:
			if st.Rdev != sst.Rdev {
				t.Errorf("%s: rdev %x, want %x", p, st.Rdev, sst.Rdev)
			}
		}
	}
}

// compareFile reads file ino whole, in pieces of odd sizes at odd
// offsets, and compares with p.
func compareFile(t *testing.T, fs *ext4.FS[env], p string, ino uint32) {
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want)+100)
	n, e := fs.ReadAt(ino, got, 0)
	if e != 0 || n != len(want) || !bytes.Equal(got[:n], want) {
		t.Fatalf("%s: read %d %v, want %d bytes equal", p, n, e, len(want))
	}
	for _, piece := range []int{1, 511, 4097, 65536 + 3} {
		off := len(want) / 3
		buf := make([]byte, piece)
		n, e := fs.ReadAt(ino, buf, uint64(off))
		end := min(off+piece, len(want))
		if e != 0 || n != end-off || !bytes.Equal(buf[:n], want[off:end]) {
			t.Fatalf("%s: read %d at %d: %d %v", p, piece, off, n, e)
		}
	}
}

// configs are the feature sets the read test covers.
var configs = []struct {
	name string
	opts []string
	skip string // a file mke2fs copies wrongly in this configuration
}{
	{"default", []string{"-t", "ext4"}, ""},
	{"nocsum", []string{"-t", "ext4", "-O", "^metadata_csum,^64bit,^flex_bg"}, ""},
	{"noextents", []string{"-t", "ext4", "-O", "^extents,^metadata_csum,^64bit,^flex_bg,^huge_file,^dir_nlink,^extra_isize"}, ""},
	{"ext3", []string{"-t", "ext3"}, ""},
	{"ext2", []string{"-t", "ext2"}, ""},
	{"1k", []string{"-t", "ext4", "-b", "1024"}, ""},
	{"1k-ext3", []string{"-t", "ext3", "-b", "1024"}, ""},
	// mke2fs 1.47.0 -d with inline_data gives a sparse file with data
	// past its first block a wrong i_size (debugfs shows the same).
	{"inline", []string{"-t", "ext4", "-O", "inline_data"}, "sparse"},
	{"inode128", []string{"-t", "ext4", "-I", "128"}, ""},
}

func TestReadTree(t *testing.T) {
	haveTools(t)
	src := tree(t)
	for _, cf := range configs {
		t.Run(cf.name, func(t *testing.T) {
			img := makeImage(t, src, "1G", cf.opts...)
			fs, _, r, e := mount(t, img, true)
			if e != 0 {
				t.Fatalf("mount: %v (%s)", e, r.Msg)
			}
			compareTree(t, fs, src, ext4.RootIno, true, map[uint64]uint32{}, cf.skip)
			st, e := fs.Statfs()
			if e != 0 || st.Type != 0xEF53 || st.Namelen != 255 || st.Bfree == 0 || st.Bfree >= st.Blocks || st.Ffree >= st.Files {
				t.Errorf("statfs: %+v %v", st, e)
			}
		})
	}
}
