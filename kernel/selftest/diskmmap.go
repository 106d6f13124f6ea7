package main

import (
	"bytes"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Memory mappings of files on an ext4 disk (kernel/disk's page cache,
// docs/disks.md), on the disk the harness attaches at $YOLK_EXT4: a
// shared mapping and read(2)/write(2) see each other's bytes at once
// (bbolt reads through a read-only shared mapping what it wrote with
// pwrite; SQLite's WAL index is a shared writable mapping), a private
// one copies on write, msync, fsync and munmap put a shared mapping's
// bytes in the file, a truncation makes the pages past the end raise
// SIGBUS. Linux's answers are the reference (the program passes on the
// host against a loop-mounted copy: YOLK_EXT4=/mnt/x).

func init() { tests = append(tests, test{"TestDiskMmap", testDiskMmap}) }

func testDiskMmap(t *T) {
	root := os.Getenv("YOLK_EXT4")
	if root == "" {
		t.Skipf("no ext4 disk attached (YOLK_EXT4 unset)")
	}
	dir := filepath.Join(root, "mmap")
	os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("mkdir: %v", err)
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "f")
	const size = 3*pageSize + 100
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i/pageSize)
	}
	if err := os.WriteFile(name, want, 0o644); err != nil {
		t.Fatalf("write: %v", err)
	}
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(fd)
	sh, err := unix.Mmap(fd, 0, 4*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap MAP_SHARED of a disk file: %v", err)
	}
	defer unix.Munmap(sh)
	if !bytes.Equal(sh[:size], want) {
		t.Errorf("the shared mapping does not hold the file's bytes")
	}

	// A store through the mapping, then read(2) on another descriptor.
	copy(sh[pageSize+10:], "STORED")
	copy(want[pageSize+10:], "STORED")
	got := make([]byte, 6)
	if b, err := os.ReadFile(name); err != nil || !bytes.Equal(b, want) {
		t.Errorf("read(2) after a store through the shared mapping: %d bytes, %v; the store not seen", len(b), err)
	}
	// pwrite, then the mapping (bbolt's pattern).
	if _, err := unix.Pwrite(fd, []byte("PWRITE"), 2*pageSize+5); err != nil {
		t.Fatalf("pwrite: %v", err)
	}
	copy(want[2*pageSize+5:], "PWRITE")
	if string(sh[2*pageSize+5:2*pageSize+11]) != "PWRITE" {
		t.Errorf("the shared mapping after pwrite: %q, want PWRITE", sh[2*pageSize+5:2*pageSize+11])
	}
	// A read-only shared mapping of a second descriptor sees both.
	fd2, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open O_RDONLY: %v", err)
	}
	ro, err := unix.Mmap(fd2, 0, 3*pageSize, unix.PROT_READ, unix.MAP_SHARED)
	unix.Close(fd2)
	if err != nil {
		t.Fatalf("mmap PROT_READ MAP_SHARED: %v", err)
	}
	if !bytes.Equal(ro, want[:3*pageSize]) {
		t.Errorf("a second (read-only) mapping does not see the first's store and pwrite")
	}
	sh[5] = 'X'
	want[5] = 'X'
	if ro[5] != 'X' {
		t.Errorf("two mappings of one file: a store through one not seen through the other")
	}
	unix.Munmap(ro)

	// MAP_PRIVATE: sees the file until it writes, its writes stay its own.
	pr, err := unix.Mmap(fd, 0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap MAP_PRIVATE: %v", err)
	}
	if !bytes.Equal(pr, want[:2*pageSize]) {
		t.Errorf("the private mapping does not hold the file's bytes")
	}
	copy(pr[100:], "PRIVATE")
	if _, err := unix.Pread(fd, got, 100); err != nil || !bytes.Equal(got, want[100:106]) {
		t.Errorf("pread after a store through a private mapping: %q, %v; want the file's %q", got, err, want[100:106])
	}
	if !bytes.Equal(sh[100:106], want[100:106]) {
		t.Errorf("the shared mapping after a store through a private one: %q", sh[100:106])
	}
	unix.Munmap(pr)

	// msync, then a new open reads it; fsync too.
	copy(sh[3*pageSize:], "MSYNC")
	copy(want[3*pageSize:], "MSYNC")
	if err := unix.Msync(sh, unix.MS_SYNC); err != nil {
		t.Errorf("msync: %v", err)
	}
	if b, err := os.ReadFile(name); err != nil || !bytes.Equal(b, want) {
		t.Errorf("reopened after msync: %d bytes, %v; not the mapping's", len(b), err)
	}
	if err := unix.Fsync(fd); err != nil {
		t.Errorf("fsync: %v", err)
	}

	// A second file written only through its mapping, then unmapped: the
	// bytes are in the file (read(2) from ext4 now, no cache left).
	n2 := filepath.Join(dir, "g")
	g, err := os.Create(n2)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := g.Truncate(2 * pageSize); err != nil {
		t.Fatalf("ftruncate: %v", err)
	}
	gm, err := unix.Mmap(int(g.Fd()), 0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap of a file grown by ftruncate: %v", err)
	}
	for i := range gm {
		gm[i] = byte(i % 251)
	}
	if err := unix.Munmap(gm); err != nil {
		t.Errorf("munmap: %v", err)
	}
	g.Close()
	if b, err := os.ReadFile(n2); err != nil || len(b) != 2*pageSize || b[pageSize+3] != byte((pageSize+3)%251) || b[17] != 17 {
		t.Errorf("read(2) after munmap: %d bytes, %v; not what was stored through the mapping", len(b), err)
	}

	// A file grown by ftruncate after mmap reads zeroes there; a pwrite
	// past the end grows it and the mapping sees it.
	if err := unix.Ftruncate(fd, 4*pageSize); err != nil {
		t.Fatalf("ftruncate up: %v", err)
	}
	want = append(want, make([]byte, 4*pageSize-size)...)
	wantNoFault(t, "shared: the page the file grew to", &sh[4*pageSize-1], false)
	if !bytes.Equal(sh, want) {
		t.Errorf("after growing by ftruncate: not the file's bytes then zeroes")
	}
	// Shrunk while mapped: the pages past the new end raise SIGBUS, the
	// first reads; grown again, the bytes past the old end are zeroes.
	if err := unix.Ftruncate(fd, 100); err != nil {
		t.Fatalf("ftruncate down: %v", err)
	}
	wantNoFault(t, "shared: the first page after the file shrank", &sh[pageSize-1], false)
	wantBus(t, "shared: read of a page past the new end", &sh[pageSize+1], false)
	wantBus(t, "shared: write to a page past the new end", &sh[3*pageSize+5], true)
	if sh[99] != want[99] || sh[100] != 0 {
		t.Errorf("the first page after the file shrank: %#x %#x, want %#x 0", sh[99], sh[100], want[99])
	}
	if err := os.Truncate(name, 2*pageSize); err != nil {
		t.Fatalf("truncate(2): %v", err)
	}
	if sh[pageSize+1] != 0 || sh[200] != 0 {
		t.Errorf("grown again after shrinking: %#x %#x, want zeroes", sh[pageSize+1], sh[200])
	}
	if _, err := unix.Pwrite(fd, []byte("END"), 3*pageSize); err != nil {
		t.Fatalf("pwrite past the end: %v", err)
	}
	if string(sh[3*pageSize:3*pageSize+3]) != "END" {
		t.Errorf("the mapping after a pwrite past the end: %q", sh[3*pageSize:3*pageSize+3])
	}
	// O_TRUNC from another open empties it: every page faults.
	fd3, err := unix.Open(name, unix.O_RDWR|unix.O_TRUNC|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open O_TRUNC: %v", err)
	}
	unix.Close(fd3)
	wantBus(t, "shared: the first page after O_TRUNC", &sh[0], false)

	// Mapped read-only, open read-only, a shared writable mapping is
	// EACCES; a directory is ENODEV.
	rfd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		if _, err := unix.Mmap(rfd, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != unix.EACCES {
			t.Errorf("a shared writable mapping of a file open read-only: %v, want EACCES", err)
		}
		unix.Close(rfd)
	}
	if dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		if _, err := unix.Mmap(dfd, 0, pageSize, unix.PROT_READ, unix.MAP_SHARED); err != unix.ENODEV {
			t.Errorf("mmap of a directory: %v, want ENODEV", err)
		}
		unix.Close(dfd)
	}
}
