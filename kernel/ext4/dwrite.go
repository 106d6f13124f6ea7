package ext4

// Changing directories: entries added in the first block with room (the
// leaf its hash leads to in an indexed directory, split in two by hash
// when full: dxwrite.go), removed by merging into the entry before, a new
// block appended when none has room. A linear directory stays linear
// (Linux indexes one when its first block fills, and lists indexed ones
// in hash order; here a listing's cookie is a byte offset, which a
// split moves entries under: dxwrite.go). An indexed directory whose index
// node is full stops being indexed (its index blocks become empty entry
// blocks): Linux would split the node too; e2fsck -D indexes it again.

// dirWrite pins block lblk of directory in for change, checked first.
func (f *FS[E]) dirWrite(in *Inode, lblk uint64) (i, end int, e Errno) {
	r, end, e := f.dirBlock(in, lblk)
	if e != 0 {
		return -1, 0, e
	}
	blk := f.c.bufs[r].blk
	f.put(r)
	i, e = f.getWrite(blk, clDir, false)
	return i, end, e
}

// dirDone sets a directory block's checksum tail and marks it dirty.
func (f *FS[E]) dirDone(in *Inode, i int) {
	b := f.data(i)
	if f.csum {
		t := len(b) - tailLen
		put32(b, t, 0)
		put16(b, t+4, tailLen)
		b[t+6], b[t+7] = 0, tailFT
		put32(b, t+8, crc32c(f.inodeSeed(in.Ino, in.Generation), b[:t]))
	}
	f.dirty(i)
}

// blockEnd is where entries end in a directory block.
func (f *FS[E]) blockEnd() int {
	if f.csum {
		return int(f.bs) - tailLen
	}
	return int(f.bs)
}

// putEntry writes an entry at off of b.
func (f *FS[E]) putEntry(b []byte, off, recLen int, ino uint32, name []byte, ft uint8) {
	put32(b, off, ino)
	put16(b, off+4, uint32(recLen))
	b[off+6] = byte(len(name))
	b[off+7] = 0
	if f.incompat&IncompatFiletype != 0 {
		b[off+7] = ft
	}
	copy(b[off+direntHdr:], name)
}

// insertIn adds the entry to block lblk if it has room: ok false if not.
// The block joins the transaction only if it has.
func (f *FS[E]) insertIn(in *Inode, lblk uint64, name []byte, ino uint32, ft uint8) (bool, Errno) {
	i, end, e := f.dirBlock(in, lblk)
	if e != 0 {
		return false, e
	}
	b := f.data(i)
	if isDxNode(in, lblk, b) && lblk != 0 {
		f.put(i)
		return false, 0
	}
	need := direntLen(len(name))
	at := -1
	for off := 0; off < end; {
		d, e := f.entryAt(b, off, end)
		if e != 0 {
			f.put(i)
			return false, e
		}
		if d.ino == 0 && d.recLen >= need || d.ino != 0 && d.recLen-direntLen(len(d.name)) >= need {
			at = off
			break
		}
		off += d.recLen
	}
	f.put(i)
	if at < 0 {
		return false, 0
	}
	w, _, e := f.dirWrite(in, lblk)
	if e != 0 {
		return false, e
	}
	b = f.data(w)
	recLen := int(le16(b, at+4))
	if le32(b, at) == 0 {
		f.putEntry(b, at, recLen, ino, name, ft)
	} else {
		used := direntLen(int(b[at+6]))
		put16(b, at+4, uint32(used))
		f.putEntry(b, at+used, recLen-used, ino, name, ft)
	}
	f.dirDone(in, w)
	f.put(w)
	return true, 0
}

