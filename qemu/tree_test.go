package qemu

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestTreeAddDir: without recursive, a directory's subdirectories are in
// the archive as empty directories (a listing sees them), their contents
// are not; with recursive, everything is.
func TestTreeAddDir(t *testing.T) {
	host := t.TempDir()
	for _, f := range []string{"a.go", "sub/b.go", "testdata/c"} {
		p := filepath.Join(host, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, rec := range []bool{false, true} {
		tr := NewTree()
		if err := tr.AddDir(host, "/pkg", rec); err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(t.TempDir(), "tree.tar")
		if err := tr.WriteFile(name); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		r := tar.NewReader(f)
		for {
			h, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, h.Name)
		}
		f.Close()
		want := []string{"pkg/", "pkg/a.go", "pkg/sub/", "pkg/testdata/"}
		if rec {
			want = append(want, "pkg/sub/b.go", "pkg/testdata/c")
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("recursive=%v: archive %q, want %q", rec, got, want)
		}
	}
}
