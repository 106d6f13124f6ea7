package fs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func b(s string) []byte { return []byte(s) }

func must(t testing.TB, what string, e Errno) {
	t.Helper()
	if e != 0 {
		t.Fatalf("%s: %v", what, e)
	}
}

func wantErr(t testing.TB, what string, got, want Errno) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v (%d), want %v (%d)", what, got, got, want, want)
	}
}

func open(t testing.TB, f *testFS, path string, flags int, mode uint32) int {
	t.Helper()
	h, e := f.Open(AtCWD, b(path), flags, mode)
	must(t, "open "+path, e)
	return h
}

func write(t testing.TB, f *testFS, h int, s string) {
	t.Helper()
	n, e := f.Write(h, b(s))
	must(t, "write", e)
	if n != len(s) {
		t.Fatalf("write: %d of %d", n, len(s))
	}
}

func readAll(t testing.TB, f *testFS, path string) string {
	t.Helper()
	h := open(t, f, path, unix.O_RDONLY, 0)
	defer f.Close(h)
	var out []byte
	buf := make([]byte, 1000)
	for {
		n, e := f.Read(h, buf)
		must(t, "read", e)
		if n == 0 {
			return string(out)
		}
		out = append(out, buf[:n]...)
	}
}

func stat(t testing.TB, f *testFS, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	must(t, "stat "+path, f.Stat(AtCWD, b(path), unix.AT_SYMLINK_NOFOLLOW, &st))
	return st
}

func TestCreateReadBack(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	h := open(t, f, "/f", unix.O_CREAT|unix.O_RDWR|unix.O_EXCL, 0o666)
	write(t, f, h, "hello, world")
	if off, e := f.Seek(h, 0, unix.SEEK_CUR); e != 0 || off != 12 {
		t.Fatalf("offset %d %v", off, e)
	}
	buf := make([]byte, 5)
	if n, e := f.Read(h, buf); n != 0 || e != 0 {
		t.Fatalf("read at end: %d %v", n, e)
	}
	if n, e := f.Pread(h, buf, 7); n != 5 || e != 0 || string(buf) != "world" {
		t.Fatalf("pread: %d %v %q", n, e, buf)
	}
	if n, e := f.Pwrite(h, b("W"), 7); n != 1 || e != 0 {
		t.Fatalf("pwrite: %d %v", n, e)
	}
	if off, _ := f.Seek(h, 0, unix.SEEK_CUR); off != 12 {
		t.Fatalf("pwrite moved the offset to %d", off)
	}
	must(t, "close", f.Close(h))
	if s := readAll(t, f, "/f"); s != "hello, World" {
		t.Fatalf("read back %q", s)
	}
	st := stat(t, f, "f")
	if st.Mode != unix.S_IFREG|0o644 || st.Size != 12 || st.Nlink != 1 || st.Blocks != 8 || st.Blksize != PageSize || st.Ino == 0 {
		t.Errorf("stat %+v", st)
	}
	if nano(st.Mtim) == 0 || nano(st.Ctim) == 0 || nano(st.Atim) == 0 {
		t.Errorf("times %+v", st)
	}
	// O_TRUNC empties it.
	h = open(t, f, "f", unix.O_WRONLY|unix.O_TRUNC, 0)
	f.Close(h)
	if st := stat(t, f, "f"); st.Size != 0 || st.Blocks != 0 {
		t.Errorf("after O_TRUNC: %+v", st)
	}
	if f.PagesUsed() != 0 {
		t.Errorf("pages held: %d", f.PagesUsed())
	}
}

func TestAppend(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	h := open(t, f, "a", unix.O_CREAT|unix.O_WRONLY|unix.O_APPEND, 0o600)
	write(t, f, h, "one ")
	f.Seek(h, 0, unix.SEEK_SET)
	write(t, f, h, "two ")
	// Linux appends a pwrite on an O_APPEND file too.
	f.Pwrite(h, b("three"), 0)
	f.Close(h)
	if s := readAll(t, f, "a"); s != "one two three" {
		t.Fatalf("got %q", s)
	}
	// Clearing O_APPEND with F_SETFL.
	h = open(t, f, "a", unix.O_WRONLY|unix.O_APPEND, 0)
	must(t, "setfl", f.SetFlags(h, 0))
	write(t, f, h, "ONE")
	f.Close(h)
	if s := readAll(t, f, "a"); s != "ONE two three" {
		t.Fatalf("got %q", s)
	}
}

