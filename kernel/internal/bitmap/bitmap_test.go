package bitmap

import (
	"math/rand"
	"testing"
)

// TestAgainstScan: Lowest and Next agree with a linear scan of a bool
// table through random takes and frees, at every table size shape
// (a partial last word, a partial last summary word).
func TestAgainstScan(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, 4095, 4096, 4097, 10000} {
		words := make([]uint64, Words(n))
		full := make([]uint64, Summary(n))
		taken := make([]bool, n)
		r := rand.New(rand.NewSource(int64(n)))
		scanFree := func(from int) int {
			for i := max(from, 0); i < n; i++ {
				if !taken[i] {
					return i
				}
			}
			return -1
		}
		scanTaken := func(from int) int {
			for i := max(from, 0); i < n; i++ {
				if taken[i] {
					return i
				}
			}
			return -1
		}
		for step := 0; step < 20000; step++ {
			from := r.Intn(n+2) - 1
			if got, want := Lowest(words, full, from, n), scanFree(from); got != want {
				t.Fatalf("n %d step %d: Lowest(%d) = %d, want %d", n, step, from, got, want)
			}
			if got, want := Next(words, from, n), scanTaken(from); got != want {
				t.Fatalf("n %d step %d: Next(%d) = %d, want %d", n, step, from, got, want)
			}
			// Mostly fill, sometimes free, so full words happen.
			if i := scanFree(0); i >= 0 && r.Intn(4) != 0 {
				Set(words, full, i)
				taken[i] = true
			} else if i := r.Intn(n); taken[i] {
				Clear(words, full, i)
				taken[i] = false
			}
			if i := r.Intn(n); Has(words, i) != taken[i] {
				t.Fatalf("Has(%d) = %v", i, !taken[i])
			}
		}
	}
}

// BenchmarkLowest: the lowest free slot of 16384 with the first 10,000
// taken, against the linear scan the descriptor table did.
func BenchmarkLowest(b *testing.B) {
	const n, k = 16384, 10000
	words := make([]uint64, Words(n))
	full := make([]uint64, Summary(n))
	kinds := make([]uint32, n)
	for i := 0; i < k; i++ {
		Set(words, full, i)
		kinds[i] = 1
	}
	b.Run("bitmap", func(b *testing.B) {
		for b.Loop() {
			if Lowest(words, full, 0, n) != k {
				b.Fatal("wrong")
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			i := 0
			for i < n && kinds[i] != 0 {
				i++
			}
			if i != k {
				b.Fatal("wrong")
			}
		}
	})
}