// addEntry adds name → ino (of file type ft) to directory in (whose
// inode the caller writes: its size may grow).
func (f *FS[E]) addEntry(in *Inode, name []byte, ino uint32, ft uint8) Errno {
	if in.Flags&FlagInlineData != 0 {
		return EOPNOTSUPP
	}
	if in.Flags&FlagIndex != 0 {
		var w dxWhere
		_, e := f.dxLookup(in, name, &w)
		if e == 0 {
			ok, e := f.insertIn(in, w.leaf, name, ino, ft)
			if ok || e != 0 {
				return e
			}
			if ok, e = f.dxSplit(in, &w, name, ino, ft); ok || e != 0 {
				return e
			}
		} else if e != errBadDx {
			return e
		}
		if e := f.unindex(in); e != 0 {
			return e
		}
	}
	n := f.dirBlocks(in)
	start := uint64(0) // the block that took the last entry, then on round
	if f.room.dir == in.Ino && f.room.lblk < n {
		start = f.room.lblk
	}
	for k := uint64(0); k < n; k++ {
		lblk := (start + k) % n
		ok, e := f.insertIn(in, lblk, name, ino, ft)
		if ok || e != 0 {
			f.room.dir, f.room.lblk = in.Ino, lblk
			return e
		}
	}
	// A new block at the end.
	i, e := f.newDataBlock(in, n)
	if e != 0 {
		return e
	}
	f.room.dir, f.room.lblk = in.Ino, n
	defer f.put(i)
	f.putEntry(f.data(i), 0, f.blockEnd(), ino, name, ft)
	f.dirDone(in, i)
	in.Size += uint64(f.bs)
	return 0
}

// newDataBlock allocates, maps at lblk and pins (zeroed, in the
// transaction) a metadata-like block of in: a directory block.
func (f *FS[E]) newDataBlock(in *Inode, lblk uint64) (int, Errno) {
	goal := f.goal(in, lblk)
	blk, _, e := f.allocBlocks(goal, 1)
	if e != 0 {
		return -1, e
	}
	in.Blocks += uint64(f.bs) >> 9
	if e := f.mapAdd(in, lblk, blk, 1); e != 0 {
		return -1, e
	}
	return f.getWrite(blk, clDir, true)
}

// goal is where a block for lblk of in would best go: after the block
// mapped before it, else in the inode's group.
func (f *FS[E]) goal(in *Inode, lblk uint64) uint64 {
	if lblk > 0 {
		if m, e := f.bmap(in, lblk-1); e == 0 && m.pblk != 0 {
			return m.pblk + 1
		}
	}
	return f.groupStart((in.Ino - 1) / f.ipg)
}

// unindex makes an indexed directory linear: block 0's ".." spans the
// block, and index nodes become empty blocks.
//
// A large index takes several transactions; block 0 goes last, and a
// lookup meanwhile finds index nodes gone, gives up the index and scans.
func (f *FS[E]) unindex(in *Inode) Errno {
	n := f.dirBlocks(in)
	for k := uint64(1); k <= n; k++ {
		lblk := k % n
		if f.tx.n > maxTx-8 {
			if e := f.end(); e != 0 {
				return e
			}
			if e := f.begin(); e != 0 {
				return e
			}
		}
		m, e := f.bmap(in, lblk)
		if e != 0 {
			return e
		}
		i, e := f.get(m.pblk)
		if e != 0 {
			return e
		}
		dx := isDxNode(in, lblk, f.data(i))
		f.put(i)
		if !dx {
			continue
		}
		i, e = f.getWrite(m.pblk, clDir, false)
		if e != 0 {
			return e
		}
		b := f.data(i)
		if lblk == 0 {
			put16(b, 12+4, uint32(f.blockEnd()-12))
		} else {
			put32(b, 0, 0)
			put16(b, 4, uint32(f.blockEnd()))
			b[6], b[7] = 0, 0
		}
		f.dirDone(in, i)
		f.put(i)
	}
	in.Flags &^= FlagIndex
	return 0
}

// removeEntry removes name from directory in: the inode it named.
func (f *FS[E]) removeEntry(in *Inode, name []byte) (uint32, Errno) {
	return f.changeEntry(in, name, 0, 0, true)
}

