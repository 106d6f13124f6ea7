// Package jbd2 is ext4's journal, as Linux's fs/jbd2 and e2fsprogs
// write and read it: the journal superblock (v1, v2; features revoke,
// 64bit, async_commit, checksums v2 and v3), replay at mount (Replay:
// the scan, revoke and replay passes of Linux's recovery.c), and a
// writer for ordered-mode metadata journaling (Add, Revoke, Commit,
// Checkpoint). docs/jbd2.md has the on-disk rules and the order of
// writes and flushes.
//
// kernel/ext4 drives it: it gives the journal's device and the map from
// the journal's logical blocks to the device's (inode 8's extents) through
// the type parameter E, replays at mount, and journals its metadata
// blocks. An external journal, fast commits, and features this package
// does not know refuse Load with a message naming them.
//
// Kernel-context Go: nothing here allocates, keeps a map, or stores a Go
// pointer. A Journal is one fixed-size value (its block buffers, revoke
// table and running transaction are arrays inside it) the kernel keeps in
// its own memory; the caller's buffers are named by address. Not safe
// for concurrent use: the caller serialises the calls (ext4's lock).
package jbd2

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/internal/crc32c"
)

// Dev is the journal's block device. Offsets and lengths are multiples
// of 512 bytes. Flush returns once every write that returned before it
// is on stable storage.
type Dev interface {
	ReadAt(b []byte, off uint64) abi.Errno
	WriteAt(b []byte, off uint64) abi.Errno
	Flush() abi.Errno
}

// Env is what the file system supplies: the device, and where each of the
// journal's blocks is on it. It must be a value type without pointers (in
// the kernel an empty struct): the Journal stores it.
type Env interface {
	Dev
	// JournalBlock is the device block (in the journal's block size,
	// which is the file system's) holding the journal's logical block n,
	// n < the journal's length; ok is false if n is not mapped.
	JournalBlock(n uint32) (block uint64, ok bool)
}

// Errors, beyond the device's own.
const (
	EIO       = abi.Errno(unix.EIO)
	ENOSPC    = abi.Errno(unix.ENOSPC)     // the running transaction is full: commit it and start again
	EUCLEAN   = abi.Errno(unix.EUCLEAN)    // the journal is corrupt (Linux's EFSCORRUPTED)
	EBADMSG   = abi.Errno(unix.EBADMSG)    // a checksum does not match (Linux's EFSBADCRC)
	EROFS     = abi.Errno(unix.EROFS)      // a feature this package cannot write
	ENOTSUP   = abi.Errno(unix.EOPNOTSUPP) // a feature this package does not implement
	EBUSY     = abi.Errno(unix.EBUSY)      // the call needs a state the journal is not in
	EINVALArg = abi.Errno(unix.EINVAL)
)

// On-disk constants (Linux's include/linux/jbd2.h).
const (
	Magic = 0xc03b3998

	blockDescriptor = 1
	blockCommit     = 2
	blockSuperV1    = 3
	blockSuperV2    = 4
	blockRevoke     = 5

	// Compat, incompat features.
	FeatureChecksum    = 0x1 // compat: the v1 commit-block checksum (crc32_be), not verified here
	FeatureRevoke      = 0x1
	Feature64bit       = 0x2
	FeatureAsyncCommit = 0x4
	FeatureCsumV2      = 0x8
	FeatureCsumV3      = 0x10
	FeatureFastCommit  = 0x20

	knownIncompat = FeatureRevoke | Feature64bit | FeatureAsyncCommit | FeatureCsumV2 | FeatureCsumV3

	// Tag flags.
	flagEscape   = 1
	flagSameUUID = 2
	flagDeleted  = 4
	flagLastTag  = 8

	crc32cChksum = 4 // s_checksum_type for checksums v2/v3

	sbSize = 1024 // journal_superblock_t
	// MaxBlockSize is the largest journal block this package takes: a
	// page. Linux mounts no larger ext4 block on 4 KiB pages either.
	MaxBlockSize = 4096
)

// Superblock field offsets (journal_superblock_t, big-endian).
const (
	sbBlockSize     = 12
	sbMaxLen        = 16
	sbFirst         = 20
	sbSequence      = 24
	sbStart         = 28
	sbErrno         = 32
	sbCompat        = 36
	sbIncompat      = 40
	sbROCompat      = 44
	sbUUID          = 48
	sbNrUsers       = 64
	sbChecksumType  = 80
	sbNumFCBlocks   = 84
	sbChecksum      = 252
	headerBlockType = 4
	headerSequence  = 8
)

// Super is the journal superblock, as read.
type Super struct {
	Version   int    // 1 or 2
	BlockSize uint32 // bytes
	MaxLen    uint32 // the journal's length in blocks
	First     uint32 // first block of the log
	Sequence  uint32 // first transaction expected in the log
	Start     uint32 // block of that transaction; 0: the log is empty
	Errno     int32  // an error Linux recorded (an aborted journal)
	Compat    uint32
	Incompat  uint32
	ROCompat  uint32
	UUID      [16]byte
}

