package ext4

// Allocation: block and inode bitmaps (initialised here for groups
// mkfs left uninitialised), the free counts of the group descriptors and
// of the superblock, and every checksum they carry.

// gdWrite pins group g's descriptor for change: the buffer and its bytes.
func (f *FS[E]) gdWrite(g uint32) (int, []byte, Errno) {
	blk, off := f.descLoc(g)
	i, e := f.getWrite(blk, clGroup, false)
	if e != 0 {
		return -1, nil, e
	}
	return i, f.data(i)[off : off+int(f.descSize)], 0
}

// setGd sets a descriptor field split into lo and hi parts.
func (f *FS[E]) setGd(d []byte, lo, hi, width int, v uint64) {
	if width == 4 {
		put32(d, lo, uint32(v))
		if f.descSize >= 64 {
			put32(d, hi, uint32(v>>32))
		}
		return
	}
	put16(d, lo, uint32(v))
	if f.descSize >= 64 {
		put16(d, hi, uint32(v>>16))
	}
}

// gdDone updates descriptor g's checksum and marks it dirty.
func (f *FS[E]) gdDone(i int, g uint32, d []byte) {
	if f.hasGroupCsum() {
		put16(d, gdChecksum, uint32(f.descCsum(g, d)))
	}
	f.dirty(i)
}

// groupStart and groupBlocks are group g's first block and its number of
// blocks.
func (f *FS[E]) groupStart(g uint32) uint64 { return uint64(f.firstData) + uint64(g)*uint64(f.bpg) }
func (f *FS[E]) groupBlocks(g uint32) uint32 {
	return uint32(min(uint64(f.bpg), f.blocks-f.groupStart(g)))
}

func setBit(b []byte, n uint32)       { b[n>>3] |= 1 << (n & 7) }
func clearBit(b []byte, n uint32)     { b[n>>3] &^= 1 << (n & 7) }
func testBit(b []byte, n uint32) bool { return b[n>>3]&(1<<(n&7)) != 0 }

// bitmapWrite pins group g's block bitmap (inode false) or inode bitmap
// for change, initialising one the group's flags say is uninitialised.
// d is the group's descriptor (pinned by the caller).
func (f *FS[E]) bitmapWrite(g uint32, d []byte, inode bool) (int, Errno) {
	lo, hi, flag := gdBlockBitmap, gdBlockBitmapHi, uint32(bgBlockUninit)
	if inode {
		lo, hi, flag = gdInodeBitmap, gdInodeBitmapHi, bgInodeUninit
	}
	blk := f.gdField(d, lo, hi, 4)
	uninit := f.hasGroupCsum() && le16(d, gdFlags)&flag != 0
	i, e := f.getWrite(blk, clBitmap, uninit)
	if e != 0 || !uninit {
		return i, e
	}
	b := f.data(i)
	n := f.ipg
	if !inode {
		n = f.groupBlocks(g)
		f.markMeta(g, b)
	}
	for k := n; k < f.bs*8; k++ {
		setBit(b, k)
	}
	put16(d, gdFlags, le16(d, gdFlags)&^flag)
	return i, 0
}

// markMeta marks in group g's block bitmap b the blocks of the
// superblock and descriptor copies and of any group's bitmaps and inode
// table that lie in g (flex_bg places them away from their group).
func (f *FS[E]) markMeta(g uint32, b []byte) {
	start, n := f.groupStart(g), uint64(f.groupBlocks(g))
	if f.hasSuper(g) {
		per := f.bs / f.descSize
		meta := 1 + uint64((f.groups+per-1)/per) + uint64(le16(f.sb[:], 0xCE))
		for k := uint64(0); k < meta && k < n; k++ {
			setBit(b, uint32(k))
		}
	}
	itb := uint64(f.ipg) * uint64(f.inodeSize) >> f.logbs
	for h := uint32(0); h < f.groups; h++ {
		gr, e := f.group(h)
		if e != 0 {
			continue
		}
		for _, r := range [3][2]uint64{{gr.blockBitmap, 1}, {gr.inodeBitmap, 1}, {gr.inodeTable, itb}} {
			for k := r[0]; k < r[0]+r[1]; k++ {
				if k >= start && k < start+n {
					setBit(b, uint32(k-start))
				}
			}
		}
	}
}

