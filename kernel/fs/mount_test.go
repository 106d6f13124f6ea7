package fs

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestCross: a walk stops where another file system is mounted and says
// what is left of the path, whichever way it got there (a plain name,
// "..", a symbolic link, the working directory); AtIno goes on from the
// mount point's parent, as ".." at a mounted root does.
func TestCross(t *testing.T) {
	f, _ := newFS(t, 64, 64)
	for _, d := range []string{"/mnt", "/proc", "/tmp", "/tmp/sub"} {
		if e := f.Mkdir(AtCWD, []byte(d), 0o755); e != 0 {
			t.Fatalf("mkdir %s: %v", d, e)
		}
	}
	parent, e := f.Mount([]byte("/mnt"), 1)
	if e != 0 || parent != f.root {
		t.Fatalf("Mount /mnt: %d, %v", parent, e)
	}
	if _, e := f.Mount([]byte("/proc"), 2); e != 0 {
		t.Fatal(e)
	}
	if _, e := f.Mount([]byte("/nothing"), 3); e != unix.ENOENT {
		t.Fatalf("Mount of a missing directory: %v, want ENOENT", e)
	}
	for _, l := range [][2]string{{"/tmp/l", "/mnt/x"}, {"/tmp/rel", "../mnt"}, {"/tmp/self", "/proc/self"}} {
		if e := f.Symlink([]byte(l[1]), AtCWD, []byte(l[0])); e != 0 {
			t.Fatal(e)
		}
	}
	if e := f.Chdir(AtCWD, []byte("/tmp/sub")); e != 0 {
		t.Fatal(e)
	}
	var buf [PathMax]byte
	for _, c := range []struct {
		path  string
		flags int
		mount int32
		rest  string
	}{
		{"/mnt/a/b", 0, 1, "a/b"},
		{"/mnt", 0, 1, ""},
		{"/mnt/", 0, 1, ""},
		{"//mnt//a//", 0, 1, "a//"},
		{"/tmp/../mnt/../tmp", 0, 1, "../tmp"}, // the mounted root's ".." is the mount's business
		{"../../mnt/c", 0, 1, "c"},             // from the working directory
		{"/tmp/l/y", 0, 1, "x/y"},              // an absolute link
		{"/tmp/l", 0, 1, "x"},                  // a last link followed
		{"/tmp/l", unix.AT_SYMLINK_NOFOLLOW, 0, ""},
		{"/tmp/rel/z", 0, 1, "z"}, // a relative link
		{"/tmp/self/fd/3", 0, 2, "self/fd/3"},
		{"/tmp/sub", 0, 0, ""},
		{"/tmp/none/x", 0, 0, ""}, // ENOENT: stays here
	} {
		m, n, e := f.Cross(AtCWD, []byte(c.path), c.flags, buf[:])
		want := Errno(0)
		if c.path == "/tmp/none/x" {
			want = unix.ENOENT
		}
		if m != c.mount || string(buf[:n]) != c.rest || e != want {
			t.Errorf("Cross(%q, %#x) = %d %q %v, want %d %q %v", c.path, c.flags, m, buf[:n], e, c.mount, c.rest, want)
		}
	}
	// The calls stop at the mount point.
	var st unix.Stat_t
	if e := f.Stat(AtCWD, []byte("/mnt/a"), 0, &st); e != ECross {
		t.Errorf("Stat(/mnt/a) = %v, want ECross", e)
	}
	if e := f.Unlink(AtCWD, []byte("/proc"), unix.AT_REMOVEDIR); e != ECross {
		t.Errorf("rmdir(/proc) = %v, want ECross", e)
	}
	if _, e := f.Open(AtCWD, []byte("/tmp/l"), unix.O_RDONLY, 0); e != ECross {
		t.Errorf("open(/tmp/l) = %v, want ECross", e)
	}
	// ".." at the mounted root: from the mount point's parent.
	if e := f.Stat(AtIno(parent), []byte("tmp/sub"), 0, &st); e != 0 || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Errorf("Stat(AtIno(/), tmp/sub) = %v, mode %o", e, st.Mode)
	}
	if e := f.Stat(AtIno(parent), []byte("mnt/q"), 0, &st); e != ECross {
		t.Errorf("Stat(AtIno(/), mnt/q) = %v, want ECross", e)
	}
	if e := f.Stat(AtIno(NumInodes), []byte("x"), 0, &st); e != unix.ENOTDIR {
		t.Errorf("Stat(AtIno(out of range)) = %v, want ENOTDIR", e)
	}
	// Rest too long for the buffer.
	if _, _, e := f.Cross(AtCWD, []byte("/mnt/abcdef"), 0, buf[:3]); e != unix.ENAMETOOLONG {
		t.Errorf("Cross into a short buffer = %v, want ENAMETOOLONG", e)
	}
}

// TestHide: with the root hidden (a disk is the root), ".." into it and
// an absolute link target leave with MountUp and what is left; walks
// below it, and the kernel's own absolute paths, stay.
func TestHide(t *testing.T) {
	f, _ := newFS(t, 64, 64)
	for _, d := range []string{"/tmp", "/tmp/sub", "/dev"} {
		if e := f.Mkdir(AtCWD, []byte(d), 0o755); e != 0 {
			t.Fatalf("mkdir %s: %v", d, e)
		}
	}
	if e := f.Symlink([]byte("/proc/self/fd"), AtCWD, []byte("/dev/fd")); e != 0 {
		t.Fatal(e)
	}
	var st unix.Stat_t
	if e := f.Stat(AtCWD, []byte("/tmp"), 0, &st); e != 0 {
		t.Fatal(e)
	}
	tmp := AtIno(int32(st.Ino - 1))
	f.Hide()
	var buf [PathMax]byte
	for _, c := range []struct {
		path  string
		flags int
		mount int32
		rest  string
	}{
		{"sub/../x", 0, 0, ""},
		{"..", 0, MountUp, ""},
		{"../etc/hosts", 0, MountUp, "etc/hosts"},
		{"sub/../../a", 0, MountUp, "a"},
		{"../dev/fd/3", 0, MountUp, "dev/fd/3"},
		{"/dev/fd/3", 0, MountUp, "proc/self/fd/3"},
		{"/dev/fd", 0, MountUp, "proc/self/fd"},
		{"/dev/fd", unix.AT_SYMLINK_NOFOLLOW, 0, ""},
	} {
		m, n, e := f.Cross(tmp, []byte(c.path), c.flags, buf[:])
		if m != c.mount || string(buf[:n]) != c.rest || e != 0 && e != unix.ENOENT {
			t.Errorf("Cross(/tmp, %q, %#x) = %d %q %v, want %d %q", c.path, c.flags, m, buf[:n], e, c.mount, c.rest)
		}
	}
	if e := f.Stat(tmp, []byte(".."), 0, &st); e != ECross {
		t.Errorf("Stat(/tmp/..) = %v, want ECross", e)
	}
	if e := f.Stat(AtCWD, []byte("/tmp/sub"), 0, &st); e != 0 {
		t.Errorf("the kernel's Stat(/tmp/sub) = %v", e)
	}
}
