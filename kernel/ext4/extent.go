package ext4

// Extent trees (i_block holds the root; index and leaf blocks below it)
// and the old block maps (12 direct blocks, then single, double and
// triple indirect blocks of 32-bit block numbers).

const (
	extMagic     = 0xF30A
	extHdr       = 12
	extEntry     = 12
	maxExtDepth  = 5
	extInitMax   = 32768 // an extent longer than this is uninitialised (len - 32768)
	nDirectBlock = 12
)

// checkHeader checks an extent header at the start of b: the magic, the
// entries within the room of b (max), and the depth (want, or any up to
// maxExtDepth if want < 0).
func checkHeader(b []byte, _ int, want int) Errno {
	if le16(b, 0) != extMagic {
		return EUCLEAN
	}
	n, max, depth := le16(b, 2), le16(b, 4), le16(b, 6)
	if n > max || extHdr+int(max)*extEntry > len(b) || depth > maxExtDepth || want >= 0 && int(depth) != want {
		return EUCLEAN
	}
	return 0
}

// extBlockCsum is the checksum of an extent block (its tail follows the
// max entries).
func (f *FS[E]) extTail(b []byte) int { return extHdr + int(le16(b, 4))*extEntry }

// mapping is where a run of logical blocks lives.
type mapping struct {
	pblk   uint64 // first physical block; 0: a hole
	n      uint64 // blocks in the run (at least 1)
	uninit bool   // allocated but unwritten: reads as zeros
}

// bmap maps logical block lblk of in.
func (f *FS[E]) bmap(in *Inode, lblk uint64) (mapping, Errno) {
	if in.Flags&FlagExtents != 0 {
		return f.extMap(in, lblk)
	}
	return f.indMap(in, lblk)
}

func extentAt(b []byte, k int) (lblk uint64, n uint64, pblk uint64, uninit bool) {
	o := extHdr + k*extEntry
	lblk = uint64(le32(b, o))
	n = uint64(le16(b, o+4))
	if n > extInitMax {
		n -= extInitMax
		uninit = true
	}
	pblk = uint64(le16(b, o+6))<<32 | uint64(le32(b, o+8))
	return
}

func indexAt(b []byte, k int) (lblk uint64, child uint64) {
	o := extHdr + k*extEntry
	return uint64(le32(b, o)), uint64(le16(b, o+8))<<32 | uint64(le32(b, o+4))
}

// extNode pins extent block blk, checked: header (depth want), checksum.
func (f *FS[E]) extNode(in *Inode, blk uint64, want int) (int, Errno) {
	i, e := f.get(blk)
	if e != 0 {
		return -1, e
	}
	b := f.data(i)
	if e := checkHeader(b, 0, want); e != 0 {
		f.put(i)
		return -1, e
	}
	if f.csum && !f.c.bufs[i].verified {
		t := f.extTail(b)
		if t+4 > len(b) || crc32c(f.inodeSeed(in.Ino, in.Generation), b[:t]) != le32(b, t) {
			f.put(i)
			return -1, EBADMSG
		}
		f.c.bufs[i].verified = true
	}
	return i, 0
}

func (f *FS[E]) extMap(in *Inode, lblk uint64) (mapping, Errno) {
	bi := -1 // the pinned extent block, if any
	m, e := f.extWalk(in, lblk, &bi)
	if bi >= 0 {
		f.put(bi)
	}
	return m, e
}

func (f *FS[E]) extWalk(in *Inode, lblk uint64, pbi *int) (mapping, Errno) {
	node := in.Block[:]
	if e := checkHeader(node, 0, -1); e != 0 {
		return mapping{}, e
	}
	next := uint64(1 << 32) // the first logical block past this subtree
	for {
		n, depth := int(le16(node, 2)), int(le16(node, 6))
		if depth == 0 {
			// Leaf: the last extent starting at or before lblk.
			k := searchNode(node, n, lblk)
			if k >= 0 {
				l, cnt, p, u := extentAt(node, k)
				if lblk < l+cnt {
					if p+cnt > f.blocks || p == 0 {
						return mapping{}, EUCLEAN
					}
					return mapping{pblk: p + (lblk - l), n: l + cnt - lblk, uninit: u}, 0
				}
			}
			if k+1 < n {
				l, _, _, _ := extentAt(node, k+1)
				next = min(next, l)
			}
			if next <= lblk {
				return mapping{}, EUCLEAN
			}
			return mapping{n: next - lblk}, 0
		}
		k := searchNode(node, n, lblk)
		if k < 0 {
			if n == 0 {
				return mapping{n: next - lblk}, 0
			}
			l, _ := indexAt(node, 0)
			if l <= lblk {
				return mapping{}, EUCLEAN
			}
			return mapping{n: l - lblk}, 0
		}
		if k+1 < n {
			l, _ := indexAt(node, k+1)
			next = min(next, l)
		}
		_, child := indexAt(node, k)
		if child == 0 || child >= f.blocks {
			return mapping{}, EUCLEAN
		}
		ni, e := f.extNode(in, child, depth-1)
		if e != 0 {
			return mapping{}, e
		}
		if *pbi >= 0 {
			f.put(*pbi)
		}
		*pbi = ni
		node = f.data(ni)
	}
}

// searchNode is the last of the n entries of node whose first logical
// block is at most lblk, -1 if none (the entries are sorted).
func searchNode(node []byte, n int, lblk uint64) int {
	lo, hi := 0, n // entries [lo, hi) unknown; answer is lo-1 at the end
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if uint64(le32(node, extHdr+m*extEntry)) <= lblk {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// indMap maps lblk through the old block map.
func (f *FS[E]) indMap(in *Inode, lblk uint64) (mapping, Errno) {
	per := uint64(f.bs / 4)
	if lblk < nDirectBlock {
		p := uint64(le32(in.Block[:], int(lblk)*4))
		if p >= f.blocks {
			return mapping{}, EUCLEAN
		}
		return mapping{pblk: p, n: 1}, 0
	}
	lblk -= nDirectBlock
	var slot, levels int
	switch {
	case lblk < per:
		slot, levels = 12, 1
	case lblk < per+per*per:
		lblk -= per
		slot, levels = 13, 2
	case lblk < per+per*per+per*per*per:
		lblk -= per + per*per
		slot, levels = 14, 3
	default:
		return mapping{n: 1}, 0
	}
	p := uint64(le32(in.Block[:], slot*4))
	span := uint64(1)
	for l := 1; l < levels; l++ {
		span *= per
	}
	for l := 0; l < levels; l++ {
		if p == 0 {
			return mapping{n: 1}, 0
		}
		if p >= f.blocks {
			return mapping{}, EUCLEAN
		}
		i, e := f.get(p)
		if e != 0 {
			return mapping{}, e
		}
		p = uint64(le32(f.data(i), int(lblk/span%per)*4))
		f.put(i)
		lblk %= span
		span /= per
	}
	if p >= f.blocks {
		return mapping{}, EUCLEAN
	}
	return mapping{pblk: p, n: 1}, 0
}
