package main

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Benchmarks of a share mapping's write-back (docs/share.md): msync of a
// 1 MiB MAP_SHARED mapping of a file on the share after the program
// stored to one of its 256 pages (what dirty tracking writes: that page),
// and after it stored to all of them (every page goes: the same work
// with tracking or without). Registered only with a writable share
// (YOLK_SHARE_DIR).

func init() {
	if os.Getenv(envShareDir) == "" {
		return
	}
	benches = append(benches,
		bench{"BenchmarkShareMsync/1of256", benchShareMsync(1), false},
		bench{"BenchmarkShareMsync/256of256", benchShareMsync(256), false},
	)
}

func benchShareMsync(pages int) func(*testing.B) {
	return func(b *testing.B) {
		const size = 1 << 20
		name := filepath.Join(os.Getenv(envShareDir), "bench-msync")
		if err := os.WriteFile(name, make([]byte, size), 0o644); err != nil {
			b.Fatalf("WriteFile: %v", err)
		}
		defer os.Remove(name)
		fd, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatalf("open: %v", err)
		}
		defer unix.Close(fd)
		m, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			b.Fatalf("mmap: %v", err)
		}
		defer unix.Munmap(m)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for p := 0; p < pages; p++ {
				m[((i+p)%256)*pageSize+i%pageSize] = byte(i)
			}
			if err := unix.Msync(m, unix.MS_SYNC); err != nil {
				b.Fatalf("msync: %v", err)
			}
		}
	}
}
