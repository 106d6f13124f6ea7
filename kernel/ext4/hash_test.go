package ext4_test

import (
	"fmt"
	"hash/crc32"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"yolk/kernel/ext4"
)

func TestCrc32c(t *testing.T) {
	tab := crc32.MakeTable(crc32.Castagnoli)
	long := make([]byte, 10007)
	rand.New(rand.NewSource(1)).Read(long)
	for _, s := range []string{"", "a", "123456789", "The quick brown fox jumps over the lazy dog", string(long), string(long[3:4099])} {
		if got, want := ext4.Crc32c([]byte(s)), crc32.Checksum([]byte(s), tab); got != want {
			t.Errorf("crc32c(%q) = %#x, want %#x", s, got, want)
		}
	}
}

// TestDirHash compares the directory hashes with debugfs's dx_hash.
func TestDirHash(t *testing.T) {
	if _, err := exec.LookPath("debugfs"); err != nil {
		t.Skipf("debugfs not installed: %v", err)
	}
	re := regexp.MustCompile(`Hash of .* is 0x([0-9a-f]+)`)
	names := []string{"a", "hello", "entry-0001-xxxxxxxxxxxxxxxx", "h\xc3\xa9llo\xff", "0123456789abcdef0123456789abcdef-longer-than-32",
		string(make([]byte, 0)) + "x"}
	seeds := []struct {
		uuid string
		seed [4]uint32
	}{
		{"00000000-0000-0000-0000-000000000000", [4]uint32{}},
		{"01234567-89ab-cdef-0123-456789abcdef", [4]uint32{0x67452301, 0xefcdab89, 0x67452301, 0xefcdab89}},
	}
	for _, alg := range []struct {
		name string
		v    uint8
	}{{"legacy", 0}, {"half_md4", 1}, {"tea", 2}} {
		for _, s := range seeds {
			for _, n := range names {
				out, _ := exec.Command("debugfs", "-R", fmt.Sprintf("dx_hash -h %s -s %s %s", alg.name, s.uuid, n), os.DevNull).CombinedOutput()
				m := re.FindSubmatch(out)
				if m == nil {
					t.Fatalf("debugfs: %s", out)
				}
				want, _ := strconv.ParseUint(string(m[1]), 16, 32)
				got, e := ext4.DirHash([]byte(n), alg.v, &s.seed)
				if e != 0 || got != uint32(want) {
					t.Errorf("%s %s %q: %#x, debugfs %#x", alg.name, s.uuid, n, got, want)
				}
			}
		}
	}
}

// TestHtree checks that the big directory is indexed and that every name
// in it is found through the index, with signed and unsigned hashes and
// each hash version.
func TestHtree(t *testing.T) {
	haveTools(t)
	src := tree(t)
	names, err := os.ReadDir(filepath.Join(src, "many"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct{ name, hash, flags string }{
		{"half_md4-signed", "1", "1"}, {"half_md4-unsigned", "1", "2"},
		{"tea-signed", "2", "1"}, {"tea-unsigned", "2", "2"}, {"legacy-unsigned", "0", "2"},
	} {
		t.Run(v.name, func(t *testing.T) {
			img := makeImage(t, src, "1G", "-t", "ext4")
			run(t, 0, "debugfs", "-w", "-R", "ssv flags "+v.flags, img)
			run(t, 0, "debugfs", "-w", "-R", "ssv def_hash_version "+v.hash, img)
			run(t, 1, "e2fsck", "-fyD", img)
			fsck(t, img)
			fs, _, r, e := mount(t, img, true)
			if e != 0 {
				t.Fatalf("mount: %v %s", e, r.Msg)
			}
			dir, e := fs.Lookup(ext4.RootIno, []byte("many"))
			if e != 0 {
				t.Fatal(e)
			}
			for _, n := range names {
				ino, indexed, e := fs.DxLookup(dir, []byte(n.Name()))
				if !indexed {
					t.Fatalf("%s: the directory is not indexed or its index is refused", n.Name())
				}
				if e != 0 || ino == 0 {
					t.Fatalf("%q: %d %v", n.Name(), ino, e)
				}
			}
			if _, _, e := fs.DxLookup(dir, []byte("no-such-name")); e != ext4.ENOENT {
				t.Fatalf("missing name: %v", e)
			}
		})
	}
}
