package ext4

// Writing the old block maps (ext2/ext3 files, and files of an ext4 made
// from one): a block mapped into the direct slots or the single, double
// and triple indirect blocks, allocated as needed (indirect blocks carry
// no checksum); truncation frees the blocks past a point and the
// indirect blocks that map only blocks past it (one that maps some before
// it stays, its later entries cleared). Unwritten blocks do not exist here:
// fallocate is EOPNOTSUPP, as in Linux.

// mapAdd maps n logical blocks from lblk (a hole) to pblk on.
func (f *FS[E]) mapAdd(in *Inode, lblk, pblk, n uint64) Errno {
	if in.Flags&FlagExtents != 0 {
		return f.extAdd(in, lblk, pblk, n, false)
	}
	for k := uint64(0); k < n; k++ {
		if e := f.indSet(in, lblk+k, pblk+k); e != 0 {
			return e
		}
	}
	return 0
}

// indWhere is where lblk lies in a block map: the i_block slot, the
// levels of indirect blocks below it and the blocks one entry of the
// top level spans.
func (f *FS[E]) indWhere(lblk uint64) (slot, levels int, rel, span uint64, e Errno) {
	per := uint64(f.bs / 4)
	if lblk < nDirectBlock {
		return int(lblk), 0, 0, 1, 0
	}
	lblk -= nDirectBlock
	span = 1
	for levels = 1; levels <= 3; levels++ {
		if lblk < span*per {
			return nDirectBlock - 1 + levels, levels, lblk, span, 0
		}
		lblk -= span * per
		span *= per
	}
	return 0, 0, 0, 0, EFBIG
}

// indSet maps lblk to pblk, allocating the indirect blocks on the way.
func (f *FS[E]) indSet(in *Inode, lblk, pblk uint64) Errno {
	slot, levels, rel, span, e := f.indWhere(lblk)
	if e != 0 {
		return e
	}
	per := uint64(f.bs / 4)
	if levels == 0 {
		put32(in.Block[:], slot*4, uint32(pblk))
		return 0
	}
	p := uint64(le32(in.Block[:], slot*4))
	if p == 0 {
		if p, e = f.newIndBlock(in, pblk); e != 0 {
			return e
		}
		put32(in.Block[:], slot*4, uint32(p))
	}
	for l := 0; l < levels; l++ {
		if p >= f.blocks {
			return EUCLEAN
		}
		i, e := f.getWrite(p, clTree, false)
		if e != 0 {
			return e
		}
		b := f.data(i)
		k := int(rel / span % per)
		if l == levels-1 {
			put32(b, k*4, uint32(pblk))
		} else if c := uint64(le32(b, k*4)); c != 0 {
			p = c
		} else {
			if p, e = f.newIndBlock(in, pblk); e != 0 {
				f.put(i)
				return e
			}
			put32(b, k*4, uint32(p))
		}
		f.dirty(i)
		f.put(i)
		rel %= span
		span /= per
	}
	return 0
}

// newIndBlock allocates a zeroed indirect block near goal.
func (f *FS[E]) newIndBlock(in *Inode, goal uint64) (uint64, Errno) {
	blk, _, e := f.allocBlocks(goal, 1)
	if e != 0 {
		return 0, e
	}
	i, e := f.getWrite(blk, clTree, true)
	if e != 0 {
		return 0, e
	}
	f.dirty(i)
	f.put(i)
	in.Blocks += uint64(f.bs) >> 9
	return blk, 0
}

// indTruncate frees the blocks of in's block map from logical block from
// on (and the indirect blocks emptied).
func (f *FS[E]) indTruncate(in *Inode, from uint64) Errno {
	per := uint64(f.bs / 4)
	base, span := uint64(nDirectBlock), uint64(1)
	for k := 0; k < 15; k++ {
		p := uint64(le32(in.Block[:], k*4))
		cover := uint64(1) // blocks slot k maps
		start := uint64(k)
		if k >= nDirectBlock {
			cover = span * per
			start = base
			base += cover
			span *= per
		}
		if p == 0 || from >= start+cover {
			continue
		}
		if p >= f.blocks {
			return EUCLEAN
		}
		if from <= start {
			n, e := f.freeTree(p, max(k-11, 0), in.IsDir())
			in.Blocks -= n << (f.logbs - 9)
			if e != 0 {
				return e
			}
			put32(in.Block[:], k*4, 0)
			continue
		}
		n, e := f.cutTree(p, k-11, from-start, cover/per, in.IsDir())
		in.Blocks -= n << (f.logbs - 9)
		if e != 0 {
			return e
		}
	}
	return 0
}

// freeTree frees block p and, at level > 0, what it maps: the blocks
// freed. dir: the blocks are a directory's, metadata at every level.
func (f *FS[E]) freeTree(p uint64, level int, dir bool) (uint64, Errno) {
	n := uint64(0)
	for k := 0; level > 0 && k < int(f.bs/4); k++ {
		i, e := f.get(p)
		if e != 0 {
			return n, e
		}
		c := uint64(le32(f.data(i), k*4))
		f.put(i)
		if c == 0 {
			continue
		}
		if c >= f.blocks {
			return n, EUCLEAN
		}
		m, e := f.freeTree(c, level-1, dir)
		n += m
		if e != 0 {
			return n, e
		}
		if e := f.restart(); e != 0 {
			return n, e
		}
	}
	if level > 0 || dir { // an indirect block, a directory's block: metadata, not to be replayed over its next use
		if e := f.revoke(p, 1); e != 0 {
			return n, e
		}
	}
	return n + 1, f.freeBlocks(p, 1)
}

// cutTree frees what indirect block p (of level, each entry spanning
// span blocks) maps from its relative block rel on; p itself stays.
func (f *FS[E]) cutTree(p uint64, level int, rel, span uint64, dir bool) (uint64, Errno) {
	n := uint64(0)
	first := rel / span
	for k := uint64(first); k < uint64(f.bs/4); k++ {
		i, e := f.getWrite(p, clTree, false)
		if e != 0 {
			return n, e
		}
		c := uint64(le32(f.data(i), int(k)*4))
		f.put(i)
		if c == 0 {
			continue
		}
		if c >= f.blocks {
			return n, EUCLEAN
		}
		var m uint64
		if k == first && rel%span != 0 && level > 1 {
			m, e = f.cutTree(c, level-1, rel%span, span/uint64(f.bs/4), dir)
			n += m
			if e != 0 {
				return n, e
			}
			continue
		}
		m, e = f.freeTree(c, level-1, dir)
		n += m
		if e != 0 {
			return n, e
		}
		i, e = f.getWrite(p, clTree, false)
		if e != 0 {
			return n, e
		}
		put32(f.data(i), int(k)*4, 0)
		f.dirty(i)
		f.put(i)
		if e := f.restart(); e != 0 {
			return n, e
		}
	}
	return n, 0
}

// restart commits the open transaction and opens the next when it is
// near full (a long truncate): its blocks or its revokes.
func (f *FS[E]) restart() Errno {
	if f.tx.n <= maxTx-12 && f.tx.nrev <= maxRevoke/2 {
		return 0
	}
	if e := f.end(); e != 0 {
		return e
	}
	return f.begin()
}
