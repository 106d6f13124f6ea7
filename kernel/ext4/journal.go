package ext4

import (
	"yolk/kernel/jbd2"
)

// The journal's wiring (docs/ext4.md, docs/jbd2.md): a read-write mount
// of a file system with an internal journal (inode 8) loads it, replays
// what it holds, and from then on every call's metadata blocks go
// through it, as Linux's ext4 does:
//
//   - A call's changed blocks join the journal's running transaction
//     (their cache buffers marked jtx: held, not evicted). Calls
//     accumulate; the transaction commits (the commit flushes the ordered
//     data written before it, then its commit block) at fsync, sync,
//     syncfs and unmount, when the next call might not fit it, when it
//     is older than commitAge at a call's start, and at the end of a call
//     that freed blocks (a freed block is reused only once the
//     transaction freeing it is durable: its old owner's data or
//     metadata cannot be overwritten under a committed tree; a freed
//     inode may be used again at once: only journaled metadata changes).
//   - A committed block stays in the cache (ckpt) until a checkpoint
//     writes it home from there — the cache holds its last committed
//     bytes, since a checkpoint first commits the running transaction —
//     flushes and moves the log's tail (jbd2's Release): nothing is read
//     back from the log. A checkpoint runs when the log's free space or
//     the cache's unheld buffers run low, and at unmount.
//   - A freed metadata block (extent node, directory block, indirect
//     block) is revoked so that no replay writes its old contents over
//     what the block holds next; the revoke releases its buffer.
//
// commitAge is how old the running transaction may grow (Linux's
// default commit interval).
const commitAge = 5e9

// Superblock fields of the journal.
const (
	sbJournalUUID = 0xD0
	sbJournalInum = 0xE0
	sbJournalDev  = 0xE4

	journalIno = 8
	jExtMax    = 32 // runs of the journal inode's blocks kept for JournalBlock
)

// jrun is a run of the journal's logical blocks on the disk.
type jrun struct {
	lblk, n uint32
	pblk    uint64
}

// jenv is the journal's Env: ext4's disk and the map of inode 8's
// extents (a value without pointers, as jbd2 stores it).
type jenv[E Env] struct {
	e    E
	n    int
	runs [jExtMax]jrun
}

func (j jenv[E]) ReadAt(b []byte, off uint64) Errno  { return j.e.ReadAt(b, off) }
func (j jenv[E]) WriteAt(b []byte, off uint64) Errno { return j.e.WriteAt(b, off) }
func (j jenv[E]) Flush() Errno                       { return j.e.Flush() }

// JournalBlock maps the journal's logical block n to its disk block.
func (j jenv[E]) JournalBlock(n uint32) (uint64, bool) {
	for k := 0; k < j.n; k++ {
		if r := &j.runs[k]; n >= r.lblk && n-r.lblk < r.n {
			return r.pblk + uint64(n-r.lblk), true
		}
	}
	return 0, false
}

// Replayed is what the mount's journal replay did (Transactions 0: the
// log held nothing committed).
type Replayed = jbd2.Report

// mountJournal loads the internal journal of a read-write mount,
// replays it if it holds transactions (replayed true: the caller reads
// the file system again), turns on the features the writer uses and sets
// needs_recovery on the disk. A refusal makes the mount read-only
// (f.ro, msg says why) or fails it (e != 0, msg). (The message is
// returned, not stored through a pointer: a string written through one
// takes a write barrier.)
func (f *FS[E]) mountJournal() (msg string, replayed bool, e Errno) {
	msg, replayed, e = f.loadJournal()
	if e != 0 || replayed || f.ro {
		return msg, replayed, e
	}
	feat := uint32(jbd2.FeatureRevoke)
	if f.is64 {
		feat |= jbd2.Feature64bit
	}
	if f.csum {
		feat |= jbd2.FeatureCsumV3 | jbd2.Feature64bit
	}
	if e := f.jr.SetFeatures(feat); e != 0 {
		f.ro = true
		return "read-only: cannot set the journal's features", false, 0
	}
	if f.jr.Limit() < maxTx+2 {
		f.ro = true
		return "read-only: the journal is too small for a transaction", false, 0
	}
	f.incompat |= IncompatRecover
	put32(f.sb[:], sbIncompat, le32(f.sb[:], sbIncompat)|IncompatRecover)
	if e := f.writeSuper(); e != 0 {
		return "cannot write the superblock", false, e
	}
	if e := f.env.Flush(); e != 0 {
		return "cannot flush the disk", false, e
	}
	f.journal = true
	return "", false, 0
}

// recoverRO replays the journal of a read-only mount that needs
// recovery (replayed true: the caller reads the file system again) and,
// once the log is empty, clears needs_recovery, as Linux's mount does.
func (f *FS[E]) recoverRO() (msg string, replayed bool, e Errno) {
	msg, replayed, e = f.loadJournal()
	if e != 0 || replayed {
		return msg, replayed, e
	}
	if msg != "" {
		// A journal this kernel cannot replay (fast_commit, say): msg
		// says why.
		return msg, false, EROFS
	}
	f.incompat &^= IncompatRecover
	put32(f.sb[:], sbIncompat, le32(f.sb[:], sbIncompat)&^IncompatRecover)
	if e := f.writeSuper(); e != 0 {
		return "cannot write the superblock", false, e
	}
	if e := f.env.Flush(); e != 0 {
		return "cannot flush the disk", false, e
	}
	return "", false, 0
}

