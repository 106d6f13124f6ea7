package ext4

// The transaction seam: every change of metadata goes through one open
// transaction. begin opens it; getWrite pins a block for change and
// records it with its class; the caller changes the bytes, updates their
// checksum and calls dirty; revoke lists a freed metadata block; end
// commits. With the journal (journal.go) the dirty blocks and the
// superblock's become one journal transaction, committed and then
// checkpointed to their places. Without one (ext2, a file system
// without has_journal) commit writes the dirty blocks straight to the
// disk, in class order (allocation bitmaps before the inodes, extent and
// directory blocks that use what they allocate, then the group
// descriptors and the superblock that count them), and flushes. File
// data is not journaled (ordered mode): a write puts its data on the
// disk before the transaction that makes it reachable commits.
//
// With the journal, a call's blocks join the journal's running
// transaction (journal.go), which commits at fsync, sync, unmount, when
// it is full or old, or at once after a call that freed blocks. A block the journal holds (running or committed but not yet
// home) is the cache's only good copy: a call that changes it keeps its
// bytes first (undo), and abort puts them back instead of forgetting
// the block.

// Classes of metadata blocks, in the order commit writes them.
const (
	clBitmap = iota
	clInode
	clTree // extent index and leaf blocks
	clDir
	clGroup
	nClasses
)

// maxTx is the number of blocks one transaction may change.
const maxTx = 64

type txState struct {
	open    bool
	n       int
	buf     [maxTx]int16
	class   [maxTx]uint8
	sbDirty bool
	sbSave  [1024]byte // the superblock at begin, for abort
	nrev    int
	rev     [maxRevoke]uint64 // metadata blocks freed: revoked in the journal
	// undo[k] holds buf[k]'s bytes before the call when saved[k] (the
	// journal held the block); the pages stay allocated for later calls.
	undo  [maxTx]uintptr
	saved [maxTx]bool
	freed bool // blocks freed: the journal commits at end
	// timesOnly: the call changed a file's times only (a write within
	// the file's blocks): fdatasync need not commit it.
	timesOnly bool
}

// maxRevoke is the number of blocks one transaction may revoke; a call
// that frees many starts a new transaction past half of it.
const maxRevoke = 512

// begin opens a transaction: EROFS on a read-only mount.
func (f *FS[E]) begin() Errno {
	if !f.mounted {
		return EIO
	}
	if f.ro {
		return EROFS
	}
	if f.journal {
		if e := f.makeRoom(); e != 0 {
			return e
		}
	}
	f.tx.open, f.tx.n, f.tx.sbDirty, f.tx.nrev = true, 0, false, 0
	f.tx.freed, f.tx.timesOnly = false, false
	f.tx.sbSave = f.sb
	return 0
}

// abort drops the open transaction's changes: its blocks are
// forgotten (read again from the disk when next wanted), the inode cache
// emptied, the superblock's counts restored. A call that fails half-way
// leaves the file system as it was before it (or before its last
// transaction, for a call of several).
func (f *FS[E]) abort() {
	f.dirGen++ // directory blocks go back to their bytes before the call
	if !f.tx.open {
		// A begin that failed (restart, unindex: the mount is
		// read-only): the last transaction ended; its state is current.
		return
	}
	for k := 0; k < f.tx.n; k++ {
		i := int(f.tx.buf[k])
		f.c.bufs[i].dirty = false
		if f.tx.saved[k] {
			// The journal's copy: its bytes before the call.
			copy(f.data(i), f.undoPage(k))
			f.c.bufs[i].verified = false
		} else {
			f.unhash(i) // changed, maybe without dirty yet
		}
		f.put(i)
	}
	f.ic = icache{}
	f.sb = f.tx.sbSave
	f.tx.open, f.tx.n, f.tx.sbDirty, f.tx.nrev = false, 0, false, 0
}

