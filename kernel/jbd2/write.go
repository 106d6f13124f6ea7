package jbd2

import (
	"unsafe"

	"yolk/kernel/abi"
)

// TxMax and TxRevokeMax bound one transaction: the blocks it journals
// and the blocks it revokes. A journal shorter than four times a full
// transaction bounds it lower (Linux's j_max_transaction_buffers is a
// quarter of the journal too): see Limit.
const (
	TxMax       = 512
	TxRevokeMax = 1024
)

// txn is the running transaction: the home blocks and the addresses of
// the caller's buffers holding their new contents, and the revoked
// blocks.
type txn struct {
	n    int
	home [TxMax]uint64
	buf  [TxMax]uintptr
	nrev int
	rev  [TxRevokeMax]uint64
}

func (t *txn) reset() { t.n, t.nrev = 0, 0 }

// SetFeatures turns on the incompat features the writer is to use
// (FeatureRevoke, Feature64bit, FeatureCsumV2 or FeatureCsumV3: ext4
// asks for revoke, 64bit on a 64bit file system and checksum v3 with
// metadata_csum, as Linux's ext4 does at mount) and writes the
// superblock, flushed. Only between transactions of an empty log
// (after Replay or Checkpoint); a v1 superblock holds no features.
func (j *Journal[E]) SetFeatures(incompat uint32) abi.Errno {
	if !j.replayed || j.tx.n != 0 || j.tx.nrev != 0 || j.tail != j.head {
		return EBUSY
	}
	if j.failed {
		return EIO
	}
	const settable = FeatureRevoke | Feature64bit | FeatureCsumV2 | FeatureCsumV3
	if incompat&^settable != 0 || incompat&(FeatureCsumV2|FeatureCsumV3) == FeatureCsumV2|FeatureCsumV3 ||
		incompat&FeatureCsumV2 != 0 && (j.sb.Incompat|incompat)&Feature64bit == 0 {
		return EINVALArg
	}
	if j.sb.Version == 1 {
		return EROFS
	}
	in := j.sb.Incompat | incompat
	if incompat&FeatureCsumV3 != 0 {
		in &^= FeatureCsumV2
	}
	if incompat&FeatureCsumV2 != 0 {
		in &^= FeatureCsumV3
	}
	if in == j.sb.Incompat {
		return 0
	}
	j.sb.Incompat = in
	j.setGeometry()
	return j.superFlushed(j.sbStart, j.sb.Sequence)
}

// Limit is the most blocks one transaction may journal in this journal.
func (j *Journal[E]) Limit() int {
	// A quarter of the log, less the descriptors, revoke blocks and
	// commit block a transaction of that size needs.
	q := int(j.logLen() / 4)
	per := int(j.perDesc())
	lim := q - (q+per-1)/per - j.revokeBlocks(TxRevokeMax) - 1
	if lim > TxMax {
		lim = TxMax
	}
	return lim
}

// perDesc is how many tags a descriptor block holds: the first carries
// the 16-byte UUID after it.
func (j *Journal[E]) perDesc() uint32 {
	return (j.bs - 12 - j.tailSize() - 16) / j.tagBytes
}

// revokeBlocks is how many revoke blocks n records take.
func (j *Journal[E]) revokeBlocks(n int) int {
	rec := 4
	if j.sb.Has(Feature64bit) {
		rec = 8
	}
	per := (int(j.bs) - 16 - int(j.tailSize())) / rec
	return (n + per - 1) / per
}

// needed is how many log blocks the running transaction takes.
func (j *Journal[E]) needed() uint32 {
	per := j.perDesc()
	n := uint32(j.tx.n)
	return n + (n+per-1)/per + uint32(j.revokeBlocks(j.tx.nrev)) + 1
}

// used is how many log blocks the transactions not yet checkpointed take.
func (j *Journal[E]) used() uint32 {
	if j.head >= j.tail {
		return j.head - j.tail
	}
	return j.head + j.logLen() - j.tail
}

