package ext4

// Inode field offsets.
const (
	iMode        = 0x0
	iUid         = 0x2
	iSizeLo      = 0x4
	iAtime       = 0x8
	iCtime       = 0xC
	iMtime       = 0x10
	iDtime       = 0x14
	iGid         = 0x18
	iLinks       = 0x1A
	iBlocksLo    = 0x1C
	iFlags       = 0x20
	iBlock       = 0x28
	iGeneration  = 0x64
	iFileACLLo   = 0x68
	iSizeHi      = 0x6C
	iBlocksHi    = 0x74
	iFileACLHi   = 0x76
	iUidHi       = 0x78
	iGidHi       = 0x7A
	iChecksumLo  = 0x7C
	iExtraIsize  = 0x80
	iChecksumHi  = 0x82
	iCtimeExtra  = 0x84
	iMtimeExtra  = 0x88
	iAtimeExtra  = 0x8C
	iCrtime      = 0x90
	iCrtimeExtra = 0x94

	goodOldInodeSize = 128
)

// Inode flags.
const (
	FlagIndex      = 0x1000     // hashed (htree) directory
	FlagHugeFile   = 0x40000    // i_blocks in file system blocks
	FlagExtents    = 0x80000    // i_block holds an extent tree
	FlagEAInode    = 0x200000   // an inode holding an extended attribute's value
	FlagInlineData = 0x10000000 // the data lives in the inode
	FlagEncrypt    = 0x800
	FlagCasefold   = 0x40000000
	FlagVerity     = 0x100000
)

// File types (the mode's S_IFMT bits).
const (
	SIFMT   = 0xF000
	SIFSOCK = 0xC000
	SIFLNK  = 0xA000
	SIFREG  = 0x8000
	SIFBLK  = 0x6000
	SIFDIR  = 0x4000
	SIFCHR  = 0x2000
	SIFIFO  = 0x1000
)

// Time is a timestamp: seconds since the Unix epoch and nanoseconds.
type Time struct {
	Sec  int64
	Nsec uint32
}

// Inode is an inode as read (and checked) from the inode table.
type Inode struct {
	Ino        uint32
	Mode       uint32
	Uid, Gid   uint32
	Size       uint64
	Links      uint32
	Flags      uint32
	Blocks     uint64 // in 512-byte units
	Atime      Time
	Mtime      Time
	Ctime      Time
	Crtime     Time
	Dtime      uint32
	Generation uint32
	FileACL    uint64
	ExtraIsize uint32
	Block      [60]byte // i_block: extent tree root, block map, fast symlink or inline data
}

// IsDir and the others test the inode's type.
func (in *Inode) IsDir() bool  { return in.Mode&SIFMT == SIFDIR }
func (in *Inode) IsReg() bool  { return in.Mode&SIFMT == SIFREG }
func (in *Inode) IsLink() bool { return in.Mode&SIFMT == SIFLNK }

// The inode cache: a direct-mapped table of inodes already read and
// checked.
const nICache = 128

type icache struct {
	ino [nICache]uint32 // 0: empty
	in  [nICache]Inode
}

// inodeLoc is the block and byte offset of inode ino in its table.
func (f *FS[E]) inodeLoc(ino uint32) (uint64, int, Errno) {
	if ino == 0 || ino > f.inodes {
		return 0, 0, EUCLEAN
	}
	g := (ino - 1) / f.ipg
	gr, e := f.group(g)
	if e != 0 {
		return 0, 0, e
	}
	off := uint64((ino-1)%f.ipg) * uint64(f.inodeSize)
	return gr.inodeTable + off>>f.logbs, int(off & uint64(f.bs-1)), 0
}

// inodeSeed is the crc32c seed of ino's metadata (the inode, its extent
// blocks, its directory blocks).
func (f *FS[E]) inodeSeed(ino, gen uint32) uint32 {
	return crc32cU32(crc32cU32(f.csumSeed, ino), gen)
}

// inodeCsum is the checksum of raw inode ino as ext4_inode_csum computes
// it (the checksum fields counted as zero); hi says whether i_checksum_hi
// is present.
func (f *FS[E]) inodeCsum(ino uint32, raw []byte) (c uint32, hi bool) {
	c = f.inodeSeed(ino, le32(raw, iGeneration))
	c = crc32c(c, raw[:iChecksumLo])
	c = crc32cZero(c, 2)
	c = crc32c(c, raw[iChecksumLo+2:goodOldInodeSize])
	if len(raw) > goodOldInodeSize {
		hi = goodOldInodeSize+le16(raw, iExtraIsize) >= iChecksumHi+2
		c = crc32c(c, raw[goodOldInodeSize:iChecksumHi])
		off := iChecksumHi
		if hi {
			c = crc32cZero(c, 2)
			off += 2
		}
		c = crc32c(c, raw[off:])
	}
	if !hi {
		c &= 0xFFFF
	}
	return c, hi
}

