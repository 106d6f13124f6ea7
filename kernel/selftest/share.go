package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The host share (yolk run -share, kernel/share.go): the qemu package's
// TestGuest gives a writable share at $YOLK_SHARE_DIR and a read-only one
// at $YOLK_SHARE_RO, prepared on the host (qemu/share_test.go), which
// checks what the guest leaves there after the run and answers the
// guest's "yolk-share: check" line while it waits.

const (
	envShareDir    = "YOLK_SHARE_DIR"    // the writable share's guest path
	envShareRO     = "YOLK_SHARE_RO"     // the read-only share's guest path
	envShareSecret = "YOLK_SHARE_SECRET" // the host's errno opening in/secret (mode 000; 0 for root)
	envShareBig    = "YOLK_SHARE_BIG"    // the big file's size in MiB
)

// ShareBigPattern is the big file's bytes: block i (4 KiB) is i's decimal
// digits repeated (the host builds the same to check it).
func shareBigBlock(b []byte, i int) {
	d := strconv.Itoa(i) + " "
	for j := 0; j < len(b); j += len(d) {
		copy(b[j:], d)
	}
}

func errnoOf(err error) syscall.Errno {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return 0
}

func testShare(t *T) {
	dir := os.Getenv(envShareDir)
	if dir == "" {
		t.Skipf("no share: boot with yolk run -share (the qemu package's TestGuest gives one on every machine with virtio)")
	}
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	// The host's files.
	if b, err := os.ReadFile(filepath.Join(in, "hello.txt")); err != nil || string(b) != "hello from the host\n" {
		t.Fatalf("in/hello.txt: %q, %v", b, err)
	}
	ents, err := os.ReadDir(in)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"full", "hello.txt", "secret"}; err != nil || !slices.Equal(names, want) {
		t.Errorf("ReadDir(in) = %q, %v; want %q", names, err, want)
	}
	// Errno as the host gives it.
	for _, c := range []struct {
		what string
		err  error
		want syscall.Errno
	}{
		{"open a missing file", func() error { _, err := os.Open(filepath.Join(in, "missing")); return err }(), syscall.ENOENT},
		{"open below a missing directory", func() error { _, err := os.Open(filepath.Join(in, "no/such")); return err }(), syscall.ENOENT},
		{"mkdir an existing directory", os.Mkdir(filepath.Join(in, "full"), 0o755), syscall.EEXIST},
		{"create an existing file exclusively", func() error {
			_, err := os.OpenFile(filepath.Join(in, "hello.txt"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			return err
		}(), syscall.EEXIST},
		{"rmdir a non-empty directory", syscall.Rmdir(filepath.Join(in, "full")), syscall.ENOTEMPTY},
		{"unlink a directory", syscall.Unlink(filepath.Join(in, "full")), syscall.EISDIR},
		{"rmdir a file", syscall.Rmdir(filepath.Join(in, "hello.txt")), syscall.ENOTDIR},
		{"open a file as a directory", func() error {
			_, err := os.OpenFile(filepath.Join(in, "hello.txt"), os.O_RDONLY|syscall.O_DIRECTORY, 0)
			return err
		}(), syscall.ENOTDIR},
		{"open a directory for writing", func() error { _, err := os.OpenFile(in, os.O_WRONLY, 0); return err }(), syscall.EISDIR},
		{"open a directory with O_CREAT", func() error { _, err := os.OpenFile(in, os.O_RDONLY|os.O_CREATE, 0); return err }(), syscall.EISDIR},
		{"create below a file", os.WriteFile(filepath.Join(in, "hello.txt", "x"), nil, 0o644), syscall.ENOTDIR},
		{"rename across shares", os.Rename(filepath.Join(in, "hello.txt"), "/tmp/hello.txt"), syscall.EXDEV},
	} {
		if got := errnoOf(c.err); got != c.want {
			t.Errorf("%s: %v (errno %d), want %v", c.what, c.err, got, c.want)
		}
	}
	secret, _ := strconv.Atoi(os.Getenv(envShareSecret))
	if f, err := os.Open(filepath.Join(in, "secret")); errnoOf(err) != syscall.Errno(secret) {
		t.Errorf("open in/secret (mode 000): %v, want errno %d as on the host", err, secret)
	} else if f != nil {
		f.Close()
	}

	// Create, write, rename, truncate, list, remove.
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatalf("mkdir out: %v", err)
	}
	a, b := filepath.Join(out, "a.txt"), filepath.Join(out, "b.txt")
	if err := os.WriteFile(a, []byte("hello, host"), 0o640); err != nil {
		t.Fatalf("%v", err)
	}
	if err := os.Rename(a, b); err != nil {
		t.Fatalf("%v", err)
	}
	if _, err := os.Stat(a); errnoOf(err) != syscall.ENOENT {
		t.Errorf("stat of the renamed file's old name: %v", err)
	}
	if err := os.Truncate(b, 5); err != nil {
		t.Errorf("%v", err)
	}
	f, err := os.OpenFile(b, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("%v", err)
	}
	f.WriteString("!")
	if _, err := f.WriteAt([]byte("J"), 0); err == nil {
		t.Errorf("WriteAt on an O_APPEND file succeeded") // os refuses it, as on Linux
	}
	if st, err := f.Stat(); err != nil || st.Size() != 6 || st.Mode() != 0o640 || st.IsDir() {
		t.Errorf("fstat: %v, %v", st, err)
	}
	if err := f.Sync(); err != nil {
		t.Errorf("fsync: %v", err)
	}
	f.Close()
	if got, _ := os.ReadFile(b); string(got) != "hello!" {
		t.Errorf("after truncate and append: %q", got)
	}
	if err := os.Symlink("b.txt", filepath.Join(out, "link")); err != nil {
		t.Errorf("%v", err)
	}
	if l, err := os.Readlink(filepath.Join(out, "link")); err != nil || l != "b.txt" {
		t.Errorf("Readlink = %q, %v", l, err)
	}
	// Links at the end of a path are followed: relative, and absolute
	// on the same share.
	if err := os.Symlink(filepath.Join(in, "hello.txt"), filepath.Join(out, "abs")); err != nil {
		t.Errorf("%v", err)
	}
	if got, err := os.ReadFile(filepath.Join(out, "abs")); err != nil || string(got) != "hello from the host\n" {
		t.Errorf("reading through an absolute link: %q, %v", got, err)
	}
	if st, err := os.Stat(filepath.Join(out, "link")); err != nil || !st.Mode().IsRegular() || st.Size() != 6 {
		t.Errorf("Stat through the link: %v, %v", st, err)
	}
	if st, err := os.Lstat(filepath.Join(out, "link")); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("Lstat of the link: %v, %v", st, err)
	}
	if err := os.Remove(filepath.Join(out, "abs")); err != nil {
		t.Errorf("%v", err)
	}
	if err := os.MkdirAll(filepath.Join(out, "sub", "deeper"), 0o755); err != nil {
		t.Errorf("%v", err)
	}
	os.WriteFile(filepath.Join(out, "sub", "deeper", "gone"), nil, 0o644)
	mt := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
	if err := os.Chtimes(b, mt, mt); err != nil {
		t.Errorf("%v", err)
	}
	if st, err := os.Stat(b); err != nil || !st.ModTime().Equal(mt) {
		t.Errorf("mtime after Chtimes: %v, %v", st, err)
	}
	if err := os.Chmod(b, 0o600); err != nil {
		t.Errorf("%v", err)
	}
	// A working directory on the share: relative names, Getwd.
	wd, _ := os.Getwd()
	if err := os.Chdir(filepath.Join(out, "sub")); err != nil {
		t.Fatalf("%v", err)
	}
	if got, err := os.Getwd(); err != nil || got != filepath.Join(out, "sub") {
		t.Errorf("Getwd = %q, %v", got, err)
	}
	if err := os.Remove("deeper/gone"); err != nil {
		t.Errorf("%v", err)
	}
	if err := os.Remove("deeper"); err != nil {
		t.Errorf("%v", err)
	}
	// Single names: the working directory's own fid is their directory.
	if err := os.WriteFile("r1", []byte("r"), 0o644); err != nil {
		t.Errorf("%v", err)
	}
	if err := os.Rename("r1", "r2"); err != nil {
		t.Errorf("%v", err)
	}
	if err := os.Symlink("r2", "l2"); err != nil {
		t.Errorf("%v", err)
	}
	if b, err := os.ReadFile("l2"); err != nil || string(b) != "r" {
		t.Errorf("r2 through l2: %q, %v", b, err)
	}
	for _, n := range []string{"l2", "r2"} {
		if err := os.Remove(n); err != nil {
			t.Errorf("%v", err)
		}
	}
	if b, err := os.ReadFile("../b.txt"); err != nil || string(b) != "hello!" {
		t.Errorf("../b.txt from the share's working directory: %q, %v", b, err)
	}
	// "" names nothing, as on Linux (it opened the working directory);
	// with AT_EMPTY_PATH it is the working directory.
	if _, err := unix.Open("", unix.O_RDONLY, 0); err != unix.ENOENT {
		t.Errorf("open(\"\") on the share's working directory: %v, want ENOENT", err)
	}
	var est unix.Stat_t
	if err := unix.Stat("", &est); err != unix.ENOENT {
		t.Errorf("stat(\"\"): %v, want ENOENT", err)
	}
	if err := unix.Fstatat(unix.AT_FDCWD, "", &est, unix.AT_EMPTY_PATH); err != nil || est.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Errorf("fstatat(AT_FDCWD, \"\", AT_EMPTY_PATH) = %v, mode %#o; want the working directory", err, est.Mode)
	}
	// Fchdir back and forth, as testing's T.Chdir does: to the share
	// directory "." was, after a chdir away, and to an in-memory one.
	if dot, err := os.Open("."); err != nil {
		t.Errorf("open .: %v", err)
	} else {
		mem, err := os.Open("/tmp")
		if err != nil {
			t.Fatalf("%v", err)
		}
		if err := os.Chdir("/"); err != nil {
			t.Errorf("%v", err)
		}
		if err := dot.Chdir(); err != nil {
			t.Errorf("fchdir to the share: %v", err)
		}
		if got, err := os.Getwd(); err != nil || got != filepath.Join(out, "sub") {
			t.Errorf("Getwd after fchdir = %q, %v", got, err)
		}
		if b, err := os.ReadFile("../b.txt"); err != nil || string(b) != "hello!" {
			t.Errorf("../b.txt after fchdir: %q, %v", b, err)
		}
		if err := mem.Chdir(); err != nil {
			t.Errorf("fchdir to /tmp: %v", err)
		}
		if got, err := os.Getwd(); err != nil || got != "/tmp" {
			t.Errorf("Getwd after fchdir to /tmp = %q, %v", got, err)
		}
		if _, err := os.Stat("../b.txt"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("../b.txt from /tmp: %v, want ENOENT", err)
		}
		// Opened by a path relative to "/", above the mount point.
		if err := os.Chdir("/"); err != nil {
			t.Errorf("%v", err)
		}
		if f, err := os.Open(out[1:]); err != nil {
			t.Errorf("%v", err)
		} else {
			if err := f.Chdir(); err != nil {
				t.Errorf("fchdir to a share directory opened from /: %v", err)
			} else if got, err := os.Getwd(); err != nil || got != out {
				t.Errorf("Getwd = %q, %v; want %s", got, err, out)
			}
			f.Close()
		}
		if st, err := os.Stat("b.txt"); err != nil || st.Size() != 6 {
			t.Errorf("b.txt after fchdir: %v, %v", st, err)
		}
		// A relative chdir from "/" into the share.
		if err := os.Chdir("/"); err != nil {
			t.Errorf("%v", err)
		}
		if err := os.Chdir(out[1:] + "/sub"); err != nil {
			t.Errorf("chdir %s from /: %v", out[1:]+"/sub", err)
		} else if got, err := os.Getwd(); err != nil || got != filepath.Join(out, "sub") {
			t.Errorf("Getwd = %q, %v; want %s/sub", got, err, out)
		}
		if f, err := os.Open("b.txt"); err == nil {
			if err := f.Chdir(); !errors.Is(err, syscall.ENOTDIR) {
				t.Errorf("fchdir to a share file: %v, want ENOTDIR", err)
			}
			f.Close()
		}
		dot.Close()
		mem.Close()
	}
	if err := os.Chdir(wd); err != nil {
		t.Errorf("%v", err)
	}
	if err := os.Remove(filepath.Join(out, "sub")); err != nil {
		t.Errorf("%v", err)
	}

	// A tree copied and removed by the os package's own walkers
	// (descriptor-relative opens, getdents64, unlinkat).
	tree := filepath.Join(out, "tree")
	if err := os.CopyFS(tree, os.DirFS(in)); err != nil && errnoOf(err) != syscall.Errno(secret) {
		t.Errorf("CopyFS: %v", err)
	}
	var walked []string
	filepath.WalkDir(tree, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(tree, p)
		walked = append(walked, rel)
		return err
	})
	if want := []string{".", "full", "full/x", "hello.txt"}; !slices.Equal(walked[:min(len(walked), 4)], want) {
		t.Errorf("WalkDir of the copy: %q, want %q first", walked, want)
	}
	if err := os.RemoveAll(tree); err != nil {
		t.Errorf("RemoveAll: %v", err)
	}

	// The big file, written and read back through its checksum.
	mib, _ := strconv.Atoi(os.Getenv(envShareBig))
	big := filepath.Join(out, "big")
	sum := sha256.New()
	start := time.Now()
	f, err = os.Create(big)
	if err != nil {
		t.Fatalf("%v", err)
	}
	blk := make([]byte, 4096)
	buf := make([]byte, 0, 1<<20)
	for i := 0; i < mib<<8; i++ {
		shareBigBlock(blk, i)
		buf = append(buf, blk...)
		if len(buf) == cap(buf) {
			sum.Write(buf)
			if _, err := f.Write(buf); err != nil {
				t.Fatalf("%v", err)
			}
			buf = buf[:0]
		}
	}
	if err := f.Close(); err != nil {
		t.Fatalf("%v", err)
	}
	wrote := time.Since(start)
	start = time.Now()
	f, err = os.Open(big)
	if err != nil {
		t.Fatalf("%v", err)
	}
	back := sha256.New()
	n, err := io.CopyBuffer(back, f, make([]byte, 1<<20))
	f.Close()
	if err != nil || n != int64(mib)<<20 || !bytes.Equal(back.Sum(nil), sum.Sum(nil)) {
		t.Errorf("the big file read back: %d bytes, %v, checksum %x want %x", n, err, back.Sum(nil), sum.Sum(nil))
	}
	t.Logf("%d MiB written in %v, read in %v", mib, wrote.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// The host looks now, and answers in a file the guest waits for.
	println("yolk-share: check " + hex.EncodeToString(sum.Sum(nil)))
	ack := filepath.Join(out, "ack")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(ack)
		if err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			if string(b) != "ok\n" {
				t.Errorf("the host's check: %s", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no answer from the host in %s: %v", ack, err)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.Remove(ack); err != nil {
		t.Errorf("%v", err)
	}
	ents, err = os.ReadDir(out)
	names = names[:0]
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"b.txt", "big", "link"}; err != nil || !slices.Equal(names, want) {
		t.Errorf("ReadDir(out) = %q, %v; want %q", names, err, want)
	}
}