// Journal is one journal: its superblock, its state, its buffers. Keep it
// in kernel memory (a static variable); the zero value is ready for Load.
type Journal[E Env] struct {
	env E
	sb  Super

	loaded   bool
	replayed bool // Replay (or a clean Load) left the log empty: writing may start
	failed   bool // a write or flush failed mid-commit: nothing more is written

	bs       uint32 // block size
	tagBytes uint32
	csumSeed uint32 // crc32c(~0, uuid) for checksums v2/v3

	// The log as the writer keeps it: the oldest transaction not yet
	// checkpointed starts at tail with tailSeq; the next is written at
	// head with seq. tail == head: nothing to checkpoint. sbStart is what
	// the superblock on the disk says (0: the log is empty).
	tail, head uint32
	tailSeq    uint32
	seq        uint32
	sbStart    uint32
	// logRevokes counts the revoke records between tail and head: a
	// checkpoint (and a replay) must hold them all in its table.
	logRevokes int
	// checkpoints counts the times the log's tail moved to its head
	// (Checkpoint, Release): a caller that keeps committed blocks for
	// its own checkpoint knows by it that they reached home.
	checkpoints uint32

	tx  txn
	rev revokeTable

	raw  [sbSize]byte       // the superblock as on the disk
	buf  [MaxBlockSize]byte // a log block being read
	data [MaxBlockSize]byte // a data block being read or escaped
	desc [MaxBlockSize]byte // a descriptor or revoke block being built
}

var be = binary.BigEndian

// Has reports the incompat feature f.
func (s *Super) Has(f uint32) bool { return s.Incompat&f != 0 }

// csum reports checksums v2 or v3.
func (s *Super) csum() bool { return s.Has(FeatureCsumV2) || s.Has(FeatureCsumV3) }

// Super is the superblock as Load read it (and as the journal updates it).
func (j *Journal[E]) Super() Super { return j.sb }

// Env is the journal's environment.
func (j *Journal[E]) Env() *E { return &j.env }

// Refused names why Load refused a journal, for the kernel's message:
// the feature's name, or what was wrong. "" after a Load that succeeded.
type Refused string

// parseSuper checks and decodes a superblock's first 1,024 bytes: its
// magic and type, its geometry, its features (a feature this package
// does not implement refuses by name), its checksum.
func parseSuper(b []byte, s *Super) (Refused, abi.Errno) {
	if be.Uint32(b) != Magic {
		return "no journal superblock (bad magic)", EUCLEAN
	}
	switch be.Uint32(b[headerBlockType:]) {
	case blockSuperV1:
		s.Version = 1
	case blockSuperV2:
		s.Version = 2
	default:
		return "unknown journal superblock type", EUCLEAN
	}
	s.BlockSize = be.Uint32(b[sbBlockSize:])
	s.MaxLen = be.Uint32(b[sbMaxLen:])
	s.First = be.Uint32(b[sbFirst:])
	s.Sequence = be.Uint32(b[sbSequence:])
	s.Start = be.Uint32(b[sbStart:])
	s.Errno = int32(be.Uint32(b[sbErrno:]))
	s.Compat, s.Incompat, s.ROCompat = 0, 0, 0
	s.UUID = [16]byte{}
	if s.Version == 2 {
		s.Compat = be.Uint32(b[sbCompat:])
		s.Incompat = be.Uint32(b[sbIncompat:])
		s.ROCompat = be.Uint32(b[sbROCompat:])
		copy(s.UUID[:], b[sbUUID:sbUUID+16])
	}
	switch s.BlockSize {
	case 1024, 2048, 4096:
	default:
		return "journal block size not 1024, 2048 or 4096", ENOTSUP
	}
	if s.First == 0 || s.First >= s.MaxLen || s.MaxLen-s.First < 8 {
		return "journal geometry (s_first, s_maxlen) out of range", EUCLEAN
	}
	if s.Start != 0 && (s.Start < s.First || s.Start >= s.MaxLen) {
		return "journal s_start outside the log", EUCLEAN
	}
	if s.Has(FeatureFastCommit) {
		return "journal feature fast_commit", ENOTSUP
	}
	if s.Incompat&^knownIncompat != 0 {
		return "unknown journal incompat feature", ENOTSUP
	}
	if s.ROCompat != 0 {
		return "unknown journal ro_compat feature", ENOTSUP
	}
	if s.Has(FeatureCsumV2) && s.Has(FeatureCsumV3) {
		return "journal checksum v2 and v3 both set", EUCLEAN
	}
	if s.Has(FeatureAsyncCommit) && !s.csum() {
		// The commit block may be on the disk before the blocks it
		// commits; only v2/v3 tag checksums tell a torn transaction
		// (the v1 checksum is crc32_be, not verified here).
		return "journal feature async_commit without checksum v2/v3", ENOTSUP
	}
	if nu := be.Uint32(b[sbNrUsers:]); nu > 1 {
		return "shared external journal (s_nr_users > 1)", ENOTSUP
	}
	if s.csum() {
		if b[sbChecksumType] != crc32cChksum {
			return "journal checksum type not crc32c", ENOTSUP
		}
		if be.Uint32(b[sbChecksum:]) != superCsum(b) {
			return "journal superblock checksum", EBADMSG
		}
	}
	return "", 0
}