func TestTruncateSparse(t *testing.T) {
	f, s := newFS(t, 4096, 4096)
	h := open(t, f, "s", unix.O_CREAT|unix.O_RDWR, 0o644)
	write(t, f, h, strings.Repeat("x", 5000))
	must(t, "ftruncate", f.Ftruncate(h, 10))
	must(t, "ftruncate", f.Ftruncate(h, 9000))
	buf := make([]byte, 9000)
	if n, _ := f.Pread(h, buf, 0); n != 9000 || string(buf[:10]) != "xxxxxxxxxx" || !bytes.Equal(buf[10:], make([]byte, 8990)) {
		t.Fatalf("grown file: %d %q", n, buf[:20])
	}
	// A write far out leaves a hole that reads as zeroes and holds no pages.
	const far = 3 << 20
	if n, e := f.Pwrite(h, b("end"), far); n != 3 || e != 0 {
		t.Fatalf("pwrite far: %d %v", n, e)
	}
	var st unix.Stat_t
	f.Fstat(h, &st)
	if st.Size != far+3 || st.Blocks > 5*8 {
		t.Errorf("sparse: size %d blocks %d", st.Size, st.Blocks)
	}
	if n, _ := f.Pread(h, buf[:100], far-50); n != 53 || !bytes.Equal(buf[:50], make([]byte, 50)) || string(buf[50:53]) != "end" {
		t.Errorf("hole: %d %q", n, buf[:53])
	}
	must(t, "truncate", f.Truncate(AtCWD, b("s"), 0))
	if f.PagesUsed() != 0 || s.pages.InUse() != 0 {
		t.Errorf("after truncate to 0: %d pages, %d allocated", f.PagesUsed(), s.pages.InUse())
	}
	wantErr(t, "ftruncate negative", f.Ftruncate(h, -1), unix.EINVAL)
	wantErr(t, "ftruncate too big", f.Ftruncate(h, MaxFileSize+1), unix.EFBIG)
	f.Close(h)
	h = open(t, f, "s", unix.O_RDONLY, 0)
	wantErr(t, "ftruncate read-only fd", f.Ftruncate(h, 0), unix.EINVAL)
	f.Close(h)
}

// TestBigFile goes through the direct, indirect and double-indirect pages.
func TestBigFile(t *testing.T) {
	f, s := newFS(t, 4096, 4096)
	const size = 5<<20 + 123
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	h := open(t, f, "big", unix.O_CREAT|unix.O_RDWR, 0o644)
	for off := 0; off < size; off += 100000 {
		end := min(off+100000, size)
		if n, e := f.Write(h, data[off:end]); n != end-off || e != 0 {
			t.Fatalf("write: %d %v", n, e)
		}
	}
	got := make([]byte, size+10)
	if n, _ := f.Pread(h, got, 0); n != size || !bytes.Equal(got[:n], data) {
		t.Fatalf("read back %d bytes, equal %v", n, bytes.Equal(got[:n], data))
	}
	dataPages := int64((size + PageSize - 1) / PageSize)
	// Data, one indirect, one double-indirect, its second-level pages.
	want := dataPages + 1 + 1 + (dataPages-nDirect-ptrsPerPage+ptrsPerPage-1)/ptrsPerPage
	if f.PagesUsed() != want {
		t.Errorf("pages %d, want %d", f.PagesUsed(), want)
	}
	must(t, "ftruncate", f.Ftruncate(h, 3<<20+5))
	if n, _ := f.Pread(h, got, 0); n != 3<<20+5 || !bytes.Equal(got[:n], data[:n]) {
		t.Fatalf("after shrink: %d", n)
	}
	must(t, "ftruncate", f.Ftruncate(h, 1000))
	if f.PagesUsed() != 1 {
		t.Errorf("pages after truncate to 1000: %d", f.PagesUsed())
	}
	must(t, "unlink", f.Unlink(AtCWD, b("big"), 0))
	if f.PagesUsed() != 1 {
		t.Errorf("unlinked open file lost its data: %d pages", f.PagesUsed())
	}
	if n, _ := f.Pread(h, got, 0); n != 1000 || !bytes.Equal(got[:n], data[:n]) {
		t.Fatalf("unlinked open file: %d", n)
	}
	f.Close(h)
	if f.PagesUsed() != 0 || s.pages.InUse() != 0 {
		t.Errorf("after close: %d pages, %d allocated", f.PagesUsed(), s.pages.InUse())
	}
}

