package ext4

// Changing extent trees: a path from the root (in i_block) to the leaf
// for a logical block, entries inserted and removed in place, a full leaf
// split in two, a full root moved down a level. An index block other than
// the root that is full when a leaf below it splits gives EFBIG (a file of
// more than about 4 × 340 × 340 extents).

// extPath is the nodes from the root (level 0, i_block) to a leaf, each
// level's buffer (pinned in the transaction; -1 for the root) and the
// entry taken.
type extPath struct {
	depth int
	buf   [maxExtDepth + 1]int
	pos   [maxExtDepth + 1]int
}

// node is level lv's bytes.
func (f *FS[E]) node(in *Inode, p *extPath, lv int) []byte {
	if lv == 0 {
		return in.Block[:]
	}
	return f.data(p.buf[lv])
}

func (f *FS[E]) releasePath(p *extPath) {
	for lv := 1; lv <= p.depth; lv++ {
		if p.buf[lv] >= 0 {
			f.put(p.buf[lv])
			p.buf[lv] = -1
		}
	}
}

// findPath fills p with the path to the leaf for lblk, pinning its
// blocks for change. At each index level the last entry with a key at
// most lblk is taken (the first if none, whose key then drops to lblk).
func (f *FS[E]) findPath(in *Inode, lblk uint64, p *extPath) Errno {
	root := in.Block[:]
	if e := checkHeader(root, 0, -1); e != 0 {
		return e
	}
	p.depth = int(le16(root, 6))
	for lv := range p.buf {
		p.buf[lv] = -1
	}
	for lv := 0; lv < p.depth; lv++ {
		b := f.node(in, p, lv)
		n := int(le16(b, 2))
		if n == 0 {
			f.releasePath(p)
			return EUCLEAN
		}
		k := searchNode(b, n, lblk)
		if k < 0 {
			k = 0
		}
		p.pos[lv] = k
		_, child := indexAt(b, k)
		if child == 0 || child >= f.blocks {
			f.releasePath(p)
			return EUCLEAN
		}
		ci, e := f.extNode(in, child, p.depth-lv-1) // checked before change
		if e != 0 {
			f.releasePath(p)
			return e
		}
		f.put(ci)
		i, e := f.getWrite(child, clTree, false)
		if e != 0 {
			f.releasePath(p)
			return e
		}
		p.buf[lv+1] = i
	}
	leaf := f.node(in, p, p.depth)
	p.pos[p.depth] = searchNode(leaf, int(le16(leaf, 2)), lblk)
	return 0
}

// nodeDone updates level lv's checksum and marks it dirty (the root is
// written with the inode).
func (f *FS[E]) nodeDone(in *Inode, p *extPath, lv int) {
	if lv == 0 {
		return
	}
	b := f.data(p.buf[lv])
	if f.csum {
		t := f.extTail(b)
		put32(b, t, crc32c(f.inodeSeed(in.Ino, in.Generation), b[:t]))
	}
	f.dirty(p.buf[lv])
}

func putExtent(b []byte, k int, lblk, n, pblk uint64, uninit bool) {
	o := extHdr + k*extEntry
	if uninit {
		n += extInitMax
	}
	put32(b, o, uint32(lblk))
	put16(b, o+4, uint32(n))
	put16(b, o+6, uint32(pblk>>32))
	put32(b, o+8, uint32(pblk))
}

func putIndex(b []byte, k int, lblk, child uint64) {
	o := extHdr + k*extEntry
	put32(b, o, uint32(lblk))
	put32(b, o+4, uint32(child))
	put16(b, o+8, uint32(child>>32))
	put16(b, o+10, 0)
}

// openSlot makes room for an entry at k of node b (shifting the rest).
func openSlot(b []byte, k int) {
	n := int(le16(b, 2))
	copy(b[extHdr+(k+1)*extEntry:extHdr+(n+1)*extEntry], b[extHdr+k*extEntry:extHdr+n*extEntry])
	put16(b, 2, uint32(n+1))
}

// closeSlot removes the entry at k of node b.
func closeSlot(b []byte, k int) {
	n := int(le16(b, 2))
	copy(b[extHdr+k*extEntry:], b[extHdr+(k+1)*extEntry:extHdr+n*extEntry])
	put16(b, 2, uint32(n-1))
}

func full(b []byte) bool { return le16(b, 2) >= le16(b, 4) }

