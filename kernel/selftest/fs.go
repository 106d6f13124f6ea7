package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// The in-memory file system (kernel/fs) and pipes, through the os package
// and raw system calls: what Go programs and their tests do with files.

func init() {
	tests = append(tests,
		test{"TestFileSystem", testFileSystem},
		test{"TestFileErrno", testFileErrno},
		test{"TestPipe", testPipe},
		test{"TestBootFiles", testBootFiles},
	)
}

// testBootFiles checks the files the harness passes in the boot archive
// (qemu.Tree, kernel/initrd.go): this package's testdata at its host path,
// read-only, with the package directory as the working directory — what
// yolk test gives a package's tests.
func testBootFiles(t *T) {
	dir := os.Getenv("YOLK_SELFTEST_DIR")
	if dir == "" {
		t.Skipf("no boot archive (the qemu package's TestGuest passes one)")
	}
	if wd, err := os.Getwd(); err != nil || wd != dir {
		t.Errorf("Getwd = %q, %v; want %q", wd, err, dir)
	}
	if b, err := os.ReadFile("testdata/hello.txt"); err != nil || string(b) != "hello, guest\n" {
		t.Errorf("testdata/hello.txt: %q, %v", b, err)
	}
	if b, err := os.ReadFile(dir + "/testdata/sub/deep.txt"); err != nil || string(b) != "deep\n" {
		t.Errorf("testdata/sub/deep.txt: %q, %v", b, err)
	}
	if l, err := os.Readlink("testdata/link"); err != nil || l != "hello.txt" {
		t.Errorf("Readlink(testdata/link) = %q, %v", l, err)
	}
	ents, err := os.ReadDir("testdata")
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	if err != nil || !slices.Equal(names, []string{"hello.txt", "link", "sub"}) {
		t.Errorf("ReadDir(testdata) = %v, %v", names, err)
	}
	if fi, err := os.Stat("testdata/hello.txt"); err != nil || fi.ModTime().Year() < 2020 || fi.Mode().Perm()&0o400 == 0 {
		t.Errorf("stat: %v %v", fi, err)
	}
	if err := os.WriteFile("testdata/new", nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("creating in testdata: %v, want EROFS", err)
	}
	if err := os.Remove("testdata/hello.txt"); !errors.Is(err, syscall.EROFS) {
		t.Errorf("removing from testdata: %v, want EROFS", err)
	}
}

func testFileSystem(t *T) {
	dir, err := os.MkdirTemp("", "fs-")
	if err != nil {
		t.Fatalf("MkdirTemp: %v", err)
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "a")
	before := time.Now().Add(-time.Second)
	if err := os.WriteFile(p, []byte("hello"), 0o640); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	// Append, then read back.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("open O_APPEND: %v", err)
	}
	f.WriteString(", world")
	f.Close()
	if b, err := os.ReadFile(p); err != nil || string(b) != "hello, world" {
		t.Errorf("read back %q, %v", b, err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Size() != 12 || st.Mode() != 0o640 || st.ModTime().Before(before) || st.IsDir() {
		t.Errorf("stat: %v size %d mode %v mtime %v", err, st.Size(), st.Mode(), st.ModTime())
	}
	// Seek, ReadAt, WriteAt past the end (a hole reads as zeroes).
	f, err = os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open O_RDWR: %v", err)
	}
	if n, err := f.WriteAt([]byte("X"), 20); n != 1 || err != nil {
		t.Errorf("WriteAt: %d %v", n, err)
	}
	buf := make([]byte, 21)
	if n, err := f.ReadAt(buf, 0); n != 21 || (err != nil && err != io.EOF) || string(buf[:12]) != "hello, world" || buf[15] != 0 || buf[20] != 'X' {
		t.Errorf("ReadAt: %d %v %q", n, err, buf)
	}
	if off, err := f.Seek(-1, io.SeekEnd); off != 20 || err != nil {
		t.Errorf("Seek(-1, End) = %d, %v", off, err)
	}
	f.Close()
	// Truncate, O_TRUNC, O_EXCL.
	if err := os.Truncate(p, 5); err != nil {
		t.Errorf("Truncate: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "hello" {
		t.Errorf("after Truncate: %q", b)
	}
	if _, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("O_EXCL on an existing file: %v, want EEXIST", err)
	}
	if f, err := os.OpenFile(p, os.O_TRUNC|os.O_WRONLY, 0); err != nil {
		t.Errorf("O_TRUNC: %v", err)
	} else {
		f.Close()
	}
	if st, _ := os.Stat(p); st == nil || st.Size() != 0 {
		t.Errorf("O_TRUNC left %v", st)
	}
	// Rename over an existing file; remove; readdir order and contents.
	q := filepath.Join(dir, "b")
	os.WriteFile(q, []byte("bee"), 0o600)
	if err := os.Rename(q, p); err != nil {
		t.Errorf("rename over: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "bee" {
		t.Errorf("after rename over: %q", b)
	}
	if _, err := os.Stat(q); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old name after rename: %v", err)
	}
	for _, n := range []string{"z", "m", "c"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o600)
	}
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	os.Symlink("a", filepath.Join(dir, "l"))
	if err := os.Remove(filepath.Join(dir, "m")); err != nil {
		t.Errorf("remove: %v", err)
	}
	ents, err := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if err != nil || !slices.Equal(names, []string{"a", "c", "d", "l", "z"}) {
		t.Errorf("ReadDir = %v, %v", names, err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "l")); err != nil || target != "a" {
		t.Errorf("Readlink = %q, %v", target, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "l")); err != nil || string(b) != "bee" {
		t.Errorf("read through symlink: %q %v", b, err)
	}
	// The working directory.
	wd, _ := os.Getwd()
	if err := os.Chdir(filepath.Join(dir, "d")); err != nil {
		t.Errorf("Chdir: %v", err)
	}
	if got, err := os.Getwd(); err != nil || got != filepath.Join(dir, "d") {
		t.Errorf("Getwd = %q, %v", got, err)
	}
	if err := os.WriteFile("rel", []byte("r"), 0o600); err != nil {
		t.Errorf("relative create: %v", err)
	}
	os.Chdir(wd)
	if b, _ := os.ReadFile(filepath.Join(dir, "d", "rel")); string(b) != "r" {
		t.Errorf("relative file not in the new cwd: %q", b)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("RemoveAll: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after RemoveAll: %v", err)
	}
	if os.TempDir() != "/tmp" {
		t.Errorf("TempDir = %q", os.TempDir())
	}
}

