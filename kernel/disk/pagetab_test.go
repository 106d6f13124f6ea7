package disk

import (
	"math/rand"
	"testing"
	"unsafe"
)

// chunks hands a pageTab its chunks from Go memory, as the kernel hands
// it pages, and takes back those it frees.
type chunks struct {
	live map[uintptr]*chunk
}

func newChunks() *chunks { return &chunks{live: map[uintptr]*chunk{}} }

// put is pageTab.put with the chunks it asks for added; false if full.
func (cs *chunks) put(t *testing.T, tab *pageTab, slot int, idx uint32, a uintptr) bool {
	t.Helper()
	for {
		full, need := tab.put(slot, idx, a)
		if full {
			return false
		}
		if need < 0 {
			return true
		}
		if tab.chunk[need] != 0 {
			t.Fatalf("put asked for chunk %d, which is there", need)
		}
		c := new(chunk)
		p := uintptr(unsafe.Pointer(c))
		cs.live[p] = c
		tab.addChunk(need, p)
	}
}

// del is pageTab.del with the chunk it empties checked and taken back.
func (cs *chunks) del(t *testing.T, tab *pageTab, i int) {
	t.Helper()
	if a := tab.del(i); a != 0 {
		c := cs.live[a]
		if c == nil {
			t.Fatalf("del freed %#x, not a chunk", a)
		}
		for _, e := range c {
			if e != (entry{}) {
				t.Fatalf("del freed a chunk holding %+v", e)
			}
		}
		delete(cs.live, a)
	}
}

// check compares the table with the reference: every entry found, each
// chunk's count right, no chunk empty, and a scan sees each entry once.
func (cs *chunks) check(t *testing.T, tab *pageTab, ref map[uint64]uintptr) {
	t.Helper()
	if tab.n != len(ref) {
		t.Fatalf("%d entries, want %d", tab.n, len(ref))
	}
	for k, a := range ref {
		if got := tab.get(int(k>>32)-1, uint32(k)); got != a {
			t.Fatalf("get(%d, %d) = %#x, want %#x", int(k>>32)-1, uint32(k), got, a)
		}
	}
	seen, held := 0, 0
	for c := range tab.chunk {
		if tab.chunk[c] == 0 {
			if tab.used[c] != 0 {
				t.Fatalf("chunk %d missing, count %d", c, tab.used[c])
			}
			continue
		}
		held++
		n := 0
		for i := c << chunkBits; i < (c+1)<<chunkBits; i++ {
			if e := tab.at(i); e.key != 0 {
				if ref[e.key] != e.page {
					t.Fatalf("entry %d: (%d, %d) %#x not in the reference", i, int(e.key>>32)-1, uint32(e.key), e.page)
				}
				n++
			}
		}
		if n == 0 || n != int(tab.used[c]) {
			t.Fatalf("chunk %d holds %d entries, counted %d", c, n, tab.used[c])
		}
		seen += n
	}
	if seen != len(ref) {
		t.Fatalf("a scan saw %d entries, want %d", seen, len(ref))
	}
	if held != len(cs.live) {
		t.Fatalf("%d chunks in the table, %d given", held, len(cs.live))
	}
}