// newTreeBlock allocates and pins a zeroed block for the tree near goal.
func (f *FS[E]) newTreeBlock(in *Inode, goal uint64) (uint64, int, Errno) {
	blk, _, e := f.allocBlocks(goal, 1)
	if e != 0 {
		return 0, -1, e
	}
	i, e := f.getWrite(blk, clTree, true)
	if e != 0 {
		return 0, -1, e
	}
	in.Blocks += uint64(f.bs) >> 9
	b := f.data(i)
	put16(b, 0, extMagic)
	tail := 0
	if f.csum {
		tail = 4
	}
	put16(b, 4, uint32((int(f.bs)-extHdr-tail)/extEntry))
	return blk, i, 0
}

// growRoot moves the root's entries to a new block and makes the root an
// index of one entry over it, a level deeper.
func (f *FS[E]) growRoot(in *Inode) Errno {
	root := in.Block[:]
	blk, i, e := f.newTreeBlock(in, 0)
	if e != 0 {
		return e
	}
	b := f.data(i)
	n := le16(root, 2)
	copy(b[extHdr:], root[extHdr:extHdr+int(n)*extEntry])
	put16(b, 2, n)
	put16(b, 6, le16(root, 6))
	if f.csum {
		t := f.extTail(b)
		put32(b, t, crc32c(f.inodeSeed(in.Ino, in.Generation), b[:t]))
	}
	f.dirty(i)
	f.put(i)
	first := uint64(0)
	if n > 0 {
		first = uint64(le32(root, extHdr))
	}
	put16(root, 2, 1)
	put16(root, 6, le16(root, 6)+1)
	putIndex(root, 0, first, blk)
	return 0
}

// splitLeaf splits the full node at level lv of p (not the root) in two,
// inserting the new half's index in the level above; the path is stale
// after it.
func (f *FS[E]) splitNode(in *Inode, p *extPath, lv int) Errno {
	parent := f.node(in, p, lv-1)
	if full(parent) {
		if lv-1 != 0 {
			return EFBIG
		}
		return f.growRoot(in) // the caller finds the path again
	}
	b := f.data(p.buf[lv])
	n := int(le16(b, 2))
	blk, i, e := f.newTreeBlock(in, 0)
	if e != 0 {
		return e
	}
	nb := f.data(i)
	half := n / 2
	if p.pos[lv] == n-1 {
		half = n - 1 // appending: leave this node full
	}
	copy(nb[extHdr:], b[extHdr+half*extEntry:extHdr+n*extEntry])
	put16(nb, 2, uint32(n-half))
	put16(nb, 6, le16(b, 6))
	put16(b, 2, uint32(half))
	key := uint64(le32(nb, extHdr))
	f.nodeDone(in, p, lv)
	if f.csum {
		t := f.extTail(nb)
		put32(nb, t, crc32c(f.inodeSeed(in.Ino, in.Generation), nb[:t]))
	}
	f.dirty(i)
	f.put(i)
	k := p.pos[lv-1] + 1
	openSlot(parent, k)
	putIndex(parent, k, key, blk)
	f.nodeDone(in, p, lv-1)
	return 0
}

// leafFor finds the path to lblk's leaf with room for need more entries,
// splitting or growing as it must. The caller releases the path.
func (f *FS[E]) leafFor(in *Inode, lblk uint64, need int, p *extPath) Errno {
	for tries := 0; tries < 2*maxExtDepth+2; tries++ {
		if e := f.findPath(in, lblk, p); e != 0 {
			return e
		}
		leaf := f.node(in, p, p.depth)
		if int(le16(leaf, 4))-int(le16(leaf, 2)) >= need {
			return 0
		}
		var e Errno
		if p.depth == 0 {
			e = f.growRoot(in)
		} else {
			e = f.splitNode(in, p, p.depth)
			for lv := p.depth - 1; e == EFBIG && lv > 0; lv-- {
				e = f.splitNode(in, p, lv)
			}
		}
		f.releasePath(p)
		if e != 0 {
			return e
		}
	}
	return EUCLEAN
}

// fixKeys lowers the index keys above the leaf to its first entry's
// block where they are higher (an extent put before a leaf's first).
func (f *FS[E]) fixKeys(in *Inode, p *extPath) {
	leaf := f.node(in, p, p.depth)
	if le16(leaf, 2) == 0 {
		return
	}
	first := le32(leaf, extHdr)
	for lv := p.depth - 1; lv >= 0; lv-- {
		b := f.node(in, p, lv)
		o := extHdr + p.pos[lv]*extEntry
		if le32(b, o) <= first {
			return
		}
		put32(b, o, first)
		f.nodeDone(in, p, lv)
	}
}