func TestRename(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	for _, p := range []string{"a", "b"} {
		h := open(t, f, p, unix.O_CREAT|unix.O_WRONLY, 0o644)
		write(t, f, h, p+" data")
		f.Close(h)
	}
	ino := stat(t, f, "a").Ino
	must(t, "rename over", f.Rename(AtCWD, b("a"), AtCWD, b("b"), 0))
	if s := readAll(t, f, "b"); s != "a data" || stat(t, f, "b").Ino != ino {
		t.Fatalf("b is %q", s)
	}
	var st unix.Stat_t
	wantErr(t, "old name", f.Stat(AtCWD, b("a"), 0, &st), unix.ENOENT)
	must(t, "mkdir", f.Mkdir(AtCWD, b("d"), 0o755))
	must(t, "mkdir", f.Mkdir(AtCWD, b("e"), 0o755))
	must(t, "mkdir", f.Mkdir(AtCWD, b("e/sub"), 0o755))
	wantErr(t, "dir over file", f.Rename(AtCWD, b("d"), AtCWD, b("b"), 0), unix.ENOTDIR)
	wantErr(t, "file over dir", f.Rename(AtCWD, b("b"), AtCWD, b("d"), 0), unix.EISDIR)
	wantErr(t, "dir over non-empty dir", f.Rename(AtCWD, b("d"), AtCWD, b("e"), 0), unix.ENOTEMPTY)
	wantErr(t, "dir into itself", f.Rename(AtCWD, b("e"), AtCWD, b("e/sub/x"), 0), unix.EINVAL)
	wantErr(t, "noreplace", f.Rename(AtCWD, b("b"), AtCWD, b("e"), unix.RENAME_NOREPLACE), unix.EEXIST)
	wantErr(t, "exchange", f.Rename(AtCWD, b("b"), AtCWD, b("e"), unix.RENAME_EXCHANGE), unix.EINVAL)
	wantErr(t, "dot", f.Rename(AtCWD, b("e/."), AtCWD, b("x"), 0), unix.EBUSY)
	wantErr(t, "missing", f.Rename(AtCWD, b("zz"), AtCWD, b("x"), 0), unix.ENOENT)
	wantErr(t, "file with slash", f.Rename(AtCWD, b("b/"), AtCWD, b("x"), 0), unix.ENOTDIR)
	nl := stat(t, f, "/").Nlink
	must(t, "dir over empty dir", f.Rename(AtCWD, b("e/sub"), AtCWD, b("d"), 0))
	if st := stat(t, f, "e"); st.Nlink != 2 {
		t.Errorf("e nlink %d", st.Nlink)
	}
	if got := stat(t, f, "/").Nlink; got != nl {
		t.Errorf("root nlink %d, was %d", got, nl)
	}
	must(t, "rename to self", f.Rename(AtCWD, b("b"), AtCWD, b("./b"), 0))
	must(t, "move into dir", f.Rename(AtCWD, b("b"), AtCWD, b("e/b"), 0))
	if s := readAll(t, f, "e/b"); s != "a data" {
		t.Fatalf("e/b is %q", s)
	}
}

