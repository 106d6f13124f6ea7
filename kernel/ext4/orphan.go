package ext4

// Orphans: an inode whose last name goes while the kernel still has it
// open (Env.InUse) keeps its blocks, with no links, on the superblock's
// orphan list (s_last_orphan, each inode's dtime naming the next), as
// Linux's ext4 keeps it; its last close frees it (ReapOrphans), and so
// does the next mount after a crash, as Linux's orphan cleanup and
// e2fsck do.

const (
	sbLastOrphan = 0xE8
	maxOrphans   = 1 << 16 // a longer chain is a loop: corruption
)

// orphanAdd puts in (no links left, still open) on the orphan list, in
// the open transaction.
func (f *FS[E]) orphanAdd(in *Inode) Errno {
	in.Dtime = le32(f.sb[:], sbLastOrphan)
	if e := f.writeInode(in, false); e != 0 {
		return e
	}
	put32(f.sb[:], sbLastOrphan, in.Ino)
	f.tx.sbDirty = true
	return 0
}

// ReapOrphans frees the inodes on the orphan list that are not in use
// (all of them if all: the last unmount, a mount after a crash).
func (f *FS[E]) ReapOrphans(all bool) Errno {
	if !f.mounted || f.ro {
		return 0
	}
	prev := uint32(0) // the inode whose dtime names ino; 0: the superblock
	ino := le32(f.sb[:], sbLastOrphan)
	for n := 0; ino != 0; n++ {
		if n == maxOrphans || ino < f.firstIno || ino > f.inodes {
			return EUCLEAN
		}
		in, e := f.inode(ino)
		if e != 0 {
			return e
		}
		next := in.Dtime
		if !all && f.env.InUse(ino) {
			prev, ino = ino, next
			continue
		}
		if e := f.evict(prev, &in); e != 0 {
			return e
		}
		ino = next
	}
	return 0
}

// evict takes in off the orphan list (prev names it, 0: the superblock)
// and frees it and its blocks, in one transaction.
func (f *FS[E]) evict(prev uint32, in *Inode) Errno {
	if e := f.begin(); e != 0 {
		return e
	}
	var e Errno
	if prev == 0 {
		put32(f.sb[:], sbLastOrphan, in.Dtime)
		f.tx.sbDirty = true
	} else {
		var p Inode
		if p, e = f.inode(prev); e == 0 {
			p.Dtime = in.Dtime
			e = f.writeInode(&p, false)
		}
	}
	if e == 0 && in.Links == 0 {
		e = f.free(in)
	} else if e == 0 {
		in.Dtime = 0 // linked again meanwhile (not by this kernel): only off the list
		e = f.writeInode(in, false)
	}
	return f.finish(e)
}
