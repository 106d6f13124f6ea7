package crc32c

import (
	"hash/crc32"
	"math/rand"
	"testing"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// TestAgainstHashCRC32: Checksum and Update agree with hash/crc32's
// Castagnoli table for every length up to 300 and every alignment, and
// Update chains (Linux's form: no inversions, so Update(Update(c, a), b)
// is Update(c, a+b)).
func TestAgainstHashCRC32(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	buf := make([]byte, 320)
	r.Read(buf)
	for off := range 8 {
		for n := 0; n+off <= 300; n++ {
			p := buf[off : off+n]
			if got, want := Checksum(p), crc32.Checksum(p, castagnoli); got != want {
				t.Fatalf("Checksum(len %d, off %d) = %#x, want %#x", n, off, got, want)
			}
			seed := r.Uint32()
			if got, want := Update(seed, p), ^crc32.Update(^seed, castagnoli, p); got != want {
				t.Fatalf("Update(%#x, len %d) = %#x, want %#x", seed, n, got, want)
			}
			k := n / 3
			if got, want := Update(Update(seed, p[:k]), p[k:]), Update(seed, p); got != want {
				t.Fatalf("chained Update(len %d split %d) = %#x, want %#x", n, k, got, want)
			}
		}
	}
	// The check value of the CRC-32C catalogue.
	if got := Checksum([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("check value %#x, want 0xe3069283", got)
	}
}

// TestNoAlloc: neither form allocates.
func TestNoAlloc(t *testing.T) {
	p := make([]byte, 4096)
	if n := testing.AllocsPerRun(10, func() { Update(^uint32(0), p); Checksum(p) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