// TestPageTab drives the page cache's index with random puts, gets and
// deletions (one at a time and a slot's all at once, as freePages does)
// against a map, in a table nine tenths full of other slots' pages (long
// clusters, some wrapping around its end), and checks that every entry is
// found, a scan sees each exactly as the map has it, and chunks come and
// go with their entries.
func TestPageTab(t *testing.T) {
	tab, cs := new(pageTab), newChunks()
	ref := map[uint64]uintptr{}
	r := rand.New(rand.NewSource(1))
	for n, slot := 0, 8; n < tabSize*9/10; slot++ {
		for idx := uint32(0); idx < 5000 && n < tabSize*9/10; idx++ {
			a := uintptr(r.Int63()) | 1
			if !cs.put(t, tab, slot, idx, a) {
				t.Fatalf("put refused at %d entries", tab.n)
			}
			ref[tabKey(slot, idx)] = a
			n++
		}
	}
	for step := 0; step < 200000; step++ {
		slot, idx := r.Intn(8), uint32(r.Intn(6000))
		k := tabKey(slot, idx)
		switch op := r.Intn(10); {
		case op < 6:
			if _, ok := ref[k]; ok {
				continue
			}
			a := uintptr(r.Int63()) | 1
			if !cs.put(t, tab, slot, idx, a) {
				t.Fatalf("step %d: put refused at %d entries", step, tab.n)
			}
			ref[k] = a
		case op < 9:
			if _, ok := ref[k]; !ok {
				continue
			}
			i := tab.find(slot, idx)
			if i < 0 {
				t.Fatalf("step %d: (%d, %d) not found", step, slot, idx)
			}
			cs.del(t, tab, i)
			delete(ref, k)
		default:
			if got, want := tab.get(slot, idx), ref[k]; got != want {
				t.Fatalf("step %d: get(%d, %d) = %#x, want %#x", step, slot, idx, got, want)
			}
		}
		if step%20000 == 0 {
			// A slot's pages from a page index on all removed, as
			// freePages does: by page index, or, every other time, by
			// the scan (the range made large).
			gone, from := r.Intn(8), uint32(r.Intn(3000))
			hi := uint32(6000)
			if step%40000 == 0 {
				hi = 1 << 31
			}
			w := tab.walk(gone, from, hi)
			if w.scan != (hi == 1<<31) {
				t.Fatalf("walk of [%d, %d): scan %v", from, hi, w.scan)
			}
			for i := tab.next(&w); i >= 0; i = tab.next(&w) {
				cs.del(t, tab, i)
			}
			for k := range ref {
				if int(k>>32)-1 == gone && uint32(k) >= from {
					delete(ref, k)
				}
			}
		}
	}
	cs.check(t, tab, ref)
	// Everything removed: every chunk goes back.
	for k := range ref {
		cs.del(t, tab, tab.find(int(k>>32)-1, uint32(k)))
		delete(ref, k)
	}
	cs.check(t, tab, ref)
	if len(cs.live) != 0 {
		t.Fatalf("%d chunks kept by an empty table", len(cs.live))
	}
}

// TestPageTabFull: the table refuses a put when one entry is left, and
// every entry is still found.
func TestPageTabFull(t *testing.T) {
	tab, cs := new(pageTab), newChunks()
	for i := 0; i < tabSize-1; i++ {
		if !cs.put(t, tab, i%3, uint32(i), uintptr(i+1)) {
			t.Fatalf("put %d refused", i)
		}
	}
	if cs.put(t, tab, 5, 1, 1) {
		t.Fatalf("a put into the last empty entry was taken")
	}
	for i := 0; i < tabSize-1; i++ {
		if got := tab.get(i%3, uint32(i)); got != uintptr(i+1) {
			t.Fatalf("get %d = %d", i, got)
		}
	}
	if tab.get(5, 1) != 0 {
		t.Fatalf("a key never put was found")
	}
}

// TestPageTabLocality: a file's pages in order fill chunks densely, so
// the index costs about a page per 256 pages cached.
func TestPageTabLocality(t *testing.T) {
	tab, cs := new(pageTab), newChunks()
	const pages = 64 << 10 // a 256 MiB file
	for idx := uint32(0); idx < pages; idx++ {
		if !cs.put(t, tab, 3, idx, uintptr(idx)+1) {
			t.Fatalf("put %d refused", idx)
		}
	}
	if got, most := len(cs.live), pages>>chunkBits*3/2; got > most {
		t.Fatalf("%d chunks for %d pages, want at most %d", got, pages, most)
	}
}

// TestPageTabSparse: a slot's walk finds every page of a file cached at
// far-apart indexes, by page index when the range is small, by the scan
// when not, and leaves the other slots' pages.
func TestPageTabSparse(t *testing.T) {
	for _, tc := range []struct {
		at   []uint32
		scan bool
	}{
		{[]uint32{0, 1, 255, 256, 70000, 200000}, false},
		{[]uint32{0, 1, 255, 256, 70000, 1 << 28, 1<<32 - 2}, true},
	} {
		tab, cs := new(pageTab), newChunks()
		for _, idx := range tc.at {
			if !cs.put(t, tab, 5, idx, uintptr(idx)+1) {
				t.Fatalf("put %d refused", idx)
			}
		}
		cs.put(t, tab, 6, 1<<20, 1) // another slot's page in between
		cs.put(t, tab, 5, 3, 1)     // in the range too; (5, 0) is below it
		w := tab.walk(5, 1, tc.at[len(tc.at)-1]+1)
		if w.scan != tc.scan {
			t.Fatalf("%v: scan %v", tc.at, w.scan)
		}
		n := 0
		for i := tab.next(&w); i >= 0; i = tab.next(&w) {
			cs.del(t, tab, i)
			n++
		}
		if n != len(tc.at)-1+1 {
			t.Fatalf("%v: walk found %d pages", tc.at, n)
		}
		if tab.get(5, 0) == 0 || tab.get(6, 1<<20) == 0 || tab.n != 2 {
			t.Fatalf("%v: %d entries left, (5, 0) %#x, (6, 2^20) %#x", tc.at, tab.n, tab.get(5, 0), tab.get(6, 1<<20))
		}
	}
}
