package ext4_test

import (
	"fmt"
	"testing"

	"yolk/kernel/ext4"
)

// TestAllocRuns (4 KiB blocks, and 1 KiB): a file written in one call, or a block at a time as the
// kernel writes, onto a disk whose free space near its goal is single
// blocks (every other one-block file removed) gets whole runs, as Linux's
// allocator gives it, not one block from each hole: its extents stay in the inode (no extent tree block, so Blocks is
// the data's alone). Found by the differential test against Linux
// (qemu/diskdiff_test.go), where yolk's files came out in single-block
// extents with an extent tree block Linux's did not need.
func TestAllocRuns(t *testing.T) {
	for _, bs := range []int{4096, 1024} {
		t.Run(fmt.Sprint(bs), func(t *testing.T) { allocRuns(t, bs) })
	}
}

func allocRuns(t *testing.T, bs int) {
	haveTools(t)
	img := makeImage(t, t.TempDir(), "64M", "-t", "ext4", "-b", fmt.Sprint(bs))
	fs, _, r, e := mount(t, img, false)
	if e != 0 || fs.ReadOnly() {
		t.Fatalf("mount: %v %s", e, r.Msg)
	}
	block := make([]byte, bs)
	for i := range 64 {
		ino, e := fs.Mknod(ext4.RootIno, []byte(fmt.Sprintf("s%02d", i)), 0o100644, 0, 0, 0)
		if e != 0 {
			t.Fatal(e)
		}
		if _, e := fs.WriteAt(ino, block, 0); e != 0 {
			t.Fatal(e)
		}
	}
	for i := 0; i < 64; i += 2 {
		if e := fs.Unlink(ext4.RootIno, []byte(fmt.Sprintf("s%02d", i))); e != 0 {
			t.Fatal(e)
		}
	}
	ino, e := fs.Mknod(ext4.RootIno, []byte("big"), 0o100644, 0, 0, 0)
	if e != 0 {
		t.Fatal(e)
	}
	big := make([]byte, 20*bs)
	for i := range big {
		big[i] = byte(i * 7)
	}
	if n, e := fs.WriteAt(ino, big, 0); e != 0 || n != len(big) {
		t.Fatalf("write: %d %v", n, e)
	}
	// The kernel's write copies a page at a time: one block per call.
	paged, e := fs.Mknod(ext4.RootIno, []byte("paged"), 0o100644, 0, 0, 0)
	if e != 0 {
		t.Fatal(e)
	}
	for off := 0; off < len(big); off += 4096 {
		if n, e := fs.WriteAt(paged, big[off:off+4096], uint64(off)); e != 0 || n != 4096 {
			t.Fatalf("write at %d: %d %v", off, n, e)
		}
	}
	for _, f := range []struct {
		name string
		ino  uint32
	}{{"written at once", ino}, {"written a block at a time", paged}} {
		st, e := fs.Stat(f.ino)
		if e != 0 {
			t.Fatal(e)
		}
		if want := uint64(20 * bs / 512); st.Blocks != want {
			t.Errorf("a 20-block file %s holds %d 512-byte blocks, want %d (its data in runs, no extent tree block)", f.name, st.Blocks, want)
		}
	}
	if e := fs.Unmount(); e != 0 {
		t.Fatal(e)
	}
	fsck(t, img)
}