// extAdd maps n logical blocks from lblk (a hole) to physical blocks
// from pblk, merging with the extent before when they continue it.
func (f *FS[E]) extAdd(in *Inode, lblk, pblk, n uint64, uninit bool) Errno {
	var p extPath
	if e := f.leafFor(in, lblk, 1, &p); e != 0 {
		return e
	}
	defer f.releasePath(&p)
	leaf := f.node(in, &p, p.depth)
	k := p.pos[p.depth]
	if k >= 0 {
		l, c, pb, u := extentAt(leaf, k)
		limit := uint64(extInitMax)
		if u {
			limit--
		}
		if u == uninit && l+c == lblk && pb+c == pblk && c+n <= limit {
			putExtent(leaf, k, l, c+n, pb, u)
			f.nodeDone(in, &p, p.depth)
			return 0
		}
	}
	openSlot(leaf, k+1)
	putExtent(leaf, k+1, lblk, n, pblk, uninit)
	f.nodeDone(in, &p, p.depth)
	f.fixKeys(in, &p)
	return 0
}

// extMarkWritten makes the n blocks from lblk, which lie in one
// uninitialised extent, initialised (splitting it into up to three).
func (f *FS[E]) extMarkWritten(in *Inode, lblk, n uint64) Errno {
	var p extPath
	if e := f.leafFor(in, lblk, 2, &p); e != 0 {
		return e
	}
	defer f.releasePath(&p)
	leaf := f.node(in, &p, p.depth)
	k := p.pos[p.depth]
	if k < 0 {
		return EUCLEAN
	}
	l, c, pb, u := extentAt(leaf, k)
	if !u || lblk < l || lblk+n > l+c {
		return EUCLEAN
	}
	switch {
	case lblk == l && n == c:
		putExtent(leaf, k, l, c, pb, false)
	case lblk == l:
		putExtent(leaf, k, l, n, pb, false)
		openSlot(leaf, k+1)
		putExtent(leaf, k+1, l+n, c-n, pb+n, true)
	case lblk+n == l+c:
		putExtent(leaf, k, l, lblk-l, pb, true)
		openSlot(leaf, k+1)
		putExtent(leaf, k+1, lblk, n, pb+(lblk-l), false)
	default:
		putExtent(leaf, k, l, lblk-l, pb, true)
		openSlot(leaf, k+1)
		putExtent(leaf, k+1, lblk, n, pb+(lblk-l), false)
		openSlot(leaf, k+2)
		putExtent(leaf, k+2, lblk+n, l+c-lblk-n, pb+(lblk+n-l), true)
	}
	f.nodeDone(in, &p, p.depth)
	return 0
}

// extTrimLast removes the mapping of blocks at or past from from the
// last extent of the tree, freeing them (and leaves and index blocks
// left empty). done when the last extent ends at or before from.
func (f *FS[E]) extTrimLast(in *Inode, from uint64) (done bool, e Errno) {
	var p extPath
	if e := f.findPath(in, 1<<32-1, &p); e != 0 {
		return false, e
	}
	defer f.releasePath(&p)
	leaf := f.node(in, &p, p.depth)
	k := p.pos[p.depth]
	if k < 0 {
		if p.depth == 0 {
			return true, 0
		}
		// An empty leaf: free it and drop its index entry.
		return false, f.dropNode(in, &p, p.depth)
	}
	l, c, pb, u := extentAt(leaf, k)
	if l+c <= from {
		return true, 0
	}
	keep := uint64(0)
	if l >= from {
		closeSlot(leaf, k)
	} else {
		keep = from - l
		putExtent(leaf, k, l, keep, pb, u)
	}
	f.nodeDone(in, &p, p.depth)
	in.Blocks -= (c - keep) << (f.logbs - 9)
	if in.IsDir() { // a directory's blocks are metadata
		if e := f.revoke(pb+keep, c-keep); e != 0 {
			return false, e
		}
	}
	return false, f.freeBlocks(pb+keep, c-keep)
}

// dropNode frees the empty node at level lv and removes its entry from
// the level above (the root empties back to a leaf).
func (f *FS[E]) dropNode(in *Inode, p *extPath, lv int) Errno {
	for ; lv > 0; lv-- {
		blk := f.c.bufs[p.buf[lv]].blk
		f.c.bufs[p.buf[lv]].dirty = false
		parent := f.node(in, p, lv-1)
		closeSlot(parent, p.pos[lv-1])
		f.nodeDone(in, p, lv-1)
		in.Blocks -= uint64(f.bs) >> 9
		if e := f.revoke(blk, 1); e != 0 {
			return e
		}
		if e := f.freeBlocks(blk, 1); e != 0 {
			return e
		}
		if le16(parent, 2) != 0 {
			return 0
		}
		if lv-1 == 0 {
			initRoot(in.Block[:])
		}
	}
	return 0
}
