package ext4

// Feature bits (the superblock's s_feature_compat, _incompat, _ro_compat).
const (
	CompatHasJournal   = 0x4
	CompatExtAttr      = 0x8
	CompatResizeInode  = 0x10
	CompatDirIndex     = 0x20
	CompatSparseSuper2 = 0x200
	CompatFastCommit   = 0x400
	CompatOrphanFile   = 0x1000

	IncompatCompression = 0x1
	IncompatFiletype    = 0x2
	IncompatRecover     = 0x4
	IncompatJournalDev  = 0x8
	IncompatMetaBG      = 0x10
	IncompatExtents     = 0x40
	Incompat64bit       = 0x80
	IncompatMMP         = 0x100
	IncompatFlexBG      = 0x200
	IncompatEAInode     = 0x400
	IncompatDirData     = 0x1000
	IncompatCsumSeed    = 0x2000
	IncompatLargeDir    = 0x4000
	IncompatInlineData  = 0x8000
	IncompatEncrypt     = 0x10000
	IncompatCasefold    = 0x20000

	RoCompatSparseSuper   = 0x1
	RoCompatLargeFile     = 0x2
	RoCompatBtreeDir      = 0x4
	RoCompatHugeFile      = 0x8
	RoCompatGdtCsum       = 0x10
	RoCompatDirNlink      = 0x20
	RoCompatExtraIsize    = 0x40
	RoCompatHasSnapshot   = 0x80
	RoCompatQuota         = 0x100
	RoCompatBigalloc      = 0x200
	RoCompatMetadataCsum  = 0x400
	RoCompatReplica       = 0x800
	RoCompatReadonly      = 0x1000
	RoCompatProject       = 0x2000
	RoCompatSharedBlocks  = 0x4000
	RoCompatVerity        = 0x8000
	RoCompatOrphanPresent = 0x10000
)

// The features this package implements; any other incompat feature
// refuses the mount, any other ro_compat one makes it read-only.
const (
	incompatKnown = IncompatFiletype | IncompatRecover | IncompatMetaBG | IncompatExtents |
		Incompat64bit | IncompatFlexBG | IncompatCsumSeed | IncompatInlineData
	roCompatKnown = RoCompatSparseSuper | RoCompatLargeFile | RoCompatHugeFile | RoCompatGdtCsum |
		RoCompatDirNlink | RoCompatExtraIsize | RoCompatMetadataCsum
)

// IncompatName is the name e2fsprogs gives an incompat feature bit, ""
// for a bit it does not know.
func IncompatName(bit uint32) string {
	switch bit {
	case IncompatCompression:
		return "compression"
	case IncompatFiletype:
		return "filetype"
	case IncompatRecover:
		return "needs_recovery"
	case IncompatJournalDev:
		return "journal_dev"
	case IncompatMetaBG:
		return "meta_bg"
	case IncompatExtents:
		return "extent"
	case Incompat64bit:
		return "64bit"
	case IncompatMMP:
		return "mmp"
	case IncompatFlexBG:
		return "flex_bg"
	case IncompatEAInode:
		return "ea_inode"
	case IncompatDirData:
		return "dirdata"
	case IncompatCsumSeed:
		return "metadata_csum_seed"
	case IncompatLargeDir:
		return "large_dir"
	case IncompatInlineData:
		return "inline_data"
	case IncompatEncrypt:
		return "encrypt"
	case IncompatCasefold:
		return "casefold"
	}
	return ""
}

// RoCompatName is the name of a ro_compat feature bit, "" if unknown.
func RoCompatName(bit uint32) string {
	switch bit {
	case RoCompatSparseSuper:
		return "sparse_super"
	case RoCompatLargeFile:
		return "large_file"
	case RoCompatBtreeDir:
		return "btree_dir"
	case RoCompatHugeFile:
		return "huge_file"
	case RoCompatGdtCsum:
		return "uninit_bg"
	case RoCompatDirNlink:
		return "dir_nlink"
	case RoCompatExtraIsize:
		return "extra_isize"
	case RoCompatHasSnapshot:
		return "snapshot"
	case RoCompatQuota:
		return "quota"
	case RoCompatBigalloc:
		return "bigalloc"
	case RoCompatMetadataCsum:
		return "metadata_csum"
	case RoCompatReplica:
		return "replica"
	case RoCompatReadonly:
		return "read-only"
	case RoCompatProject:
		return "project"
	case RoCompatSharedBlocks:
		return "shared_blocks"
	case RoCompatVerity:
		return "verity"
	case RoCompatOrphanPresent:
		return "orphan_present"
	}
	return ""
}