// Add puts block home, its new contents the journal's block size of
// bytes at address buf (the caller's page), into the running
// transaction; a block added again takes the later buffer, and cancels a
// revoke of it in the same transaction. The buffer must hold those
// contents until Commit returns. ENOSPC: the transaction is full (Limit
// blocks) — commit it and add the block to the next.
func (j *Journal[E]) Add(home uint64, buf uintptr) abi.Errno {
	if !j.replayed {
		return EBUSY
	}
	if !j.sb.Has(Feature64bit) && home > 0xffffffff {
		return EINVALArg
	}
	t := &j.tx
	for i := 0; i < t.nrev; i++ {
		if t.rev[i] == home {
			t.nrev--
			t.rev[i] = t.rev[t.nrev]
			break
		}
	}
	for i := 0; i < t.n; i++ {
		if t.home[i] == home {
			t.buf[i] = buf
			return 0
		}
	}
	if t.n >= j.Limit() {
		return ENOSPC
	}
	t.home[t.n], t.buf[t.n] = home, buf
	t.n++
	return 0
}

// Revoke records that block home (metadata freed, perhaps to become a
// file's data) must not be replayed from this or an earlier transaction;
// it drops the block from the running transaction if it was added.
// ENOSPC: the transaction's revoke records are full; ENOTSUP: the
// journal lacks the revoke feature (SetFeatures).
func (j *Journal[E]) Revoke(home uint64) abi.Errno {
	if !j.replayed {
		return EBUSY
	}
	if !j.sb.Has(FeatureRevoke) {
		return ENOTSUP
	}
	t := &j.tx
	for i := 0; i < t.n; i++ {
		if t.home[i] == home {
			t.n--
			t.home[i], t.buf[i] = t.home[t.n], t.buf[t.n]
			break
		}
	}
	for i := 0; i < t.nrev; i++ {
		if t.rev[i] == home {
			return 0
		}
	}
	if t.nrev >= TxRevokeMax {
		return ENOSPC
	}
	t.rev[t.nrev] = home
	t.nrev++
	return 0
}

// Pending is how many blocks and revokes the running transaction holds.
func (j *Journal[E]) Pending() (blocks, revokes int) { return j.tx.n, j.tx.nrev }

// block makes the slice of the caller's block at address a.
func (j *Journal[E]) block(a uintptr) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&a))), j.bs)
}

// Commit writes the running transaction into the log and makes it
// durable: revoke blocks, descriptor blocks with their journaled blocks
// (escaped when they begin with the journal's magic; tags carrying
// checksums with v2/v3), a flush, the commit block (its checksum, the
// commit time sec, nsec), a flush. When it returns 0 the transaction
// survives a power cut; the caller must have flushed the data blocks the
// transaction's metadata points at before (ordered mode). A log too
// full for the transaction is checkpointed first, and so is a log whose
// revoke records would outgrow a replay's table (RevokeMax). The
// caller's buffers are free again when Commit returns, whatever it
// returns. A failed write or flush stops the journal: later calls
// return EIO.
func (j *Journal[E]) Commit(sec uint64, nsec uint32) abi.Errno {
	if !j.replayed {
		return EBUSY
	}
	if j.failed {
		return EIO
	}
	if j.tx.n == 0 && j.tx.nrev == 0 {
		return 0
	}
	if j.sb.Has(FeatureCsumV2) && !j.sb.Has(Feature64bit) {
		// v2's 10-byte tags have no room for the high block bits that
		// Linux's replay reads anyway (why v3 exists): not written.
		return EROFS
	}
	need := j.needed()
	if need >= j.logLen()-j.used() || j.logRevokes+j.tx.nrev > RevokeMax*3/4 {
		if e := j.Checkpoint(); e != 0 {
			return e
		}
		if need >= j.logLen() {
			return ENOSPC
		}
	}
	if e := j.commit(sec, nsec); e != 0 {
		j.failed = true
		return e
	}
	j.tx.reset()
	return 0
}

