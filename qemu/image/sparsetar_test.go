package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// sparseFile writes a file of size bytes with data at the given offsets
// (4 KiB of a repeated byte each) and holes elsewhere.
func sparseFile(t *testing.T, size int64, at []int64) (*os.File, []byte) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "disk.raw"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, size)
	for i, off := range at {
		b := bytes.Repeat([]byte{byte(i + 1)}, dataBlock)
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
		copy(want[off:], b)
	}
	return f, want
}

// TestSparseTar writes sparse files as GCE's tar (old GNU format, 'S'
// headers, extension headers past four regions) and reads them back with
// archive/tar and, when installed, GNU tar: the name, the size, the
// bytes, holes included.
func TestSparseTar(t *testing.T) {
	const size = 64 << 20
	for _, c := range []struct {
		name string
		at   []int64
	}{
		{"no data", nil},
		{"ends in data", []int64{0, 1 << 20, size - dataBlock}},
		{"ends in a hole", []int64{8192, 3 << 20}},
		{"adjacent blocks merge", []int64{0, dataBlock, 2 * dataBlock}},
		{"extension headers", func() (at []int64) {
			for i := range int64(50) { // 4 in the header, 21 per extension
				at = append(at, i*(1<<20)+dataBlock)
			}
			return
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, want := sparseFile(t, size, c.at)
			regions, err := DataRegions(f, size)
			if err != nil {
				t.Fatal(err)
			}
			var wantRegions []SparseRegion
			for _, off := range c.at {
				if k := len(wantRegions) - 1; k >= 0 && wantRegions[k].Offset+wantRegions[k].Length == off {
					wantRegions[k].Length += dataBlock
				} else {
					wantRegions = append(wantRegions, SparseRegion{off, dataBlock})
				}
			}
			if !reflect.DeepEqual(regions, wantRegions) {
				t.Errorf("DataRegions %v, want %v", regions, wantRegions)
			}
			var buf bytes.Buffer
			mtime := time.Unix(1700000000, 0)
			if err := WriteSparseTar(&buf, "disk.raw", f, size, regions, mtime); err != nil {
				t.Fatal(err)
			}
			if buf.Len()%tarBlock != 0 || buf.Len() > 8<<20 {
				t.Errorf("archive of %d bytes: want whole blocks, the holes left out", buf.Len())
			}
			h := buf.Bytes()[:tarBlock]
			if h[156] != 'S' || string(h[257:265]) != "ustar  \x00" {
				t.Errorf("header type %q, magic %q: want 'S' and old GNU's", h[156], h[257:265])
			}
			tr := tar.NewReader(bytes.NewReader(buf.Bytes()))
			hdr, err := tr.Next()
			if err != nil {
				t.Fatal(err)
			}
			if hdr.Name != "disk.raw" || hdr.Size != size || hdr.Format != tar.FormatGNU || !hdr.ModTime.Equal(mtime) {
				t.Errorf("entry %q, size %d, format %v, mtime %v", hdr.Name, hdr.Size, hdr.Format, hdr.ModTime)
			}
			got, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Error("the archive's disk.raw differs from the file")
			}
			if _, err := tr.Next(); err != io.EOF {
				t.Errorf("after disk.raw: %v, want the end of the archive", err)
			}
			if _, err := exec.LookPath("tar"); err == nil {
				dir := t.TempDir()
				cmd := exec.Command("tar", "-xSf", "-", "-C", dir)
				cmd.Stdin = bytes.NewReader(buf.Bytes())
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("GNU tar: %v\n%s", err, out)
				}
				if got, err := os.ReadFile(filepath.Join(dir, "disk.raw")); err != nil || !bytes.Equal(got, want) {
					t.Errorf("GNU tar extracted a different disk.raw (%v)", err)
				}
			}
		})
	}
}

func TestWriteGCETar(t *testing.T) {
	f, want := sparseFile(t, 64<<20, []int64{0, 32 << 20, 64<<20 - dataBlock})
	out := filepath.Join(t.TempDir(), "disk.tar.gz")
	if err := WriteGCETar(out, f.Name()); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(out); err != nil || st.Size() > 1<<20 {
		t.Fatalf("GCE archive %v, %v: want a small file", st, err)
	}
	gz, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	hdr, err := tr.Next()
	if err != nil || hdr.Name != "disk.raw" || hdr.Size != 64<<20 {
		t.Fatalf("entry %+v, %v", hdr, err)
	}
	got, err := io.ReadAll(tr)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("disk.raw read back differs (%v)", err)
	}
}

func TestTarNumber(t *testing.T) {
	f := make([]byte, 12)
	tarNumber(f, 0o644)
	if string(f) != "00000000644\x00" {
		t.Errorf("octal: %q", f)
	}
	tarNumber(f, 1<<40) // past 11 octal digits: base 256
	if f[0] != 0x80 || f[6] != 1 || f[11] != 0 {
		t.Errorf("base-256: % x", f)
	}
}
