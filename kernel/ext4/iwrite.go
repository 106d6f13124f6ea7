package ext4

// Writing inodes: the fields of an Inode put back into its raw bytes in
// the inode table (what this package does not know of, such as extended
// attributes in the extra space, stays), with its checksum.

func encodeTime(raw []byte, at, extra int, t Time, extraOK bool) {
	put32(raw, at, uint32(t.Sec))
	if extraOK {
		put32(raw, extra, uint32(uint64(t.Sec-int64(int32(t.Sec)))>>32)&3|t.Nsec<<2)
	}
}

// writeInode writes in back to the inode table in the open transaction.
// fresh: the slot is cleared first (a new inode).
func (f *FS[E]) writeInode(in *Inode, fresh bool) Errno {
	blk, off, e := f.inodeLoc(in.Ino)
	if e != 0 {
		return e
	}
	i, e := f.getWrite(blk, clInode, false)
	if e != 0 {
		return e
	}
	defer f.put(i)
	raw := f.data(i)[off : off+int(f.inodeSize)]
	if fresh {
		clear(raw)
		if f.inodeSize > goodOldInodeSize {
			in.ExtraIsize = 32
			if w := le16(f.sb[:], 0x15E); w > 0 && goodOldInodeSize+w <= f.inodeSize {
				in.ExtraIsize = max(w, 24)
			}
			put16(raw, iExtraIsize, in.ExtraIsize)
		}
	}
	extra := in.ExtraIsize
	put16(raw, iMode, in.Mode)
	put16(raw, iUid, in.Uid)
	put16(raw, iUidHi, in.Uid>>16)
	put16(raw, iGid, in.Gid)
	put16(raw, iGidHi, in.Gid>>16)
	put32(raw, iSizeLo, uint32(in.Size))
	put32(raw, iSizeHi, uint32(in.Size>>32))
	put16(raw, iLinks, in.Links)
	put32(raw, iFlags, in.Flags&^FlagHugeFile)
	put32(raw, iDtime, in.Dtime)
	put32(raw, iGeneration, in.Generation)
	put32(raw, iFileACLLo, uint32(in.FileACL))
	if f.is64 {
		put16(raw, iFileACLHi, uint32(in.FileACL>>32))
	}
	put32(raw, iBlocksLo, uint32(in.Blocks))
	if f.roCompat&RoCompatHugeFile != 0 {
		put16(raw, iBlocksHi, uint32(in.Blocks>>32))
	}
	encodeTime(raw, iAtime, iAtimeExtra, in.Atime, fits(extra, iAtimeExtra+4))
	encodeTime(raw, iMtime, iMtimeExtra, in.Mtime, fits(extra, iMtimeExtra+4))
	encodeTime(raw, iCtime, iCtimeExtra, in.Ctime, fits(extra, iCtimeExtra+4))
	if fits(extra, iCrtime+4) {
		encodeTime(raw, iCrtime, iCrtimeExtra, in.Crtime, fits(extra, iCrtimeExtra+4))
	}
	copy(raw[iBlock:iBlock+60], in.Block[:])
	if f.csum {
		c, hi := f.inodeCsum(in.Ino, raw)
		put16(raw, iChecksumLo, c)
		if hi {
			put16(raw, iChecksumHi, c>>16)
		}
	}
	f.dirty(i)
	s := in.Ino % nICache
	f.ic.ino[s] = in.Ino
	f.ic.in[s] = *in
	return 0
}

// now is the current time as an inode keeps it.
func (f *FS[E]) now() Time {
	ns := f.env.Now()
	return Time{Sec: ns / 1e9, Nsec: uint32(ns % 1e9)}
}

// newInode allocates an inode of mode near parent and writes it: an
// empty extent tree (with the extents feature) for files, directories
// and long symbolic links.
func (f *FS[E]) newInode(parent uint32, mode, uid, gid uint32) (Inode, Errno) {
	ino, e := f.allocInode(parent, mode&SIFMT == SIFDIR)
	if e != 0 {
		return Inode{}, e
	}
	t := f.now()
	f.gen++
	in := Inode{Ino: ino, Mode: mode, Uid: uid, Gid: gid, Links: 1, Atime: t, Mtime: t, Ctime: t, Crtime: t,
		Generation: f.gen}
	if f.incompat&IncompatExtents != 0 {
		in.Flags |= FlagExtents
		initRoot(in.Block[:])
	}
	return in, f.writeInode(&in, true)
}

// initRoot makes an empty extent tree root in i_block.
func initRoot(b []byte) {
	clear(b)
	put16(b, 0, extMagic)
	put16(b, 4, 4) // (60 - 12) / 12 entries
}
