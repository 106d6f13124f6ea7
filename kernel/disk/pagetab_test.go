package disk

import (
	"math/rand"
	"testing"
)

// TestPageTab drives the page cache's index with random puts, gets and
// deletions (one at a time and a slot's all at once, as freePages does)
// against a map, with keys that crowd a few clusters, and checks that
// every entry is found and a scan sees each exactly as the map has it.
func TestPageTab(t *testing.T) {
	var tab pageTab
	ref := map[uint64]uintptr{}
	r := rand.New(rand.NewSource(1))
	for step := 0; step < 200000; step++ {
		slot, idx := r.Intn(8), uint32(r.Intn(6000))
		k := tabKey(slot, idx)
		switch op := r.Intn(10); {
		case op < 6:
			if _, ok := ref[k]; ok {
				continue
			}
			a := uintptr(r.Int63()) | 1
			if !tab.put(slot, idx, a) {
				t.Fatalf("step %d: put refused at %d entries", step, tab.n)
			}
			ref[k] = a
		case op < 9:
			if _, ok := ref[k]; !ok {
				continue
			}
			i := tab.find(slot, idx)
			if i < 0 {
				t.Fatalf("step %d: (%d, %d) not in a scan", step, slot, idx)
			}
			tab.del(i)
			delete(ref, k)
		default:
			if got, want := tab.get(slot, idx), ref[k]; got != want {
				t.Fatalf("step %d: get(%d, %d) = %#x, want %#x", step, slot, idx, got, want)
			}
		}
		if step%20000 == 0 {
			// A slot's pages all removed by the scan freePages makes.
			gone := r.Intn(8)
			for i := 0; i < tabSize; {
				if s, _, _, ok := tab.at(i); ok && s == gone {
					tab.del(i)
					continue
				}
				i++
			}
			for k := range ref {
				if int(k>>32)-1 == gone {
					delete(ref, k)
				}
			}
		}
	}
	if tab.n != len(ref) {
		t.Fatalf("%d entries, want %d", tab.n, len(ref))
	}
	for k, a := range ref {
		if got := tab.get(int(k>>32)-1, uint32(k)); got != a {
			t.Fatalf("get(%d, %d) = %#x, want %#x", int(k>>32)-1, uint32(k), got, a)
		}
	}
	seen := 0
	for i := 0; i < tabSize; i++ {
		if s, x, a, ok := tab.at(i); ok {
			if ref[tabKey(s, x)] != a {
				t.Fatalf("entry %d: (%d, %d) %#x not in the reference", i, s, x, a)
			}
			seen++
		}
	}
	if seen != len(ref) {
		t.Fatalf("a scan saw %d entries, want %d", seen, len(ref))
	}
}

// TestPageTabFull: the table refuses a put when one entry is left, and
// every entry is still found.
func TestPageTabFull(t *testing.T) {
	tab := new(pageTab)
	for i := 0; i < tabSize-1; i++ {
		if !tab.put(i%3, uint32(i), uintptr(i+1)) {
			t.Fatalf("put %d refused", i)
		}
	}
	if tab.put(5, 1, 1) {
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
