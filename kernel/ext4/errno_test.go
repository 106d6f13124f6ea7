package ext4_test

import (
	"os"
	"testing"

	"yolk/kernel/ext4"
)

// TestErrnos checks the error numbers of the calls against Linux's.
func TestErrnos(t *testing.T) {
	haveTools(t)
	dir := t.TempDir()
	os.MkdirAll(dir+"/d/sub", 0o755)
	os.WriteFile(dir+"/file", []byte("data"), 0o644)
	os.Symlink("file", dir+"/ln")
	img := makeImage(t, dir, "32M", "-t", "ext4", "-L", "yolk-data")
	fs, _, _, e := mount(t, img, false)
	if string(fs.Label()) != "yolk-data" {
		t.Errorf("label %q", fs.Label())
	}
	if e != 0 {
		t.Fatal(e)
	}
	root := uint32(ext4.RootIno)
	look := func(d uint32, n string) uint32 {
		ino, e := fs.Lookup(d, []byte(n))
		if e != 0 {
			t.Fatalf("lookup %s: %v", n, e)
		}
		return ino
	}
	file, d, ln := look(root, "file"), look(root, "d"), look(root, "ln")
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'n'
	}
	check := func(what string, got, want ext4.Errno) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	second := func(_ uint32, e ext4.Errno) ext4.Errno { return e }
	secondInt := func(_ int, e ext4.Errno) ext4.Errno { return e }
	check("lookup in a file", second(fs.Lookup(file, []byte("x"))), ext4.ENOTDIR)
	check("lookup of a missing name", second(fs.Lookup(root, []byte("missing"))), ext4.ENOENT)
	check("lookup of a long name", second(fs.Lookup(root, long)), ext4.ENAMETOOLONG)
	check("read of a directory", secondInt(fs.ReadAt(d, make([]byte, 10), 0)), ext4.EISDIR)
	check("readlink of a file", secondInt(fs.Readlink(file, make([]byte, 10))), ext4.EINVAL)
	_, e = ext4.Readdir(fs, file, 0, &collector{room: 5})
	check("readdir of a file", e, ext4.ENOTDIR)
	check("mkdir over a name", second(fs.Mkdir(root, []byte("file"), 0o755, 0, 0)), ext4.EEXIST)
	check("create with a long name", second(fs.Mknod(root, long, ext4.SIFREG|0o644, 0, 0, 0)), ext4.ENAMETOOLONG)
	check("create in a file", second(fs.Mknod(file, []byte("x"), ext4.SIFREG|0o644, 0, 0, 0)), ext4.ENOTDIR)
	check("unlink of a directory", fs.Unlink(root, []byte("d")), ext4.EISDIR)
	check("unlink of a missing name", fs.Unlink(root, []byte("missing")), ext4.ENOENT)
	check("rmdir of a file", fs.Rmdir(root, []byte("file")), ext4.ENOTDIR)
	check("rmdir of a non-empty directory", fs.Rmdir(root, []byte("d")), ext4.ENOTEMPTY)
	check("rmdir of .", fs.Rmdir(root, []byte(".")), ext4.EINVAL)
	check("link of a directory", fs.Link(d, root, []byte("d2")), ext4.EPERM)
	check("rename into itself", fs.Rename(root, []byte("d"), look(d, "sub"), []byte("x")), ext4.EINVAL)
	check("rename a file over a directory", fs.Rename(root, []byte("file"), root, []byte("d")), ext4.EISDIR)
	check("rename a directory over a file", fs.Rename(root, []byte("d"), root, []byte("file")), ext4.ENOTDIR)
	check("write to a directory", secondInt(fs.WriteAt(d, []byte("x"), 0)), ext4.EISDIR)
	check("truncate of a symlink", fs.Truncate(ln, 0), ext4.EINVAL)
	if e := fs.Unmount(); e != 0 {
		t.Fatal(e)
	}
	fsck(t, img)
	ro, _, _, e := mount(t, img, true)
	if e != 0 {
		t.Fatal(e)
	}
	check("create on a read-only mount", second(ro.Mknod(root, []byte("x"), ext4.SIFREG|0o644, 0, 0, 0)), ext4.EROFS)
	check("write on a read-only mount", secondInt(ro.WriteAt(file, []byte("x"), 0)), ext4.EROFS)
}

// TestFull fills a small file system: ENOSPC, then it goes on (a file
// removed frees its blocks), and e2fsck finds it clean. With the
// journal, the calls that fail find the blocks they change held by the
// journal's running transaction (the fill's): their abort must give
// those back as they were, not forget them.
func TestFull(t *testing.T) {
	t.Run("nojournal", func(t *testing.T) { testFull(t, "-O", "^has_journal") })
	t.Run("journal", func(t *testing.T) { testFull(t) })
}