// fits says whether a field ending at byte end lies inside an inode whose
// i_extra_isize is extra.
func fits(extra, end uint32) bool { return goodOldInodeSize+extra >= end }

func decodeTime(raw []byte, at, extra int, extraOK bool) Time {
	t := Time{Sec: int64(int32(le32(raw, at)))}
	if extraOK {
		x := le32(raw, extra)
		t.Sec += int64(x&3) << 32
		t.Nsec = x >> 2
		if t.Nsec >= 1e9 {
			t.Nsec = 0
		}
	}
	return t
}

// inode reads inode ino, verifying its checksum (EBADMSG) and sanity
// (EUCLEAN).
func (f *FS[E]) inode(ino uint32) (Inode, Errno) {
	s := ino % nICache
	if f.ic.ino[s] == ino && ino != 0 {
		return f.ic.in[s], 0
	}
	blk, off, e := f.inodeLoc(ino)
	if e != 0 {
		return Inode{}, e
	}
	i, e := f.get(blk)
	if e != 0 {
		return Inode{}, e
	}
	defer f.put(i)
	raw := f.data(i)[off : off+int(f.inodeSize)]
	var in Inode
	if e := f.parseInode(ino, raw, &in); e != 0 {
		return Inode{}, e
	}
	f.ic.ino[s] = ino
	f.ic.in[s] = in
	return in, 0
}

func (f *FS[E]) parseInode(ino uint32, raw []byte, in *Inode) Errno {
	extra := uint32(0)
	if len(raw) > goodOldInodeSize {
		extra = le16(raw, iExtraIsize)
		if goodOldInodeSize+extra > uint32(len(raw)) || extra&3 != 0 {
			return EUCLEAN
		}
	}
	if f.csum {
		c, hi := f.inodeCsum(ino, raw)
		want := le16(raw, iChecksumLo)
		if hi {
			want |= le16(raw, iChecksumHi) << 16
		}
		if c != want {
			return EBADMSG
		}
	}
	*in = Inode{
		Ino:        ino,
		Mode:       le16(raw, iMode),
		Uid:        le16(raw, iUid) | le16(raw, iUidHi)<<16,
		Gid:        le16(raw, iGid) | le16(raw, iGidHi)<<16,
		Size:       uint64(le32(raw, iSizeLo)) | uint64(le32(raw, iSizeHi))<<32,
		Links:      le16(raw, iLinks),
		Flags:      le32(raw, iFlags),
		Dtime:      le32(raw, iDtime),
		Generation: le32(raw, iGeneration),
		FileACL:    uint64(le32(raw, iFileACLLo)),
		ExtraIsize: extra,
	}
	if f.is64 {
		in.FileACL |= uint64(le16(raw, iFileACLHi)) << 32
	}
	in.Blocks = uint64(le32(raw, iBlocksLo))
	if f.roCompat&RoCompatHugeFile != 0 {
		in.Blocks |= uint64(le16(raw, iBlocksHi)) << 32
		if in.Flags&FlagHugeFile != 0 {
			in.Blocks <<= f.logbs - 9
		}
	}
	in.Atime = decodeTime(raw, iAtime, iAtimeExtra, fits(extra, iAtimeExtra+4))
	in.Mtime = decodeTime(raw, iMtime, iMtimeExtra, fits(extra, iMtimeExtra+4))
	in.Ctime = decodeTime(raw, iCtime, iCtimeExtra, fits(extra, iCtimeExtra+4))
	if fits(extra, iCrtime+4) {
		in.Crtime = decodeTime(raw, iCrtime, iCrtimeExtra, fits(extra, iCrtimeExtra+4))
	}
	copy(in.Block[:], raw[iBlock:iBlock+60])
	if in.Mode == 0 && in.Links == 0 {
		return 0 // a free inode: the caller decides
	}
	if in.Flags&FlagInlineData != 0 && f.incompat&IncompatInlineData == 0 {
		return EUCLEAN
	}
	if in.Flags&FlagExtents != 0 && in.Flags&FlagInlineData == 0 && !in.IsLink() || in.IsLink() && in.Flags&FlagExtents != 0 {
		if e := checkHeader(in.Block[:], 4, -1); e != 0 {
			return e
		}
	}
	return 0
}

// live reads inode ino for a lookup: a free inode (no links, or a mode
// of 0) named by a directory entry is corruption.
func (f *FS[E]) live(ino uint32) (Inode, Errno) {
	if ino < f.firstIno && ino != RootIno {
		return Inode{}, EUCLEAN
	}
	in, e := f.inode(ino)
	if e != 0 {
		return in, e
	}
	if in.Links == 0 || in.Mode&SIFMT == 0 {
		return in, EUCLEAN
	}
	return in, 0
}

// forget drops ino from the inode cache (after it was written).
func (f *FS[E]) forget(ino uint32) {
	if s := ino % nICache; f.ic.ino[s] == ino {
		f.ic.ino[s] = 0
	}
}
