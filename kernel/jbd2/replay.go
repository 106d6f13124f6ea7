package jbd2

import (
	"yolk/kernel/abi"
	"yolk/kernel/internal/crc32c"
)

// Report is what a Replay (or a Checkpoint) did, for the kernel to print.
type Report struct {
	First, End   uint32 // transactions [First, End) were committed and replayed
	Transactions uint32 // End - First
	Blocks       uint32 // blocks written to their home locations
	Revoked      uint32 // journaled blocks not written, revoked by a later-or-equal transaction
	Revokes      uint32 // revoke records read
	Torn         bool   // the log went on past End with an uncommitted transaction
	BadCsum      bool   // a descriptor, revoke or commit block's checksum did not match
	BadBlocks    uint32 // journaled blocks not written: their tag checksums did not match
	FailedCommit uint32 // != 0: this transaction's commit block checksum failed (the log ends before it)
}

// The recovery passes, as Linux's recovery.c names them.
const (
	passScan = iota
	passRevoke
	passReplay
)

// RevokeMax is how many distinct revoked blocks a replay can hold; a log
// with more refuses replay (ENOMEM) rather than replaying a block a later
// transaction revoked.
const RevokeMax = 16384

// revokeTable maps a revoked block to the latest transaction revoking
// it: open addressing over fixed arrays, key+1 in key (0: empty).
type revokeTable struct {
	key [RevokeMax]uint64
	seq [RevokeMax]uint32
	n   int
}

func (r *revokeTable) clear() {
	clear(r.key[:])
	r.n = 0
}

func (r *revokeTable) slot(b uint64) uint32 {
	h := (b + 1) * 0x9e3779b97f4a7c15
	return uint32(h>>40) % RevokeMax
}

// set records that transaction seq revokes block b.
func (r *revokeTable) set(b uint64, seq uint32) bool {
	for i, k := r.slot(b), 0; k < RevokeMax; i, k = (i+1)%RevokeMax, k+1 {
		switch r.key[i] {
		case b + 1:
			if tidGT(seq, r.seq[i]) {
				r.seq[i] = seq
			}
			return true
		case 0:
			if r.n >= RevokeMax*3/4 {
				return false
			}
			r.key[i], r.seq[i] = b+1, seq
			r.n++
			return true
		}
	}
	return false
}

// revoked reports whether block b, journaled by transaction seq, is
// revoked by seq or a later transaction.
func (r *revokeTable) revoked(b uint64, seq uint32) bool {
	for i, k := r.slot(b), 0; k < RevokeMax; i, k = (i+1)%RevokeMax, k+1 {
		switch r.key[i] {
		case b + 1:
			return tidGEQ(r.seq[i], seq)
		case 0:
			return false
		}
	}
	return false
}

// Transaction IDs wrap: compare them as Linux's tid_gt and tid_geq do.
func tidGT(x, y uint32) bool  { return int32(x-y) > 0 }
func tidGEQ(x, y uint32) bool { return int32(x-y) >= 0 }

// Replay recovers the journal as Linux and e2fsck do, if its superblock
// says the log holds transactions (s_start != 0): the scan finds the last
// transaction with a valid commit block, the revoke pass collects the
// revoke records of the committed transactions, the replay pass writes
// each journaled block not revoked by a later-or-equal transaction to its
// home (escaped blocks unescaped). Then a flush, then the superblock
// with s_start 0 and s_sequence past the last transaction seen, then a
// flush. A transaction without a valid commit block is not replayed.
// After Replay the log is empty and the journal takes transactions.
// A logged block failing its tag checksum, or a commit block failing
// its own, fails Replay (EBADMSG, EUCLEAN) after the rest is replayed
// and flushed, the superblock left as it is and the journal not
// writable: Linux's journal load fails the same way, for e2fsck.
func (j *Journal[E]) Replay() (Report, abi.Errno) {
	var r Report
	if !j.loaded {
		return r, EBUSY
	}
	if j.sb.Start == 0 {
		// Clean: as Linux, start past the superblock's sequence.
		r.First, r.End = j.sb.Sequence, j.sb.Sequence
		j.startEmpty(j.sb.Sequence + 1)
		return r, 0
	}
	if e := j.passes(j.sb.Start, j.sb.Sequence, &r); e != 0 {
		return r, e
	}
	if e := j.env.Flush(); e != 0 {
		return r, e
	}
	// As Linux's journal load: a journaled block that failed its
	// checksum, or a commit block that did, fails the recovery after
	// the rest is replayed, the log left as it is for e2fsck to judge.
	if r.BadBlocks != 0 {
		return r, EBADMSG
	}
	if r.FailedCommit != 0 {
		return r, EUCLEAN
	}
	// e2fsck and Linux restart the log at end+1, so that no commit block
	// left in the log can ever match the next transaction's ID.
	if e := j.writeSuper(0, r.End+1); e != 0 {
		return r, e
	}
	if e := j.env.Flush(); e != 0 {
		return r, e
	}
	j.startEmpty(r.End + 1)
	return r, 0
}