// Refusal says why a mount failed or is read-only, for the kernel to
// print: Msg, and the feature bits concerned (name each with
// IncompatName / RoCompatName, or in hex if they have none).
type Refusal struct {
	Msg      string
	Incompat uint32 // incompat features not implemented (the mount failed)
	RoCompat uint32 // ro_compat features not implemented (the mount is read-only)
	// Journal is what the journal's replay at mount did (Transactions
	// 0: nothing to replay), for the kernel to print.
	Journal Replayed
}

// Mount options.
const (
	MountRO       = 1 << iota // read-only
	MountRODevice             // the device cannot be written (implies MountRO)
)

// superblock field offsets (within its 1,024 bytes at byte 1,024).
const (
	sbInodesCount    = 0x0
	sbBlocksLo       = 0x4
	sbRBlocksLo      = 0x8
	sbFreeBlocksLo   = 0xC
	sbFreeInodes     = 0x10
	sbFirstData      = 0x14
	sbLogBlockSize   = 0x18
	sbLogClusterSize = 0x1C
	sbBlocksPerGroup = 0x20
	sbInodesPerGroup = 0x28
	sbWtime          = 0x30
	sbMagic          = 0x38
	sbState          = 0x3A
	sbRevLevel       = 0x4C
	sbFirstIno       = 0x54
	sbInodeSize      = 0x58
	sbCompat         = 0x5C
	sbIncompat       = 0x60
	sbRoCompat       = 0x64
	sbUUID           = 0x68
	sbHashSeed       = 0xEC
	sbDefHash        = 0xFC
	sbDescSize       = 0xFE
	sbFirstMetaBG    = 0x104
	sbBlocksHi       = 0x150
	sbRBlocksHi      = 0x154
	sbFreeBlocksHi   = 0x158
	sbMinExtraIsize  = 0x15C
	sbFlags          = 0x160
	sbLogGroupsFlex  = 0x174
	sbChecksumType   = 0x175
	sbBackupBGs      = 0x24C
	sbChecksumSeed   = 0x270
	sbChecksum       = 0x3FC

	sbFlagUnsignedHash = 0x2
)

// Mount reads the superblock and group descriptors of the file system on
// env's disk and makes f serve it. opts is MountRO or 0. It fails with
// EINVAL (not ext2/3/4 or a block size it cannot use), EBADMSG (a
// checksum), EUCLEAN (inconsistent numbers) or EOPNOTSUPP (a feature it
// does not implement, named in the Refusal); the Refusal also says why a
// mount asked read-write is read-only (f.ReadOnly()).
func (f *FS[E]) Mount(env E, opts int) (Refusal, Errno) {
	f.dirGen++ // a memo of an earlier mount's lookups is stale
	f.room.dir = 0
	r, again, e := f.mount(env, opts)
	if !again {
		return r, e
	}
	// The journal's replay changed blocks on the disk: read the file
	// system again from its superblock, with an empty cache.
	rep := f.replay
	r, _, e = f.mount(env, opts)
	r.Journal = rep
	return r, e
}