// superCsum is the superblock's checksum: crc32c(~0) over its 1,024
// bytes with s_checksum taken as zero (Linux's jbd2_superblock_csum).
func superCsum(b []byte) uint32 {
	var zero [4]byte
	c := crc32c.Update(^uint32(0), b[:sbChecksum])
	c = crc32c.Update(c, zero[:])
	return crc32c.Update(c, b[sbChecksum+4:sbSize])
}

// Load reads and checks the journal superblock at the journal's logical
// block 0; blockSize is the file system's block size, which the
// journal's must equal. The Refused text names the reason when the errno
// is not 0. Load does not replay: call Replay next (it does nothing to a
// clean log), which also makes the journal ready for writing.
func (j *Journal[E]) Load(env E, blockSize uint32) (Refused, abi.Errno) {
	j.env = env
	j.loaded, j.replayed, j.failed = false, false, false
	j.tx.reset()
	blk, ok := j.env.JournalBlock(0)
	if !ok {
		return "journal block 0 not mapped", EUCLEAN
	}
	if e := j.env.ReadAt(j.raw[:], blk*uint64(blockSize)); e != 0 {
		return "journal superblock unreadable", e
	}
	if r, e := parseSuper(j.raw[:], &j.sb); e != 0 {
		return r, e
	}
	if j.sb.BlockSize != blockSize {
		return "journal block size differs from the file system's", EUCLEAN
	}
	if _, ok := j.env.JournalBlock(j.sb.MaxLen - 1); !ok {
		return "journal shorter than s_maxlen", EUCLEAN
	}
	j.setGeometry()
	j.seq = j.sb.Sequence
	j.sbStart = j.sb.Start
	j.loaded = true
	return "", 0
}

// setGeometry derives the block size, tag size and checksum seed from
// the superblock's features.
func (j *Journal[E]) setGeometry() {
	s := &j.sb
	j.bs = s.BlockSize
	switch {
	case s.Has(FeatureCsumV3):
		j.tagBytes = 16
	default:
		j.tagBytes = 12
		if s.Has(FeatureCsumV2) {
			j.tagBytes += 2
		}
		if !s.Has(Feature64bit) {
			j.tagBytes -= 4
		}
	}
	j.csumSeed = crc32c.Update(^uint32(0), s.UUID[:])
}

// tailSize is the bytes a descriptor or revoke block keeps for its
// checksum tail.
func (j *Journal[E]) tailSize() uint32 {
	if j.sb.csum() {
		return 4
	}
	return 0
}

// devOff is the device byte offset of the journal's logical block n.
func (j *Journal[E]) devOff(n uint32) (uint64, abi.Errno) {
	if n >= j.sb.MaxLen {
		return 0, EUCLEAN
	}
	b, ok := j.env.JournalBlock(n)
	if !ok {
		return 0, EUCLEAN
	}
	return b * uint64(j.bs), 0
}

// readLog reads the journal's logical block n into b (j.bs bytes).
func (j *Journal[E]) readLog(n uint32, b []byte) abi.Errno {
	off, e := j.devOff(n)
	if e != 0 {
		return e
	}
	return j.env.ReadAt(b[:j.bs], off)
}

// writeLog writes b (j.bs bytes) to the journal's logical block n.
func (j *Journal[E]) writeLog(n uint32, b []byte) abi.Errno {
	off, e := j.devOff(n)
	if e != 0 {
		return e
	}
	return j.env.WriteAt(b[:j.bs], off)
}

// wrap steps the log block n forward by one, from the last block back to
// s_first.
func (j *Journal[E]) next(n uint32) uint32 {
	n++
	if n >= j.sb.MaxLen {
		n = j.sb.First
	}
	return n
}

// logLen is the number of blocks in the circular log.
func (j *Journal[E]) logLen() uint32 { return j.sb.MaxLen - j.sb.First }

// writeSuper writes the superblock with s_start and s_sequence as given
// (and the features as j.sb has them), its checksum set.
func (j *Journal[E]) writeSuper(start, seq uint32) abi.Errno {
	b := j.raw[:]
	be.PutUint32(b[sbSequence:], seq)
	be.PutUint32(b[sbStart:], start)
	if j.sb.Version == 2 {
		be.PutUint32(b[sbCompat:], j.sb.Compat)
		be.PutUint32(b[sbIncompat:], j.sb.Incompat)
		be.PutUint32(b[sbROCompat:], j.sb.ROCompat)
		if j.sb.csum() {
			b[sbChecksumType] = crc32cChksum
			be.PutUint32(b[sbChecksum:], superCsum(b))
		}
	}
	off, e := j.devOff(0)
	if e != 0 {
		return e
	}
	// The superblock's block holds only the superblock's 1,024 bytes and
	// zeros (Linux writes the whole buffer it read): write the first
	// 1 KiB, which is a multiple of 512.
	if e := j.env.WriteAt(b, off); e != 0 {
		return e
	}
	j.sb.Start, j.sb.Sequence = start, seq
	j.sbStart = start
	return 0
}
