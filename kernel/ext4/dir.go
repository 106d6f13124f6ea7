package ext4

// Directories: blocks of entries (inode, rec_len, name_len, file type,
// name), checked as ext4_check_dir_entry does, with a checksum tail under
// metadata_csum; an htree index (dx root in block 0, dx nodes) over them
// in indexed directories; inline directories in the inode.

const (
	direntHdr  = 8
	tailLen    = 12   // the checksum tail: a fake entry of 12 bytes
	tailFT     = 0xDE // its file type
	dxRootInfo = 24   // dx_root_info's offset in block 0
)

// direntLen is the smallest rec_len of an entry with an n-byte name.
func direntLen(n int) int { return (direntHdr + n + 3) &^ 3 }

// File types in directory entries, and getdents64's d_type.
const (
	ftUnknown = 0
	ftReg     = 1
	ftDir     = 2
	ftChr     = 3
	ftBlk     = 4
	ftFifo    = 5
	ftSock    = 6
	ftLink    = 7
)

// DType is getdents64's d_type of an entry's file type.
func DType(ft uint8) uint8 {
	switch ft {
	case ftReg:
		return 8
	case ftDir:
		return 4
	case ftChr:
		return 2
	case ftBlk:
		return 6
	case ftFifo:
		return 1
	case ftSock:
		return 12
	case ftLink:
		return 10
	}
	return 0
}

// modeFT is the entry file type of mode.
func modeFT(mode uint32) uint8 {
	switch mode & SIFMT {
	case SIFREG:
		return ftReg
	case SIFDIR:
		return ftDir
	case SIFCHR:
		return ftChr
	case SIFBLK:
		return ftBlk
	case SIFIFO:
		return ftFifo
	case SIFSOCK:
		return ftSock
	case SIFLNK:
		return ftLink
	}
	return ftUnknown
}

// dirent is one entry as checked.
type dirent struct {
	ino    uint32
	recLen int
	name   []byte
	ft     uint8
}

// entryAt checks and returns the entry at off of a block whose entries
// end at end.
func (f *FS[E]) entryAt(b []byte, off, end int) (dirent, Errno) {
	if off+direntHdr > end {
		return dirent{}, EUCLEAN
	}
	d := dirent{ino: le32(b, off), recLen: int(le16(b, off+4))}
	n := int(b[off+6])
	if d.recLen < direntLen(1) || d.recLen%4 != 0 || d.recLen < direntLen(n) || off+d.recLen > end || d.ino > f.inodes {
		return dirent{}, EUCLEAN
	}
	d.name = b[off+direntHdr : off+direntHdr+n]
	if f.incompat&IncompatFiletype != 0 {
		d.ft = b[off+7]
	}
	return d, 0
}

// hasTail says whether block b ends with a checksum tail.
func hasTail(b []byte) bool {
	t := len(b) - tailLen
	return le32(b, t) == 0 && le16(b, t+4) == tailLen && b[t+6] == 0 && b[t+7] == tailFT
}

// isDxNode says whether block lblk of in (given its bytes) is a node of
// the htree index: block 0, or one that starts with a node's empty
// entry spanning the block (no name) and a node's limit. A leaf whose
// entries were all removed also starts with an empty entry spanning it
// when there is no checksum tail, but keeps its first name's length.
func isDxNode(in *Inode, lblk uint64, b []byte) bool {
	if in.Flags&FlagIndex == 0 {
		return false
	}
	if lblk == 0 {
		return true
	}
	limit := (len(b) - 8) / 8
	return le32(b, 0) == 0 && int(le16(b, 4)) == len(b) && b[6] == 0 &&
		(int(le16(b, 8)) == limit || int(le16(b, 8)) == limit-1) // the dx tail's entry
}

