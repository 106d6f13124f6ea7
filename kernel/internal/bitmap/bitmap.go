// Package bitmap finds the lowest free slot of a fixed table in time
// proportional to the table's size over 4096, not its size: the slots
// taken are bits in words, and a summary has a bit for every word whose
// bits are all set. The descriptor table (Linux's open_fds and
// full_fds_bits do the same), epoll's watches and the socket pool use
// it.
//
// Kernel-context Go: the caller owns the words (arrays in its own
// state, passed as slices of them) and holds its own lock; nothing here
// allocates.
package bitmap

import "math/bits"

// Words is how many words a table of n slots needs; Summary how many
// summary words.
func Words(n int) int   { return (n + 63) / 64 }
func Summary(n int) int { return (Words(n) + 63) / 64 }

// Set marks slot i taken.
func Set(words, full []uint64, i int) {
	w := i / 64
	words[w] |= 1 << (i % 64)
	if words[w] == ^uint64(0) {
		full[w/64] |= 1 << (w % 64)
	}
}

// Clear marks slot i free.
func Clear(words, full []uint64, i int) {
	w := i / 64
	words[w] &^= 1 << (i % 64)
	full[w/64] &^= 1 << (w % 64)
}

// Has reports whether slot i is taken.
func Has(words []uint64, i int) bool { return words[i/64]&(1<<(i%64)) != 0 }

// Lowest is the lowest free slot at or after from and below n, -1 if
// none. words and full are a table of n slots (bits past n must be set
// or n checked here: they are checked).
func Lowest(words, full []uint64, from, n int) int {
	if from < 0 {
		from = 0
	}
	if from >= n {
		return -1
	}
	// The first word, from its bit from%64 on.
	w := from / 64
	if free := ^words[w] &^ (1<<(from%64) - 1); free != 0 {
		if i := w*64 + bits.TrailingZeros64(free); i < n {
			return i
		}
		return -1
	}
	// Then whole words: the summary says which are full.
	w++
	for s := w / 64; s < len(full) && s*64 < len(words); s++ {
		notFull := ^full[s]
		if s == w/64 {
			notFull &^= 1<<(w%64) - 1
		}
		for notFull != 0 {
			x := s*64 + bits.TrailingZeros64(notFull)
			if x >= len(words) {
				return -1
			}
			if free := ^words[x]; free != 0 {
				if i := x*64 + bits.TrailingZeros64(free); i < n {
					return i
				}
				return -1
			}
			notFull &= notFull - 1
		}
	}
	return -1
}

// Next is the lowest taken slot at or after from and below n, -1 if
// none: a walk over the taken slots skips empty words.
func Next(words []uint64, from, n int) int {
	if from < 0 {
		from = 0
	}
	for w := from / 64; w < len(words) && w*64 < n; w++ {
		v := words[w]
		if w == from/64 {
			v &^= 1<<(from%64) - 1
		}
		if v != 0 {
			if i := w*64 + bits.TrailingZeros64(v); i < n {
				return i
			}
			return -1
		}
	}
	return -1
}

// SetBit and ClearBit mark slot i in words alone, for a set without a
// summary (one walked with Next, never searched with Lowest).
func SetBit(words []uint64, i int)   { words[i/64] |= 1 << (i % 64) }
func ClearBit(words []uint64, i int) { words[i/64] &^= 1 << (i % 64) }
