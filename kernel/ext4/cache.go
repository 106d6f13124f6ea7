package ext4

// The block cache: NBuf buffers of one page each, found by a fixed hash of
// the block number (chains through next), replaced by a clock over the
// unpinned ones. A buffer is pinned (get) while a caller holds its bytes
// and unpinned (put) after; a dirty buffer belongs to the open transaction
// (tx.go) and is written back by it, never evicted before.

const (
	// NBuf is the number of cached blocks.
	NBuf = 256
	// Pages is the most pages an FS takes from its Env: the cache's and
	// a call's undo pages (tx.go).
	Pages     = NBuf + maxTx
	hashSlots = 512
)

type buf struct {
	blk   uint64
	page  uintptr
	next  int16 // next buffer in the hash chain, -1: none
	pins  int16
	valid bool // holds blk's contents
	dirty bool
	ref   bool // clock's second chance
	// verified: its checksum was checked since it was read (or it was
	// written here, checksum and all): not checked again, as Linux's
	// buffer_verified.
	verified bool
	// jtx: in the journal's running transaction (its page is what the
	// commit logs); ckpt: committed, its home location not yet written
	// (the page is the only copy outside the log). Neither is evicted.
	jtx, ckpt bool
}

type cache struct {
	bufs [NBuf]buf
	head [hashSlots]int16 // 1 + first buffer of the chain, 0: none
	hand int
}

func hashBlk(blk uint64) int { return int((blk * 0x9E3779B97F4A7C15) >> 55) } // 9 bits: hashSlots

// data is buffer i's block.
func (f *FS[E]) data(i int) []byte { return mem(f.c.bufs[i].page, int(f.bs)) }

// put unpins buffer i.
func (f *FS[E]) put(i int) { f.c.bufs[i].pins-- }

// find is the buffer holding blk, -1 if none.
func (f *FS[E]) find(blk uint64) int {
	for i := int(f.c.head[hashBlk(blk)]) - 1; i >= 0; i = int(f.c.bufs[i].next) {
		if b := &f.c.bufs[i]; b.valid && b.blk == blk {
			return i
		}
	}
	return -1
}

// unhash takes buffer i out of its chain.
func (f *FS[E]) unhash(i int) {
	b := &f.c.bufs[i]
	if !b.valid {
		return
	}
	h := hashBlk(b.blk)
	if int(f.c.head[h])-1 == i {
		f.c.head[h] = int16(b.next + 1)
	} else {
		for j := int(f.c.head[h]) - 1; j >= 0; j = int(f.c.bufs[j].next) {
			if int(f.c.bufs[j].next) == i {
				f.c.bufs[j].next = b.next
				break
			}
		}
	}
	b.valid = false
	b.next = -1
}

// slot pins a buffer for blk without reading it: the cached one if
// present (fresh false), else a free or replaced one (fresh true).
func (f *FS[E]) slot(blk uint64) (int, bool, Errno) {
	if blk >= f.blocks {
		return -1, false, EUCLEAN
	}
	if i := f.find(blk); i >= 0 {
		f.c.bufs[i].pins++
		f.c.bufs[i].ref = true
		return i, false, 0
	}
	v := -1
	for n := 0; n < 2*NBuf; n++ {
		i := f.c.hand
		f.c.hand = (f.c.hand + 1) % NBuf
		b := &f.c.bufs[i]
		if b.pins > 0 || b.dirty || b.jtx || b.ckpt {
			continue
		}
		if b.ref && b.valid {
			b.ref = false
			continue
		}
		v = i
		break
	}
	if v < 0 {
		return -1, false, EIO // every buffer pinned or dirty: a transaction too large
	}
	b := &f.c.bufs[v]
	if b.page == 0 {
		if b.page = f.env.AllocPage(); b.page == 0 {
			return -1, false, Errno(12) // ENOMEM
		}
	}
	f.unhash(v)
	b.blk = blk
	b.valid = true
	b.verified = false
	b.ref = true
	b.pins = 1
	h := hashBlk(blk)
	b.next = f.c.head[h] - 1
	f.c.head[h] = int16(v + 1)
	return v, true, 0
}

// get pins the buffer of block blk, read from the disk if not cached.
func (f *FS[E]) get(blk uint64) (int, Errno) {
	i, fresh, e := f.slot(blk)
	if e != 0 {
		return -1, e
	}
	if fresh {
		if e := f.env.ReadAt(f.data(i), blk<<f.logbs); e != 0 {
			f.c.bufs[i].pins--
			f.unhash(i)
			return -1, e
		}
	}
	return i, 0
}

// getZero pins a buffer for block blk zeroed, without reading it (a
// block just allocated).
func (f *FS[E]) getZero(blk uint64) (int, Errno) {
	i, _, e := f.slot(blk)
	if e != 0 {
		return -1, e
	}
	clear(f.data(i))
	f.c.bufs[i].verified = false
	return i, 0
}

// dropCache frees every buffer's page and the undo pages (at unmount).
func (f *FS[E]) dropCache() {
	for i := range f.c.bufs {
		b := &f.c.bufs[i]
		if b.page != 0 {
			f.env.FreePage(b.page)
		}
		*b = buf{next: -1}
	}
	for k := range f.tx.undo {
		if f.tx.undo[k] != 0 {
			f.env.FreePage(f.tx.undo[k])
			f.tx.undo[k] = 0
		}
	}
	f.c.head = [hashSlots]int16{}
	f.c.hand = 0
}