// bitmapCsum stores the checksum of bitmap b in descriptor d.
func (f *FS[E]) bitmapCsum(d []byte, b []byte, inode bool) {
	if !f.csum {
		return
	}
	lo, hi, n := gdBlockBitmapCsm, gdBlockBmCsumHi, f.bpg/8
	if inode {
		lo, hi, n = gdInodeBitmapCsm, gdInodeBmCsumHi, f.ipg/8
	}
	c := crc32c(f.csumSeed, b[:n])
	put16(d, lo, c)
	if f.descSize >= 64 {
		put16(d, hi, c>>16)
	}
}

// sbAdd adds delta to the superblock's free count at lo (and hi for
// blocks on 64bit).
func (f *FS[E]) sbAddBlocks(delta int64) {
	v := uint64(le32(f.sb[:], sbFreeBlocksLo))
	if f.is64 {
		v |= uint64(le32(f.sb[:], sbFreeBlocksHi)) << 32
	}
	v = uint64(int64(v) + delta)
	put32(f.sb[:], sbFreeBlocksLo, uint32(v))
	if f.is64 {
		put32(f.sb[:], sbFreeBlocksHi, uint32(v>>32))
	}
	f.tx.sbDirty = true
}

func (f *FS[E]) sbAddInodes(delta int32) {
	put32(f.sb[:], sbFreeInodes, uint32(int32(le32(f.sb[:], sbFreeInodes))+delta))
	f.tx.sbDirty = true
}

// groupBitmap pins group g's descriptor and its block or inode bitmap
// for change: the group as read, the descriptor's buffer and bytes, the
// bitmap's buffer.
func (f *FS[E]) groupBitmap(g uint32, inode bool) (gr group, di int, d []byte, bi int, e Errno) {
	if gr, e = f.group(g); e != 0 {
		return
	}
	if di, d, e = f.gdWrite(g); e != 0 {
		return
	}
	if bi, e = f.bitmapWrite(g, d, inode); e != 0 {
		f.put(di)
	}
	return
}

// allocBlocks allocates up to n contiguous free blocks near goal: the
// first block and how many (allocRun with a span of n).
func (f *FS[E]) allocBlocks(goal uint64, n uint32) (uint64, uint32, Errno) {
	return f.allocRun(goal, n, n)
}

// dataSpan is the free run, in bytes, a file's data blocks are placed in
// when a write asks for fewer (the kernel writes a page at a time): the
// next writes' goals, the blocks after, are then free too (16 blocks of
// 4 KiB, 64 of 1 KiB).
const dataSpan = 64 << 10

// allocRun allocates up to n contiguous free blocks near goal: the goal
// block and those free after it if the goal is free (the file's last
// extent grows); else, in goal's group and then in each next one, the
// start of the first free run of span blocks at or after goal (wrapping
// to the group's start); failing one in every group, the longest free
// run of the first group with a free block, from goal's on.
// Taking the first free block and what followed it, as before, scattered
// a file over the one-block holes deletions left, its extents spilling
// into a tree block Linux's allocator (mballoc, delayed allocation) does
// not need for the same file: the differential test against Linux found
// it.
func (f *FS[E]) allocRun(goal uint64, n, span uint32) (uint64, uint32, Errno) {
	if goal < uint64(f.firstData) || goal >= f.blocks {
		goal = uint64(f.firstData)
	}
	g0 := uint32((goal - uint64(f.firstData)) / uint64(f.bpg))
	whole := min(span, n) // the first round takes only runs this long
	for k := uint32(0); k < 2*f.groups; k++ {
		if k == f.groups {
			whole = 1 // no group has one: the longest will do
		}
		g := (g0 + k) % f.groups
		if gr, e := f.group(g); e != 0 || gr.freeBlocks == 0 {
			if e != 0 {
				return 0, 0, e
			}
			continue
		}
		from := uint32(0)
		if k%f.groups == 0 {
			from = uint32(goal - f.groupStart(g))
		}
		gr, di, d, bi, e := f.groupBitmap(g, false)
		if e != 0 {
			return 0, 0, e
		}
		b, cnt := f.data(bi), f.groupBlocks(g)
		var got, run uint32
		if k%f.groups == 0 && from < cnt && !testBit(b, from) {
			for got = from; got+run < cnt && run < n && !testBit(b, got+run); run++ {
			}
		} else {
			got, run = freeRun(b, from, cnt, max(span, n))
			run = min(run, n)
		}
		if run == 0 || run < whole && !(k%f.groups == 0 && got == from) {
			f.put(bi)
			f.put(di)
			continue
		}
		for x := got; x < got+run; x++ {
			setBit(b, x)
		}
		f.bitmapCsum(d, b, false)
		f.dirty(bi)
		f.setGd(d, gdFreeBlocks, gdFreeBlocksHi, 2, uint64(gr.freeBlocks-run))
		f.gdDone(di, g, d)
		f.put(bi)
		f.put(di)
		f.sbAddBlocks(-int64(run))
		return f.groupStart(g) + uint64(got), run, 0
	}
	return 0, 0, ENOSPC
}