func TestRemove(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	must(t, "mkdir", f.Mkdir(AtCWD, b("d"), 0o755))
	h := open(t, f, "d/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	f.Close(h)
	wantErr(t, "rmdir non-empty", f.Unlink(AtCWD, b("d"), unix.AT_REMOVEDIR), unix.ENOTEMPTY)
	wantErr(t, "unlink dir", f.Unlink(AtCWD, b("d"), 0), unix.EISDIR)
	wantErr(t, "rmdir file", f.Unlink(AtCWD, b("d/f"), unix.AT_REMOVEDIR), unix.ENOTDIR)
	wantErr(t, "unlink file/", f.Unlink(AtCWD, b("d/f/"), 0), unix.ENOTDIR)
	wantErr(t, "rmdir .", f.Unlink(AtCWD, b("d/."), unix.AT_REMOVEDIR), unix.EINVAL)
	wantErr(t, "rmdir ..", f.Unlink(AtCWD, b("d/.."), unix.AT_REMOVEDIR), unix.ENOTEMPTY)
	wantErr(t, "rmdir /", f.Unlink(AtCWD, b("/"), unix.AT_REMOVEDIR), unix.EBUSY)
	must(t, "unlink", f.Unlink(AtCWD, b("d/f"), 0))
	wantErr(t, "unlink again", f.Unlink(AtCWD, b("d/f"), 0), unix.ENOENT)
	// An open directory removed: listing it fails, creating in it too.
	dh := open(t, f, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, "rmdir", f.Unlink(AtCWD, b("d/"), unix.AT_REMOVEDIR))
	buf := make([]byte, 100)
	if _, e := f.Getdents(dh, buf); e != unix.ENOENT {
		t.Errorf("getdents on removed dir: %v", e)
	}
	if _, e := f.Open(dh, b("new"), unix.O_CREAT|unix.O_WRONLY, 0o644); e != unix.ENOENT {
		t.Errorf("create in removed dir: %v", e)
	}
	f.Close(dh)
	if st := stat(t, f, "/"); st.Nlink != 2 {
		t.Errorf("root nlink %d", st.Nlink)
	}
	for i := range f.inodes[1:] {
		if f.inodes[i+1].mode != 0 {
			t.Errorf("inode %d still in use", i+1)
		}
	}
}

type dirent struct {
	ino  uint64
	off  int64
	typ  byte
	name string
}

func parseDirents(t testing.TB, buf []byte) []dirent {
	var out []dirent
	for len(buf) > 0 {
		reclen := int(binary.LittleEndian.Uint16(buf[16:]))
		if reclen%8 != 0 || reclen < 24 || reclen > len(buf) {
			t.Fatalf("bad reclen %d", reclen)
		}
		name := buf[19:reclen]
		name = name[:bytes.IndexByte(name, 0)]
		out = append(out, dirent{binary.LittleEndian.Uint64(buf), int64(binary.LittleEndian.Uint64(buf[8:])), buf[18], string(name)})
		buf = buf[reclen:]
	}
	return out
}

func TestReaddir(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	must(t, "mkdir", f.Mkdir(AtCWD, b("d"), 0o755))
	var want []string
	for i := 0; i < 40; i++ {
		name := fmt.Sprintf("d/entry-%02d-%s", i, strings.Repeat("n", i%13))
		if i%5 == 0 {
			must(t, "mkdir", f.Mkdir(AtCWD, b(name), 0o700))
		} else if i%7 == 0 {
			must(t, "symlink", f.Symlink(b("target"), AtCWD, b(name)))
		} else {
			f.Close(open(t, f, name, unix.O_CREAT|unix.O_WRONLY, 0o644))
		}
		want = append(want, name[2:])
	}
	dh := open(t, f, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	buf := make([]byte, 64) // two or three records a call
	var got []dirent
	calls := 0
	for {
		n, e := f.Getdents(dh, buf)
		must(t, "getdents", e)
		if n == 0 {
			break
		}
		calls++
		got = append(got, parseDirents(t, buf[:n])...)
		if calls == 5 {
			// Changes between calls: an entry already listed and
			// one not yet listed go, a new one comes at the end.
			must(t, "unlink", f.Unlink(AtCWD, b("d/"+want[1]), 0))
			must(t, "unlink", f.Unlink(AtCWD, b("d/"+want[31]), 0))
			f.Close(open(t, f, "d/late", unix.O_CREAT|unix.O_WRONLY, 0o644))
		}
	}
	if calls < 10 {
		t.Errorf("only %d calls", calls)
	}
	wantNames := append([]string{".", ".."}, want...)
	wantNames = append(wantNames[:33], wantNames[34:]...)
	wantNames = append(wantNames, "late")
	var names []string
	for i, d := range got {
		names = append(names, d.name)
		var st unix.Stat_t
		if d.name != "." && d.name != ".." && d.name != want[1] {
			must(t, "stat", f.Stat(AtCWD, b("d/"+d.name), unix.AT_SYMLINK_NOFOLLOW, &st))
			if st.Ino != d.ino || dtype(st.Mode) != d.typ {
				t.Errorf("%s: ino %d type %d, stat says %d %o", d.name, d.ino, d.typ, st.Ino, st.Mode)
			}
		}
		if i > 0 && d.off <= got[i-1].off {
			t.Errorf("d_off not increasing at %s", d.name)
		}
	}
	if strings.Join(names, " ") != strings.Join(wantNames, " ") {
		t.Errorf("listing:\n got %v\nwant %v", names, wantNames)
	}
	// Rewind and a buffer too small for one record.
	f.Seek(dh, 0, unix.SEEK_SET)
	if _, e := f.Getdents(dh, buf[:10]); e != unix.EINVAL {
		t.Errorf("tiny buffer: %v", e)
	}
	n, _ := f.Getdents(dh, buf)
	if ds := parseDirents(t, buf[:n]); ds[0].name != "." || ds[0].typ != unix.DT_DIR {
		t.Errorf("after rewind: %+v", ds)
	}
	fh := open(t, f, "d/late", unix.O_RDONLY, 0)
	if _, e := f.Getdents(fh, buf); e != unix.ENOTDIR {
		t.Errorf("getdents on a file: %v", e)
	}
	if _, e := f.Read(dh, buf); e != unix.EISDIR {
		t.Errorf("read on a dir: %v", e)
	}
	if _, e := f.Getdents(99, buf); e != unix.EBADF {
		t.Errorf("getdents bad handle: %v", e)
	}
}

func TestSymlinks(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	must(t, "mkdir", f.Mkdir(AtCWD, b("/d"), 0o755))
	must(t, "symlink", f.Symlink(b("d"), AtCWD, b("/ld")))
	must(t, "symlink", f.Symlink(b("/d/f"), AtCWD, b("/lf")))
	must(t, "symlink", f.Symlink(b("loop2"), AtCWD, b("/loop1")))
	must(t, "symlink", f.Symlink(b("loop1"), AtCWD, b("/loop2")))
	// Creating through a dangling link creates its target.
	h := open(t, f, "lf", unix.O_CREAT|unix.O_WRONLY, 0o644)
	write(t, f, h, "via link")
	f.Close(h)
	if s := readAll(t, f, "ld/f"); s != "via link" {
		t.Fatalf("read through dir link: %q", s)
	}
	buf := make([]byte, 100)
	if n, e := f.Readlink(AtCWD, b("lf"), buf); e != 0 || string(buf[:n]) != "/d/f" {
		t.Errorf("readlink: %q %v", buf[:n], e)
	}
	if n, e := f.Readlink(AtCWD, b("lf"), buf[:2]); e != 0 || string(buf[:n]) != "/d" {
		t.Errorf("readlink truncated: %q %v", buf[:n], e)
	}
	st := stat(t, f, "lf")
	if st.Mode != unix.S_IFLNK|0o777 || st.Size != 4 {
		t.Errorf("lstat: %+v", st)
	}
	var fst unix.Stat_t
	must(t, "stat", f.Stat(AtCWD, b("lf"), 0, &fst))
	if fst.Mode != unix.S_IFREG|0o644 {
		t.Errorf("stat through link: %o", fst.Mode)
	}
	must(t, "lstat ld/", f.Stat(AtCWD, b("ld/"), unix.AT_SYMLINK_NOFOLLOW, &fst))
	if !isDir(fst.Mode) {
		t.Errorf("lstat with trailing slash follows: %o", fst.Mode)
	}
	_, e := f.Open(AtCWD, b("lf"), unix.O_RDONLY|unix.O_NOFOLLOW, 0)
	wantErr(t, "O_NOFOLLOW", e, unix.ELOOP)
	_, e = f.Open(AtCWD, b("loop1"), unix.O_RDONLY, 0)
	wantErr(t, "loop", e, unix.ELOOP)
	_, e = f.Open(AtCWD, b("loop1/x"), unix.O_RDONLY, 0)
	wantErr(t, "loop in the middle", e, unix.ELOOP)
	_, e = f.Open(AtCWD, b("lf"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
	wantErr(t, "O_EXCL on a link", e, unix.EEXIST)
	_, e = f.Readlink(AtCWD, b("d"), buf)
	wantErr(t, "readlink dir", e, unix.EINVAL)
	_, e = f.Readlink(AtCWD, b("lf"), nil)
	wantErr(t, "readlink empty buffer", e, unix.EINVAL)
	wantErr(t, "symlink exists", f.Symlink(b("x"), AtCWD, b("lf")), unix.EEXIST)
	wantErr(t, "symlink empty target", f.Symlink(b(""), AtCWD, b("e")), unix.ENOENT)
	// A chain of 40 links resolves; 41 do not.
	must(t, "symlink", f.Symlink(b("d"), AtCWD, b("c0")))
	for i := 1; i <= 41; i++ {
		must(t, "symlink", f.Symlink(b(fmt.Sprintf("c%d", i-1)), AtCWD, b(fmt.Sprintf("c%d", i))))
	}
	must(t, "stat c39/f", f.Stat(AtCWD, b("c39/f"), 0, &fst))
	wantErr(t, "41 links", f.Stat(AtCWD, b("c40/f"), 0, &fst), unix.ELOOP)
	// Unlink removes the link, not the target.
	must(t, "unlink link", f.Unlink(AtCWD, b("ld"), 0))
	if s := readAll(t, f, "d/f"); s != "via link" {
		t.Errorf("target gone: %q", s)
	}
	wantErr(t, "rmdir a link", f.Unlink(AtCWD, b("c0"), unix.AT_REMOVEDIR), unix.ENOTDIR)
}

func TestCwd(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	buf := make([]byte, 100)
	getcwd := func() string {
		t.Helper()
		n, e := f.Getcwd(buf)
		must(t, "getcwd", e)
		if buf[n-1] != 0 {
			t.Fatalf("no NUL")
		}
		return string(buf[:n-1])
	}
	if s := getcwd(); s != "/" {
		t.Fatalf("cwd %q", s)
	}
	must(t, "mkdir", f.Mkdir(AtCWD, b("tmp"), 0o777))
	must(t, "mkdir", f.Mkdir(AtCWD, b("tmp/go-build123"), 0o700))
	must(t, "chdir", f.Chdir(AtCWD, b("tmp/go-build123")))
	if s := getcwd(); s != "/tmp/go-build123" {
		t.Fatalf("cwd %q", s)
	}
	f.Close(open(t, f, "rel", unix.O_CREAT|unix.O_WRONLY, 0o644))
	stat(t, f, "/tmp/go-build123/rel")
	if _, e := f.Getcwd(buf[:10]); e != unix.ERANGE {
		t.Errorf("short buffer: %v", e)
	}
	must(t, "chdir ..", f.Chdir(AtCWD, b("..")))
	if s := getcwd(); s != "/tmp" {
		t.Fatalf("cwd %q", s)
	}
	wantErr(t, "chdir file", f.Chdir(AtCWD, b("go-build123/rel")), unix.ENOTDIR)
	wantErr(t, "chdir missing", f.Chdir(AtCWD, b("nope")), unix.ENOENT)
	dh := open(t, f, "go-build123", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	// openat relative to a directory handle.
	h, e := f.Open(dh, b("rel"), unix.O_RDONLY, 0)
	must(t, "openat", e)
	wantErr(t, "fchdir file", f.Fchdir(h), unix.ENOTDIR)
	_, e = f.Open(h, b("x"), unix.O_RDONLY, 0)
	wantErr(t, "openat non-dir handle", e, unix.ENOTDIR)
	f.Close(h)
	must(t, "fchdir", f.Fchdir(dh))
	f.Close(dh)
	if s := getcwd(); s != "/tmp/go-build123" {
		t.Fatalf("cwd %q", s)
	}
	// The working directory removed.
	must(t, "unlink", f.Unlink(AtCWD, b("rel"), 0))
	must(t, "rmdir", f.Unlink(AtCWD, b("/tmp/go-build123"), unix.AT_REMOVEDIR))
	if _, e := f.Getcwd(buf); e != unix.ENOENT {
		t.Errorf("getcwd of removed dir: %v", e)
	}
	_, e = f.Open(AtCWD, b("x"), unix.O_CREAT|unix.O_WRONLY, 0o644)
	wantErr(t, "create in removed cwd", e, unix.ENOENT)
	must(t, "chdir /", f.Chdir(AtCWD, b("/")))
	for i := range f.inodes[2:] {
		if f.inodes[i+2].mode != 0 {
			t.Errorf("inode %d still in use", i+2)
		}
	}
}

func TestModesAndTimes(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	old := f.Umask(0)
	if old != 0o022 {
		t.Errorf("umask %o", old)
	}
	h := open(t, f, "f", unix.O_CREAT|unix.O_WRONLY, 0o4777)
	if st := stat(t, f, "f"); st.Mode != unix.S_IFREG|0o4777 {
		t.Errorf("mode %o", st.Mode)
	}
	must(t, "fchmod", f.Fchmod(h, 0o400))
	if st := stat(t, f, "f"); st.Mode != unix.S_IFREG|0o400 {
		t.Errorf("mode %o", st.Mode)
	}
	must(t, "chmod", f.Chmod(AtCWD, b("f"), 0o640, 0))
	if st := stat(t, f, "f"); st.Mode != unix.S_IFREG|0o640 {
		t.Errorf("mode %o", st.Mode)
	}
	wantErr(t, "fchmod bad", f.Fchmod(77, 0), unix.EBADF)
	must(t, "utimes", f.Utimes(AtCWD, b("f"), 1e9, 2e9+5, 0))
	st := stat(t, f, "f")
	if nano(st.Atim) != 1e9 || nano(st.Mtim) != 2e9+5 {
		t.Errorf("times %+v %+v", st.Atim, st.Mtim)
	}
	must(t, "utimes", f.Utimes(AtCWD, b("f"), UtimeOmit, UtimeNow, 0))
	st = stat(t, f, "f")
	if nano(st.Atim) != 1e9 || nano(st.Mtim) < 1e18 {
		t.Errorf("times %+v %+v", st.Atim, st.Mtim)
	}
	before := nano(stat(t, f, "f").Mtim)
	write(t, f, h, "x")
	if after := nano(stat(t, f, "f").Mtim); after < before {
		t.Errorf("write did not move mtime")
	}
	f.Close(h)
}

func TestReadOnly(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	must(t, "mkdir", f.Mkdir(AtCWD, b("pkg"), 0o755))
	must(t, "mkdir", f.Mkdir(AtCWD, b("pkg/testdata"), 0o755))
	h := open(t, f, "pkg/testdata/in.txt", unix.O_CREAT|unix.O_WRONLY, 0o644)
	write(t, f, h, "input")
	f.Close(h)
	must(t, "readonly", f.SetReadOnly(AtCWD, b("pkg")))
	if s := readAll(t, f, "pkg/testdata/in.txt"); s != "input" {
		t.Errorf("read %q", s)
	}
	for _, c := range []struct {
		what string
		e    Errno
	}{
		{"open wronly", func() Errno { _, e := f.Open(AtCWD, b("pkg/testdata/in.txt"), unix.O_WRONLY, 0); return e }()},
		{"open trunc", func() Errno { _, e := f.Open(AtCWD, b("pkg/testdata/in.txt"), unix.O_RDONLY|unix.O_TRUNC, 0); return e }()},
		{"create", func() Errno { _, e := f.Open(AtCWD, b("pkg/new"), unix.O_CREAT|unix.O_WRONLY, 0o644); return e }()},
		{"mkdir", f.Mkdir(AtCWD, b("pkg/testdata/sub"), 0o755)},
		{"unlink", f.Unlink(AtCWD, b("pkg/testdata/in.txt"), 0)},
		{"rmdir", f.Unlink(AtCWD, b("pkg/testdata"), unix.AT_REMOVEDIR)},
		{"rename out", f.Rename(AtCWD, b("pkg/testdata/in.txt"), AtCWD, b("out"), 0)},
		{"truncate", f.Truncate(AtCWD, b("pkg/testdata/in.txt"), 0)},
		{"chmod", f.Chmod(AtCWD, b("pkg/testdata/in.txt"), 0o777, 0)},
		{"symlink", f.Symlink(b("x"), AtCWD, b("pkg/l"))},
		{"utimes", f.Utimes(AtCWD, b("pkg"), UtimeNow, UtimeNow, 0)},
	} {
		wantErr(t, c.what, c.e, unix.EROFS)
	}
	// Existing files open for reading, even with O_CREAT.
	h = open(t, f, "pkg/testdata/in.txt", unix.O_RDONLY|unix.O_CREAT, 0o644)
	f.Close(h)
	// The writable part around it stays writable, and a read-only file
	// can be copied out.
	must(t, "mkdir", f.Mkdir(AtCWD, b("tmp"), 0o755))
}

func TestErrnos(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	must(t, "mkdir", f.Mkdir(AtCWD, b("d"), 0o755))
	f.Close(open(t, f, "file", unix.O_CREAT|unix.O_WRONLY, 0o644))
	long := strings.Repeat("n", NameMax+1)
	openErr := func(path string, flags int) Errno {
		h, e := f.Open(AtCWD, b(path), flags, 0o644)
		if e == 0 {
			f.Close(h)
		}
		return e
	}
	var st unix.Stat_t
	for _, c := range []struct {
		what      string
		got, want Errno
	}{
		{"open missing", openErr("nope", unix.O_RDONLY), unix.ENOENT},
		{"open missing dir", openErr("nope/x", unix.O_CREAT|unix.O_WRONLY), unix.ENOENT},
		{"open empty", openErr("", unix.O_RDONLY), unix.ENOENT},
		{"open through file", openErr("file/x", unix.O_RDONLY), unix.ENOTDIR},
		{"open file/", openErr("file/", unix.O_RDONLY), unix.ENOTDIR},
		{"create x/", openErr("x/", unix.O_CREAT|unix.O_WRONLY), unix.EISDIR},
		{"O_EXCL", openErr("file", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY), unix.EEXIST},
		{"O_DIRECTORY on file", openErr("file", unix.O_RDONLY|unix.O_DIRECTORY), unix.ENOTDIR},
		{"dir for writing", openErr("d", unix.O_RDWR), unix.EISDIR},
		{"O_CREAT on dir", openErr("d", unix.O_CREAT|unix.O_RDONLY), unix.EISDIR},
		{"long name", openErr(long, unix.O_CREAT|unix.O_WRONLY), unix.ENAMETOOLONG},
		{"long path", openErr(strings.Repeat("d/", PathMax/2), unix.O_RDONLY), unix.ENAMETOOLONG},
		{"bad access mode", openErr("file", unix.O_ACCMODE), unix.EINVAL},
		{"mkdir exists", f.Mkdir(AtCWD, b("d"), 0o755), unix.EEXIST},
		{"mkdir file", f.Mkdir(AtCWD, b("file"), 0o755), unix.EEXIST},
		{"mkdir .", f.Mkdir(AtCWD, b("."), 0o755), unix.EEXIST},
		{"mkdir missing parent", f.Mkdir(AtCWD, b("a/b"), 0o755), unix.ENOENT},
		{"mkdir long", f.Mkdir(AtCWD, b(long), 0o755), unix.ENAMETOOLONG},
		{"stat missing", f.Stat(AtCWD, b("nope"), 0, &st), unix.ENOENT},
		{"stat bad flags", f.Stat(AtCWD, b("d"), 1, &st), unix.EINVAL},
		{"stat bad dir handle", f.Stat(42, b("x"), 0, &st), unix.EBADF},
		{"fstat bad", f.Fstat(-1, &st), unix.EBADF},
		{"close bad", f.Close(5), unix.EBADF},
		{"ref bad", f.Ref(500), unix.EBADF},
		{"unlink bad flags", f.Unlink(AtCWD, b("file"), 1), unix.EINVAL},
		{"truncate dir", f.Truncate(AtCWD, b("d"), 0), unix.EISDIR},
		{"truncate negative", f.Truncate(AtCWD, b("file"), -1), unix.EINVAL},
		{"truncate missing", f.Truncate(AtCWD, b("nope"), 0), unix.ENOENT},
	} {
		wantErr(t, c.what, c.got, c.want)
	}
	// Absolute paths ignore the directory handle, even a bad one.
	must(t, "stat absolute", f.Stat(12345, b("/d"), 0, &st))

	h := open(t, f, "file", unix.O_RDONLY, 0)
	buf := make([]byte, 10)
	if _, e := f.Write(h, buf); e != unix.EBADF {
		t.Errorf("write on O_RDONLY: %v", e)
	}
	if _, e := f.Pread(h, buf, -1); e != unix.EINVAL {
		t.Errorf("pread negative: %v", e)
	}
	for _, c := range []struct {
		off    int64
		whence int
		want   Errno
	}{{-1, unix.SEEK_SET, unix.EINVAL}, {-1, unix.SEEK_END, unix.EINVAL}, {0, 9, unix.EINVAL}, {0, unix.SEEK_DATA, unix.ENXIO}} {
		if _, e := f.Seek(h, c.off, c.whence); e != c.want {
			t.Errorf("seek %d %d: %v, want %v", c.off, c.whence, e, c.want)
		}
	}
	f.Close(h)
	if _, e := f.Read(h, buf); e != unix.EBADF {
		t.Errorf("read after close: %v", e)
	}
	h = open(t, f, "file", unix.O_WRONLY, 0)
	if _, e := f.Read(h, buf); e != unix.EBADF {
		t.Errorf("read on O_WRONLY: %v", e)
	}
	// dup: the shared description survives one close.
	must(t, "ref", f.Ref(h))
	must(t, "close", f.Close(h))
	write(t, f, h, "still open")
	must(t, "close", f.Close(h))
	wantErr(t, "close again", f.Close(h), unix.EBADF)
}

func TestPoolExhaustion(t *testing.T) {
	f, s := newFS(t, NumPipes*PipeSize/PageSize+100, 64)
	// Inodes: ENOSPC.
	n := 0
	for ; ; n++ {
		h, e := f.Open(AtCWD, b(fmt.Sprintf("f%d", n)), unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, 0o644)
		if e != 0 {
			wantErr(t, "inodes", e, unix.ENOSPC)
			break
		}
		f.Close(h)
	}
	if n != NumInodes-1 {
		t.Errorf("%d files made", n)
	}
	wantErr(t, "mkdir", f.Mkdir(AtCWD, b("d"), 0o755), unix.ENOSPC)
	for i := 0; i < n; i++ {
		must(t, "unlink", f.Unlink(AtCWD, b(fmt.Sprintf("f%d", i)), 0))
	}
	// Open files: ENFILE.
	f.Close(open(t, f, "x", unix.O_CREAT|unix.O_WRONLY, 0o644))
	var hs []int
	for {
		h, e := f.Open(AtCWD, b("x"), unix.O_RDONLY, 0)
		if e != 0 {
			wantErr(t, "files", e, unix.ENFILE)
			break
		}
		hs = append(hs, h)
	}
	if len(hs) != NumFiles {
		t.Errorf("%d open files", len(hs))
	}
	if _, _, e := f.Pipe(0); e != unix.ENFILE {
		t.Errorf("pipe with no files: %v", e)
	}
	for _, h := range hs {
		f.Close(h)
	}
	// Pages: the FS's limit, a short write, then ENOSPC.
	h := open(t, f, "x", unix.O_WRONLY, 0)
	big := make([]byte, 100*PageSize)
	nw, e := f.Write(h, big)
	if e != 0 || nw != (64-1)*PageSize { // 8 direct, then one index page
		t.Errorf("short write: %d %v", nw, e)
	}
	if _, e := f.Write(h, big); e != unix.ENOSPC {
		t.Errorf("full: %v", e)
	}
	wantErr(t, "symlink when full", f.Symlink(b("t"), AtCWD, b("l")), unix.ENOSPC)
	// The arena (the kernel's frames) running out first: pipes get ENOMEM.
	s.pages.SetLimit(s.pages.InUse() + 3)
	if _, _, e := f.Pipe(0); e != unix.ENOMEM {
		t.Errorf("pipe without pages: %v", e)
	}
	if s.pages.InUse() != 64 {
		t.Errorf("pipe leaked pages: %d", s.pages.InUse())
	}
	s.pages.SetLimit(0)
	f.Close(h)
	must(t, "unlink", f.Unlink(AtCWD, b("x"), 0))
	// Pipes: ENFILE.
	var ps []int
	for {
		r, w, e := f.Pipe(0)
		if e != 0 {
			wantErr(t, "pipes", e, unix.ENFILE)
			break
		}
		ps = append(ps, r, w)
	}
	if len(ps) != 2*NumPipes {
		t.Errorf("%d pipes", len(ps)/2)
	}
	for _, h := range ps {
		f.Close(h)
	}
	if s.pages.InUse() != 0 || f.PagesUsed() != 0 {
		t.Errorf("pages left: %d %d", s.pages.InUse(), f.PagesUsed())
	}
}

func nano(ts unix.Timespec) int64 { return ts.Nano() }

func TestOwners(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	h := open(t, f, "f", unix.O_CREAT|unix.O_RDWR, 0o6755)
	must(t, "chmod", f.Chmod(AtCWD, b("f"), 0o6755, 0))
	must(t, "chown", f.Chown(AtCWD, b("f"), 1000, -1, 0))
	st := stat(t, f, "f")
	// The set-user-ID bit goes, set-group-ID with group execute too.
	if st.Uid != 1000 || st.Gid != 0 || st.Mode != unix.S_IFREG|0o755 {
		t.Errorf("after chown: uid %d gid %d mode %o", st.Uid, st.Gid, st.Mode)
	}
	must(t, "fchown", f.Fchown(h, -1, 50))
	if st := stat(t, f, "f"); st.Uid != 1000 || st.Gid != 50 {
		t.Errorf("after fchown: uid %d gid %d", st.Uid, st.Gid)
	}
	// A symbolic link itself, or what it names.
	must(t, "symlink", f.Symlink(b("f"), AtCWD, b("l")))
	must(t, "lchown", f.Chown(AtCWD, b("l"), 7, 7, unix.AT_SYMLINK_NOFOLLOW))
	if st := stat(t, f, "l"); st.Uid != 7 || st.Gid != 7 {
		t.Errorf("lchown: %d %d", st.Uid, st.Gid)
	}
	if st := stat(t, f, "f"); st.Uid != 1000 {
		t.Errorf("lchown changed the target: %d", st.Uid)
	}
	wantErr(t, "flags", f.Chown(AtCWD, b("f"), 0, 0, unix.AT_REMOVEDIR), unix.EINVAL)
	wantErr(t, "missing", f.Chown(AtCWD, b("nope"), 0, 0, 0), unix.ENOENT)
	// A set-group-ID directory gives its group to what is made in it.
	must(t, "mkdir", f.Mkdir(AtCWD, b("d"), 0o755))
	must(t, "chown d", f.Chown(AtCWD, b("d"), -1, 42, 0))
	must(t, "chmod d", f.Chmod(AtCWD, b("d"), 0o2755, 0))
	f.Close(open(t, f, "d/x", unix.O_CREAT|unix.O_WRONLY, 0o644))
	must(t, "mkdir d/s", f.Mkdir(AtCWD, b("d/s"), 0o755))
	if st := stat(t, f, "d/x"); st.Gid != 42 {
		t.Errorf("file in a set-group-ID directory: gid %d", st.Gid)
	}
	if st := stat(t, f, "d/s"); st.Gid != 42 || st.Mode&unix.S_ISGID == 0 {
		t.Errorf("directory in a set-group-ID directory: gid %d mode %o", st.Gid, st.Mode)
	}
	must(t, "fsync", f.Fsync(h))
	r, w, _ := f.Pipe(0)
	wantErr(t, "fsync pipe", f.Fsync(r), unix.EINVAL)
	f.Close(r)
	f.Close(w)
	f.Close(h)
}
