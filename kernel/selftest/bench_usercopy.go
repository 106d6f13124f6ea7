package main

import (
	"os"
	"syscall"
	"testing"
)

// The cost of the user-memory checks and copies: pwrite then pread of
// n bytes at offset 0 of a file of the in-memory file system (one op is
// both calls; 64 KiB goes through the kernel's bounce buffer in 16
// chunks each way).
func init() {
	benches = append(benches,
		bench{"BenchmarkPreadPwrite/1B", benchPreadPwrite(1), false},
		bench{"BenchmarkPreadPwrite/64KiB", benchPreadPwrite(64 << 10), false})
}

func benchPreadPwrite(n int) func(b *testing.B) {
	return func(b *testing.B) {
		f, err := os.CreateTemp("", "bench")
		if err != nil {
			b.Fatal(err)
		}
		defer os.Remove(f.Name())
		defer f.Close()
		fd := int(f.Fd())
		buf := make([]byte, n)
		b.SetBytes(int64(2 * n))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := syscall.Pwrite(fd, buf, 0); err != nil {
				b.Fatal(err)
			}
			if _, err := syscall.Pread(fd, buf, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
}
