package ext4

// File data: write (blocks allocated by extents, unwritten extents
// made written), truncate, fallocate, setattr, and freeing a file's
// blocks (extent trees and the old block maps).

// WriteAt writes b at byte off of regular file ino: the bytes written.
// Each run of blocks is one transaction; its data goes to the disk
// before the transaction that maps it commits (ordered).
func (f *FS[E]) WriteAt(ino uint32, b []byte, off uint64) (int, Errno) {
	in, e := f.fileForChange(ino)
	if e != 0 {
		return 0, e
	}
	if off+uint64(len(b)) > uint64(maxFileBlocks)<<f.logbs || off+uint64(len(b)) < off {
		return 0, EFBIG
	}
	n := 0
	for n < len(b) || len(b) == 0 {
		if e := f.begin(); e != 0 {
			return n, e
		}
		f.tx.timesOnly = true // unless writeRun maps blocks or the file grows
		k, e := f.writeRun(&in, b[n:], off+uint64(n))
		n += k
		if end := off + uint64(n); end > in.Size {
			in.Size = end
			f.tx.timesOnly = false
		}
		f.touch(&in)
		if e == 0 {
			e = f.writeInode(&in, false)
		}
		if e = f.finish(e); e != 0 {
			return n - k, e // the run's transaction is undone
		}
		if len(b) == 0 {
			return 0, 0
		}
	}
	return n, 0
}

// writeRun writes the start of b at off, up to one run of blocks mapped
// alike: the bytes written.
func (f *FS[E]) writeRun(in *Inode, b []byte, off uint64) (int, Errno) {
	bs := uint64(f.bs)
	lblk, boff := off>>f.logbs, off&(bs-1)
	want := min((boff+uint64(len(b))+bs-1)>>f.logbs, chunkBlocks)
	m, e := f.bmap(in, lblk)
	if e != 0 {
		return 0, e
	}
	fresh := m.pblk == 0 || m.uninit
	if fresh {
		f.tx.timesOnly = false // blocks mapped or made written
	}
	if m.pblk == 0 {
		p, got, e := f.allocRun(f.goal(in, lblk), uint32(min(want, m.n)), dataSpan>>f.logbs)
		if e != 0 {
			return 0, e
		}
		in.Blocks += uint64(got) << (f.logbs - 9)
		if e := f.mapAdd(in, lblk, p, uint64(got)); e != 0 {
			return 0, e
		}
		m = mapping{pblk: p, n: uint64(got)}
	}
	k := min(m.n, want)
	n := 0
	for j := uint64(0); j < k && n < len(b); j++ {
		p := m.pblk + j
		o := uint64(0)
		if j == 0 {
			o = boff
		}
		part := min(uint64(len(b)-n), bs-o)
		if part == bs {
			// Whole blocks straight from b, as many as follow.
			w := uint64(1)
			for j+w < k && uint64(len(b)-n) >= (w+1)*bs {
				w++
			}
			if e := f.env.WriteAt(b[n:n+int(w*bs)], p<<f.logbs); e != 0 {
				return n, e
			}
			for x := uint64(0); x < w; x++ {
				if c := f.find(p + x); c >= 0 {
					copy(f.data(c), b[n+int(x*bs):])
					f.c.bufs[c].verified = false
				}
			}
			n += int(w * bs)
			j += w - 1
			continue
		}
		var i int
		if fresh {
			i, e = f.getZero(p)
		} else {
			i, e = f.get(p)
		}
		if e != 0 {
			return n, e
		}
		copy(f.data(i)[o:], b[n:n+int(part)])
		e = f.env.WriteAt(f.data(i), p<<f.logbs)
		f.put(i)
		if e != 0 {
			return n, e
		}
		n += int(part)
	}
	if m.uninit {
		written := (boff + uint64(n) + bs - 1) >> f.logbs
		if e := f.extMarkWritten(in, lblk, min(written, k)); e != 0 {
			return n, e
		}
	}
	return n, 0
}

// hasBlocks says whether in's i_block maps blocks (not a fast symlink,
// a device number or inline data).
func hasBlocks(in *Inode) bool {
	if in.Flags&FlagInlineData != 0 {
		return false
	}
	switch in.Mode & SIFMT {
	case SIFREG, SIFDIR:
		return true
	case SIFLNK:
		return in.Flags&FlagExtents != 0 || in.Size >= 60
	}
	return false
}

