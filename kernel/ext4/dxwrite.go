package ext4

// Splitting a full htree leaf: its entries sorted by hash, the upper half
// moved to a new block at the directory's end, an index entry for it
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
	return f.insertIn(in, target, name, ino, ft)
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
		put32(leaf, off, 0) // moved: dropped below
		last = at
		at += l
	}
	put16(nb, last+4, uint32(f.blockEnd()-last))
	f.dirDone(in, bi)
	f.put(bi)
	// The lower half packed at the leaf's start.
	at, last = 0, -1
	for off := 0; off < end; {
		rec := int(le16(leaf, off+4))
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
		return false, EUCLEAN
	}
	put16(leaf, last+4, uint32(f.blockEnd()-last))
	f.dirDone(in, li)
	// The index entry, after the leaf's.
	k := int(w.path[w.levels].k) + 1
	copy(node[co+(k+1)*8:co+(count+1)*8], node[co+k*8:co+count*8])
	put32(node, co+k*8, key)
	put32(node, co+k*8+4, uint32(newLblk))
	put16(node, co+2, uint32(count+1))
	return true, 0
}

// makeIndexed turns directory in, one linear block with no room for the
// name, into an htree, as Linux's make_indexed_dir: block 0 becomes the
// index root ("." kept, ".." spanning the rest of the block, which holds
// the root's info and entries), its other entries move to a new leaf at
// block 1, which is split by hash in two (do_split), and the name goes
// where its hash leads. ok false: block 0 does not start with "." and
// ".." as mkdir lays them out (left linear).
func (f *FS[E]) makeIndexed(in *Inode, name []byte, ino uint32, ft uint8) (bool, Errno) {
	ri, end, e := f.dirWrite(in, 0)
	if e != 0 {
		return false, e
	}
	defer f.put(ri)
	b := f.data(ri)
	dot, e := f.entryAt(b, 0, end)
	if e != 0 {
		return false, e
	}
	dd, e := f.entryAt(b, dot.recLen, end)
	if e != 0 {
		return false, e
	}
	if string(dot.name) != "." || dot.recLen != direntLen(1) || string(dd.name) != ".." || dxRootInfo+8+8 > end {
		return false, 0
	}
	// The other entries, packed into the new leaf.
	li, e := f.newDataBlock(in, 1)
	if e != 0 {
		return false, e
	}
	leaf := f.data(li)
	at, last := 0, -1
	for off := dot.recLen + dd.recLen; off < end; {
		d, e := f.entryAt(b, off, end)
		if e != 0 {
			f.put(li)
			return false, e
		}
		if d.ino != 0 {
			l := direntLen(len(d.name))
			copy(leaf[at:at+l], b[off:off+l])
			put16(leaf, at+4, uint32(l))
			last = at
			at += l
		}
		off += d.recLen
	}
	if last < 0 {
		f.put(li)
		return false, 0 // nothing to move: there was room
	}
	put16(leaf, last+4, uint32(f.blockEnd()-last))
	f.dirDone(in, li)
	f.put(li)
	// Block 0: the root.
	clear(b[dxRootInfo:])
	put16(b, dot.recLen+4, uint32(len(b)-dot.recLen))
	b[dxRootInfo+4], b[dxRootInfo+5] = f.defHash, 8 // hash version, info length; 0 levels
	co := dxRootInfo + 8
	limit := (len(b) - co) / 8
	if f.csum {
		limit-- // the dx tail
	}
	put16(b, co, uint32(limit))
	put16(b, co+2, 1)
	put32(b, co+4, 1) // hash 0 on: block 1
	in.Flags |= FlagIndex
	in.Size = 2 * uint64(f.bs)
	f.dxSetCsum(in, b, true)
	f.dirty(ri)
	var w dxWhere
	if _, e := f.dxLookup(in, name, &w); e != 0 {
		return false, e // the root just written is one dxLookup takes: never errBadDx
	}
	return f.dxSplit(in, &w, name, ino, ft)
}
