package ext4

// Splitting a full htree leaf: its entries sorted by hash, the upper half
// moved to a new block at the directory's end (the lower half stays in
// place: a listing's cookie is a byte offset), an index entry for it
// inserted in the node above (its key the first moved hash, with the
// collision bit when the hash continues from the lower half, as Linux's
// do_split), then the new name put where its hash belongs.

// maxLeafEntries bounds the entries of a block (12 bytes each at least).
const maxLeafEntries = pageSize / 12

// dxSetCsum sets an index node's dx tail checksum.
func (f *FS[E]) dxSetCsum(in *Inode, b []byte, root bool) {
	if !f.csum {
		return
	}
	co := dxCountOff(b, root)
	limit, count := int(le16(b, co)), int(le16(b, co+2))
	t := co + limit*8
	put32(b, t, 0)
	c := crc32c(f.inodeSeed(in.Ino, in.Generation), b[:co+count*8])
	c = crc32c(c, b[t:t+4])
	c = crc32cZero(c, 4)
	put32(b, t+4, c)
}

// dxSplit splits w's full leaf and adds the entry: ok false if the index
// node above it is full too (the caller gives up the index).
func (f *FS[E]) dxSplit(in *Inode, w *dxWhere, name []byte, ino uint32, ft uint8) (bool, Errno) {
	// The node above the leaf must have room for one more entry.
	nodeLblk := w.path[w.levels].lblk
	m, e := f.bmap(in, nodeLblk)
	if e != 0 || m.pblk == 0 {
		return false, e
	}
	ni, e := f.getWrite(m.pblk, clDir, false)
	if e != 0 {
		return false, e
	}
	defer f.put(ni)
	node := f.data(ni)
	root := w.levels == 0
	co := dxCountOff(node, root)
	limit, count := int(le16(node, co)), int(le16(node, co+2))
	if count >= limit {
		return false, 0
	}
	// The leaf's entries by hash.
	li, end, e := f.dirWrite(in, w.leaf)
	if e != 0 {
		return false, e
	}
	ok, e := f.splitLeaf(in, w, node, co, count, li, end)
	f.put(li)
	if !ok || e != 0 {
		return false, e
	}
	f.dxSetCsum(in, node, root)
	f.dirty(ni)
	// The name, where its hash leads now. (If even the half has no room
	// for a long name, the caller gives the index up: the other half
	// would break the hash order.)
	k := int(w.path[w.levels].k) + 1
	key, newLblk := le32(node, co+k*8), uint64(le32(node, co+k*8+4))
	target := w.leaf
	if w.hash > key&^1 || w.hash == key && key&1 == 0 {
		target = newLblk
	}
	if ok, e := f.insertIn(in, target, name, ino, ft); ok || e != 0 || target == newLblk {
		return ok, e
	}
	// The lower half's room is in pieces too small for the name: packed
	// after all (a listing in progress may then skip an entry).
	if e := f.packLeaf(in, target); e != 0 {
		return false, e
	}
	return f.insertIn(in, target, name, ino, ft)
}

// packLeaf moves leaf lblk's entries to its start, its free room to its
// end.
func (f *FS[E]) packLeaf(in *Inode, lblk uint64) Errno {
	li, end, e := f.dirWrite(in, lblk)
	if e != 0 {
		return e
	}
	defer f.put(li)
	leaf := f.data(li)
	at, last := 0, -1
	for off := 0; off < end; {
		rec := int(le16(leaf, off+4))
		if rec < direntLen(1) || off+rec > end {
			return EUCLEAN
		}
		if ino := le32(leaf, off); ino != 0 {
			l := direntLen(int(leaf[off+6]))
			copy(leaf[at:at+l], leaf[off:off+l])
			put16(leaf, at+4, uint32(l))
			last = at
			at += l
		}
		off += rec
	}
	if last < 0 {
		return EUCLEAN
	}
	put16(leaf, last+4, uint32(f.blockEnd()-last))
	f.dirDone(in, li)
	return 0
}

// splitLeaf moves the upper half (by hash) of leaf buffer li to a new
// block and inserts its entry in the index node after the leaf's.
func (f *FS[E]) splitLeaf(in *Inode, w *dxWhere, node []byte, co, count, li, end int) (bool, Errno) {
	leaf := f.data(li)
	var ents [maxLeafEntries]uint64 // hash<<32 | offset
	n := 0
	for off := 0; off < end; {
		d, e := f.entryAt(leaf, off, end)
		if e != 0 {
			return false, e
		}
		if d.ino != 0 && n < len(ents) {
			h, _ := dirHash(d.name, w.hv, &f.hashSeed)
			ents[n] = uint64(h)<<32 | uint64(off)
			n++
		}
		off += d.recLen
	}
	if n < 2 {
		return false, 0
	}
	for i := 1; i < n; i++ { // insertion sort: a block's few hundred entries
		for j := i; j > 0 && ents[j] < ents[j-1]; j-- {
			ents[j], ents[j-1] = ents[j-1], ents[j]
		}
	}
	half := n / 2
	split := uint32(ents[half] >> 32)
	key := split
	if uint32(ents[half-1]>>32) == split {
		key |= 1 // the hash continues in the new block
	}
	// The upper half to a new block at the end.
	newLblk := f.dirBlocks(in)
	bi, e := f.newDataBlock(in, newLblk)
	if e != 0 {
		return false, e
	}
	in.Size += uint64(f.bs)
	nb := f.data(bi)
	at, last := 0, -1
	for k := half; k < n; k++ {
		off := int(uint32(ents[k]))
		nl := int(leaf[off+6])
		l := direntLen(nl)
		copy(nb[at:at+l], leaf[off:off+l])
		put16(nb, at+4, uint32(l))
		put32(leaf, off, 0) // moved: its room merged below
		last = at
		at += l
	}
	put16(nb, last+4, uint32(f.blockEnd()-last))
	f.dirDone(in, bi)
	f.put(bi)
	// The lower half stays where it is, each moved entry's room merged
	// into the entry before (a first one left empty): a listing's cookie
	// is a byte offset, and an entry that moved under it would be
	// skipped; one moved to the new block may be listed twice instead.
	prev := -1
	for off := 0; off < end; {
		rec := int(le16(leaf, off+4))
		if le32(leaf, off) == 0 && prev >= 0 {
			put16(leaf, prev+4, le16(leaf, prev+4)+uint32(rec))
		} else {
			prev = off
		}
		off += rec
	}
	f.dirDone(in, li)
	// The index entry, after the leaf's.
	k := int(w.path[w.levels].k) + 1
	copy(node[co+(k+1)*8:co+(count+1)*8], node[co+k*8:co+count*8])
	put32(node, co+k*8, key)
	put32(node, co+k*8+4, uint32(newLblk))
	put16(node, co+2, uint32(count+1))
	return true, 0
}
