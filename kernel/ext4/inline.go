package ext4

// Inline data: a small file's or directory's bytes in i_block (60 bytes)
// and, past those, in the value of the extended attribute system.data in
// the inode's extra space (after i_extra_isize). An inline directory's
// i_block starts with the parent's inode number; its entries follow,
// with no "." or "..".

const (
	xattrMagic      = 0xEA020000
	xattrIndexSys   = 7 // the "system." prefix
	xattrEntryHdr   = 16
	inlineDirParent = 4
)

// inlineXattr pins the block of in's raw inode and returns the value of
// system.data (empty if absent). The caller puts the buffer.
func (f *FS[E]) inlineXattr(in *Inode) (int, []byte, Errno) {
	blk, off, e := f.inodeLoc(in.Ino)
	if e != 0 {
		return -1, nil, e
	}
	i, e := f.get(blk)
	if e != 0 {
		return -1, nil, e
	}
	raw := f.data(i)[off : off+int(f.inodeSize)]
	start := goodOldInodeSize + int(in.ExtraIsize)
	if len(raw) <= goodOldInodeSize || start+4 > len(raw) || le32(raw, start) != xattrMagic {
		return i, nil, 0
	}
	first := start + 4
	for p := first; p+4 <= len(raw) && le32(raw, p) != 0; {
		if p+xattrEntryHdr > len(raw) {
			f.put(i)
			return -1, nil, EUCLEAN
		}
		nl, idx := int(raw[p]), raw[p+1]
		voff, vino, vsize := int(le16(raw, p+2)), le32(raw, p+4), int(le32(raw, p+8))
		next := p + (xattrEntryHdr+nl+3)&^3
		if next > len(raw) {
			f.put(i)
			return -1, nil, EUCLEAN
		}
		if idx == xattrIndexSys && string(raw[p+xattrEntryHdr:p+xattrEntryHdr+nl]) == "data" {
			if vino != 0 || first+voff+vsize > len(raw) || vsize > 0 && first+voff < next {
				f.put(i)
				return -1, nil, EUCLEAN
			}
			return i, raw[first+voff : first+voff+vsize], 0
		}
		p = next
	}
	return i, nil, 0
}

// inlineRead copies in's inline bytes at off into b.
func (f *FS[E]) inlineRead(in *Inode, b []byte, off uint64) (int, Errno) {
	i, x, e := f.inlineXattr(in)
	if e != 0 {
		return 0, e
	}
	defer f.put(i)
	// Past the inline bytes (a file extended by truncate) reads as
	// zeros, as Linux's inline read zeroes the rest of the page.
	n := 0
	for n < len(b) && off < in.Size {
		switch {
		case off < 60:
			b[n] = in.Block[off]
		case off-60 < uint64(len(x)):
			b[n] = x[off-60]
		default:
			b[n] = 0
		}
		n++
		off++
	}
	return n, 0
}

// inlineEntry is the first entry of an inline directory at or after
// virtual offset from (i_block's entries after the parent, then
// system.data's): the entry, its offset, or done at the end.
func (f *FS[E]) inlineEntry(in *Inode, from uint64) (d dirent, at uint64, done bool, e Errno) {
	i, x, e := f.inlineXattr(in)
	if e != 0 {
		return dirent{}, from, false, e
	}
	defer f.put(i)
	base := uint64(0)
	for part := 0; part < 2; part++ {
		b := in.Block[inlineDirParent:]
		if part == 1 {
			b = x
		}
		for off := 0; off < len(b); {
			d, e := f.entryAt(b, off, len(b))
			if e != 0 {
				return dirent{}, base + uint64(off), false, e
			}
			if base+uint64(off) >= from && d.ino != 0 {
				// The name stays valid only while the inode's block
				// is cached: copy it out at once.
				return d, base + uint64(off), false, 0
			}
			off += d.recLen
		}
		base += uint64(len(b))
	}
	return dirent{}, base, true, 0
}

func (f *FS[E]) inlineLookup(in *Inode, name []byte) (uint32, Errno) {
	if string(name) == "." {
		return in.Ino, 0
	}
	if string(name) == ".." {
		return le32(in.Block[:], 0), 0
	}
	for at := uint64(0); ; {
		d, off, done, e := f.inlineEntry(in, at)
		if e != 0 {
			return 0, e
		}
		if done {
			return 0, ENOENT
		}
		if string(d.name) == string(name) {
			return d.ino, 0
		}
		at = off + uint64(d.recLen)
	}
}