func (f *FS[E]) mount(env E, opts int) (Refusal, bool, Errno) {
	f.unmountCache()
	*f = FS[E]{} // cleared in place (memclr), no temporary
	f.env = env
	for i := range f.c.bufs {
		f.c.bufs[i].next = -1
	}
	sb := &f.sb
	if e := env.ReadAt(sb[:], 1024); e != 0 {
		return Refusal{Msg: "cannot read the superblock"}, false, e
	}
	if le16(sb[:], sbMagic) != Magic {
		return Refusal{Msg: "not an ext2/3/4 file system (bad magic)"}, false, abiEINVAL
	}
	f.compat, f.incompat, f.roCompat = le32(sb[:], sbCompat), le32(sb[:], sbIncompat), le32(sb[:], sbRoCompat)
	if le32(sb[:], sbRevLevel) == 0 {
		f.compat, f.incompat, f.roCompat = 0, 0, 0
	}
	f.csum = f.roCompat&RoCompatMetadataCsum != 0
	if f.csum {
		if sb[sbChecksumType] != 1 {
			return Refusal{Msg: "unknown checksum type"}, false, abiEINVAL
		}
		if crc32c(^uint32(0), sb[:sbChecksum]) != le32(sb[:], sbChecksum) {
			return Refusal{Msg: "superblock checksum does not match"}, false, EBADMSG
		}
	}
	if bad := f.incompat &^ incompatKnown; bad != 0 {
		return Refusal{Msg: "incompatible features not implemented", Incompat: bad}, false, EOPNOTSUPP
	}
	log := le32(sb[:], sbLogBlockSize)
	if log > 6 {
		return Refusal{Msg: "block size over 64 KiB"}, false, abiEINVAL
	}
	f.logbs = 10 + log
	f.bs = 1 << f.logbs
	if f.bs > pageSize {
		return Refusal{Msg: "block size larger than a page"}, false, abiEINVAL
	}
	if le32(sb[:], sbLogClusterSize) != log && f.roCompat&RoCompatBigalloc == 0 {
		return Refusal{Msg: "cluster size differs from the block size"}, false, EUCLEAN
	}
	f.blocks = uint64(le32(sb[:], sbBlocksLo))
	f.is64 = f.incompat&Incompat64bit != 0
	f.descSize = 32
	if f.is64 {
		f.blocks |= uint64(le32(sb[:], sbBlocksHi)) << 32
		f.descSize = le16(sb[:], sbDescSize)
		if f.descSize < 32 || f.descSize > 1024 || f.descSize&(f.descSize-1) != 0 {
			return Refusal{Msg: "bad group descriptor size"}, false, EUCLEAN
		}
	}
	f.firstData = le32(sb[:], sbFirstData)
	f.bpg = le32(sb[:], sbBlocksPerGroup)
	f.ipg = le32(sb[:], sbInodesPerGroup)
	f.inodes = le32(sb[:], sbInodesCount)
	f.inodeSize, f.firstIno = 128, 11
	if le32(sb[:], sbRevLevel) >= 1 {
		f.inodeSize, f.firstIno = le16(sb[:], sbInodeSize), le32(sb[:], sbFirstIno)
	}
	if f.bpg == 0 || f.bpg > 8*f.bs || f.ipg == 0 || f.ipg > 8*f.bs || f.inodeSize < 128 ||
		f.inodeSize > f.bs || f.inodeSize&(f.inodeSize-1) != 0 || f.blocks <= uint64(f.firstData) ||
		f.firstData != 0 && (f.bs != 1024 || f.firstData != 1) || f.firstIno < 11 || f.firstIno >= f.inodes {
		return Refusal{Msg: "inconsistent superblock"}, false, EUCLEAN
	}
	groups := (f.blocks - uint64(f.firstData) + uint64(f.bpg) - 1) / uint64(f.bpg)
	if groups == 0 || groups > 1<<32-1 || uint64(f.ipg)*groups != uint64(f.inodes) {
		return Refusal{Msg: "inconsistent superblock (groups)"}, false, EUCLEAN
	}
	f.groups = uint32(groups)
	f.firstMetaBG = le32(sb[:], sbFirstMetaBG)
	f.logFlex = uint32(sb[sbLogGroupsFlex])
	if f.incompat&IncompatFlexBG != 0 && f.logFlex > 31 {
		return Refusal{Msg: "inconsistent superblock (log groups per flex)"}, false, EUCLEAN
	}
	if f.incompat&IncompatFlexBG == 0 {
		f.logFlex = 0
	}
	copy(f.uuid[:], sb[sbUUID:sbUUID+16])
	for i := range f.hashSeed {
		f.hashSeed[i] = le32(sb[:], sbHashSeed+4*i)
	}
	f.defHash = sb[sbDefHash]
	if le32(sb[:], sbFlags)&sbFlagUnsignedHash != 0 {
		f.hashUnsigned = 3
	}
	f.csumSeed = crc32c(^uint32(0), f.uuid[:])
	if f.incompat&IncompatCsumSeed != 0 {
		f.csumSeed = le32(sb[:], sbChecksumSeed)
	}
	if e := f.checkGroups(); e != 0 {
		return Refusal{Msg: "group descriptors are corrupt"}, false, e
	}
	var r Refusal
	f.ro = opts&(MountRO|MountRODevice) != 0
	if f.ro && f.incompat&IncompatRecover != 0 && f.compat&CompatHasJournal != 0 {
		// As Linux: a read-only mount replays the journal all the same
		// (reading around committed transactions would show a file
		// system that never was); a disk that cannot be written is
		// not mounted.
		if opts&MountRODevice != 0 {
			return Refusal{Msg: "the journal needs recovery (needs_recovery) and the disk is read-only"}, false, EROFS
		}
		msg, again, e := f.recoverRO()
		if e != 0 || again {
			f.dropCache()
			return Refusal{Msg: msg}, again, e
		}
	}
	if bad := f.roCompat &^ roCompatKnown; bad != 0 && !f.ro {
		f.ro = true
		r = Refusal{Msg: "read-only: ro_compat features not implemented", RoCompat: bad}
	}
	if f.compat&CompatFastCommit != 0 && !f.ro {
		f.ro = true
		r = Refusal{Msg: "read-only: fast_commit journal not implemented"}
	}
	if f.incompat&IncompatMetaBG != 0 && !f.ro {
		f.ro = true
		r = Refusal{Msg: "read-only: writing with meta_bg not implemented"}
	}
	if f.compat&CompatHasJournal != 0 && !f.ro {
		msg, again, e := f.mountJournal()
		if e != 0 || again {
			f.dropCache()
			return Refusal{Msg: msg}, again, e
		}
		if msg != "" {
			r = Refusal{Msg: msg}
		}
	}
	if f.incompat&IncompatRecover != 0 && !f.ro && !f.journal {
		// The journal holds transactions to replay and this mount
		// cannot: writing would build on a file system missing them.
		f.ro = true
		r = Refusal{Msg: "read-only: the journal needs recovery (needs_recovery) and cannot be replayed"}
	}
	f.gen = uint32(env.Now())
	f.mounted = true
	return r, false, 0
}

