package ext4

// The calls the kernel's file layer makes. Files are named by inode
// number; the caller serialises the calls.

// Lookup is the inode number of name in directory dir: ENOTDIR if dir is
// not a directory, ENOENT if it has no such entry, ENAMETOOLONG for a
// name over 255 bytes, EBADMSG or EUCLEAN for a directory (or the inode
// found) that is corrupt.
func (f *FS[E]) Lookup(dir uint32, name []byte) (uint32, Errno) {
	if !f.mounted {
		return 0, EIO
	}
	in, e := f.inode(dir)
	if e != 0 {
		return 0, e
	}
	if len(name) == 0 {
		return 0, ENOENT
	}
	ino, e := f.lookup(&in, name)
	if e != 0 {
		return 0, e
	}
	if _, e := f.live(ino); e != 0 {
		return 0, e
	}
	return ino, 0
}

// Stat is what stat(2) reports of an inode.
type Stat struct {
	Ino     uint64
	Mode    uint32
	Nlink   uint32
	Uid     uint32
	Gid     uint32
	Rdev    uint64 // major<<8 | minor in Linux's new encoding (unix.Mkdev's)
	Size    uint64
	Blksize uint32
	Blocks  uint64 // 512-byte units
	Atime   Time
	Mtime   Time
	Ctime   Time
	Btime   Time
}

// Stat reports inode ino.
func (f *FS[E]) Stat(ino uint32) (Stat, Errno) {
	if !f.mounted {
		return Stat{}, EIO
	}
	in, e := f.inode(ino)
	if e != 0 {
		return Stat{}, e
	}
	st := Stat{Ino: uint64(ino), Mode: in.Mode, Nlink: in.Links, Uid: in.Uid, Gid: in.Gid, Size: in.Size,
		Blksize: f.bs, Blocks: in.Blocks, Atime: in.Atime, Mtime: in.Mtime, Ctime: in.Ctime, Btime: in.Crtime}
	if t := in.Mode & SIFMT; t == SIFCHR || t == SIFBLK {
		var maj, min uint64
		if old := le32(in.Block[:], 0); old != 0 {
			maj, min = uint64(old>>8&0xff), uint64(old&0xff)
		} else {
			d := le32(in.Block[:], 4)
			maj, min = uint64(d&0xfff00)>>8, uint64(d&0xff|d>>12&0xfff00)
		}
		st.Rdev = maj&0xfff<<8 | maj&^0xfff<<32 | min&0xff | min&^0xff<<12
	}
	return st, 0
}

// ReadAt reads regular file ino at byte off into b: the bytes read (0 at
// or past the end), EISDIR for a directory, EINVAL for other kinds.
// Holes and unwritten extents read as zeros.
func (f *FS[E]) ReadAt(ino uint32, b []byte, off uint64) (int, Errno) {
	if !f.mounted {
		return 0, EIO
	}
	in, e := f.inode(ino)
	if e != 0 {
		return 0, e
	}
	if in.IsDir() {
		return 0, EISDIR
	}
	if !in.IsReg() {
		return 0, EINVAL
	}
	return f.read(&in, b, off)
}