// freeRun finds in bitmap b of cnt blocks the first run of n clear bits
// starting at or after from, then from the start; failing that the
// longest run (the first of them), at most n long. run 0: none free.
func freeRun(b []byte, from, cnt, n uint32) (got, run uint32) {
	for pass := 0; pass < 2 && run < n; pass++ {
		lo, hi := from, cnt
		if pass == 1 {
			if from == 0 {
				break
			}
			lo, hi = 0, min(from, cnt)
		}
		for x := lo; x < hi && run < n; {
			if x&7 == 0 && x+8 <= hi && b[x>>3] == 0xFF {
				x += 8
				continue
			}
			if testBit(b, x) {
				x++
				continue
			}
			y := x
			for y < cnt && y-x < n && !testBit(b, y) {
				y++
			}
			if y-x > run {
				got, run = x, y-x
			}
			x = y
		}
	}
	return got, run
}

// freeBlocks frees n blocks from blk (within one group or across).
func (f *FS[E]) freeBlocks(blk uint64, n uint64) Errno {
	for n > 0 {
		if blk < uint64(f.firstData) || blk+n > f.blocks {
			return EUCLEAN
		}
		g := uint32((blk - uint64(f.firstData)) / uint64(f.bpg))
		x := uint32(blk - f.groupStart(g))
		k := min(n, uint64(f.groupBlocks(g)-x))
		if sys, e := f.systemZone(g, blk, k); e != 0 || sys {
			if e == 0 {
				e = EUCLEAN // a corrupt map would free the file system's own blocks
			}
			return e
		}
		gr, di, d, bi, e := f.groupBitmap(g, false)
		if e != 0 {
			return e
		}
		b := f.data(bi)
		freed := uint32(0)
		for y := x; y < x+uint32(k); y++ {
			if testBit(b, y) {
				clearBit(b, y)
				freed++
			}
		}
		f.bitmapCsum(d, b, false)
		f.dirty(bi)
		f.setGd(d, gdFreeBlocks, gdFreeBlocksHi, 2, uint64(gr.freeBlocks+freed))
		f.gdDone(di, g, d)
		f.put(bi)
		f.put(di)
		f.sbAddBlocks(int64(freed))
		// A freed block may be cached with old contents: forget it,
		// unless the journal holds it (jtx, ckpt: it is in the log or
		// going there, so it is revoked — whatever the caller thought
		// the block was — and the revoke releases it at end; an abort
		// needs it back).
		for y := blk; y < blk+k; y++ {
			c := f.find(y)
			if c < 0 {
				continue
			}
			if b := &f.c.bufs[c]; b.jtx || b.ckpt {
				if !f.revoked(y) {
					if e := f.revoke(y, 1); e != 0 {
						return e
					}
				}
			} else if b.pins == 0 && !b.dirty {
				f.unhash(c)
			}
		}
		f.tx.freed = true
		blk += k
		n -= k
	}
	return 0
}

