package ext4_test

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"regexp"
	"strconv"
	"testing"

	"yolk/kernel/ext4"
)

// flip xors byte off of img with 0x5a.
func flip(t *testing.T, img string, off int64) {
	t.Helper()
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	f.ReadAt(b, off)
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// debugNum runs a debugfs request and returns the first number the
// pattern's group matches.
func debugNum(t *testing.T, img, req, pattern string) int64 {
	t.Helper()
	out := run(t, 0, "debugfs", "-R", req, img)
	m := regexp.MustCompile(pattern).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("debugfs %s: no %s in\n%s", req, pattern, out)
	}
	n, err := strconv.ParseInt(m[1], 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// inodeOffset is the byte offset of path's inode in img.
func inodeOffset(t *testing.T, img, path string, bs int64) int64 {
	blk := debugNum(t, img, "imap "+path, `located at block (\d+)`)
	off := debugNum(t, img, "imap "+path, `offset (0x[0-9a-f]+)`)
	return blk*bs + off
}

func TestCorrupt(t *testing.T) {
	haveTools(t)
	src := tree(t)
	base := makeImage(t, src, "1G", "-t", "ext4")
	bs := debugNum(t, base, "stats", `Block size: +(\d+)`)
	if bs != 4096 {
		t.Fatalf("block size %d", bs)
	}
	fresh := func(t *testing.T) string {
		p := t.TempDir() + "/img"
		run(t, 0, "cp", "--sparse=always", base, p)
		return p
	}
	lookup := func(t *testing.T, fs *ext4.FS[env], path ...string) (uint32, ext4.Errno) {
		ino := uint32(ext4.RootIno)
		for _, c := range path {
			var e ext4.Errno
			if ino, e = fs.Lookup(ino, []byte(c)); e != 0 {
				return 0, e
			}
		}
		return ino, 0
	}
	t.Run("inode", func(t *testing.T) {
		img := fresh(t)
		flip(t, img, inodeOffset(t, img, "/a/f1", bs)+0x10)
		fs, _, _, e := mount(t, img, true)
		if e != 0 {
			t.Fatal(e)
		}
		if _, e := lookup(t, fs, "a", "f1"); e != ext4.EBADMSG {
			t.Fatalf("lookup of a corrupt inode: %v, want EBADMSG", e)
		}
	})
	t.Run("extent-block", func(t *testing.T) {
		img := fresh(t)
		etb := debugNum(t, img, "stat /frag", `\(ETB0\):(\d+)`)
		flip(t, img, etb*bs+40)
		fs, _, _, e := mount(t, img, true)
		if e != 0 {
			t.Fatal(e)
		}
		ino, e := lookup(t, fs, "frag")
		if e != 0 {
			t.Fatal(e)
		}
		if _, e := fs.ReadAt(ino, make([]byte, 1<<20), 0); e != ext4.EBADMSG {
			t.Fatalf("read through a corrupt extent block: %v, want EBADMSG", e)
		}
	})
	t.Run("dir-block", func(t *testing.T) {
		img := fresh(t)
		blk := debugNum(t, img, "blocks /a/b", `(?m)^(\d+)`)
		flip(t, img, blk*bs+30)
		fs, _, _, e := mount(t, img, true)
		if e != 0 {
			t.Fatal(e)
		}
		if _, e := lookup(t, fs, "a", "b", "f1"); e != ext4.EBADMSG {
			t.Fatalf("lookup in a corrupt directory: %v, want EBADMSG", e)
		}
		a, _ := lookup(t, fs, "a", "b")
		if _, e := ext4.Readdir(fs, a, 0, &collector{room: 100}); e != ext4.EBADMSG {
			t.Fatalf("readdir of a corrupt directory: %v, want EBADMSG", e)
		}
	})
	t.Run("superblock", func(t *testing.T) {
		img := fresh(t)
		flip(t, img, 1024+0x78)
		if _, _, r, e := mount(t, img, true); e != ext4.EBADMSG {
			t.Fatalf("mount with a corrupt superblock: %v (%s), want EBADMSG", e, r.Msg)
		}
	})
	t.Run("group-descriptor", func(t *testing.T) {
		img := fresh(t)
		flip(t, img, bs+4)
		if _, _, r, e := mount(t, img, true); e != ext4.EBADMSG {
			t.Fatalf("mount with a corrupt descriptor: %v (%s), want EBADMSG", e, r.Msg)
		}
	})
	t.Run("extent-on-a-bitmap", func(t *testing.T) {
		img := fresh(t)
		bm := debugNum(t, img, "stats", `block bitmap at (\d+)`)
		run(t, 0, "debugfs", "-w", "-R", "sif /exec block[5] "+strconv.FormatInt(bm, 10), img)
		fs, _, _, e := mount(t, img, false)
		if e != 0 {
			t.Fatal(e)
		}
		if e := fs.Unlink(ext4.RootIno, []byte("exec")); e != ext4.EUCLEAN {
			t.Fatalf("unlink of a file mapping a bitmap block: %v, want EUCLEAN", e)
		}
		if n := fs.Pinned(); n != 0 {
			t.Fatalf("%d buffers left pinned", n)
		}
	})
	t.Run("htree-root", func(t *testing.T) {
		// With checksums a changed index node is EBADMSG; without, a bad
		// index is given up for a linear scan, as Linux does.
		for _, csum := range []bool{true, false} {
			img := fresh(t)
			if !csum {
				img = makeImage(t, src, "1G", "-t", "ext4", "-O", "^metadata_csum")
			}
			blk := debugNum(t, img, "blocks /many", `(?m)^(\d+)`)
			flip(t, img, blk*bs+24+5) // dx_root_info.info_length
			fs, _, _, e := mount(t, img, true)
			if e != 0 {
				t.Fatal(e)
			}
			many, _ := lookup(t, fs, "many")
			names, _ := os.ReadDir(src + "/many")
			for _, n := range names {
				ino, e := fs.Lookup(many, []byte(n.Name()))
				if csum && e != ext4.EBADMSG || !csum && (e != 0 || ino == 0) {
					t.Fatalf("csum %v: lookup of %q with a bad index: %d %v", csum, n.Name(), ino, e)
				}
			}
		}
	})
	t.Run("no-csum-extent-magic", func(t *testing.T) {
		img := makeImage(t, src, "1G", "-t", "ext4", "-O", "^metadata_csum")
		etb := debugNum(t, img, "stat /frag", `\(ETB0\):(\d+)`)
		flip(t, img, etb*bs)
		fs, _, _, e := mount(t, img, true)
		if e != 0 {
			t.Fatal(e)
		}
		ino, _ := lookup(t, fs, "frag")
		if _, e := fs.ReadAt(ino, make([]byte, 1<<20), 0); e != ext4.EUCLEAN {
			t.Fatalf("read through a bad extent block: %v, want EUCLEAN", e)
		}
	})
}

// setFeatures rewrites the superblock's feature words (or'ing the bits)
// and its checksum.
func setFeatures(t *testing.T, img string, incompat, roCompat uint32) {
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sb := make([]byte, 1024)
	f.ReadAt(sb, 1024)
	binary.LittleEndian.PutUint32(sb[0x60:], binary.LittleEndian.Uint32(sb[0x60:])|incompat)
	binary.LittleEndian.PutUint32(sb[0x64:], binary.LittleEndian.Uint32(sb[0x64:])|roCompat)
	binary.LittleEndian.PutUint32(sb[0x3FC:], ^crc32.Checksum(sb[:0x3FC], crc32.MakeTable(crc32.Castagnoli)))
	f.WriteAt(sb, 1024)
}

func TestFeatureRule(t *testing.T) {
	haveTools(t)
	dir := t.TempDir()
	os.WriteFile(dir+"/x", []byte("x"), 0o644)
	base := makeImage(t, dir, "16M", "-t", "ext4")
	copyImg := func() string {
		b, _ := os.ReadFile(base)
		p := t.TempDir() + "/img"
		os.WriteFile(p, b, 0o644)
		return p
	}
	img := copyImg()
	setFeatures(t, img, 0x80000000|ext4.IncompatCasefold, 0)
	_, _, r, e := mount(t, img, true)
	if e != ext4.EOPNOTSUPP || r.Incompat != 0x80000000|ext4.IncompatCasefold {
		t.Fatalf("unknown incompat: %v %+v", e, r)
	}
	if ext4.IncompatName(ext4.IncompatCasefold) != "casefold" || ext4.IncompatName(0x80000000) != "" {
		t.Fatal("names")
	}
	img = copyImg()
	setFeatures(t, img, 0, 0x40000000)
	fs, _, r, e := mount(t, img, false)
	if e != 0 || !fs.ReadOnly() || r.RoCompat != 0x40000000 {
		t.Fatalf("unknown ro_compat: %v %+v ro=%v", e, r, fs.ReadOnly())
	}
	img = copyImg()
	setFeatures(t, img, ext4.IncompatRecover, 0)
	fs, _, r, e = mount(t, img, false)
	if e != 0 || fs.ReadOnly() || r.Journal.Transactions != 0 {
		t.Fatalf("needs_recovery, an empty log: %v %+v ro=%v", e, r, fs.ReadOnly())
	}
	if e := fs.Unmount(); e != 0 {
		t.Fatal(e)
	}
	fsck(t, img) // needs_recovery cleared
	fs, _, r, e = mount(t, img, true)
	if e != 0 || !fs.ReadOnly() {
		t.Fatalf("needs_recovery read-only: %v %+v", e, r)
	}
	img = copyImg()
	setFeatures(t, img, ext4.IncompatRecover, 0)
	run(t, 0, "debugfs", "-w", "-R", "ssv journal_dev 0x801", img)
	if _, _, r, e = mount(t, img, false); e != ext4.EOPNOTSUPP || r.Msg == "" {
		t.Fatalf("external journal: %v %+v", e, r)
	}
	fs, _, r, e = mount(t, copyImg(), false)
	if e != 0 || fs.ReadOnly() || r.Msg != "" {
		t.Fatalf("clean: %v %+v ro=%v", e, r, fs.ReadOnly())
	}
}

// walk reads everything reachable from dir, bounded, ignoring errors: it
// must not panic nor read past the disk.
func walk(fs *ext4.FS[env], dir uint32, depth int, budget *int) {
	c := &collector{room: 300}
	ext4.Readdir(fs, dir, 0, c)
	buf := make([]byte, 8192)
	for i, n := range c.names {
		if *budget <= 0 {
			return
		}
		*budget--
		if n == "." || n == ".." {
			continue
		}
		ino, e := fs.Lookup(dir, []byte(n))
		if e != 0 {
			ino = uint32(c.inos[i])
		}
		st, e := fs.Stat(ino)
		if e != 0 {
			continue
		}
		fs.ReadAt(ino, buf, 0)
		fs.ReadAt(ino, buf, st.Size/2)
		fs.Readlink(ino, buf)
		if st.Mode&0xF000 == 0x4000 && depth < 6 {
			walk(fs, ino, depth+1, budget)
		}
	}
}

// scribble changes the file system, ignoring errors: on corrupt
// metadata the write side must not panic either.
func scribble(fs *ext4.FS[env]) {
	root := uint32(ext4.RootIno)
	d, _ := fs.Lookup(root, []byte("d"))
	e, _ := fs.Lookup(d, []byte("e"))
	file, _ := fs.Lookup(d, []byte("file"))
	frag, _ := fs.Lookup(root, []byte("frag"))
	n, _ := fs.Mknod(root, []byte("new"), ext4.SIFREG|0o644, 0, 0, 0)
	fs.WriteAt(n, make([]byte, 5000), 100)
	fs.WriteAt(file, []byte("more"), 3)
	fs.Mkdir(e, []byte("sub"), 0o755, 0, 0)
	fs.Mknod(e, []byte("n1000"), ext4.SIFREG|0o644, 0, 0, 0)
	fs.Unlink(e, []byte("n7"))
	fs.Rename(d, []byte("file"), e, []byte("n8"))
	fs.Rename(root, []byte("d"), root, []byte("d2"))
	fs.Truncate(frag, 3000)
	fs.Fallocate(frag, 0, 50000, false)
	fs.Symlink(root, []byte("ln2"), make([]byte, 100), 0, 0)
	fs.Link(n, e, []byte("n-link"))
	fs.Unlink(root, []byte("frag"))
	fs.Rmdir(d, []byte("e"))
	fs.Unmount()
}

var fuzzImage []byte

// FuzzMetadata writes bytes over the metadata of a small image without
// checksums (so they reach the parsers), mounts it and reads everything.
func FuzzMetadata(f *testing.F) {
	haveTools(f)
	dir := f.TempDir()
	os.MkdirAll(dir+"/d/e", 0o755)
	os.WriteFile(dir+"/d/file", []byte("hello"), 0o644)
	os.Symlink("d/file", dir+"/ln")
	for i := 0; i < 300; i++ {
		os.WriteFile(dir+"/d/e/n"+strconv.Itoa(i), nil, 0o644)
	}
	fr, _ := os.Create(dir + "/frag")
	for i := 0; i < 20; i++ {
		fr.WriteAt([]byte{1}, int64(i)*2048)
	}
	fr.Close()
	img := makeImage(f, dir, "4M", "-t", "ext4", "-b", "1024", "-O", "^metadata_csum,^has_journal", "-N", "400")
	var err error
	if fuzzImage, err = os.ReadFile(img); err != nil {
		f.Fatal(err)
	}
	for i := uint32(0); i < 24; i++ {
		f.Add(1024+i*37, []byte{byte(i * 11), 0xff, byte(i)})
		f.Add(2048+i*64, []byte{0xff, 0xff, 0xff, 0xff})
		f.Add(i*1024+uint32(i*17), []byte{0})
	}
	f.Fuzz(func(t *testing.T, off uint32, val []byte) {
		mem := append([]byte(nil), fuzzImage...)
		copy(mem[int(off)%(len(mem)/8):], val)
		d := &disk{mem: mem, size: int64(len(mem))}
		fs, _, _, e := mountDisk(t, d, false)
		if e == 0 {
			budget := 2000
			walk(fs, ext4.RootIno, 0, &budget)
			fs.Statfs()
			scribble(fs)
		}
		if d.oob != 0 {
			t.Fatalf("%d accesses past the image's end", d.oob)
		}
	})
}