func (j *Journal[E]) commit(sec uint64, nsec uint32) abi.Errno {
	if j.sbStart == 0 {
		// The log was empty: the superblock must point at this
		// transaction before its commit block can count. The flush
		// below orders it before the commit block.
		if e := j.writeSuper(j.head, j.seq); e != 0 {
			return e
		}
	}
	at := j.head
	if e := j.writeRevokes(&at); e != 0 {
		return e
	}
	if e := j.writeData(&at); e != 0 {
		return e
	}
	// Everything the commit block vouches for is on the disk before it.
	if e := j.env.Flush(); e != 0 {
		return e
	}
	c := j.desc[:j.bs]
	clear(c)
	j.header(c, blockCommit)
	be.PutUint64(c[48:], sec)
	be.PutUint32(c[56:], nsec)
	if j.sb.csum() {
		be.PutUint32(c[16:], j.commitCsum(c))
	}
	if e := j.writeLog(at, c); e != 0 {
		return e
	}
	// The commit is durable before Commit returns (fsync's promise),
	// and before any later checkpoint writes its blocks home.
	if e := j.env.Flush(); e != 0 {
		return e
	}
	j.head = j.next(at)
	j.seq++
	j.logRevokes += j.tx.nrev
	return 0
}

// header starts a log block of type typ of the running transaction.
func (j *Journal[E]) header(b []byte, typ uint32) {
	be.PutUint32(b, Magic)
	be.PutUint32(b[headerBlockType:], typ)
	be.PutUint32(b[headerSequence:], j.seq)
}

// writeRevokes writes the transaction's revoke blocks from log block *at.
func (j *Journal[E]) writeRevokes(at *uint32) abi.Errno {
	rec := uint32(4)
	if j.sb.Has(Feature64bit) {
		rec = 8
	}
	b := j.desc[:j.bs]
	limit := j.bs - j.tailSize()
	for i := 0; i < j.tx.nrev; {
		clear(b)
		j.header(b, blockRevoke)
		off := uint32(16)
		for ; i < j.tx.nrev && off+rec <= limit; i++ {
			if rec == 8 {
				be.PutUint64(b[off:], j.tx.rev[i])
			} else {
				be.PutUint32(b[off:], uint32(j.tx.rev[i]))
			}
			off += rec
		}
		be.PutUint32(b[12:], off)
		if j.sb.csum() {
			be.PutUint32(b[j.bs-4:], j.tailCsum(b))
		}
		if e := j.writeLog(*at, b); e != 0 {
			return e
		}
		*at = j.next(*at)
	}
	return 0
}

// writeData writes the transaction's descriptor blocks, each followed by
// the blocks its tags describe, from log block *at.
func (j *Journal[E]) writeData(at *uint32) abi.Errno {
	d := j.desc[:j.bs]
	per := int(j.perDesc())
	for i := 0; i < j.tx.n; {
		clear(d)
		j.header(d, blockDescriptor)
		descAt := *at
		*at = j.next(*at)
		off := uint32(12)
		for k := 0; k < per && i < j.tx.n; k, i = k+1, i+1 {
			src := j.block(j.tx.buf[i])
			flags := uint32(0)
			if be.Uint32(src) == Magic {
				copy(j.data[:j.bs], src)
				be.PutUint32(j.data[:], 0)
				src = j.data[:j.bs]
				flags |= flagEscape
			}
			if k > 0 {
				flags |= flagSameUUID
			}
			if k == per-1 || i == j.tx.n-1 {
				flags |= flagLastTag
			}
			j.putTag(d[off:], j.tx.home[i], flags, j.tagCsum(j.seq, src))
			off += j.tagBytes
			if k == 0 {
				copy(d[off:off+16], j.sb.UUID[:])
				off += 16
			}
			if e := j.writeLog(*at, src); e != 0 {
				return e
			}
			*at = j.next(*at)
		}
		if j.sb.csum() {
			be.PutUint32(d[j.bs-4:], j.tailCsum(d))
		}
		if e := j.writeLog(descAt, d); e != 0 {
			return e
		}
	}
	return 0
}

