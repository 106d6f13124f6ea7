package ext4_test

import (
	"os"
	"strconv"
	"testing"

	"yolk/kernel/ext4"
)

// TestListDuringSplits: a listing of an indexed directory, read five
// entries a call, while now and then names are added to the leaf being
// listed until it splits, returns every name that was there before it
// began. A split used to pack the leaf's lower half to its start,
// moving entries under the listing's byte-offset cookie: they were
// skipped (a dozen here).
func TestListDuringSplits(t *testing.T) {
	img, fs := treeImage(t)
	many, e := fs.Lookup(ext4.RootIno, []byte("many"))
	if e != 0 {
		t.Fatal(e)
	}
	st, e := fs.Stat(many)
	if e != 0 {
		t.Fatal(e)
	}
	bs := uint64(st.Blksize)
	// Names added here first, so that leaves hold entries out of hash
	// order (e2fsck -D writes each leaf sorted, and a sorted leaf's
	// lower half is its start: packing it moves nothing).
	for i := 0; i < 400; i++ {
		if _, e := fs.Mknod(many, []byte("pre-"+strconv.Itoa(i)), ext4.SIFREG|0o644, 0, 0, 0); e != 0 {
			t.Fatal(e)
		}
	}
	before := map[string]int{}
	for _, n := range list(t, fs, many, 1000).names {
		before[n] = 0
	}
	c := &collector{}
	cookie, added, splits := uint64(0), 0, 0
	for n := 0; ; n++ {
		if n > 100000 {
			t.Fatal("readdir does not end")
		}
		c.room = 5
		next, e := ext4.Readdir(fs, many, cookie, c)
		if e != 0 {
			t.Fatalf("readdir at %d: %v", cookie, e)
		}
		if next == ext4.ReaddirEnd {
			break
		}
		cookie = next
		if n%20 != 4 {
			continue
		}
		// Names whose hash leads to the leaf being listed, until it
		// splits (the directory grows a block) under the cookie.
		leaf := cookie / bs
		st0, _ := fs.Stat(many)
		for tries := 0; tries < 1000000; tries++ {
			name := "new-" + strconv.Itoa(n) + "-" + strconv.Itoa(tries)
			if l, ok := fs.DxLeaf(many, []byte(name)); !ok || l != leaf {
				continue
			}
			if _, e := fs.Mknod(many, []byte(name), ext4.SIFREG|0o644, 0, 0, 0); e != 0 {
				t.Fatalf("create %s: %v", name, e)
			}
			added++
			if st1, _ := fs.Stat(many); st1.Size > st0.Size {
				splits++
				break
			}
		}
	}
	for _, n := range c.names {
		if _, ok := before[n]; ok {
			before[n]++
		}
	}
	missed := 0
	for n, k := range before {
		if k == 0 {
			if missed++; missed <= 5 {
				t.Errorf("%s, there before the listing began, was not listed", n)
			}
		}
	}
	t.Logf("%d names added, %d splits of the leaf being listed, %d listed, %d before", added, splits, len(c.names), len(before))
	if splits == 0 {
		t.Error("no split of the leaf being listed: nothing was tested")
	}
	if missed > 0 {
		t.Errorf("%d of %d names not listed while %d were added", missed, len(before), added)
	}
	if e := fs.Unmount(); e != 0 {
		t.Fatal(e)
	}
	fsck(t, img)
}

// TestMissedLookup: the memo of a lookup that found nothing is dropped
// by every change that can make the name appear (a create, a link, a
// rename onto it) and kept by none that cannot matter.
func TestMissedLookup(t *testing.T) {
	img, fs := treeImage(t)
	root := uint32(ext4.RootIno)
	miss := func(step string) {
		t.Helper()
		if _, e := fs.Lookup(root, []byte("x")); e != ext4.ENOENT {
			t.Fatalf("%s: lookup x = %v, want ENOENT", step, e)
		}
	}
	hit := func(step string) uint32 {
		t.Helper()
		ino, e := fs.Lookup(root, []byte("x"))
		if e != 0 {
			t.Fatalf("%s: lookup x = %v", step, e)
		}
		return ino
	}
	miss("at first")
	ino, e := fs.Mknod(root, []byte("x"), ext4.SIFREG|0o644, 0, 0, 0)
	if e != 0 || hit("after the create") != ino {
		t.Fatalf("create: %v", e)
	}
	if e := fs.Unlink(root, []byte("x")); e != 0 {
		t.Fatal(e)
	}
	miss("after the unlink")
	y, e := fs.Mknod(root, []byte("y"), ext4.SIFREG|0o644, 0, 0, 0)
	if e != 0 {
		t.Fatal(e)
	}
	miss("after another name's create")
	if e := fs.Link(y, root, []byte("x")); e != 0 || hit("after a link") != y {
		t.Fatalf("link: %v", e)
	}
	if e := fs.Unlink(root, []byte("x")); e != 0 {
		t.Fatal(e)
	}
	miss("after the link's unlink")
	if e := fs.Rename(root, []byte("y"), root, []byte("x")); e != 0 || hit("after a rename onto it") != y {
		t.Fatalf("rename: %v", e)
	}
	if e := fs.Unmount(); e != 0 {
		t.Fatal(e)
	}
	fsck(t, img)
}

// TestEmptiedLeaf: without checksums, a leaf whose names were all
// removed starts like an index node (an empty entry spanning the block);
// it stays a leaf, and the directory stays indexed as names come back.
// It was taken for a node: the next insert there gave the index up.
func TestEmptiedLeaf(t *testing.T) {
	img, fs := treeImage(t, "-O", "^metadata_csum")
	many, e := fs.Lookup(ext4.RootIno, []byte("many"))
	if e != 0 {
		t.Fatal(e)
	}
	for _, n := range list(t, fs, many, 1000).names {
		if n == "." || n == ".." {
			continue
		}
		if e := fs.Unlink(many, []byte(n)); e != 0 {
			t.Fatalf("unlink %q: %v", n, e)
		}
	}
	for i := 0; i < 200; i++ {
		name := "back-" + strconv.Itoa(i)
		if _, e := fs.Mknod(many, []byte(name), ext4.SIFREG|0o644, 0, 0, 0); e != 0 {
			t.Fatalf("create %s: %v", name, e)
		}
		if _, indexed, e := fs.DxLookup(many, []byte(name)); !indexed || e != 0 {
			t.Fatalf("after %d names came back the directory is not indexed (%v, %v)", i+1, indexed, e)
		}
	}
	if e := fs.Unmount(); e != 0 {
		t.Fatal(e)
	}
	fsck(t, img)
}

// treeImage is the test tree's image (mkfs.ext4 with opts, its
// directories indexed), mounted read-write.
func treeImage(t *testing.T, opts ...string) (string, *ext4.FS[env]) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("the tree's owners need root")
	}
	img := makeImage(t, tree(t), "64M", opts...)
	fs, _, r, e := mount(t, img, false)
	if e != 0 {
		t.Fatalf("mount: %v %s", e, r.Msg)
	}
	return img, fs
}