// systemZone says whether blocks [blk, blk+n) of group g overlap the
// file system's own: the superblock and descriptor copies of g, the
// bitmaps and inode tables of g or, under flex_bg, of the groups g
// leads (Linux's system zone, in part).
func (f *FS[E]) systemZone(g uint32, blk, n uint64) (bool, Errno) {
	if f.hasSuper(g) {
		per := f.bs / f.descSize
		meta := 1 + uint64((f.groups+per-1)/per) + uint64(le16(f.sb[:], 0xCE))
		if overlap(f.groupStart(g), meta, blk, n) {
			return true, 0
		}
	}
	last := g + 1
	if flex := uint32(1) << f.logFlex; f.incompat&IncompatFlexBG != 0 && g%flex == 0 {
		last = min(g+flex, f.groups)
	}
	itb := uint64(f.ipg) * uint64(f.inodeSize) >> f.logbs
	for h := g; h < last; h++ {
		gr, e := f.group(h)
		if e != 0 {
			return false, e
		}
		if overlap(gr.blockBitmap, 1, blk, n) || overlap(gr.inodeBitmap, 1, blk, n) || overlap(gr.inodeTable, itb, blk, n) {
			return true, 0
		}
	}
	return false, 0
}

// overlap says whether [a, a+l) and [b, b+n) meet.
func overlap(a, l, b, n uint64) bool { return a < b+n && b < a+l }

// allocInode allocates an inode, in the group of near (an inode number,
// the parent) or the next with a free one.
func (f *FS[E]) allocInode(near uint32, dir bool) (uint32, Errno) {
	g0 := uint32(0)
	if near > 0 && near <= f.inodes {
		g0 = (near - 1) / f.ipg
	}
	for k := uint32(0); k < f.groups; k++ {
		g := (g0 + k) % f.groups
		if gr, e := f.group(g); e != 0 || gr.freeInodes == 0 {
			if e != 0 {
				return 0, e
			}
			continue
		}
		gr, di, d, bi, e := f.groupBitmap(g, true)
		if e != 0 {
			return 0, e
		}
		b := f.data(bi)
		x := uint32(0)
		if g == 0 {
			x = f.firstIno - 1
		}
		for ; x < f.ipg && testBit(b, x); x++ {
		}
		if x == f.ipg {
			f.put(bi)
			f.put(di)
			continue
		}
		setBit(b, x)
		f.bitmapCsum(d, b, true)
		f.dirty(bi)
		f.setGd(d, gdFreeInodes, gdFreeInodesHi, 2, uint64(gr.freeInodes-1))
		if dir {
			f.setGd(d, gdUsedDirs, gdUsedDirsHi, 2, uint64(gr.usedDirs+1))
		}
		if f.hasGroupCsum() && f.ipg-gr.itableUnused <= x {
			f.setGd(d, gdItableUnused, gdItableUnusedHi, 2, uint64(f.ipg-x-1))
		}
		f.gdDone(di, g, d)
		f.put(bi)
		f.put(di)
		f.sbAddInodes(-1)
		return g*f.ipg + x + 1, 0
	}
	return 0, ENOSPC
}

// freeInode frees inode ino in its group's bitmap and counts.
func (f *FS[E]) freeInode(ino uint32, dir bool) Errno {
	g, x := (ino-1)/f.ipg, (ino-1)%f.ipg
	gr, di, d, bi, e := f.groupBitmap(g, true)
	if e != 0 {
		return e
	}
	b := f.data(bi)
	if testBit(b, x) {
		clearBit(b, x)
		f.setGd(d, gdFreeInodes, gdFreeInodesHi, 2, uint64(gr.freeInodes+1))
		if dir && gr.usedDirs > 0 {
			f.setGd(d, gdUsedDirs, gdUsedDirsHi, 2, uint64(gr.usedDirs-1))
		}
		f.sbAddInodes(1)
	}
	// No early commit for an inode (tx.go's freed is for blocks): one
	// used again before the commit changes journaled metadata only,
	// which commits with the call that freed it or not at all.
	f.bitmapCsum(d, b, true)
	f.dirty(bi)
	f.gdDone(di, g, d)
	f.put(bi)
	f.put(di)
	f.forget(ino)
	return 0
}