// loadJournal loads the internal journal and replays it if it holds
// transactions (replayed true). A journal it cannot use makes the mount
// read-only (f.ro, msg says why) or fails it (e != 0, msg).
func (f *FS[E]) loadJournal() (msg string, replayed bool, e Errno) {
	if le32(f.sb[:], sbJournalInum) != journalIno || le32(f.sb[:], sbJournalDev) != 0 {
		return "external journal (s_journal_dev / s_journal_uuid) not implemented", false, EOPNOTSUPP
	}
	in, e := f.inode(journalIno)
	if e != 0 {
		return "cannot read the journal inode", false, e
	}
	je := jenv[E]{e: f.env}
	nblk := in.Size >> f.logbs
	if nblk == 0 || nblk > 1<<32-1 {
		return "journal inode has a bad size", false, EUCLEAN
	}
	for l := uint64(0); l < nblk; {
		m, e := f.bmap(&in, l)
		if e != 0 || m.pblk == 0 {
			return "journal inode's blocks unreadable or a hole", false, EUCLEAN
		}
		n := min(m.n, nblk-l)
		if je.n > 0 {
			if p := &je.runs[je.n-1]; p.pblk+uint64(p.n) == m.pblk {
				p.n += uint32(n)
				l += n
				continue
			}
		}
		if je.n == jExtMax {
			return "journal inode too fragmented", false, EOPNOTSUPP
		}
		je.runs[je.n] = jrun{lblk: uint32(l), n: uint32(n), pblk: m.pblk}
		je.n++
		l += n
	}
	if why, e := f.jr.Load(je, f.bs); e != 0 {
		if e == EOPNOTSUPP || e == EROFS {
			f.ro = true
			return string(why), false, 0
		}
		return string(why), false, e
	}
	// Replay recovers what the log holds (nothing if it is clean) and
	// makes the journal writable.
	rep, e := f.jr.Replay()
	f.replay = rep
	if e != 0 {
		return "journal replay failed", false, e
	}
	return "", rep.Transactions != 0, 0
}

// commitJournal is end's part through the journal: the dirty blocks of
// the call and the superblock's block are added to the running journal
// transaction with the blocks freed in it revoked; the transaction
// commits now if the call freed blocks. A call larger than
// the journal's limit commits in pieces.
func (f *FS[E]) commitJournal() Errno {
	sbi := -1
	if f.tx.sbDirty {
		i, e := f.get(uint64(1024 >> f.logbs))
		if e != 0 {
			return e
		}
		sbi = i
		put32(f.sb[:], sbWtime, uint32(f.env.Now()/1e9))
		if f.csum {
			put32(f.sb[:], sbChecksum, crc32c(^uint32(0), f.sb[:sbChecksum]))
		}
		copy(f.data(i)[1024&(f.bs-1):], f.sb[:min(1024, f.bs)])
	}
	e := f.journalAdd(sbi)
	if sbi >= 0 {
		f.put(sbi)
	}
	if e != 0 {
		return e
	}
	if !f.tx.timesOnly {
		f.jmeta = true
	}
	if f.jstart == 0 {
		f.jstart = f.env.Now()
	}
	if f.tx.freed {
		return f.jcommit()
	}
	return 0
}

// journalAdd puts the revokes and the dirty blocks into the journal's
// running transaction (and the superblock's buffer sbi, if >= 0). Its
// commits on ENOSPC would log a call half-added (blocks joined by an
// earlier call and changed by this one are logged with this call's
// bytes, this call's other blocks not): they cannot happen while
// makeRoom leaves room for a whole call before it starts (maxTx+1
// blocks, maxRevoke revokes) — keep it so.
func (f *FS[E]) journalAdd(sbi int) Errno {
	for k := 0; k < f.tx.nrev; k++ {
		// Freed: the journal no longer writes it, nor does a checkpoint.
		if i := f.find(f.tx.rev[k]); i >= 0 {
			f.c.bufs[i].jtx, f.c.bufs[i].ckpt = false, false
		}
		e := f.jr.Revoke(f.tx.rev[k])
		if e == jbd2.ENOSPC {
			if e = f.jcommit(); e == 0 {
				e = f.jr.Revoke(f.tx.rev[k])
			}
		}
		if e != 0 {
			return e
		}
	}
	for k := -1; k < f.tx.n; k++ {
		i := sbi
		if k >= 0 {
			i = int(f.tx.buf[k])
			if !f.c.bufs[i].dirty || f.revoked(f.c.bufs[i].blk) {
				continue
			}
		}
		if i < 0 {
			continue
		}
		b := &f.c.bufs[i]
		e := f.jr.Add(b.blk, b.page)
		if e == jbd2.ENOSPC {
			if e = f.jcommit(); e == 0 {
				e = f.jr.Add(b.blk, b.page)
			}
		}
		if e != 0 {
			return e
		}
		b.dirty = false
		b.jtx = true
	}
	return 0
}

