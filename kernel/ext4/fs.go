package ext4

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/jbd2"
)

const (
	pageSize     = 4096
	abiEINVAL    = Errno(unix.EINVAL)
	EOPNOTSUPP   = Errno(unix.EOPNOTSUPP)
	ENOENT       = Errno(unix.ENOENT)
	ENOTDIR      = Errno(unix.ENOTDIR)
	EEXIST       = Errno(unix.EEXIST)
	ENAMETOOLONG = Errno(unix.ENAMETOOLONG)
	EINVAL       = Errno(unix.EINVAL)
	ENOMEM       = Errno(unix.ENOMEM)
	ELOOP        = Errno(unix.ELOOP)
	EPERM        = Errno(unix.EPERM)
	EOVERFLOW    = Errno(unix.EOVERFLOW)

	// RootIno is the root directory's inode number.
	RootIno = 2
)

// FS is one mounted ext4 file system. Its zero value is unmounted; the
// kernel keeps it in static memory (it holds the cache's tables).
type FS[E Env] struct {
	env     E
	mounted bool
	ro      bool

	sb [1024]byte // the superblock as read (and as written back)

	bs, logbs   uint32
	blocks      uint64
	groups      uint32
	bpg, ipg    uint32
	inodes      uint32
	inodeSize   uint32
	firstIno    uint32
	firstData   uint32
	descSize    uint32
	firstMetaBG uint32
	logFlex     uint32
	is64        bool

	compat, incompat, roCompat uint32

	csum         bool   // metadata_csum
	csumSeed     uint32 // crc32c of the UUID, or s_checksum_seed
	uuid         [16]byte
	hashSeed     [4]uint32
	defHash      uint8
	hashUnsigned uint8 // 3 if directory hashes use unsigned chars

	name [NameMax]byte // an entry's name handed to a Filler

	// dirGen counts changes to directory blocks (getWrite of a
	// directory block, abort). missed is the last lookup that found
	// nothing, good while dirGen is what it was: a create's own check
	// of the name (newName) right after the walk's does not scan the
	// directory again. room is the block of directory room.dir that
	// took the last entry added: addEntry looks there first.
	dirGen uint64
	missed struct {
		gen  uint64
		dir  uint32
		n    int
		name [NameMax]byte
	}
	room struct {
		dir  uint32
		lblk uint64
	}

	gen uint32 // the last inode generation given

	c  cache
	ic icache
	tx txState

	// The journal (journal.go): on while a read-write mount journals.
	journal bool
	jr      jbd2.Journal[jenv[E]]
	replay  Replayed // what the mount's replay did
	// The journal's running transaction (journal.go): when its first
	// call ended (0: it holds none), and whether it holds a change
	// fdatasync must commit (anything but a write's new times).
	jstart int64
	jmeta  bool
	// failed: a write, a flush or a commit failed after the mount (the
	// mount is read-only since, errors=remount-ro): calls that returned
	// may not be on the disk, so every later sync answers EIO.
	failed bool
}

// BlockSize is the file system's block size.
func (f *FS[E]) BlockSize() uint32 { return f.bs }