func testShareReadOnly(t *T) {
	dir := os.Getenv(envShareRO)
	if dir == "" {
		t.Skipf("no read-only share: boot with yolk run -share HOSTDIR:GUESTPATH:ro (the qemu package's TestGuest gives one)")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ro.txt")); err != nil || string(b) != "read only\n" {
		t.Errorf("ro.txt: %q, %v", b, err)
	}
	for _, c := range []struct {
		what string
		err  error
	}{
		{"create", os.WriteFile(filepath.Join(dir, "new"), nil, 0o644)},
		{"open for writing", func() error { _, err := os.OpenFile(filepath.Join(dir, "ro.txt"), os.O_WRONLY, 0); return err }()},
		{"mkdir", os.Mkdir(filepath.Join(dir, "d"), 0o755)},
		{"remove", os.Remove(filepath.Join(dir, "ro.txt"))},
		{"chmod", os.Chmod(filepath.Join(dir, "ro.txt"), 0o600)},
	} {
		if errnoOf(c.err) != syscall.EROFS {
			t.Errorf("%s on the read-only share: %v, want EROFS", c.what, c.err)
		}
	}
}

// The share's benchmarks (on $YOLK_SHARE_DIR, as TestShare): sequential
// writes and reads of 1 MiB calls, a create and delete, a stat.
func init() {
	benches = append(benches,
		bench{"BenchmarkShareWrite", benchShareWrite, false},
		bench{"BenchmarkShareRead", benchShareRead, false},
		bench{"BenchmarkShareReadMemory", benchMemRead, false},
		bench{"BenchmarkShareCreateDelete", benchShareCreate, false},
		bench{"BenchmarkShareStat", benchShareStat, false},
	)
}

