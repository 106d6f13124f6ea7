package disk

import "unsafe"

// pageTab is the page cache's index: (mapped inode, page index) to the
// kernel address of the page that holds the file's bytes there. An
// open-addressed table (linear probing, deletion by backward shift: no
// tombstones), so that a lookup from a page fault neither allocates nor
// blocks. Its users hold the cache's spin lock around every call.
//
// The table is 1<<tabBits entries in chunks of a page each, allocated
// when an entry first lands in one and freed when it empties (a missing
// chunk's entries are all empty), and a file's pages are near each other
// in it (home): the index costs memory in proportion to the pages cached
// (about a page per 256 of a file's, a page for each small file), and a
// file's pages are found, freed or written back by page index without a
// scan of the table.
type pageTab struct {
	chunk [nChunks]uintptr // kernel addresses of the chunks (*chunk), 0 missing
	used  [nChunks]uint16  // entries in each chunk
	n     int
}

// tabSize is one more than how many pages the cache can hold at once (4
// GiB: more than most guests' memory, which runs out first).
const (
	tabBits   = 20
	tabSize   = 1 << tabBits
	chunkBits = 8 // 256 entries of 16 bytes: a page
	nChunks   = tabSize >> chunkBits
)

// entry is one place of the table: key 0 is empty.
type entry struct {
	key  uint64 // slot+1 in the high half, the page index in the low
	page uintptr
}

type chunk [1 << chunkBits]entry

// runBits: runs of 1<<runBits consecutive pages of a file share a home
// region, in the order of their indexes: a chunk's worth.
const runBits = chunkBits

func tabKey(slot int, idx uint32) uint64 { return uint64(slot+1)<<32 | uint64(idx) }

// home is key's first probe: its run's place (a hash of the slot and the
// run), then its place in the run.
func home(key uint64) int {
	run := (key >> runBits) * 0x9E3779B97F4A7C15 >> (64 - (tabBits - runBits))
	return int(run<<runBits | key&(1<<runBits-1))
}

// runCached reports whether a page of idx's run of slot's may be in the
// table: the run's home chunk is there. A run whose home chunk is
// missing has no page in the table (each entry is at its home or past it
// in a cluster that starts there), so a walk by page index skips it
// whole.
func (t *pageTab) runCached(slot int, idx uint64) bool {
	return t.chunk[home(tabKey(slot, uint32(idx)))>>chunkBits] != 0
}

// nextRun is the first page index of the run after idx's.
func nextRun(idx uint64) uint64 { return (idx>>runBits + 1) << runBits }

// slotWalk finds a slot's entries with page indexes in [from, hi), for a
// caller that removes each one it is given (del) before asking for the
// next: by page index, skipping the runs not cached, when the range is
// at most walkMost pages; else by a scan of the table's chunks (a sparse
// file, written far past its end), so that neither costs more than about
// the table's size.
type slotWalk struct {
	slot     int
	from, hi uint64
	pos      uint64 // the next page index, or the scan's next entry
	scan     bool
}

const walkMost = tabSize / 4

func (t *pageTab) walk(slot int, from, hi uint32) slotWalk {
	w := slotWalk{slot: slot, from: uint64(from), hi: uint64(hi), pos: uint64(from)}
	if w.hi > w.from+walkMost {
		w.scan, w.pos = true, 0
	}
	return w
}

// next is the walk's next entry, -1 when there are no more.
func (t *pageTab) next(w *slotWalk) int {
	if !w.scan {
		for ; w.pos < w.hi; w.pos++ {
			if !t.runCached(w.slot, w.pos) {
				w.pos = nextRun(w.pos) - 1
				continue
			}
			if i := t.find(w.slot, uint32(w.pos)); i >= 0 {
				w.pos++
				return i
			}
		}
		return -1
	}
	for w.pos < tabSize {
		e := t.at(int(w.pos))
		if e == nil {
			w.pos = (w.pos>>chunkBits + 1) << chunkBits
			continue
		}
		// Not advanced past a match: the caller removes it, and the
		// place then holds the next entry of its cluster, if any.
		if idx := uint64(uint32(e.key)); e.key != 0 && int(e.key>>32)-1 == w.slot && idx >= w.from && idx < w.hi {
			return int(w.pos)
		}
		w.pos++
	}
	return -1
}

// at is entry i, nil if its chunk is missing (the entry is empty).
func (t *pageTab) at(i int) *entry {
	c := t.chunk[i>>chunkBits]
	if c == 0 {
		return nil
	}
	return &(*(**chunk)(unsafe.Pointer(&c)))[i&(1<<chunkBits-1)]
}

// keyAt is entry i's key, 0 if empty.
func (t *pageTab) keyAt(i int) uint64 {
	if e := t.at(i); e != nil {
		return e.key
	}
	return 0
}

// get is the page at (slot, idx), 0 if none.
func (t *pageTab) get(slot int, idx uint32) uintptr {
	if i := t.find(slot, idx); i >= 0 {
		return t.at(i).page
	}
	return 0
}

// find is the entry of (slot, idx), -1 if none.
func (t *pageTab) find(slot int, idx uint32) int {
	k := tabKey(slot, idx)
	for i := home(k); ; i = (i + 1) & (tabSize - 1) {
		switch t.keyAt(i) {
		case k:
			return i
		case 0:
			return -1
		}
	}
}

// put adds page a at (slot, idx), which has none. It reports full if the
// table is (one entry is always left empty, which ends every probe), and
// need, the chunk to add (addChunk) before putting again, if the entry's
// chunk is missing.
func (t *pageTab) put(slot int, idx uint32, a uintptr) (full bool, need int) {
	if t.n >= tabSize-1 {
		return true, -1
	}
	k := tabKey(slot, idx)
	i := home(k)
	for t.keyAt(i) != 0 {
		i = (i + 1) & (tabSize - 1)
	}
	e := t.at(i)
	if e == nil {
		return false, i >> chunkBits
	}
	e.key, e.page = k, a
	t.used[i>>chunkBits]++
	t.n++
	return false, -1
}

// addChunk gives the table chunk c, a zeroed page at kernel address a.
func (t *pageTab) addChunk(c int, a uintptr) { t.chunk[c] = a }

// del removes entry i, moving the entries after it in its cluster back
// so that each is still found from its home. It returns the kernel
// address of a chunk the removal emptied, for the caller to free, or 0:
// only the chunk of the last place emptied loses an entry.
func (t *pageTab) del(i int) uintptr {
	t.n--
	t.used[i>>chunkBits]--
	for j := i; ; {
		*t.at(i) = entry{}
		for {
			j = (j + 1) & (tabSize - 1)
			k := t.keyAt(j)
			if k == 0 {
				c := i >> chunkBits
				if t.used[c] == 0 {
					a := t.chunk[c]
					t.chunk[c] = 0
					return a
				}
				return 0
			}
			h := home(k)
			// j's entry may fill the hole at i if its home is not
			// cyclically in (i, j].
			if i <= j && (h <= i || h > j) || i > j && h <= i && h > j {
				break
			}
		}
		*t.at(i) = *t.at(j)
		t.used[i>>chunkBits]++
		t.used[j>>chunkBits]--
		i = j
	}
}