// testFileErrno checks the errno of every error path a Go program meets.
func testFileErrno(t *T) {
	dir := t.tempDir()
	defer os.RemoveAll(dir)
	f := filepath.Join(dir, "f")
	d := filepath.Join(dir, "d")
	os.WriteFile(f, []byte("x"), 0o600)
	os.Mkdir(d, 0o755)
	os.WriteFile(filepath.Join(d, "in"), nil, 0o600)
	for _, c := range []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"open missing", open(filepath.Join(dir, "missing")), syscall.ENOENT},
		{"mkdir existing", os.Mkdir(f, 0o755), syscall.EEXIST},
		{"file as directory", open(filepath.Join(f, "x")), syscall.ENOTDIR},
		{"write a directory", func() error { _, err := os.OpenFile(d, os.O_WRONLY, 0); return err }(), syscall.EISDIR},
		{"rmdir non-empty", syscall.Rmdir(d), syscall.ENOTEMPTY},
		{"unlink a directory", syscall.Unlink(d), syscall.EISDIR},
		{"read a closed fd", func() error { _, err := syscall.Read(999, make([]byte, 1)); return err }(), syscall.EBADF},
		{"seek whence 7", func() error {
			fd, _ := syscall.Open(f, syscall.O_RDONLY, 0)
			defer syscall.Close(fd)
			_, err := syscall.Seek(fd, 0, 7)
			return err
		}(), syscall.EINVAL},
		{"rename a dir into itself", os.Rename(d, filepath.Join(d, "sub")), syscall.EINVAL},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
}

func open(p string) error {
	f, err := os.Open(p)
	if err == nil {
		f.Close()
	}
	return err
}

// tempDir is a fresh directory under os.TempDir.
func (t *T) tempDir() string {
	d, err := os.MkdirTemp("", "selftest-")
	if err != nil {
		t.Fatalf("MkdirTemp: %v", err)
	}
	return d
}

// testPipe passes data through os.Pipe between goroutines: blocking reads
// and writes, a write ten times the pipe's buffer, EOF when the writer
// closes, EPIPE when the reader has.
func testPipe(t *T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("os.Pipe: %v", err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640 KB
	done := make(chan error, 1)
	go func() {
		_, err := w.Write(data)
		w.Close()
		done <- err
	}()
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("read %d of %d bytes, %v", len(got), len(data), err)
	}
	if err := <-done; err != nil {
		t.Errorf("write: %v", err)
	}
	r.Close()
	// A reader blocked on an empty pipe wakes for a later write.
	r, w, _ = os.Pipe()
	go func() {
		time.Sleep(10 * time.Millisecond)
		w.Write([]byte("late"))
	}()
	b := make([]byte, 8)
	if n, err := r.Read(b); err != nil || string(b[:n]) != "late" {
		t.Errorf("blocked read = %q, %v", b[:n], err)
	}
	r.Close()
	if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("write with no reader: %v, want EPIPE", err)
	}
	w.Close()
}
