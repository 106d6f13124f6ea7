package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// An ext4 file system on a disk, mounted by the kernel (kernel/disk): the
// qemu harness attaches one mkfs.ext4 made from a small tree
// (qemu/guest_test.go's ext4Tree) at $YOLK_EXT4 and runs e2fsck -fn on
// it after the guest ends, so what this test writes must leave it
// consistent. Linux's answers are the reference (the program passes on
// the host against a loop-mounted copy: YOLK_EXT4=/mnt/x).

func init() { tests = append(tests, test{"TestDiskFS", testDiskFS}) }

func testDiskFS(t *T) {
	root := os.Getenv("YOLK_EXT4")
	if root == "" {
		t.Skipf("no ext4 disk attached (YOLK_EXT4 unset)")
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(root, &sfs); err != nil || sfs.Type != 0xEF53 {
		t.Fatalf("statfs %s: type %#x, %v; want ext4's 0xef53", root, sfs.Type, err)
	}
	// Listed where df and metrics libraries look.
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err != nil || !strings.Contains(string(mi), " "+root+" rw,relatime - ext4 /dev/vd") {
		t.Errorf("/proc/self/mountinfo has no ext4 line for %s: %v\n%s", root, err, mi)
	}
	// The host's tree.
	want := map[string]string{
		"hello.txt": "hello from the host\n",
		"a/b.txt":   "b\n",
		"a/c/d.txt": strings.Repeat("0123456789abcdef", 1024),
	}
	for name, body := range want {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || string(got) != body {
			t.Errorf("%s: %d bytes, %v; want the host's %d", name, len(got), err, len(body))
		}
	}
	if l, err := os.Readlink(filepath.Join(root, "link")); err != nil || l != "a/b.txt" {
		t.Errorf("readlink link = %q, %v", l, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "link")); err != nil || string(b) != "b\n" {
		t.Errorf("through link: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "a/c/../../a/./b.txt")); err != nil || string(b) != "b\n" {
		t.Errorf("a/c/../../a/./b.txt: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(root, "..", "ext4", "hello.txt")); err != nil {
		t.Errorf("ext4/../ext4/hello.txt (out of the mount and back): %v", err)
	}
	ents, err := os.ReadDir(root)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if err != nil || !slices.Contains(names, "hello.txt") || !slices.Contains(names, "a") || !slices.Contains(names, "lost+found") {
		t.Errorf("readdir %s: %v, %v", root, names, err)
	}
	if _, err := os.Stat(filepath.Join(root, "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat of a missing name: %v, want ENOENT", err)
	}
	if _, err := os.ReadFile(filepath.Join(root, "hello.txt", "x")); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("a file as a directory: %v, want ENOTDIR", err)
	}
	// The mount point itself: busy for rmdir, a directory for unlink
	// (Linux's may_delete says EISDIR before the mount's EBUSY).
	if err := unix.Rmdir(root); err != unix.EBUSY {
		t.Errorf("rmdir of the mount point: %v, want EBUSY", err)
	}
	if err := unix.Unlink(root); err != unix.EISDIR {
		t.Errorf("unlink of the mount point: %v, want EISDIR", err)
	}
	// Renaming the mount point into its own disk, or a disk's file over
	// it: rename takes both parents, and the mount point's is the outer
	// file system's, so the two are on different mounts (Linux checks
	// that first). link walks its first path whole, into the disk's
	// root (a directory: EPERM), and finds its second taken (EEXIST).
	if err := unix.Rename(root, filepath.Join(root, "a", "moved")); err != unix.EXDEV {
		t.Errorf("rename of the mount point into its disk: %v, want EXDEV", err)
	}
	if err := unix.Rename(filepath.Join(root, "hello.txt"), root); err != unix.EXDEV {
		t.Errorf("rename of a disk file over the mount point: %v, want EXDEV", err)
	}
	if err := unix.Link(root, filepath.Join(root, "a", "linked")); err != unix.EPERM {
		t.Errorf("link of the mount point into its disk: %v, want EPERM", err)
	}
	if err := unix.Link(filepath.Join(root, "hello.txt"), root); err != unix.EEXIST {
		t.Errorf("link of a disk file at the mount point: %v, want EEXIST", err)
	}

	// Writing.
	w := filepath.Join(root, "w")
	if err := os.Mkdir(w, 0o755); err != nil {
		t.Fatalf("mkdir: %v", err)
	}
	if err := os.Mkdir(w, 0o755); !errors.Is(err, fs.ErrExist) {
		t.Errorf("mkdir again: %v, want EEXIST", err)
	}
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = byte(i*7 + i>>12)
	}
	f, err := os.Create(filepath.Join(w, "big"))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	for off := 0; off < len(big); off += 10000 {
		if _, err := f.Write(big[off:min(off+10000, len(big))]); err != nil {
			t.Fatalf("write at %d: %v", off, err)
		}
	}
	if _, err := f.WriteAt([]byte("PATCH"), 123457); err != nil {
		t.Errorf("pwrite: %v", err)
	}
	copy(big[123457:], "PATCH")
	if err := f.Sync(); err != nil {
		t.Errorf("fsync: %v", err)
	}
	got := make([]byte, 9)
	if n, err := f.ReadAt(got, 123455); err != nil || n != 9 || !bytes.Equal(got, big[123455:123464]) {
		t.Errorf("pread = %q, %v", got[:n], err)
	}
	f.Close()
	if b, err := os.ReadFile(filepath.Join(w, "big")); err != nil || !bytes.Equal(b, big) {
		t.Errorf("read back %d bytes (%v), want %d as written", len(b), err, len(big))
	}
	fi, err := os.Stat(filepath.Join(w, "big"))
	if err != nil || fi.Size() != int64(len(big)) || fi.Mode() != 0o644 {
		t.Errorf("stat: %v, %v", fi, err)
	}
	// O_APPEND, truncate down and up (zeros), fallocate.
	a, err := os.OpenFile(filepath.Join(w, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("open O_APPEND: %v", err)
	}
	for i := 0; i < 100; i++ {
		fmt.Fprintf(a, "record %03d\n", i)
	}
	a.Sync()
	a.Close()
	if b, _ := os.ReadFile(filepath.Join(w, "log")); len(b) != 1100 || !strings.HasPrefix(string(b[1089:]), "record 099") {
		t.Errorf("appended log: %d bytes", len(b))
	}
	if err := os.Truncate(filepath.Join(w, "big"), 5000); err != nil {
		t.Errorf("truncate: %v", err)
	}
	if err := os.Truncate(filepath.Join(w, "big"), 9000); err != nil {
		t.Errorf("truncate up: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(w, "big")); len(b) != 9000 || !bytes.Equal(b[:5000], big[:5000]) || !bytes.Equal(b[5000:], make([]byte, 4000)) {
		t.Errorf("after truncating to 5000 and up to 9000: %d bytes, not the data then zeros", len(b))
	}
	if fa, err := os.OpenFile(filepath.Join(w, "alloc"), os.O_CREATE|os.O_RDWR, 0o644); err == nil {
		if err := unix.Fallocate(int(fa.Fd()), 0, 0, 1<<20); err != nil {
			t.Errorf("fallocate: %v", err)
		}
		if st, _ := fa.Stat(); st == nil || st.Size() != 1<<20 {
			t.Errorf("size after fallocate: %v", st)
		}
		fa.Close()
	}
	// The atomic-replace pattern, links, symlinks, removal.
	os.WriteFile(filepath.Join(w, "cfg.tmp"), []byte("v2"), 0o644)
	os.WriteFile(filepath.Join(w, "cfg"), []byte("v1"), 0o644)
	if err := os.Rename(filepath.Join(w, "cfg.tmp"), filepath.Join(w, "cfg")); err != nil {
		t.Errorf("rename over: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(w, "cfg")); string(b) != "v2" {
		t.Errorf("after rename over: %q", b)
	}
	if _, err := os.Stat(filepath.Join(w, "cfg.tmp")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old name after rename: %v", err)
	}
	if err := os.Link(filepath.Join(w, "cfg"), filepath.Join(w, "cfg2")); err != nil {
		t.Errorf("link: %v", err)
	} else if st, _ := os.Stat(filepath.Join(w, "cfg")); st.Sys().(*syscall.Stat_t).Nlink != 2 {
		t.Errorf("nlink after link: %d", st.Sys().(*syscall.Stat_t).Nlink)
	}
	if err := os.Symlink("cfg", filepath.Join(w, "sym")); err != nil {
		t.Errorf("symlink: %v", err)
	} else if b, _ := os.ReadFile(filepath.Join(w, "sym")); string(b) != "v2" {
		t.Errorf("through the new symlink: %q", b)
	}
	if err := os.Remove(w); !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
		t.Errorf("rmdir of a full directory: %v, want ENOTEMPTY", err)
	}
	// Many names: a directory that outgrows a block, listed, then half removed.
	many := filepath.Join(w, "many")
	os.Mkdir(many, 0o755)
	for i := 0; i < 300; i++ {
		if err := os.WriteFile(filepath.Join(many, fmt.Sprintf("file-with-a-longish-name-%04d", i)), []byte{byte(i)}, 0o644); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	if ents, err := os.ReadDir(many); err != nil || len(ents) != 300 {
		t.Errorf("readdir of 300 names: %d, %v", len(ents), err)
	}
	for i := 0; i < 300; i += 2 {
		if err := os.Remove(filepath.Join(many, fmt.Sprintf("file-with-a-longish-name-%04d", i))); err != nil {
			t.Errorf("remove %d: %v", i, err)
		}
	}
	if ents, err := os.ReadDir(many); err != nil || len(ents) != 150 {
		t.Errorf("readdir after removing half: %d, %v", len(ents), err)
	}
	if b, err := os.ReadFile(filepath.Join(many, "file-with-a-longish-name-0151")); err != nil || len(b) != 1 || b[0] != 151 {
		t.Errorf("a kept file: %v, %v", b, err)
	}
	// A file unlinked while open (SQLite's temporary files) stays
	// readable and writable through its descriptor; its last close frees
	// it (the harness's e2fsck finds no orphan left).
	tmp, err := os.Create(filepath.Join(w, "tmp"))
	if err != nil {
		t.Fatalf("create tmp: %v", err)
	}
	tmp.Write(big[:50000])
	if err := os.Remove(tmp.Name()); err != nil {
		t.Errorf("unlink of an open file: %v", err)
	}
	tmp.Write([]byte("more"))
	if b := make([]byte, 4); func() bool { n, _ := tmp.ReadAt(b, 50000); return n != 4 || string(b) != "more" }() {
		t.Errorf("the unlinked open file lost what was written to it")
	}
	if st, err := tmp.Stat(); err != nil || st.Size() != 50004 || st.Sys().(*syscall.Stat_t).Nlink != 0 {
		t.Errorf("fstat of the unlinked open file: %v, %v; want 50004 bytes, no links", st, err)
	}
	tmp.Close()
	// The working directory on a disk: relative paths, getcwd, ".."
	// out of the mount, fchdir.
	orig, _ := os.Getwd()
	if err := os.Chdir(filepath.Join(w, "many")); err != nil {
		t.Errorf("chdir: %v", err)
	} else {
		if wd, err := os.Getwd(); err != nil || wd != filepath.Join(w, "many") {
			t.Errorf("getcwd = %q, %v; want %s", wd, err, filepath.Join(w, "many"))
		}
		if b, err := os.ReadFile("../cfg"); err != nil || string(b) != "v2" {
			t.Errorf("../cfg from the working directory: %q, %v", b, err)
		}
		os.Chdir("../..")
		if wd, _ := os.Getwd(); wd != root {
			t.Errorf("getcwd after chdir ../.. = %q, want %s", wd, root)
		}
		os.Chdir("..")
		if wd, _ := os.Getwd(); wd != filepath.Dir(root) {
			t.Errorf("getcwd after chdir .. from the disk's root = %q, want %s", wd, filepath.Dir(root))
		}
		if d, err := os.Open(w); err == nil {
			if err := d.Chdir(); err != nil {
				t.Errorf("fchdir: %v", err)
			} else if _, err := os.Stat("cfg"); err != nil {
				t.Errorf("cfg after fchdir: %v", err)
			}
			d.Close()
		}
	}
	if err := os.Chdir(orig); err != nil {
		t.Errorf("back to %s: %v", orig, err)
	}
	// A directory descriptor as dirfd.
	dfd, err := unix.Open(w, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatalf("open the directory: %v", err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, "cfg", &st, 0); err != nil || st.Size != 2 {
		t.Errorf("fstatat(dirfd, cfg): %d, %v", st.Size, err)
	}
	if err := unix.Fstatat(dfd, "../hello.txt", &st, 0); err != nil || st.Size != 20 {
		t.Errorf("fstatat(dirfd, ../hello.txt): %d, %v", st.Size, err)
	}
	unix.Sync()
}
