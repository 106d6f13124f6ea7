package disk

// pageTab is the page cache's index: (mapped inode, page index) to the
// kernel address of the page that holds the file's bytes there. A fixed
// open-addressed table (linear probing, deletion by backward shift: no
// tombstones), so that a lookup from a page fault neither allocates nor
// blocks. Its users hold the cache's spin lock around every call.
type pageTab struct {
	key  [tabSize]uint64 // slot+1 in the high half, the page index in the low; 0 empty
	page [tabSize]uintptr
	n    int
}

// tabSize is how many pages the cache can hold at once (256 MiB).
const tabSize = 1 << 16

func tabKey(slot int, idx uint32) uint64 { return uint64(slot+1)<<32 | uint64(idx) }

// home is key's first probe.
func home(key uint64) int {
	return int((key * 0x9E3779B97F4A7C15) >> (64 - 16))
}

// get is the page at (slot, idx), 0 if none.
func (t *pageTab) get(slot int, idx uint32) uintptr {
	if i := t.find(slot, idx); i >= 0 {
		return t.page[i]
	}
	return 0
}

// find is the entry of (slot, idx), -1 if none.
func (t *pageTab) find(slot int, idx uint32) int {
	k := tabKey(slot, idx)
	for i := home(k); ; i = (i + 1) & (tabSize - 1) {
		switch t.key[i] {
		case k:
			return i
		case 0:
			return -1
		}
	}
}

// put adds page a at (slot, idx), which has none; false if the table is
// full (one entry is always left empty, which ends every probe).
func (t *pageTab) put(slot int, idx uint32, a uintptr) bool {
	if t.n >= tabSize-1 {
		return false
	}
	k := tabKey(slot, idx)
	i := home(k)
	for t.key[i] != 0 {
		i = (i + 1) & (tabSize - 1)
	}
	t.key[i], t.page[i] = k, a
	t.n++
	return true
}

// del removes entry i, moving the entries after it in its cluster back
// so that each is still found from its home.
func (t *pageTab) del(i int) {
	t.n--
	for j := i; ; {
		t.key[i], t.page[i] = 0, 0
		for {
			j = (j + 1) & (tabSize - 1)
			if t.key[j] == 0 {
				return
			}
			h := home(t.key[j])
			// j's entry may fill the hole at i if its home is not
			// cyclically in (i, j].
			if i <= j && (h <= i || h > j) || i > j && h <= i && h > j {
				break
			}
		}
		t.key[i], t.page[i] = t.key[j], t.page[j]
		i = j
	}
}

// at reports entry i's slot, page index and page (ok false if empty): a
// scan over every entry visits each page of a slot.
func (t *pageTab) at(i int) (slot int, idx uint32, a uintptr, ok bool) {
	k := t.key[i]
	return int(k>>32) - 1, uint32(k), t.page[i], k != 0
}
