package linuxref

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"yolk/qemu"
)

// TestFreshDisks: each boot's copy has the image's bytes and size (a
// tail of zeroes and a piece that is not a whole 64 KiB included), its
// zero pieces left as holes, and the disk names the copy.
func TestFreshDisks(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "base.img")
	b := make([]byte, 5<<20+1234)
	copy(b[100:], "superblock")
	copy(b[3<<20:], bytes.Repeat([]byte{7}, 70000))
	if err := os.WriteFile(img, b, 0o644); err != nil {
		t.Fatal(err)
	}
	disks, err := FreshDisks([]qemu.Disk{{File: img, If: "virtio", GuestPath: "/mnt/b"}}, dir, "linux-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(disks) != 1 || disks[0].File != filepath.Join(dir, "linux-1-disk0.img") || disks[0].GuestPath != "/mnt/b" {
		t.Fatalf("disks %+v", disks)
	}
	got, err := os.ReadFile(disks[0].File)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b) {
		t.Fatalf("the copy differs (%d bytes, want %d)", len(got), len(b))
	}
	st, err := os.Stat(disks[0].File)
	if err != nil {
		t.Fatal(err)
	}
	if used := st.Sys().(*syscall.Stat_t).Blocks * 512; used > 1<<20 {
		t.Errorf("the copy uses %d bytes of disk: holes not kept", used)
	}
}
