package fs

import (
	"archive/tar"
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tarLog collects the entries Untar reports.
type tarLog struct{ got *[]string }

func (l tarLog) Failed(p []byte, e Errno) { *l.got = append(*l.got, fmt.Sprintf("%s: %v", p, e)) }

// makeTar is a ustar archive of hdrs, each file's body its name.
func makeTar(t *testing.T, hdrs []*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, h := range hdrs {
		h.Format = tar.FormatUSTAR
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(h.Name))
		}
		if err := w.WriteHeader(h); err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		if h.Typeflag == tar.TypeReg {
			w.Write([]byte(h.Name))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestUntar: modes and times, symbolic links, a name split into ustar's
// prefix, an entry replacing a file, the trees it made read-only and
// those that existed left writable, entries skipped and refused.
func TestUntar(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	must(t, "mkdir /tmp", f.Mkdir(AtCWD, b("/tmp"), 0o777))
	must(t, "chmod /tmp", f.Chmod(AtCWD, b("/tmp"), 0o1777, 0))
	must(t, "mkdir /etc", f.Mkdir(AtCWD, b("/etc"), 0o755))
	must(t, "write /etc/hosts", f.WriteFile(b("/etc/hosts"), b("boot's"), 0o644))

	long := "tmp/pkg/" + strings.Repeat("d", 60) + "/" + strings.Repeat("e", 80)
	t1, t2 := time.Unix(1_600_000_000, 0), time.Unix(1_700_000_000, 0)
	a := makeTar(t, []*tar.Header{
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o700, ModTime: t1},
		{Name: "tmp/pkg/", Typeflag: tar.TypeDir, Mode: 0o750, ModTime: t1},
		{Name: "tmp/pkg/a.txt", Typeflag: tar.TypeReg, Mode: 0o640, ModTime: t2},
		{Name: "tmp/pkg/link", Typeflag: tar.TypeSymlink, Linkname: "a.txt", ModTime: t2},
		{Name: "tmp/pkg/hard", Typeflag: tar.TypeLink, Linkname: "tmp/pkg/a.txt"},
		{Name: "tmp/pkg/fifo", Typeflag: tar.TypeFifo, Mode: 0o644},
		{Name: "tmp/pkg/" + strings.Repeat("d", 60) + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: t1},
		{Name: long, Typeflag: tar.TypeReg, Mode: 0o600, ModTime: t2},
		{Name: "etc/hosts", Typeflag: tar.TypeReg, Mode: 0o444, ModTime: t2},
		{Name: "nodir/x", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: t2},
		{Name: "top/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: t1},
		{Name: "top/f", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: t2},
	})
	if len(long) <= 100 || !bytes.Contains(a, b(strings.Repeat("d", 60))) {
		t.Fatalf("the long name is %d bytes", len(long))
	}
	var got []string
	made, written, bad := Untar(f, new(Tar), a, tarLog{&got})
	wantWritten := int64(len("tmp/pkg/a.txt") + len(long) + len("etc/hosts") + len("nodir/x") + len("top/f"))
	if made != 9 || written != wantWritten || bad != 3 {
		t.Errorf("Untar: %d made, %d bytes, %d skipped; want 9, %d, 3", made, written, bad, wantWritten)
	}
	if len(got) != 1 || got[0] != "/nodir/x: no such file or directory" {
		t.Errorf("reported %q, want /nodir/x's ENOENT", got)
	}

	for _, c := range []struct {
		path  string
		mode  uint32
		mtime time.Time
	}{
		{"/tmp", unix.S_IFDIR | 0o1777, time.Time{}},    // existed: kept
		{"/tmp/pkg", unix.S_IFDIR | 0o750, time.Time{}}, // its entries since changed its mtime
		{"/tmp/pkg/a.txt", unix.S_IFREG | 0o640, t2},
		{"/" + long, unix.S_IFREG | 0o600, t2},
		{"/etc/hosts", unix.S_IFREG | 0o444, t2},
		{"/top", unix.S_IFDIR | 0o755, time.Time{}},
	} {
		st := stat(t, f, c.path)
		if st.Mode != c.mode {
			t.Errorf("%s: mode %o, want %o", c.path, st.Mode, c.mode)
		}
		if !c.mtime.IsZero() && nano(st.Mtim) != c.mtime.UnixNano() {
			t.Errorf("%s: mtime %d, want %d", c.path, nano(st.Mtim), c.mtime.UnixNano())
		}
	}
	if s := readAll(t, f, "/tmp/pkg/link"); s != "tmp/pkg/a.txt" {
		t.Errorf("through the link: %q", s)
	}
	var l [64]byte
	if n, e := f.Readlink(AtCWD, b("/tmp/pkg/link"), l[:]); e != 0 || string(l[:n]) != "a.txt" {
		t.Errorf("readlink: %q, %v", l[:n], e)
	}
	if s := readAll(t, f, "/"+long); s != long {
		t.Errorf("%s: %q", long, s)
	}
	if s := readAll(t, f, "/etc/hosts"); s != "etc/hosts" {
		t.Errorf("/etc/hosts: %q, want the archive's", s)
	}
	for _, p := range []string{"/tmp/pkg/hard", "/tmp/pkg/fifo", "/nodir"} {
		var st unix.Stat_t
		wantErr(t, p, f.Stat(AtCWD, b(p), unix.AT_SYMLINK_NOFOLLOW, &st), unix.ENOENT)
	}

	// What it made is read-only; what existed is not.
	for _, p := range []string{"/tmp/pkg/new", "/top/new", "/" + long + "x"} {
		_, e := f.Open(AtCWD, b(p), unix.O_CREAT|unix.O_WRONLY, 0o644)
		wantErr(t, "create "+p, e, unix.EROFS)
	}
	_, e := f.Open(AtCWD, b("/etc/hosts"), unix.O_WRONLY, 0)
	wantErr(t, "open /etc/hosts for writing", e, unix.EROFS)
	for _, p := range []string{"/tmp/new", "/etc/new"} {
		h := open(t, f, p, unix.O_CREAT|unix.O_WRONLY, 0o644)
		f.Close(h)
	}
}

// TestUntarBadHeader: a header with a bad checksum ends the archive,
// counted as one skipped; a directory keeps the archive's mtime; an
// empty archive makes nothing.
func TestUntarBadHeader(t *testing.T) {
	f, _ := newFS(t, 1024, 1024)
	a := makeTar(t, []*tar.Header{
		{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(1_600_000_000, 0)},
		{Name: "b/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "c/", Typeflag: tar.TypeDir, Mode: 0o755},
	})
	a[512+1] = 'x' // b's name: its checksum no longer matches
	var got []string
	if made, written, bad := Untar(f, new(Tar), a, tarLog{&got}); made != 1 || written != 0 || bad != 1 || len(got) != 0 {
		t.Errorf("Untar: %d made, %d bytes, %d skipped, reported %q; want 1, 0, 1, none", made, written, bad, got)
	}
	var st unix.Stat_t
	must(t, "stat /a", f.Stat(AtCWD, b("/a"), 0, &st))
	if nano(st.Mtim) != 1_600_000_000e9 {
		t.Errorf("/a: mtime %d, want the archive's", nano(st.Mtim))
	}
	wantErr(t, "stat /c", f.Stat(AtCWD, b("/c"), 0, &st), unix.ENOENT)
	if made, written, bad := Untar(f, new(Tar), make([]byte, 1024), tarLog{&got}); made != 0 || written != 0 || bad != 0 {
		t.Errorf("empty archive: %d, %d, %d", made, written, bad)
	}
}
