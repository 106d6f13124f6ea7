package ext4

// The write side's calls. Each is one transaction (a large write or
// truncate several, one after another); the caller serialises calls.

// maxLinks is the most links a file or (without dir_nlink) a directory
// may have.
const maxLinks = 65000

// checkName checks a new entry's name.
func checkName(name []byte) Errno {
	switch {
	case len(name) == 0:
		return ENOENT
	case len(name) > NameMax:
		return ENAMETOOLONG
	case string(name) == "." || string(name) == "..":
		return EEXIST
	}
	for _, c := range name {
		if c == '/' || c == 0 {
			return EINVAL
		}
	}
	return 0
}

// dirForChange reads directory dir for a change of name in it: EROFS,
// ENOTDIR, ENOENT for a removed directory, ENAMETOOLONG.
func (f *FS[E]) dirForChange(dir uint32, name []byte) (Inode, Errno) {
	if !f.mounted {
		return Inode{}, EIO
	}
	if f.ro {
		return Inode{}, EROFS
	}
	d, e := f.inode(dir)
	if e != 0 {
		return d, e
	}
	if !d.IsDir() {
		return d, ENOTDIR
	}
	if d.Links == 0 {
		return d, ENOENT
	}
	if len(name) > NameMax {
		return d, ENAMETOOLONG
	}
	return d, 0
}

// newName reads directory dir for a new entry name: the checks of
// dirForChange and checkName, and EEXIST if name is taken.
func (f *FS[E]) newName(dir uint32, name []byte) (Inode, Errno) {
	d, e := f.dirForChange(dir, name)
	if e != 0 {
		return d, e
	}
	if e := checkName(name); e != 0 {
		return d, e
	}
	if _, e := f.lookup(&d, name); e != ENOENT {
		if e == 0 {
			return d, EEXIST
		}
		return d, e
	}
	return d, 0
}

// touch sets in's mtime and ctime to now.
func (f *FS[E]) touch(in *Inode) {
	t := f.now()
	in.Mtime, in.Ctime = t, t
}

// Mknod makes a file of mode (its type: regular, FIFO, socket, device
// with rdev) named name in dir: its inode number. EEXIST if name is
// taken.
func (f *FS[E]) Mknod(dir uint32, name []byte, mode uint32, rdev uint64, uid, gid uint32) (uint32, Errno) {
	switch mode & SIFMT {
	case SIFREG, SIFIFO, SIFSOCK, SIFCHR, SIFBLK:
	default:
		return 0, EINVAL
	}
	d, e := f.newName(dir, name)
	if e != 0 {
		return 0, e
	}
	if e := f.begin(); e != 0 {
		return 0, e
	}
	in, e := f.newInode(dir, mode, uid, gid)
	if e == 0 && mode&SIFMT != SIFREG {
		// Special files map no blocks: i_block is empty or holds the
		// device number, without the extents flag (e2fsck's rule).
		in.Flags &^= FlagExtents
		clear(in.Block[:])
	}
	if e == 0 && (mode&SIFMT == SIFCHR || mode&SIFMT == SIFBLK) {
		maj, min := uint32(rdev>>8&0xfff|rdev>>32&^0xfff), uint32(rdev&0xff|rdev>>12&^0xff)
		if maj < 256 && min < 256 {
			put32(in.Block[:], 0, maj<<8|min)
		} else {
			put32(in.Block[:], 4, min&0xff|maj<<8|(min&^0xff)<<12)
		}
	}
	if e == 0 && mode&SIFMT != SIFREG {
		e = f.writeInode(&in, false)
	}
	if e == 0 {
		e = f.link(&d, name, &in)
	}
	return in.Ino, f.finish(e)
}

// finish commits the transaction if e is 0, else aborts it; it answers
// e or the commit's error.
func (f *FS[E]) finish(e Errno) Errno {
	if e != 0 {
		f.abort()
		return e
	}
	return f.end()
}