func shareBenchDir(b *testing.B) string {
	dir := os.Getenv(envShareDir)
	if dir == "" {
		b.Skip("no share: boot with yolk run -share HOSTDIR:GUESTPATH -e " + envShareDir + "=GUESTPATH")
	}
	return dir
}

func benchShareWrite(b *testing.B) {
	f, err := os.Create(filepath.Join(shareBenchDir(b), "bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.WriteAt(buf, int64(i%64)<<20); err != nil {
			b.Fatal(err)
		}
	}
}

func benchShareRead(b *testing.B) { benchRead(b, filepath.Join(shareBenchDir(b), "bench")) }

// benchMemRead is benchShareRead on the in-memory file system (where the
// boot archive's files are), for comparison.
func benchMemRead(b *testing.B) { benchRead(b, "/tmp/bench") }

func benchRead(b *testing.B, name string) {
	buf := make([]byte, 1<<20)
	if err := os.WriteFile(name, bytes.Repeat(buf, 16), 0o644); err != nil {
		b.Fatal(err)
	}
	defer os.Remove(name)
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.ReadAt(buf, int64(i%16)<<20); err != nil {
			b.Fatal(err)
		}
	}
}

func benchShareCreate(b *testing.B) {
	name := filepath.Join(shareBenchDir(b), "bench")
	for i := 0; i < b.N; i++ {
		f, err := os.Create(name)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
		if err := os.Remove(name); err != nil {
			b.Fatal(err)
		}
	}
}

func benchShareStat(b *testing.B) {
	dir := shareBenchDir(b)
	for i := 0; i < b.N; i++ {
		if _, err := os.Stat(dir); err != nil {
			b.Fatal(err)
		}
	}
}