// jcommit commits the journal's running transaction: its buffers become
// committed ones, held for the checkpoint. If the journal had to
// checkpoint first from its log (full), every older block is home.
func (f *FS[E]) jcommit() Errno {
	before := f.jr.Checkpoints()
	now := f.env.Now()
	if e := f.jr.Commit(uint64(now/1e9), uint32(now%1e9)); e != 0 {
		return e
	}
	home := f.jr.Checkpoints() != before
	for i := range f.c.bufs {
		b := &f.c.bufs[i]
		if home {
			b.ckpt = false
		}
		if b.jtx {
			b.jtx, b.ckpt = false, true
		}
	}
	f.jstart, f.jmeta = 0, false
	return 0
}

// checkpoint commits the running transaction, writes every committed
// block home from the cache, flushes and releases the log.
func (f *FS[E]) checkpoint() Errno {
	if e := f.jcommit(); e != 0 {
		return e
	}
	wrote := false
	for i := range f.c.bufs {
		if b := &f.c.bufs[i]; b.ckpt {
			if e := f.env.WriteAt(f.data(i), b.blk<<f.logbs); e != 0 {
				return e
			}
			wrote = true
		}
	}
	if wrote {
		if e := f.env.Flush(); e != 0 {
			return e
		}
	}
	if e := f.jr.Release(); e != 0 {
		return e
	}
	for i := range f.c.bufs {
		f.c.bufs[i].ckpt = false
	}
	return 0
}

// makeRoom runs before a call: the running transaction commits if the
// call might not fit it or it is old; the log and the cache are
// checkpointed if a full transaction might not fit the log or the
// journal holds more than half the cache. A failure leaves the file
// system read-only.
func (f *FS[E]) makeRoom() Errno {
	nb, nr := f.jr.Pending()
	commit := nb+maxTx+1 > f.jr.Limit() || nr+maxRevoke > jbd2.TxRevokeMax ||
		f.jstart != 0 && f.env.Now()-f.jstart > commitAge
	held := 0
	for i := range f.c.bufs {
		if b := &f.c.bufs[i]; b.jtx || b.ckpt {
			held++
		}
	}
	var e Errno
	switch {
	case f.jr.Free() < 2*uint32(f.jr.Limit()) || held > NBuf/2:
		e = f.checkpoint()
	case commit:
		e = f.jcommit()
	}
	if e != 0 {
		f.fail()
	}
	return e
}

// syncJournal makes every call so far durable: the running transaction
// committed (its commit flushes the data written before it), or the
// disk flushed if there is none — or, for fdatasync (data), if it holds
// only new times of writes.
func (f *FS[E]) syncJournal(data bool) Errno {
	if nb, nr := f.jr.Pending(); nb == 0 && nr == 0 || data && !f.jmeta {
		return f.env.Flush()
	}
	e := f.jcommit()
	if e != 0 {
		f.fail()
	}
	return e
}

// fail makes the mount read-only after a failed write, flush or commit,
// and every later sync EIO.
func (f *FS[E]) fail() { f.ro, f.failed = true, true }

// revoke records that metadata block blk, freed in the open transaction,
// must not be replayed from the journal.
func (f *FS[E]) revoke(blk, n uint64) Errno {
	if !f.journal {
		return 0
	}
	for ; n > 0; n-- {
		if f.tx.nrev == len(f.tx.rev) {
			return EIO
		}
		f.tx.rev[f.tx.nrev] = blk
		f.tx.nrev++
		blk++
	}
	return 0
}

// revoked says whether blk was freed in the open transaction.
func (f *FS[E]) revoked(blk uint64) bool {
	for k := 0; k < f.tx.nrev; k++ {
		if f.tx.rev[k] == blk {
			return true
		}
	}
	return false
}

// unrevoke takes blk off the open transaction's revoke list.
func (f *FS[E]) unrevoke(blk uint64) {
	for k := 0; k < f.tx.nrev; k++ {
		if f.tx.rev[k] == blk {
			f.tx.nrev--
			f.tx.rev[k] = f.tx.rev[f.tx.nrev]
			return
		}
	}
}

// unmountJournal empties the journal and clears needs_recovery
// (Linux's clean unmount).
func (f *FS[E]) unmountJournal() Errno {
	if !f.journal || f.ro {
		return 0
	}
	if e := f.checkpoint(); e != 0 {
		return e
	}
	if e := f.jr.Close(); e != 0 {
		return e
	}
	f.incompat &^= IncompatRecover
	put32(f.sb[:], sbIncompat, le32(f.sb[:], sbIncompat)&^IncompatRecover)
	if e := f.writeSuper(); e != 0 {
		return e
	}
	return f.env.Flush()
}