// startEmpty makes the log empty in memory, the next transaction seq.
func (j *Journal[E]) startEmpty(seq uint32) {
	j.seq, j.tailSeq = seq, seq
	j.head, j.tail = j.sb.First, j.sb.First
	j.logRevokes = 0
	j.replayed = true
	j.tx.reset()
}

// passes runs the scan, revoke and replay passes over the log starting at
// block start with transaction seq, filling r.
func (j *Journal[E]) passes(start, seq uint32, r *Report) abi.Errno {
	*r = Report{First: seq}
	end, e := j.walk(passScan, start, seq, seq, r)
	if e != 0 {
		return e
	}
	r.End, r.Transactions = end, end-seq
	j.rev.clear()
	if _, e := j.walk(passRevoke, start, seq, end, r); e != 0 {
		return e
	}
	_, e = j.walk(passReplay, start, seq, end, r)
	return e
}

// walk is one pass over the log from block start, transaction seq. The
// scan pass reads until the log ends (a block without the magic, of
// another sequence or type, a commit block failing its checksum, or a
// whole lap of the log) and returns the first transaction not
// committed; the others stop before transaction end. Every pass reads
// each log block at most once, so a pass is bounded by the log's length
// whatever the log holds.
//
// Checksums as Linux's do_one_pass checks them: a descriptor or revoke
// block failing its tail marks the transaction; at its commit block, a
// commit time not older than the last transaction's means a corrupt
// journal (EBADMSG, nothing replayed), an older one a stale block left
// from an earlier use of the log (the log ends there). A commit block
// failing its checksum ends the log before its transaction, recorded in
// FailedCommit unless its time says it is stale. Tags are checked in the
// replay pass.
func (j *Journal[E]) walk(pass int, start, seq, end uint32, r *Report) (uint32, abi.Errno) {
	n, id := start, seq
	seen := false       // a block of transaction id before its commit block
	badTail := false    // a block of transaction id failed its checksum
	var lastTime uint64 // the last commit time the scan passed
	budget := int64(j.logLen())
	buf := j.buf[:j.bs]
	for budget > 0 {
		if pass != passScan && !tidGT(end, id) {
			break
		}
		if e := j.readLog(n, buf); e != 0 {
			return id, e
		}
		budget--
		if be.Uint32(buf) != Magic || be.Uint32(buf[headerSequence:]) != id {
			if pass != passScan {
				return id, EUCLEAN // the scan saw this block
			}
			break
		}
		switch be.Uint32(buf[headerBlockType:]) {
		case blockDescriptor:
			seen = true
			if pass == passScan && !j.tailOK(buf) {
				r.BadCsum, badTail = true, true
			}
			if e := j.tags(pass, n, id, &budget, r); e != 0 {
				return id, e
			}
			n = j.advance(n, 1+j.countTags(buf))
			continue
		case blockCommit:
			if pass == passScan {
				t := be.Uint64(buf[48:])
				if badTail {
					if t >= lastTime {
						return id, EBADMSG
					}
					return id, 0 // stale: the log ends
				}
				if j.sb.csum() && be.Uint32(buf[16:]) != j.commitCsum(buf) {
					r.BadCsum, r.Torn = true, true
					if t >= lastTime {
						r.FailedCommit = id
					}
					return id, 0
				}
				lastTime = t
			}
			id++
			seen = false
		case blockRevoke:
			seen = true
			if pass == passScan && !j.tailOK(buf) {
				r.BadCsum, badTail = true, true
			}
			if pass == passRevoke {
				if e := j.revokes(buf, id, r); e != 0 {
					return id, e
				}
			}
		default:
			if pass != passScan {
				return id, EUCLEAN
			}
			r.Torn = seen
			return id, 0
		}
		n = j.next(n)
	}
	if pass == passScan && seen {
		r.Torn = true
	}
	return id, 0
}

// advance steps the log block n forward by k.
func (j *Journal[E]) advance(n, k uint32) uint32 {
	k %= j.logLen()
	n += k
	if n >= j.sb.MaxLen {
		n -= j.logLen()
	}
	return n
}

// tailOK checks a descriptor or revoke block's checksum tail (checksums
// v2/v3): crc32c from the journal's seed over the block, tail as zero.
func (j *Journal[E]) tailOK(b []byte) bool {
	if !j.sb.csum() {
		return true
	}
	return be.Uint32(b[j.bs-4:]) == j.tailCsum(b)
}

func (j *Journal[E]) tailCsum(b []byte) uint32 {
	var zero [4]byte
	c := crc32c.Update(j.csumSeed, b[:j.bs-4])
	return crc32c.Update(c, zero[:])
}

