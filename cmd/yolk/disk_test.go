package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for s, want := range map[string]int64{"1M": 1 << 20, "16M": 16 << 20, "1G": 1 << 30, "2048k": 2 << 20, "1048576": 1 << 20, "1T": 1 << 40} {
		if got, err := parseSize(s); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "G", "-1M", "1X", "512K", "1048577", "1.5G", "99999999999T"} {
		if got, err := parseSize(s); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", s, got)
		}
	}
}

// disk create makes an image e2fsck finds clean, with the -from tree and
// the label in it (e2fsprogs' own tools judge it).
func TestDiskCreate(t *testing.T) {
	fsck, err := e2fsprog("e2fsck")
	if err != nil {
		t.Skip(err)
	}
	debugfs, err := e2fsprog("debugfs")
	if err != nil {
		t.Skip(err)
	}
	if _, err := e2fsprog("mkfs.ext4"); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	os.MkdirAll(filepath.Join(tree, "sub", "deeper"), 0o755)
	os.WriteFile(filepath.Join(tree, "hello.txt"), []byte("hello, disk\n"), 0o644)
	os.WriteFile(filepath.Join(tree, "sub", "deeper", "data.bin"), make([]byte, 100<<10), 0o600)
	os.Symlink("hello.txt", filepath.Join(tree, "link"))
	img := filepath.Join(dir, "d.img")
	if err := diskCreate(img, "16M", tree, "yolkdata"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(img); err != nil || st.Size() != 16<<20 {
		t.Fatalf("image: %v, %v", st, err)
	}
	if out, err := exec.Command(fsck, "-fn", img).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck -fn: %v\n%s", err, out)
	}
	out, err := exec.Command(debugfs, "-R", "ls -p /", img).CombinedOutput()
	if err != nil {
		t.Fatalf("debugfs ls: %v\n%s", err, out)
	}
	for _, name := range []string{"/hello.txt/", "/sub/", "/link/", "/lost+found/"} {
		if !strings.Contains(string(out), name) {
			t.Errorf("debugfs ls / lacks %s:\n%s", name, out)
		}
	}
	out, _ = exec.Command(debugfs, "-R", "cat /hello.txt", img).CombinedOutput()
	if !strings.Contains(string(out), "hello, disk") {
		t.Errorf("cat /hello.txt: %s", out)
	}
	out, _ = exec.Command(debugfs, "-R", "stat /sub/deeper/data.bin", img).CombinedOutput()
	if !strings.Contains(string(out), "Size: 102400") {
		t.Errorf("stat data.bin: %s", out)
	}
	out, _ = exec.Command(debugfs, "-R", "stats", img).CombinedOutput()
	if !strings.Contains(string(out), "Filesystem volume name:   yolkdata") || !strings.Contains(string(out), "metadata_csum") {
		t.Errorf("stats: label or metadata_csum missing:\n%.600s", out)
	}
	// An existing file is left alone; a bad size or tree is refused.
	if err := diskCreate(img, "16M", "", ""); err == nil {
		t.Error("an existing file overwritten")
	}
	if err := diskCreate(filepath.Join(dir, "x.img"), "16M", filepath.Join(dir, "none"), ""); err == nil {
		t.Error("a missing -from accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "x.img")); err == nil {
		t.Error("a refused image left behind")
	}
}