// link adds name → in to directory d and writes d.
func (f *FS[E]) link(d *Inode, name []byte, in *Inode) Errno {
	if e := f.addEntry(d, name, in.Ino, modeFT(in.Mode)); e != 0 {
		return e
	}
	f.touch(d)
	return f.writeInode(d, false)
}

// Mkdir makes directory name in dir.
func (f *FS[E]) Mkdir(dir uint32, name []byte, perm, uid, gid uint32) (uint32, Errno) {
	d, e := f.newName(dir, name)
	if e != 0 {
		return 0, e
	}
	if d.Links >= maxLinks && f.roCompat&RoCompatDirNlink == 0 {
		return 0, EMLINK
	}
	if e := f.begin(); e != 0 {
		return 0, e
	}
	in, e := f.newInode(dir, SIFDIR|perm&0o7777, uid, gid)
	if e != 0 {
		return 0, f.finish(e)
	}
	i, e := f.newDataBlock(&in, 0)
	if e != 0 {
		return 0, f.finish(e)
	}
	b := f.data(i)
	f.putEntry(b, 0, 12, in.Ino, dots[:1], ftDir)
	f.putEntry(b, 12, f.blockEnd()-12, dir, dots[:], ftDir)
	f.dirDone(&in, i)
	f.put(i)
	in.Size = uint64(f.bs)
	in.Links = 2
	e = f.writeInode(&in, false)
	if e == 0 {
		switch {
		case d.Links >= maxLinks-1 || d.Links == 1:
			d.Links = 1 // dir_nlink: too many to count
		default:
			d.Links++
		}
		e = f.link(&d, name, &in)
	}
	return in.Ino, f.finish(e)
}

// Symlink makes symbolic link name in dir to target.
func (f *FS[E]) Symlink(dir uint32, name, target []byte, uid, gid uint32) (uint32, Errno) {
	if len(target) == 0 {
		return 0, ENOENT
	}
	if len(target) >= int(f.bs) || len(target) >= pageSize {
		return 0, ENAMETOOLONG
	}
	d, e := f.newName(dir, name)
	if e != 0 {
		return 0, e
	}
	if e := f.begin(); e != 0 {
		return 0, e
	}
	in, e := f.newInode(dir, SIFLNK|0o777, uid, gid)
	if e != 0 {
		return 0, f.finish(e)
	}
	in.Size = uint64(len(target))
	if len(target) < 60 {
		in.Flags &^= FlagExtents
		clear(in.Block[:])
		copy(in.Block[:], target)
	} else {
		i, e := f.newDataBlock(&in, 0)
		if e != 0 {
			return 0, f.finish(e)
		}
		// The target is the link's data, not journaled: written before
		// the transaction that makes it reachable commits.
		b := f.data(i)
		copy(b, target)
		blk := f.c.bufs[i].blk
		f.c.bufs[i].dirty = false
		e = f.env.WriteAt(b, blk<<f.logbs)
		f.put(i)
		if e != 0 {
			return 0, f.finish(e)
		}
	}
	e = f.writeInode(&in, false)
	if e == 0 {
		e = f.link(&d, name, &in)
	}
	return in.Ino, f.finish(e)
}

// Link makes name in dir a further name of ino: EPERM for a directory,
// EMLINK past 65,000 links.
func (f *FS[E]) Link(ino, dir uint32, name []byte) Errno {
	d, e := f.newName(dir, name)
	if e != 0 {
		return e
	}
	in, e := f.inode(ino)
	if e != 0 {
		return e
	}
	if in.IsDir() {
		return EPERM
	}
	if in.Links >= maxLinks {
		return EMLINK
	}
	if e := f.begin(); e != 0 {
		return e
	}
	in.Links++
	in.Ctime = f.now()
	e = f.writeInode(&in, false)
	if e == 0 {
		e = f.link(&d, name, &in)
	}
	return f.finish(e)
}