// dirBlock pins block lblk of directory in, checked: its checksum (the
// tail's for entry blocks, the dx tail's for index nodes). end is where
// its entries end (before the tail).
func (f *FS[E]) dirBlock(in *Inode, lblk uint64) (i, end int, e Errno) {
	m, e := f.bmap(in, lblk)
	if e != 0 {
		return -1, 0, e
	}
	if m.pblk == 0 || m.uninit {
		return -1, 0, EUCLEAN // a hole in a directory
	}
	i, e = f.get(m.pblk)
	if e != 0 {
		return -1, 0, e
	}
	b := f.data(i)
	end = len(b)
	if !f.csum {
		return i, end, 0
	}
	ok := f.c.bufs[i].verified
	if isDxNode(in, lblk, b) {
		if ok = ok || f.dxCsumOK(in, b, lblk == 0); !ok {
			f.put(i)
			return -1, 0, EBADMSG
		}
		f.c.bufs[i].verified = true
		return i, end, 0
	}
	if !hasTail(b) {
		f.put(i)
		return -1, 0, EBADMSG // no room for the checksum: Linux fails it too
	}
	end -= tailLen
	if !ok && crc32c(f.inodeSeed(in.Ino, in.Generation), b[:end]) != le32(b, end+8) {
		f.put(i)
		return -1, 0, EBADMSG
	}
	f.c.bufs[i].verified = true
	return i, end, 0
}

// dxCountOff is where the count/limit header of an index node is.
func dxCountOff(b []byte, root bool) int {
	if root {
		return dxRootInfo + int(b[dxRootInfo+5])
	}
	return 8
}

// dxCsumOK checks an index node's dx tail.
func (f *FS[E]) dxCsumOK(in *Inode, b []byte, root bool) bool {
	co := dxCountOff(b, root)
	if co+4 > len(b) {
		return false
	}
	limit, count := int(le16(b, co)), int(le16(b, co+2))
	t := co + limit*8
	if count > limit || t+8 > len(b) {
		return false
	}
	c := crc32c(f.inodeSeed(in.Ino, in.Generation), b[:co+count*8])
	c = crc32c(c, b[t:t+4])
	c = crc32cZero(c, 4)
	return c == le32(b, t+4)
}

// dirBlocks is the number of blocks of directory in.
func (f *FS[E]) dirBlocks(in *Inode) uint64 { return (in.Size + uint64(f.bs) - 1) >> f.logbs }

// findInBlock looks name up among the entries of block lblk of in.
func (f *FS[E]) findInBlock(in *Inode, lblk uint64, name []byte) (uint32, Errno) {
	i, end, e := f.dirBlock(in, lblk)
	if e != 0 {
		return 0, e
	}
	defer f.put(i)
	b := f.data(i)
	if isDxNode(in, lblk, b) && lblk != 0 {
		return 0, ENOENT
	}
	for off := 0; off < end; {
		d, e := f.entryAt(b, off, end)
		if e != 0 {
			return 0, e
		}
		if d.ino != 0 && string(d.name) == string(name) {
			return d.ino, 0
		}
		off += d.recLen
	}
	return 0, ENOENT
}

// errBadDx: the index is unusable; look the name up linearly instead (as
// Linux's ERR_BAD_DX_DIR).
const errBadDx = Errno(1 << 20)

// dxWhere is where a name's hash leads in an htree: the index nodes
// passed (logical block, entry), the leaf, the hash and its version.
type dxWhere struct {
	levels int
	path   [2]struct{ lblk, k uint64 }
	leaf   uint64
	hash   uint32
	hv     uint8
}

// dxLookup looks name up through the htree index of in; with where, it
// only fills where (the leaf the name's hash leads to).
func (f *FS[E]) dxLookup(in *Inode, name []byte, where *dxWhere) (uint32, Errno) {
	i, _, e := f.dirBlock(in, 0)
	if e != 0 {
		return 0, e
	}
	b := f.data(i)
	info := b[dxRootInfo : dxRootInfo+8]
	hv, infoLen, levels := info[4], int(info[5]), int(info[6])
	f.put(i)
	if le32(info, 0) != 0 || hv > hashTea || infoLen != 8 || levels > 1 || info[7]&1 != 0 {
		return 0, errBadDx
	}
	if hv <= hashTea {
		hv += f.hashUnsigned
	}
	hash, e := dirHash(name, hv, &f.hashSeed)
	if e != 0 {
		return 0, errBadDx
	}
	// Walk down: at each level the last entry whose hash is at most
	// hash; remember the path for the collision chain.
	var path [2]struct{ lblk, k uint64 }
	blk := uint64(0)
	for lv := 0; lv <= levels; lv++ {
		root := lv == 0
		i, _, e := f.dirBlock(in, blk)
		if e != 0 {
			return 0, e
		}
		b := f.data(i)
		co := dxCountOff(b, root)
		limit, count := int(le16(b, co)), int(le16(b, co+2))
		want := (len(b) - co) / 8
		if f.csum {
			want--
		}
		if limit != want || count == 0 || count > limit || !root && !(le32(b, 0) == 0 && int(le16(b, 4)) == len(b)) {
			f.put(i)
			return 0, errBadDx
		}
		lo, hi := 1, count
		for lo < hi {
			m := (lo + hi) / 2
			if le32(b, co+m*8) <= hash {
				lo = m + 1
			} else {
				hi = m
			}
		}
		k := lo - 1
		path[lv] = struct{ lblk, k uint64 }{blk, uint64(k)}
		blk = uint64(le32(b, co+k*8+4)) & 0x0FFFFFFF
		f.put(i)
		if blk >= f.dirBlocks(in) {
			return 0, errBadDx
		}
	}
	if where != nil {
		*where = dxWhere{levels: levels, path: path, leaf: blk, hash: hash, hv: hv}
		return 0, 0
	}
	// The leaf, then leaves further on whose hash continues a collision.
	for n := 0; n < 1<<16; n++ {
		ino, e := f.findInBlock(in, blk, name)
		if e != ENOENT {
			return ino, e
		}
		next, ok, e := f.dxNext(in, &path, levels, hash)
		if e != 0 {
			return 0, e
		}
		if !ok {
			return 0, ENOENT
		}
		blk = next
	}
	return 0, ENOENT
}