// ReadOnly says whether the mount is read-only.
func (f *FS[E]) ReadOnly() bool { return f.ro }

// Journaled reports whether the mount writes through a jbd2 journal.
func (f *FS[E]) Journaled() bool { return f.journal }

// Unmount writes back what is dirty, flushes the disk and frees the
// cache's pages.
func (f *FS[E]) Unmount() Errno {
	if !f.mounted {
		return 0
	}
	e := f.unmountJournal()
	if e2 := f.env.Flush(); e == 0 {
		e = e2
	}
	if e == 0 && f.failed {
		e = EIO // calls that returned may be lost
	}
	f.unmountCache()
	f.mounted = false
	return e
}

func (f *FS[E]) unmountCache() {
	if f.mounted {
		f.dropCache()
	}
}

// groupDesc field offsets.
const (
	gdBlockBitmap    = 0x0
	gdInodeBitmap    = 0x4
	gdInodeTable     = 0x8
	gdFreeBlocks     = 0xC
	gdFreeInodes     = 0xE
	gdUsedDirs       = 0x10
	gdFlags          = 0x12
	gdBlockBitmapCsm = 0x18
	gdInodeBitmapCsm = 0x1A
	gdItableUnused   = 0x1C
	gdChecksum       = 0x1E
	gdBlockBitmapHi  = 0x20
	gdInodeBitmapHi  = 0x24
	gdInodeTableHi   = 0x28
	gdFreeBlocksHi   = 0x2C
	gdFreeInodesHi   = 0x2E
	gdUsedDirsHi     = 0x30
	gdItableUnusedHi = 0x32
	gdBlockBmCsumHi  = 0x38
	gdInodeBmCsumHi  = 0x3A

	bgInodeUninit = 0x1
	bgBlockUninit = 0x2
	bgInodeZeroed = 0x4
)

