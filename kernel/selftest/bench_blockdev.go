package main

import (
	"math/rand"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Benchmarks of /dev/vda (docs/disks.md), or of the disk
// YOLK_BENCH_DISK names (nvme0n1: docs/nvme.md): sequential 1 MiB reads
// and writes, and 4 KiB random reads and writes at queue depth 1 and 32
// (32 goroutines at once), through pread and pwrite on the block-device
// file. Registered only when the harness attached that disk writable
// (YOLK_DISKS); they write over the disk's contents.

// benchDisk is the disk the benchmarks use.
var benchDisk = "vda"

func init() {
	if d := os.Getenv("YOLK_BENCH_DISK"); d != "" {
		benchDisk = d
	}
	attached := false
	for _, d := range strings.Split(os.Getenv("YOLK_DISKS"), ",") {
		attached = attached || d == benchDisk
	}
	if !attached {
		return
	}
	benches = append(benches,
		bench{"BenchmarkBlockDevice/seq1M-read", benchBlockSeq(false), false},
		bench{"BenchmarkBlockDevice/seq1M-write", benchBlockSeq(true), false},
		bench{"BenchmarkBlockDevice/rand4K-qd1-read", benchBlockRand(1, false), false},
		bench{"BenchmarkBlockDevice/rand4K-qd1-write", benchBlockRand(1, true), false},
		bench{"BenchmarkBlockDevice/rand4K-qd32-read", benchBlockRand(32, false), false},
		bench{"BenchmarkBlockDevice/rand4K-qd32-write", benchBlockRand(32, true), false},
	)
}

// openVda opens /dev/vda (benchDisk) and returns it with its size.
func openVda(b *testing.B) (int, int64) {
	fd, err := unix.Open("/dev/"+benchDisk, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatalf("open /dev/%s: %v", benchDisk, err)
	}
	size, err := blkIoctl(fd, unix.BLKGETSIZE64)
	if err != nil || size < 4<<20 {
		b.Fatalf("BLKGETSIZE64 = %d, %v", size, err)
	}
	return fd, int64(size)
}

// blockRW is pwrite (write) or pread of buf at off.
func blockRW(fd int, buf []byte, off int64, write bool) error {
	var err error
	if write {
		_, err = unix.Pwrite(fd, buf, off)
	} else {
		_, err = unix.Pread(fd, buf, off)
	}
	return err
}

func benchBlockSeq(write bool) func(*testing.B) {
	return func(b *testing.B) {
		fd, size := openVda(b)
		defer unix.Close(fd)
		buf := make([]byte, 1<<20)
		b.SetBytes(1 << 20)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			off := int64(i) << 20 % (size &^ (1<<20 - 1))
			if err := blockRW(fd, buf, off, write); err != nil {
				b.Fatalf("at %d: %v", off, err)
			}
		}
	}
}

func benchBlockRand(depth int, write bool) func(*testing.B) {
	return func(b *testing.B) {
		fd, size := openVda(b)
		defer unix.Close(fd)
		blocks := size / 4096
		b.SetBytes(4096)
		if depth > 1 {
			b.SetParallelism((depth + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		}
		var seed, failed int64
		b.ResetTimer()
		op := func(r *rand.Rand, buf []byte) {
			if err := blockRW(fd, buf, r.Int63n(blocks)*4096, write); err != nil {
				atomic.AddInt64(&failed, 1)
			}
		}
		if depth == 1 {
			r, buf := rand.New(rand.NewSource(1)), make([]byte, 4096)
			for i := 0; i < b.N; i++ {
				op(r, buf)
			}
		} else {
			b.RunParallel(func(pb *testing.PB) {
				r, buf := rand.New(rand.NewSource(atomic.AddInt64(&seed, 1))), make([]byte, 4096)
				for pb.Next() {
					op(r, buf)
				}
			})
		}
		if failed != 0 {
			b.Fatalf("%d requests failed", failed)
		}
	}
}