func testFull(t *testing.T, opts ...string) {
	haveTools(t)
	img := makeImage(t, t.TempDir(), "8M", append([]string{"-t", "ext4"}, opts...)...)
	fs, _, _, e := mount(t, img, false)
	if e != 0 {
		t.Fatal(e)
	}
	ino, e := fs.Mknod(ext4.RootIno, []byte("fill"), ext4.SIFREG|0o644, 0, 0, 0)
	if e != 0 {
		t.Fatal(e)
	}
	buf := make([]byte, 256<<10)
	off := uint64(0)
	for i := 0; ; i++ {
		n, e := fs.WriteAt(ino, buf, off)
		off += uint64(n)
		if e == ext4.ENOSPC {
			break
		}
		if e != 0 || i > 100 {
			t.Fatalf("write %d: %v", i, e)
		}
	}
	if st, _ := fs.Statfs(); st.Bfree != 0 {
		t.Errorf("full, %d blocks free", st.Bfree)
	}
	if _, e := fs.Mkdir(ext4.RootIno, []byte("more"), 0o755, 0, 0); e != ext4.ENOSPC {
		t.Errorf("mkdir on a full disk: %v", e)
	}
	if e := fs.Unlink(ext4.RootIno, []byte("fill")); e != 0 {
		t.Fatal(e)
	}
	if _, e := fs.Mkdir(ext4.RootIno, []byte("more"), 0o755, 0, 0); e != 0 {
		t.Fatalf("mkdir after freeing: %v", e)
	}
	if e := fs.Unmount(); e != 0 {
		t.Fatal(e)
	}
	fsck(t, img)
	fs, _, _, e = mount(t, img, true)
	if e != 0 {
		t.Fatal(e)
	}
	if _, e := fs.Lookup(ext4.RootIno, []byte("more")); e != 0 {
		t.Errorf("after a remount, more: %v", e)
	}
	if _, e := fs.Lookup(ext4.RootIno, []byte("fill")); e != ext4.ENOENT {
		t.Errorf("after a remount, fill: %v", e)
	}
}

// TestTimes sets times with nanoseconds, before 1970 and past 2038 (the
// epoch bits), and reads them back after a remount.
func TestTimes(t *testing.T) {
	haveTools(t)
	dir := t.TempDir()
	os.WriteFile(dir+"/f", nil, 0o644)
	img := makeImage(t, dir, "16M", "-t", "ext4")
	fs, _, _, e := mount(t, img, false)
	if e != 0 {
		t.Fatal(e)
	}
	ino, _ := fs.Lookup(ext4.RootIno, []byte("f"))
	at := ext4.Time{Sec: -12345, Nsec: 999_999_999}
	mt := ext4.Time{Sec: 1<<32 + 5, Nsec: 123_456_789}
	if e := fs.Setattr(ino, ext4.Attr{Mask: ext4.AttrAtime | ext4.AttrMtime, Atime: at, Mtime: mt}); e != 0 {
		t.Fatal(e)
	}
	fs.Unmount()
	fsck(t, img)
	fs, _, _, _ = mount(t, img, true)
	st, e := fs.Stat(ino)
	if e != 0 || st.Atime != at || st.Mtime != mt || st.Ctime.Sec != 1_780_000_000 || st.Ctime.Nsec != 123_456_789 {
		t.Fatalf("times %+v %+v %+v %v", st.Atime, st.Mtime, st.Ctime, e)
	}
}

// TestSyncAfterFailure: a call returns (its change in the running
// transaction), then the commit of a Sync fails (the device's writes
// fail: EIO, the mount read-only); the device recovers. The change may
// be lost, so every later Sync, Datasync, Checkpoint and Unmount is
// EIO, as Linux's fsync after a journal abort — never 0.
func TestSyncAfterFailure(t *testing.T) {
	haveTools(t)
	img, err := os.ReadFile(makeImage(t, t.TempDir(), "16M", "-t", "ext4", "-b", "4096"))
	if err != nil {
		t.Fatal(err)
	}
	fs, d, _ := mountRW(t, img)
	if _, e := fs.Mknod(ext4.RootIno, []byte("a"), ext4.SIFREG|0o644, 0, 0, 0); e != 0 {
		t.Fatal(e)
	}
	d.fail = true
	if e := fs.Sync(); e != ext4.EIO {
		t.Errorf("sync while the writes fail: %v, want EIO", e)
	}
	d.fail = false
	if !fs.ReadOnly() {
		t.Error("the mount is not read-only after a failed commit")
	}
	for _, c := range []struct {
		name string
		call func() ext4.Errno
	}{{"Sync", fs.Sync}, {"Datasync", fs.Datasync}, {"Checkpoint", fs.Checkpoint}, {"Unmount", fs.Unmount}} {
		if e := c.call(); e != ext4.EIO {
			t.Errorf("%s after the failure: %v, want EIO", c.name, e)
		}
	}
}