// getWrite pins block blk for change in the open transaction (read from
// the disk unless fresh, then zeroed).
func (f *FS[E]) getWrite(blk uint64, class int, fresh bool) (int, Errno) {
	if class == clDir {
		f.dirGen++ // a directory changes: lookups' memo (dir.go) is stale
	}
	if fresh {
		f.unrevoke(blk) // freed, then allocated again as metadata
	}
	for k := 0; k < f.tx.n; k++ {
		if b := int(f.tx.buf[k]); f.c.bufs[b].blk == blk && f.c.bufs[b].valid {
			f.c.bufs[b].pins++
			if fresh {
				clear(f.data(b))
			}
			return b, 0
		}
	}
	if f.tx.n == maxTx {
		return -1, EIO
	}
	var i int
	var e Errno
	if fresh {
		i, _, e = f.slot(blk)
	} else {
		i, e = f.get(blk)
	}
	if e != 0 {
		return -1, e
	}
	k := f.tx.n
	f.tx.saved[k] = false
	if b := &f.c.bufs[i]; b.jtx || b.ckpt {
		if f.tx.undo[k] == 0 {
			if f.tx.undo[k] = f.env.AllocPage(); f.tx.undo[k] == 0 {
				f.put(i)
				return -1, Errno(12) // ENOMEM
			}
		}
		copy(f.undoPage(k), f.data(i))
		f.tx.saved[k] = true
	}
	if fresh {
		clear(f.data(i))
		f.c.bufs[i].verified = false
	}
	f.c.bufs[i].pins++ // the transaction's own pin, dropped at end
	f.tx.buf[k] = int16(i)
	f.tx.class[k] = uint8(class)
	f.tx.n++
	return i, 0
}

// undoPage is the call's undo page k (tx.undo[k], allocated).
func (f *FS[E]) undoPage(k int) []byte { return mem(f.tx.undo[k], int(f.bs)) }

// dirty marks buffer i changed (its checksum already updated).
func (f *FS[E]) dirty(i int) { f.c.bufs[i].dirty = true }

// end ends the open transaction: into the journal's running
// transaction (committed when journal.go's rules say), or without a
// journal the dirty blocks, then the superblock if its counts changed,
// then a flush. A failed write leaves the file system read-only
// (errors=remount-ro).
func (f *FS[E]) end() Errno {
	var first Errno
	if f.journal {
		first = f.commitJournal()
		f.tx.sbDirty = false
	}
	for cl := 0; cl < nClasses && !f.journal; cl++ {
		for k := 0; k < f.tx.n; k++ {
			i := int(f.tx.buf[k])
			b := &f.c.bufs[i]
			if int(f.tx.class[k]) != cl || !b.dirty {
				continue
			}
			if e := f.env.WriteAt(f.data(i), b.blk<<f.logbs); e != 0 && first == 0 {
				first = e
			}
			b.dirty = false
		}
	}
	for k := 0; k < f.tx.n; k++ {
		f.c.bufs[f.tx.buf[k]].dirty = false
		f.put(int(f.tx.buf[k]))
	}
	if f.tx.sbDirty && first == 0 {
		first = f.writeSuper()
	}
	if first == 0 && !f.journal {
		first = f.env.Flush()
	}
	f.tx.open, f.tx.n, f.tx.sbDirty, f.tx.nrev = false, 0, false, 0
	if first != 0 {
		f.fail()
	}
	return first
}

// writeSuper writes the superblock (and its checksum) at byte 1,024.
func (f *FS[E]) writeSuper() Errno {
	put32(f.sb[:], sbWtime, uint32(f.env.Now()/1e9))
	if f.csum {
		put32(f.sb[:], sbChecksum, crc32c(^uint32(0), f.sb[:sbChecksum]))
	}
	// A cached copy of the block holding it (1 KiB blocks: block 1;
	// else block 0) would be stale.
	if i := f.find(uint64(1024 >> f.logbs)); i >= 0 {
		copy(f.data(i)[1024&(f.bs-1):], f.sb[:min(1024, f.bs)])
	}
	return f.env.WriteAt(f.sb[:], 1024)
}