// dxNext advances path to the next leaf if its hash continues hash's
// collision chain (ext4_htree_next_block).
func (f *FS[E]) dxNext(in *Inode, path *[2]struct{ lblk, k uint64 }, levels int, hash uint32) (uint64, bool, Errno) {
	// Find the deepest level with a next entry.
	lv := levels
	for ; lv >= 0; lv-- {
		i, _, e := f.dirBlock(in, path[lv].lblk)
		if e != 0 {
			return 0, false, e
		}
		b := f.data(i)
		co := dxCountOff(b, lv == 0)
		count := uint64(le16(b, co+2))
		if path[lv].k+1 < count {
			path[lv].k++
			h := le32(b, co+int(path[lv].k)*8)
			blk := uint64(le32(b, co+int(path[lv].k)*8+4)) & 0x0FFFFFFF
			f.put(i)
			if h&1 == 0 || h&^1 != hash {
				return 0, false, 0
			}
			for d := lv + 1; d <= levels; d++ {
				path[d] = struct{ lblk, k uint64 }{blk, 0}
				j, _, e := f.dirBlock(in, blk)
				if e != 0 {
					return 0, false, e
				}
				c := f.data(j)
				blk = uint64(le32(c, dxCountOff(c, false)+4)) & 0x0FFFFFFF
				f.put(j)
			}
			return blk, true, 0
		}
		f.put(i)
	}
	return 0, false, 0
}

// isDots reports whether name is "." or "..".
func isDots(name []byte) bool {
	return len(name) == 1 && name[0] == '.' || len(name) == 2 && name[0] == '.' && name[1] == '.'
}

// lookup finds name in directory in.
func (f *FS[E]) lookup(in *Inode, name []byte) (uint32, Errno) {
	if !in.IsDir() {
		return 0, ENOTDIR
	}
	if len(name) > NameMax {
		return 0, ENAMETOOLONG
	}
	if in.Flags&FlagInlineData != 0 {
		return f.inlineLookup(in, name)
	}
	if isDots(name) {
		return f.findInBlock(in, 0, name) // only ever in the first block, as Linux's ext4_find_entry knows
	}
	m := &f.missed
	if m.gen == f.dirGen && m.dir == in.Ino && m.n == len(name) && string(m.name[:m.n]) == string(name) {
		return 0, ENOENT // looked up just now, and no directory changed since
	}
	ino, e := f.lookupIn(in, name)
	if e == ENOENT {
		m.gen, m.dir, m.n = f.dirGen, in.Ino, copy(m.name[:], name)
	}
	return ino, e
}

func (f *FS[E]) lookupIn(in *Inode, name []byte) (uint32, Errno) {
	if in.Flags&FlagIndex != 0 && f.compat&CompatDirIndex != 0 {
		ino, e := f.dxLookup(in, name, nil)
		if e != errBadDx {
			return ino, e
		}
	}
	n := f.dirBlocks(in)
	for lblk := uint64(0); lblk < n; lblk++ {
		ino, e := f.findInBlock(in, lblk, name)
		if e != ENOENT {
			return ino, e
		}
	}
	return 0, ENOENT
}