// changeEntry finds name in in and removes it (remove) or points it at
// ino with file type ft; it answers the inode it named. In an indexed
// directory it looks in the leaves the name's hash leads to.
func (f *FS[E]) changeEntry(in *Inode, name []byte, ino uint32, ft uint8, remove bool) (uint32, Errno) {
	if in.Flags&FlagInlineData != 0 {
		return 0, EOPNOTSUPP
	}
	if isDots(name) {
		// "." and ".." are in the first block, an index root's too.
		old, found, e := f.changeIn(in, 0, name, ino, ft, remove)
		if !found && e == 0 {
			e = ENOENT
		}
		return old, e
	}
	if in.Flags&FlagIndex != 0 && f.compat&CompatDirIndex != 0 {
		var w dxWhere
		_, e := f.dxLookup(in, name, &w)
		for n, blk := 0, w.leaf; e == 0 && n < 1<<16; n++ {
			old, found, e := f.changeIn(in, blk, name, ino, ft, remove)
			if found || e != 0 {
				return old, e
			}
			next, ok, e := f.dxNext(in, &w.path, w.levels, w.hash)
			if e != 0 {
				return 0, e
			}
			if !ok {
				return 0, ENOENT
			}
			blk = next
		}
		if e == 0 {
			e = ENOENT
		}
		if e != errBadDx {
			return 0, e
		}
	}
	n := f.dirBlocks(in)
	for lblk := uint64(0); lblk < n; lblk++ {
		old, found, e := f.changeIn(in, lblk, name, ino, ft, remove)
		if found || e != 0 {
			return old, e
		}
	}
	return 0, ENOENT
}

// changeIn is changeEntry in block lblk: found false if name is not
// there.
func (f *FS[E]) changeIn(in *Inode, lblk uint64, name []byte, ino uint32, ft uint8, remove bool) (uint32, bool, Errno) {
	i, end, e := f.dirBlock(in, lblk)
	if e != 0 {
		return 0, false, e
	}
	b := f.data(i)
	prev, at := -1, -1
	if !(isDxNode(in, lblk, b) && lblk != 0) {
		for off := 0; off < end; {
			d, e := f.entryAt(b, off, end)
			if e != 0 {
				f.put(i)
				return 0, false, e
			}
			if d.ino != 0 && string(d.name) == string(name) {
				at = off
				break
			}
			prev = off
			off += d.recLen
		}
	}
	f.put(i)
	if at < 0 {
		return 0, false, 0
	}
	w, _, e := f.dirWrite(in, lblk)
	if e != 0 {
		return 0, false, e
	}
	b = f.data(w)
	old := le32(b, at)
	switch {
	case !remove:
		put32(b, at, ino)
		if f.incompat&IncompatFiletype != 0 {
			b[at+7] = ft
		}
	case prev >= 0:
		put16(b, prev+4, le16(b, prev+4)+le16(b, at+4))
	default:
		put32(b, at, 0)
	}
	if lblk == 0 && isDxNode(in, 0, b) {
		f.dxSetCsum(in, b, true) // "..", changed in an index root: its dx tail, not a leaf's
		f.dirty(w)
	} else {
		f.dirDone(in, w)
	}
	f.put(w)
	return old, true, 0
}

// dirEmpty says whether directory in holds only "." and "..".
func (f *FS[E]) dirEmpty(in *Inode) (bool, Errno) {
	if in.Flags&FlagInlineData != 0 {
		_, _, done, e := f.inlineEntry(in, 0)
		return done, e
	}
	n := f.dirBlocks(in)
	for lblk := uint64(0); lblk < n; lblk++ {
		i, end, e := f.dirBlock(in, lblk)
		if e != 0 {
			return false, e
		}
		b := f.data(i)
		for off := 0; off < end && !(isDxNode(in, lblk, b) && lblk != 0); {
			d, e := f.entryAt(b, off, end)
			if e != 0 {
				f.put(i)
				return false, e
			}
			if d.ino != 0 && string(d.name) != "." && string(d.name) != ".." {
				f.put(i)
				return false, 0
			}
			off += d.recLen
		}
		f.put(i)
	}
	return true, 0
}