// read copies in's bytes at off into b, up to its size.
func (f *FS[E]) read(in *Inode, b []byte, off uint64) (int, Errno) {
	if off >= in.Size {
		return 0, 0
	}
	if uint64(len(b)) > in.Size-off {
		b = b[:in.Size-off]
	}
	if in.Flags&FlagInlineData != 0 {
		return f.inlineRead(in, b, off)
	}
	n := 0
	bs := uint64(f.bs)
	for n < len(b) {
		pos := off + uint64(n)
		lblk, boff := pos>>f.logbs, pos&(bs-1)
		m, e := f.bmap(in, lblk)
		if e != 0 {
			return n, e
		}
		rest := b[n:]
		if m.pblk == 0 || m.uninit {
			k := min(uint64(len(rest)), m.n*bs-boff)
			clear(rest[:k])
			n += int(k)
			continue
		}
		if boff == 0 && uint64(len(rest)) >= bs {
			// Whole blocks straight from the disk, as many as are
			// contiguous and not cached.
			k := uint64(0)
			for k < m.n && (k+1)*bs <= uint64(len(rest)) && f.find(m.pblk+k) < 0 {
				k++
			}
			if k > 0 {
				if e := f.env.ReadAt(rest[:k*bs], (m.pblk)<<f.logbs); e != 0 {
					return n, e
				}
				n += int(k * bs)
				continue
			}
		}
		i, e := f.get(m.pblk)
		if e != 0 {
			return n, e
		}
		n += copy(rest, f.data(i)[boff:])
		f.put(i)
	}
	return n, 0
}

// Readlink copies symbolic link ino's target into b: its length, EINVAL if
// ino is not a symbolic link.
func (f *FS[E]) Readlink(ino uint32, b []byte) (int, Errno) {
	if !f.mounted {
		return 0, EIO
	}
	in, e := f.inode(ino)
	if e != 0 {
		return 0, e
	}
	if !in.IsLink() {
		return 0, EINVAL
	}
	if in.Size > pageSize {
		return 0, EUCLEAN
	}
	if in.Flags&(FlagInlineData|FlagExtents) == 0 && in.Size < 60 {
		return copy(b, in.Block[:in.Size]), 0
	}
	return f.read(&in, b, 0)
}

// Filler takes directory entries from Readdir: the inode, the cookie of
// the entry after it, getdents64's d_type and the name. It returns false
// when it has no room (the entry is not taken).
type Filler interface {
	Fill(ino uint64, next uint64, typ uint8, name []byte) bool
}

// ReaddirEnd is no cookie of a real entry: Readdir answers it at the end.
const ReaddirEnd = 1<<63 - 1

// Readdir gives fill the entries of directory dir from cookie on (0: the
// first) and answers the cookie to resume at (ReaddirEnd when all are
// given).
func Readdir[E Env, F Filler](f *FS[E], dir uint32, cookie uint64, fill F) (uint64, Errno) {
	if !f.mounted {
		return cookie, EIO
	}
	in, e := f.inode(dir)
	if e != 0 {
		return cookie, e
	}
	if !in.IsDir() {
		return cookie, ENOTDIR
	}
	if in.Flags&FlagInlineData != 0 {
		return readdirInline(f, in, cookie, fill)
	}
	n := f.dirBlocks(&in)
	for lblk := cookie >> f.logbs; lblk < n; lblk++ {
		i, end, e := f.dirBlock(&in, lblk)
		if e != 0 {
			return lblk << f.logbs, e
		}
		b := f.data(i)
		if lblk != 0 && isDxNode(&in, lblk, b) {
			f.put(i)
			continue
		}
		base := lblk << f.logbs
		for off := 0; off < end; {
			d, e := f.entryAt(b, off, end)
			if e != 0 {
				f.put(i)
				return base + uint64(off), e
			}
			pos := base + uint64(off)
			if pos >= cookie && d.ino != 0 {
				if !fill.Fill(uint64(d.ino), pos+uint64(d.recLen), DType(d.ft), d.name) {
					f.put(i)
					return pos, 0
				}
			}
			off += d.recLen
		}
		f.put(i)
	}
	return ReaddirEnd, 0
}

// dots are the names "." and "..".
var dots = [2]byte{'.', '.'}