// putTag writes one descriptor tag in the journal's tag format.
func (j *Journal[E]) putTag(p []byte, home uint64, flags, csum uint32) {
	be.PutUint32(p, uint32(home))
	if j.sb.Has(FeatureCsumV3) {
		be.PutUint32(p[4:], flags)
		be.PutUint32(p[8:], uint32(home>>32))
		be.PutUint32(p[12:], csum)
		return
	}
	if j.sb.Has(FeatureCsumV2) {
		be.PutUint16(p[4:], uint16(csum))
	}
	be.PutUint16(p[6:], uint16(flags))
	if j.sb.Has(Feature64bit) {
		be.PutUint32(p[8:], uint32(home>>32))
	}
}

// Checkpoint writes every committed transaction's blocks to their home
// locations, reading them back from the log (so the caller's buffers,
// which may already hold a newer, uncommitted version, never reach home
// early) with the revokes honoured, flushes, then moves the log's tail
// past them in the superblock, flushed before the space is reused.
func (j *Journal[E]) Checkpoint() abi.Errno {
	if !j.replayed {
		return EBUSY
	}
	if j.failed {
		return EIO
	}
	if j.tail == j.head {
		return 0
	}
	var r Report
	if e := j.passes(j.tail, j.tailSeq, &r); e != 0 {
		j.failed = true
		return e
	}
	if r.End != j.seq || r.BadBlocks != 0 || r.FailedCommit != 0 {
		// The log does not read back as it was written.
		j.failed = true
		return EIO
	}
	if e := j.env.Flush(); e != 0 {
		j.failed = true
		return e
	}
	return j.release()
}

// Release is the checkpoint of a caller that keeps the committed
// contents of its blocks itself (ext4's cache, docs/jbd2.md): it has
// written every block of every committed transaction home, as of the
// last commit and with the revokes honoured, and flushed; Release moves
// the log's tail past them in the superblock, flushed. No block is read
// back from the log.
func (j *Journal[E]) Release() abi.Errno {
	if !j.replayed {
		return EBUSY
	}
	if j.failed {
		return EIO
	}
	if j.tail == j.head {
		return 0
	}
	return j.release()
}

// release moves the log's tail to its head in the superblock, flushed:
// every committed block is home (Checkpoint's and Release's last step).
func (j *Journal[E]) release() abi.Errno {
	if e := j.superFlushed(j.head, j.seq); e != 0 {
		return e
	}
	j.tail, j.tailSeq = j.head, j.seq
	j.logRevokes = 0
	j.checkpoints++
	return 0
}

// Checkpoints counts the checkpoints so far (Checkpoint's, Commit's
// when the log was full, Release's).
func (j *Journal[E]) Checkpoints() uint32 { return j.checkpoints }

// Free is how many log blocks are free: a transaction of Limit blocks
// commits without a checkpoint while Free is above Limit's log size
// (a quarter of the log: see Limit).
func (j *Journal[E]) Free() uint32 { return j.logLen() - j.used() }

// Close checkpoints everything committed and marks the log empty
// (s_start 0), as Linux does at unmount. The running transaction must
// have been committed.
func (j *Journal[E]) Close() abi.Errno {
	if j.tx.n != 0 || j.tx.nrev != 0 {
		return EBUSY
	}
	if e := j.Checkpoint(); e != 0 {
		return e
	}
	if j.sbStart == 0 {
		return 0
	}
	return j.superFlushed(0, j.seq)
}

// superFlushed writes the superblock (s_start, s_sequence as given) and
// flushes it; a failure stops the journal.
func (j *Journal[E]) superFlushed(start, seq uint32) abi.Errno {
	e := j.writeSuper(start, seq)
	if e == 0 {
		e = j.env.Flush()
	}
	if e != 0 {
		j.failed = true
	}
	return e
}
