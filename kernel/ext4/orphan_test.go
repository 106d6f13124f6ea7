package ext4_test

import (
	"testing"

	"yolk/kernel/ext4"
)

// An open file unlinked stays readable (an orphan: no links, its blocks
// kept) until its last close, then ReapOrphans frees it and e2fsck finds
// the image clean; an orphan left by a crash (unmounted with it still
// open) is freed by the next mount's ReapOrphans(true).
func TestOrphan(t *testing.T) {
	img := makeImage(t, t.TempDir(), "16M", "-t", "ext4")
	for _, crash := range []bool{false, true} {
		fs, e0, _, e := mount(t, img, false)
		if e != 0 {
			t.Fatal(e)
		}
		d := e0.d.Get()
		ino, e := fs.Mknod(ext4.RootIno, []byte("tmp"), 0o100644, 0, 0, 0)
		if e != 0 {
			t.Fatal(e)
		}
		data := make([]byte, 20000)
		for i := range data {
			data[i] = byte(i)
		}
		if _, e := fs.WriteAt(ino, data, 0); e != 0 {
			t.Fatal(e)
		}
		d.open = map[uint32]bool{ino: true}
		if e := fs.Unlink(ext4.RootIno, []byte("tmp")); e != 0 {
			t.Fatal(e)
		}
		if _, e := fs.Lookup(ext4.RootIno, []byte("tmp")); e != ext4.ENOENT {
			t.Errorf("lookup after unlink: %v, want ENOENT", e)
		}
		got := make([]byte, len(data))
		if n, e := fs.ReadAt(ino, got, 0); e != 0 || n != len(data) || got[19999] != data[19999] {
			t.Errorf("read of the open, unlinked file: %d, %v", n, e)
		}
		if e := fs.ReapOrphans(false); e != 0 {
			t.Fatal(e)
		}
		if n, _ := fs.ReadAt(ino, got, 0); n != len(data) {
			t.Errorf("ReapOrphans freed an inode in use")
		}
		if crash {
			fs.Unmount() // still "open": left on the orphan list
			fs, e0, _, e = mount(t, img, false)
			if e != 0 {
				t.Fatal(e)
			}
			if e := fs.ReapOrphans(true); e != 0 {
				t.Fatal(e)
			}
		} else {
			d.open = nil // the last close
			if e := fs.ReapOrphans(false); e != 0 {
				t.Fatal(e)
			}
		}
		if e := fs.Unmount(); e != 0 {
			t.Fatal(e)
		}
		fsck(t, img)
	}
}