func readdirInline[E Env, F Filler](f *FS[E], in Inode, cookie uint64, fill F) (uint64, Errno) {
	if cookie == 0 {
		if !fill.Fill(uint64(in.Ino), 1, DType(ftDir), dots[:1]) {
			return 0, 0
		}
		cookie = 1
	}
	if cookie == 1 {
		if !fill.Fill(uint64(le32(in.Block[:], 0)), 2, DType(ftDir), dots[:]) {
			return 1, 0
		}
		cookie = 2
	}
	for {
		// The entry's name lies in a cached block; the buffer is
		// unpinned, but nothing runs before fill copies it.
		d, at, done, e := f.inlineEntry(&in, cookie-2)
		if e != 0 {
			return cookie, e
		}
		if done {
			return ReaddirEnd, 0
		}
		next := 2 + at + uint64(d.recLen)
		// The name may lie in in.Block (on this stack): hand fill a
		// copy in f, which a call through F's dictionary may keep.
		n := copy(f.name[:], d.name)
		if !fill.Fill(uint64(d.ino), next, DType(d.ft), f.name[:n]) {
			return 2 + at, 0
		}
		cookie = next
	}
}

// Statfs is what statfs(2) reports.
type Statfs struct {
	Type    int64
	Bsize   int64
	Blocks  uint64
	Bfree   uint64
	Bavail  uint64
	Files   uint64
	Ffree   uint64
	Fsid    [2]int32
	Namelen int64
	Frsize  int64
}

// Statfs reports the file system's sizes and free counts (summed from the
// group descriptors, as Linux does at mount).
func (f *FS[E]) Statfs() (Statfs, Errno) {
	if !f.mounted {
		return Statfs{}, EIO
	}
	var freeB, freeI uint64
	for g := uint32(0); g < f.groups; g++ {
		gr, e := f.group(g)
		if e != 0 {
			return Statfs{}, e
		}
		freeB += uint64(gr.freeBlocks)
		freeI += uint64(gr.freeInodes)
	}
	r := uint64(le32(f.sb[:], sbRBlocksLo))
	if f.is64 {
		r |= uint64(le32(f.sb[:], sbRBlocksHi)) << 32
	}
	over, e := f.overhead()
	if e != 0 {
		return Statfs{}, e
	}
	st := Statfs{Type: Magic, Bsize: int64(f.bs), Frsize: int64(f.bs), Namelen: NameMax,
		Blocks: f.blocks - over, Bfree: freeB, Files: uint64(f.inodes), Ffree: freeI}
	if freeB > r {
		st.Bavail = freeB - r
	}
	lo := uint64(le32(f.uuid[:], 0)) | uint64(le32(f.uuid[:], 4))<<32
	hi := uint64(le32(f.uuid[:], 8)) | uint64(le32(f.uuid[:], 12))<<32
	x := lo ^ hi
	st.Fsid = [2]int32{int32(uint32(x)), int32(uint32(x >> 32))}
	return st, 0
}

// overhead is the blocks that hold no file data (Linux's "bsd df"):
// s_overhead_clusters if recorded, else the superblock copies,
// descriptors, bitmaps, inode tables and the journal.
func (f *FS[E]) overhead() (uint64, Errno) {
	if v := le32(f.sb[:], 0x248); v != 0 {
		return uint64(v), 0
	}
	per := f.bs / f.descSize
	gdtBlocks := uint64((f.groups + per - 1) / per)
	resv := uint64(le16(f.sb[:], 0xCE))
	itb := uint64(f.ipg) * uint64(f.inodeSize) >> f.logbs
	o := uint64(f.firstData)
	for g := uint32(0); g < f.groups; g++ {
		if f.hasSuper(g) {
			o++
			if f.incompat&IncompatMetaBG == 0 {
				o += gdtBlocks + resv
			}
		}
		o += 2 + itb
	}
	if f.incompat&IncompatMetaBG != 0 {
		o += gdtBlocks * 2 // approximately: the primary and backups of each meta group
	}
	if j := le32(f.sb[:], 0xE0); f.compat&CompatHasJournal != 0 && j != 0 {
		in, e := f.inode(j)
		if e != 0 {
			return 0, e
		}
		o += in.Size >> f.logbs
	}
	return min(o, f.blocks), 0
}
