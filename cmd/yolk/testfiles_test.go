package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The boot archive gives a test its whole module (not only the package's
// directory and testdata): a file in a non-testdata subdirectory, a
// sibling package's file and the module root's, but not .git or a nested
// module; and $GOROOT/lib.
func TestWritePackageTree(t *testing.T) {
	mod := t.TempDir()
	goroot := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":                 "module example.com/m\n",
		"README":                 "root file\n",
		"a/a.go":                 "package a\n",
		"a/a_test.go":            "package a\n",
		"a/fixtures/in.json":     "{}\n",
		"a/testdata/deep/x.txt":  "x\n",
		"b/b.go":                 "package b\n",
		".git/objects/big":       "not a module file\n",
		"nested/go.mod":          "module example.com/m/nested\n",
		"nested/n.go":            "package nested\n",
		"../gr/lib/time/zi.zip":  "",
		"../gr/src/strings/s.go": "",
	} {
		p := filepath.Join(mod, name)
		if strings.HasPrefix(name, "../gr/") {
			p = filepath.Join(goroot, strings.TrimPrefix(name, "../gr/"))
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "a.tar")
	p := listedPackage{ImportPath: "example.com/m/a", Dir: filepath.Join(mod, "a"), Name: "a"}
	note, err := writePackageTree(p, goroot, out)
	if err != nil || note != "" {
		t.Fatalf("note %q, err %v", note, err)
	}
	names := tarNames(t, out)
	has := func(path string) bool { return slices.Contains(names, strings.TrimPrefix(path, "/")) }
	// A nested module's directory is listed, empty, as the package
	// directory's other subdirectories are.
	for _, want := range []string{"a/a.go", "a/fixtures/in.json", "a/testdata/deep/x.txt", "b/b.go", "README", "nested/"} {
		if !has(mod + "/" + want) {
			t.Errorf("archive lacks %s", want)
		}
	}
	for _, not := range []string{".git/objects/big", "nested/n.go"} {
		if has(mod + "/" + not) {
			t.Errorf("archive has %s", not)
		}
	}
	if !has(goroot+"/lib/time/zi.zip") || has(goroot+"/src/strings/s.go") {
		t.Errorf("GOROOT: want lib, not src, for a package outside the standard library: %q", names)
	}
}

// Directories go in nearest the package first: its own tree by depth,
// then by distance, testdata first and then the smaller ones at each
// distance.
func TestModuleDirsOrder(t *testing.T) {
	mod := t.TempDir()
	for _, f := range []string{"go.mod", "p/x.go", "p/sub/deep/y", "big/1", "big/2", "big/3", "small/1", "testdata/t", "far/away/z"} {
		p := filepath.Join(mod, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("12345"), 0o644)
	}
	dirs, err := moduleDirs(mod, filepath.Join(mod, "p"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range dirs {
		r, _ := filepath.Rel(mod, d.path)
		got = append(got, r)
	}
	want := []string{"p", "p/sub", "p/sub/deep", ".", "testdata", "far", "small", "big", "far/away"}
	if !slices.Equal(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
	if d := treeDistance("/a/b/c", "/a/d"); d != 3 {
		t.Errorf("treeDistance = %d", d)
	}
}

func tarNames(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}

// The kernel's routine notes are dropped on the way to test2json, and
// nothing else: not a fault, not a line the program printed.
func TestBootNoteFilter(t *testing.T) {
	var b bytes.Buffer
	f := &bootNoteFilter{w: &b}
	in := "yolk: boot: yolk kernel\nyolk: initrd: 3 entries\n=== RUN   TestA\nyolk: fault: page\nyolk: net: virtio\nyolk: share: virtio-9p \"yolk0\" at /yolk/exe\nPASS\nyolk: exit 0\r\nyolk: exit code is mine\npartial"
	for i := 0; i < len(in); i += 7 { // in pieces, across lines
		f.Write([]byte(in[i:min(i+7, len(in))]))
	}
	f.Flush()
	if want := "=== RUN   TestA\nyolk: fault: page\nPASS\nyolk: exit code is mine\npartial"; b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}

// The package's own tree is always in the archive, over the budget; the
// rest of the module is cut, and the note says so.
func TestWritePackageTreeBudget(t *testing.T) {
	mod := t.TempDir()
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n"), 0o644)
	td := filepath.Join(mod, "p", "testdata")
	os.MkdirAll(td, 0o755)
	for i := range archiveEntries + 10 {
		os.WriteFile(filepath.Join(td, fmt.Sprint(i)), nil, 0o644)
	}
	os.MkdirAll(filepath.Join(mod, "q"), 0o755)
	os.WriteFile(filepath.Join(mod, "q", "q.go"), []byte("package q\n"), 0o644)
	out := filepath.Join(t.TempDir(), "p.tar")
	note, err := writePackageTree(listedPackage{ImportPath: "example.com/m/p", Dir: filepath.Join(mod, "p")}, "", out)
	if err != nil {
		t.Fatal(err)
	}
	names := tarNames(t, out)
	if !slices.Contains(names, strings.TrimPrefix(filepath.Join(td, fmt.Sprint(archiveEntries+9)), "/")) ||
		slices.Contains(names, strings.TrimPrefix(filepath.Join(mod, "q", "q.go"), "/")) || !strings.Contains(note, "left out") {
		t.Errorf("%d entries, note %q", len(names), note)
	}
}