// truncateBlocks frees in's blocks past size (restarting the transaction
// as it fills).
func (f *FS[E]) truncateBlocks(in *Inode, size uint64) Errno {
	if !hasBlocks(in) {
		return 0
	}
	from := (size + uint64(f.bs) - 1) >> f.logbs
	if in.Flags&FlagExtents == 0 {
		return f.indTruncate(in, from)
	}
	for {
		done, e := f.extTrimLast(in, from)
		if e != 0 || done {
			return e
		}
		if f.tx.n > maxTx-16 || f.tx.nrev > maxRevoke/2 {
			if e := f.writeInode(in, false); e != 0 {
				return e
			}
			if e := f.restart(); e != 0 {
				return e
			}
		}
	}
}

// Truncate sets regular file ino's size: blocks past it are freed, the
// last block's bytes past it zeroed.
func (f *FS[E]) Truncate(ino uint32, size uint64) Errno {
	in, e := f.fileForChange(ino)
	if e != 0 {
		return e
	}
	if size > uint64(maxFileBlocks)<<f.logbs {
		return EFBIG
	}
	if e := f.begin(); e != 0 {
		return e
	}
	if size < in.Size {
		if r := size & uint64(f.bs-1); r != 0 {
			m, e := f.bmap(&in, size>>f.logbs)
			if e != 0 {
				return f.finish(e)
			}
			if m.pblk != 0 && !m.uninit {
				i, e := f.get(m.pblk)
				if e != 0 {
					return f.finish(e)
				}
				clear(f.data(i)[r:])
				e = f.env.WriteAt(f.data(i), m.pblk<<f.logbs)
				f.put(i)
				if e != 0 {
					return f.finish(e)
				}
			}
		}
		if e := f.truncateBlocks(&in, size); e != 0 {
			return f.finish(e)
		}
	}
	in.Size = size
	f.touch(&in)
	return f.finish(f.writeInode(&in, false))
}

// Fallocate allocates unwritten blocks over the holes of [off, off+n) of
// regular file ino; the size grows to off+n unless keepSize.
func (f *FS[E]) Fallocate(ino uint32, off, n uint64, keepSize bool) Errno {
	in, e := f.fileForChange(ino)
	if e != 0 {
		return e
	}
	if in.Flags&FlagExtents == 0 {
		return EOPNOTSUPP // no unwritten blocks in a block map (Linux's answer too)
	}
	if n == 0 {
		return EINVAL
	}
	end := off + n
	if end < off || end > uint64(maxFileBlocks)<<f.logbs {
		return EFBIG
	}
	last := (end + uint64(f.bs) - 1) >> f.logbs
	for lblk := off >> f.logbs; lblk < last; {
		if e := f.begin(); e != 0 {
			return e
		}
		m, e := f.bmap(&in, lblk)
		if e == 0 && m.pblk == 0 {
			var p uint64
			var got uint32
			p, got, e = f.allocRun(f.goal(&in, lblk), uint32(min(m.n, last-lblk, chunkBlocks)), dataSpan>>f.logbs)
			if e == 0 {
				in.Blocks += uint64(got) << (f.logbs - 9)
				e = f.extAdd(&in, lblk, p, uint64(got), true)
				m.n = uint64(got)
			}
		}
		lblk += min(m.n, last-lblk)
		if e == 0 && lblk >= last && !keepSize && end > in.Size {
			in.Size = end
		}
		if e == 0 {
			in.Ctime = f.now()
			e = f.writeInode(&in, false)
		}
		if e = f.finish(e); e != 0 {
			return e
		}
	}
	return 0
}

// Attr is what Setattr changes: the fields Mask names.
type Attr struct {
	Mask         uint32
	Mode         uint32 // permission bits (07777)
	Uid, Gid     uint32
	Atime, Mtime Time
}

// Attr mask bits.
const (
	AttrMode = 1 << iota
	AttrUid
	AttrGid
	AttrAtime
	AttrMtime
)

// Setattr changes ino's mode, owner or times; its ctime becomes now.
func (f *FS[E]) Setattr(ino uint32, a Attr) Errno {
	if !f.mounted {
		return EIO
	}
	if f.ro {
		return EROFS
	}
	in, e := f.inode(ino)
	if e != 0 {
		return e
	}
	if a.Mask&AttrMode != 0 {
		in.Mode = in.Mode&SIFMT | a.Mode&0o7777
	}
	if a.Mask&AttrUid != 0 {
		in.Uid = a.Uid
	}
	if a.Mask&AttrGid != 0 {
		in.Gid = a.Gid
	}
	if a.Mask&AttrAtime != 0 {
		in.Atime = a.Atime
	}
	if a.Mask&AttrMtime != 0 {
		in.Mtime = a.Mtime
	}
	in.Ctime = f.now()
	if e := f.begin(); e != 0 {
		return e
	}
	return f.finish(f.writeInode(&in, false))
}
