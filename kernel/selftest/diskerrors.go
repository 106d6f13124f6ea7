package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ext4 when the disk cannot take more: the qemu harness attaches, beside
// TestDiskFS's disk, a 2 MiB ext4 disk at $YOLK_EXT4_FULL (about 900 KiB
// free) that this test fills (e2fsck -fn judges it after the guest) and
// a read-only disk at $YOLK_EXT4_RO. A full disk gives ENOSPC and the
// program goes on; a read-only one EROFS for every change, its files
// still readable, but for one whose first block the device fails to
// read (QEMU's blkdebug): EIO; never a fault or a hang. Linux's answers are the
// reference.

func init() { tests = append(tests, test{"TestDiskErrors", testDiskErrors}) }

func testDiskErrors(t *T) {
	full, ro := os.Getenv("YOLK_EXT4_FULL"), os.Getenv("YOLK_EXT4_RO")
	if full == "" || ro == "" {
		t.Skipf("no full or read-only ext4 disk attached (YOLK_EXT4_FULL, YOLK_EXT4_RO unset)")
	}
	diskFull(t, full)
	diskReadOnly(t, ro)
}

// diskFull fills the disk at root with one file until ENOSPC, checks
// that what was written reads back and that fsync, fallocate and a
// create behave as Linux's, then frees the space and writes again.
func diskFull(t *T, root string) {
	var before unix.Statfs_t
	if err := unix.Statfs(root, &before); err != nil {
		t.Fatalf("statfs %s: %v", root, err)
	}
	big := filepath.Join(root, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatalf("create %s: %v", big, err)
	}
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	var written int64
	var werr error
	for i := 0; i < 100; i++ { // 6.25 MiB: far past the disk's 2
		n, err := f.Write(chunk)
		written += int64(n)
		if err != nil {
			werr = err
			break
		}
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("filling %s: %v after %d bytes; want ENOSPC", root, werr, written)
	}
	if written < 256<<10 || written > 2<<20 {
		t.Errorf("a 2 MiB disk took %d bytes before ENOSPC", written)
	}
	// Linux's write returns the bytes it could place before ENOSPC:
	// whatever went in reads back whole.
	if err := f.Sync(); err != nil {
		t.Errorf("fsync after ENOSPC: %v", err)
	}
	if st, err := f.Stat(); err != nil || st.Size() != written {
		t.Errorf("size %v, %v; want the %d bytes written", st, err, written)
	}
	if err := syscall.Fallocate(int(f.Fd()), 0, written, 1<<20); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("fallocate 1 MiB on the full disk: %v; want ENOSPC", err)
	}
	f.Close()
	got, err := os.ReadFile(big)
	if err != nil || int64(len(got)) != written {
		t.Fatalf("reading back: %d bytes, %v; want %d", len(got), err, written)
	}
	for off := int64(0); off < written; off += int64(len(chunk)) {
		end := min(off+int64(len(chunk)), written)
		if !bytes.Equal(got[off:end], chunk[:end-off]) {
			t.Fatalf("bytes at %d differ from those written", off)
		}
	}
	var at unix.Statfs_t
	if err := unix.Statfs(root, &at); err != nil || at.Bavail > before.Bavail/20 {
		t.Errorf("statfs on the full disk: %d of %d blocks available, %v", at.Bavail, before.Bavail, err)
	}
	// The program goes on: free the space and write again.
	if err := os.Remove(big); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if err := unix.Statfs(root, &at); err != nil || at.Bavail < before.Bavail*9/10 {
		t.Errorf("statfs after the remove: %d of %d blocks available, %v", at.Bavail, before.Bavail, err)
	}
	again := filepath.Join(root, "again")
	if err := os.WriteFile(again, chunk, 0o644); err != nil {
		t.Fatalf("writing after the space came back: %v", err)
	}
	if b, err := os.ReadFile(again); err != nil || !bytes.Equal(b, chunk) {
		t.Errorf("reading after the space came back: %d bytes, %v", len(b), err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "keep.txt")); err != nil || string(b) != "kept\n" {
		t.Errorf("keep.txt after all that: %q, %v", b, err)
	}
}

// diskReadOnly: every change to the read-only disk at root is EROFS, as
// on Linux's read-only mount, and its files read.
func diskReadOnly(t *T, root string) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(root, &sfs); err != nil || sfs.Type != 0xEF53 || sfs.Flags&unix.ST_RDONLY == 0 {
		t.Errorf("statfs %s: type %#x flags %#x, %v; want ext4, ST_RDONLY", root, sfs.Type, sfs.Flags, err)
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err != nil || !strings.Contains(string(mi), " "+root+" ro,") {
		t.Errorf("/proc/self/mountinfo: no read-only line for %s: %v\n%s", root, err, mi)
	}
	keep := filepath.Join(root, "keep.txt")
	if b, err := os.ReadFile(keep); err != nil || string(b) != "kept\n" {
		t.Errorf("read %s: %q, %v", keep, b, err)
	}
	for _, c := range []struct {
		what string
		err  error
	}{
		{"create", func() error { _, err := os.Create(filepath.Join(root, "new")); return err }()},
		{"open O_WRONLY", func() error { _, err := os.OpenFile(keep, os.O_WRONLY, 0); return err }()},
		{"open O_RDWR", func() error { _, err := os.OpenFile(keep, os.O_RDWR, 0); return err }()},
		{"mkdir", os.Mkdir(filepath.Join(root, "d"), 0o755)},
		{"unlink", os.Remove(keep)},
		{"rename", os.Rename(keep, filepath.Join(root, "moved"))},
		{"link", os.Link(keep, filepath.Join(root, "linked"))},
		{"symlink", os.Symlink("keep.txt", filepath.Join(root, "sym"))},
		{"truncate", os.Truncate(keep, 0)},
		{"chmod", os.Chmod(keep, 0o600)},
	} {
		if !errors.Is(c.err, syscall.EROFS) {
			t.Errorf("%s on the read-only disk: %v; want EROFS", c.what, c.err)
		}
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "kept\n" {
		t.Errorf("read %s after the refusals: %q, %v", keep, b, err)
	}
	// The device fails the reads of bad.txt's first block: EIO, and the
	// rest of the disk still reads.
	bad := filepath.Join(root, "bad.txt")
	if st, err := os.Stat(bad); err != nil || st.Size() != 8192 {
		t.Errorf("stat %s: %v, %v", bad, st, err)
	}
	for range 2 {
		if b, err := os.ReadFile(bad); !errors.Is(err, syscall.EIO) {
			t.Errorf("read %s (its first block fails on the device): %d bytes, %v; want EIO", bad, len(b), err)
		}
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "kept\n" {
		t.Errorf("read %s after the EIO: %q, %v", keep, b, err)
	}
}