// commitCsum is a commit block's checksum: crc32c from the journal's seed
// over the block with h_chksum[0] as zero.
func (j *Journal[E]) commitCsum(b []byte) uint32 {
	var zero [4]byte
	c := crc32c.Update(j.csumSeed, b[:16])
	c = crc32c.Update(c, zero[:])
	return crc32c.Update(c, b[20:j.bs])
}

// tagCsum is a journaled block's checksum as its tag carries it (v3 all
// 32 bits, v2 the low 16): crc32c from the seed over the transaction's
// ID (big-endian) and the block as written in the log.
func (j *Journal[E]) tagCsum(seq uint32, data []byte) uint32 {
	var s [4]byte
	be.PutUint32(s[:], seq)
	return crc32c.Update(crc32c.Update(j.csumSeed, s[:]), data[:j.bs])
}

// tag is one decoded descriptor tag.
type tag struct {
	block uint64
	flags uint32
	csum  uint32
}

// tagAt decodes the tag at byte off of a descriptor block and returns the
// offset of the next; ok is false when no whole tag fits there.
func (j *Journal[E]) tagAt(b []byte, off uint32) (t tag, nextOff uint32, ok bool) {
	limit := j.bs - j.tailSize()
	if off+j.tagBytes > limit {
		return t, off, false
	}
	p := b[off:]
	t.block = uint64(be.Uint32(p))
	t.flags = uint32(be.Uint16(p[6:]))
	if j.tagBytes > 8 {
		t.block |= uint64(be.Uint32(p[8:])) << 32
	}
	switch {
	case j.sb.Has(FeatureCsumV3):
		t.csum = be.Uint32(p[12:])
	case j.sb.Has(FeatureCsumV2):
		t.csum = uint32(be.Uint16(p[4:]))
	}
	off += j.tagBytes
	if t.flags&flagSameUUID == 0 {
		off += 16
	}
	return t, off, true
}

// countTags is how many blocks a descriptor's tags describe (Linux's
// count_tags: up to the last tag, or as many as fit).
func (j *Journal[E]) countTags(b []byte) uint32 {
	var nr uint32
	for off := uint32(12); ; {
		t, next, ok := j.tagAt(b, off)
		if !ok {
			break
		}
		nr++
		off = next
		if t.flags&flagLastTag != 0 {
			break
		}
	}
	return nr
}

// tags handles the blocks of the descriptor in j.buf at log block n of
// transaction id: the replay pass writes those not revoked home, each
// after its tag's checksum (v2/v3) matched — a block that does not
// match is left alone and counted (Linux's replay does the same, and
// fails the recovery at its end); the other passes only count them.
// The budget of log blocks a pass may read goes down by each.
func (j *Journal[E]) tags(pass int, n, id uint32, budget *int64, r *Report) abi.Errno {
	if pass != passReplay {
		*budget -= int64(j.countTags(j.buf[:j.bs]))
		return 0
	}
	data := j.data[:j.bs]
	at := n
	for off := uint32(12); ; {
		t, next, ok := j.tagAt(j.buf[:j.bs], off)
		if !ok {
			break
		}
		off = next
		at = j.next(at)
		if *budget--; *budget < 0 {
			return 0
		}
		if j.rev.revoked(t.block, id) {
			r.Revoked++
		} else {
			if e := j.readLog(at, data); e != 0 {
				return e
			}
			c := j.tagCsum(id, data)
			if j.sb.Has(FeatureCsumV2) {
				c &= 0xffff
			}
			switch {
			case j.sb.csum() && c != t.csum:
				r.BadBlocks++
			case t.block > ^uint64(0)/uint64(j.bs):
				return EUCLEAN
			default:
				if t.flags&flagEscape != 0 {
					be.PutUint32(data, Magic)
				}
				if e := j.env.WriteAt(data, t.block*uint64(j.bs)); e != 0 {
					return e
				}
				r.Blocks++
			}
		}
		if t.flags&flagLastTag != 0 {
			break
		}
	}
	return 0
}

// revokes records the revoke block in j.buf of transaction id.
func (j *Journal[E]) revokes(b []byte, id uint32, r *Report) abi.Errno {
	count := be.Uint32(b[12:])
	if count > j.bs-j.tailSize() {
		return EUCLEAN
	}
	rec := uint32(4)
	if j.sb.Has(Feature64bit) {
		rec = 8
	}
	for off := uint32(16); off+rec <= count; off += rec {
		var blk uint64
		if rec == 8 {
			blk = be.Uint64(b[off:])
		} else {
			blk = uint64(be.Uint32(b[off:]))
		}
		if !j.rev.set(blk, id) {
			return abi.ENOMEM
		}
		r.Revokes++
	}
	return 0
}