// hasSuper says whether group g holds a backup of the superblock (and of
// the descriptors, without meta_bg).
func (f *FS[E]) hasSuper(g uint32) bool {
	if g == 0 {
		return true
	}
	if f.compat&CompatSparseSuper2 != 0 {
		return g == le32(f.sb[:], sbBackupBGs) || g == le32(f.sb[:], sbBackupBGs+4)
	}
	if f.roCompat&RoCompatSparseSuper == 0 || g == 1 {
		return true
	}
	if g&1 == 0 {
		return false
	}
	for _, p := range [3]uint32{3, 5, 7} {
		n := p
		for n < g {
			n *= p
		}
		if n == g {
			return true
		}
	}
	return false
}

// descLoc is the block and byte offset of group g's descriptor.
func (f *FS[E]) descLoc(g uint32) (uint64, int) {
	per := f.bs / f.descSize
	sbBlk := uint64(f.firstData) + 1
	if f.incompat&IncompatMetaBG == 0 || g/per < f.firstMetaBG {
		return sbBlk + uint64(g/per), int(g % per * f.descSize)
	}
	mg := g / per
	first := uint64(mg*per)*uint64(f.bpg) + uint64(f.firstData)
	if f.hasSuper(mg * per) {
		first++
	}
	return first, int(g % per * f.descSize)
}

// desc pins the block of group g's descriptor: the buffer and the
// descriptor's bytes.
func (f *FS[E]) desc(g uint32) (int, []byte, Errno) {
	blk, off := f.descLoc(g)
	i, e := f.get(blk)
	if e != 0 {
		return -1, nil, e
	}
	return i, f.data(i)[off : off+int(f.descSize)], 0
}

func (f *FS[E]) descCsum(g uint32, d []byte) uint16 {
	if f.csum {
		c := crc32cU32(f.csumSeed, g)
		c = crc32c(c, d[:gdChecksum])
		c = crc32cZero(c, 2)
		c = crc32c(c, d[gdChecksum+2:])
		return uint16(c)
	}
	if f.roCompat&RoCompatGdtCsum != 0 {
		var gb [4]byte
		put32(gb[:], 0, g)
		c := crc16(0xFFFF, f.uuid[:])
		c = crc16(c, gb[:])
		c = crc16(c, d[:gdChecksum])
		if len(d) > gdChecksum+2 {
			c = crc16(c, d[gdChecksum+2:])
		}
		return c
	}
	return 0
}

func (f *FS[E]) hasGroupCsum() bool {
	return f.csum || f.roCompat&RoCompatGdtCsum != 0
}

// hi reads a descriptor field split into a low part at lo and a high
// part at hi (64-byte descriptors), of width 2 or 4 bytes.
func (f *FS[E]) gdField(d []byte, lo, hi, width int) uint64 {
	var v uint64
	if width == 4 {
		v = uint64(le32(d, lo))
		if f.descSize >= 64 {
			v |= uint64(le32(d, hi)) << 32
		}
	} else {
		v = uint64(le16(d, lo))
		if f.descSize >= 64 {
			v |= uint64(le16(d, hi)) << 16
		}
	}
	return v
}

// group is what the code needs of a descriptor.
type group struct {
	blockBitmap, inodeBitmap, inodeTable uint64
	freeBlocks, freeInodes, usedDirs     uint32
	itableUnused                         uint32
	flags                                uint32
}

func (f *FS[E]) group(g uint32) (group, Errno) {
	if g >= f.groups {
		return group{}, EUCLEAN
	}
	i, d, e := f.desc(g)
	if e != 0 {
		return group{}, e
	}
	defer f.put(i)
	return group{
		blockBitmap:  f.gdField(d, gdBlockBitmap, gdBlockBitmapHi, 4),
		inodeBitmap:  f.gdField(d, gdInodeBitmap, gdInodeBitmapHi, 4),
		inodeTable:   f.gdField(d, gdInodeTable, gdInodeTableHi, 4),
		freeBlocks:   uint32(f.gdField(d, gdFreeBlocks, gdFreeBlocksHi, 2)),
		freeInodes:   uint32(f.gdField(d, gdFreeInodes, gdFreeInodesHi, 2)),
		usedDirs:     uint32(f.gdField(d, gdUsedDirs, gdUsedDirsHi, 2)),
		itableUnused: uint32(f.gdField(d, gdItableUnused, gdItableUnusedHi, 2)),
		flags:        le16(d, gdFlags),
	}, 0
}

// checkGroups verifies every descriptor's checksum and that its bitmaps
// and inode table lie inside the file system (ext4_check_descriptors).
func (f *FS[E]) checkGroups() Errno {
	itBlocks := uint64(f.ipg) * uint64(f.inodeSize) >> f.logbs
	for g := uint32(0); g < f.groups; g++ {
		i, d, e := f.desc(g)
		if e != 0 {
			return e
		}
		ok := !f.hasGroupCsum() || f.descCsum(g, d) == uint16(le16(d, gdChecksum))
		f.put(i)
		if !ok {
			return EBADMSG
		}
		gr, e := f.group(g)
		if e != 0 {
			return e
		}
		if gr.blockBitmap >= f.blocks || gr.inodeBitmap >= f.blocks || gr.inodeTable+itBlocks > f.blocks ||
			gr.inodeTable <= uint64(f.firstData) {
			return EUCLEAN
		}
	}
	return 0
}

// Label is the volume name (s_volume_name), for a mount by label.
func (f *FS[E]) Label() []byte { l, _ := SuperLabel(&f.sb); return l }

// SuperLabel is the volume name in a superblock read from a disk (its
// 1,024 bytes at byte 1,024), and whether it is an ext2/3/4 one (by its
// magic number): how a disk is found by its label before a mount.
func SuperLabel(sb *[1024]byte) ([]byte, bool) {
	l := sb[0x78 : 0x78+16]
	for i, c := range l {
		if c == 0 {
			l = l[:i]
			break
		}
	}
	return l, le16(sb[:], sbMagic) == Magic
}

// UUID is the file system's UUID.
func (f *FS[E]) UUID() [16]byte { return f.uuid }

// Sync returns once every call so far is durable (fsync, sync,
// syncfs): the journal's running transaction committed, the disk
// flushed. Datasync is fdatasync's: a transaction holding only the new
// times of writes within files' blocks is left running (their data is
// flushed all the same).
func (f *FS[E]) Sync() Errno { return f.sync(false) }

// CommitOld commits the journal's running transaction if it is older
// than commitAge (5 s), as Linux's jbd2 thread does whatever the calls
// do: the kernel's committer calls it every second, so work no fsync
// covered is durable within about 6 s. A failure leaves the file system
// read-only, as any commit's.
func (f *FS[E]) CommitOld() Errno {
	if !f.mounted || f.failed || !f.journal || f.ro || f.jstart == 0 || f.env.Now()-f.jstart <= commitAge {
		return 0
	}
	e := f.jcommit()
	if e != 0 {
		f.fail()
	}
	return e
}

// Checkpoint is Sync, then the journal's committed blocks written home
// and its log emptied (the program's end: the disk then reads right
// without a replay, as after Linux's shutdown).
func (f *FS[E]) Checkpoint() Errno {
	if !f.mounted {
		return EIO
	}
	if f.failed {
		return EIO
	}
	if !f.journal || f.ro {
		return f.env.Flush()
	}
	e := f.checkpoint()
	if e != 0 {
		f.fail()
	}
	return e
}

// Datasync is fdatasync's Sync.
func (f *FS[E]) Datasync() Errno { return f.sync(true) }

func (f *FS[E]) sync(data bool) Errno {
	if !f.mounted || f.failed {
		return EIO
	}
	if f.journal && !f.ro {
		return f.syncJournal(data)
	}
	return f.env.Flush()
}
