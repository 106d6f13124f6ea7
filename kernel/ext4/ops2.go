package ext4

// Removing and renaming, writing file data, truncate, fallocate and
// setattr.

// drop takes one link from in (a name of it removed); at none the inode
// and its blocks are freed — or, while the kernel has it open, put on the
// orphan list (orphan.go). A directory loses both its links.
func (f *FS[E]) drop(in *Inode) Errno {
	t := f.now()
	in.Ctime = t
	if in.IsDir() {
		in.Links = 0
	} else if in.Links > 0 {
		in.Links--
	}
	if in.Links > 0 {
		return f.writeInode(in, false)
	}
	if !in.IsDir() && f.env.InUse(in.Ino) {
		return f.orphanAdd(in)
	}
	return f.free(in)
}

// free frees in (no links left) and its blocks.
func (f *FS[E]) free(in *Inode) Errno {
	t := f.now()
	if e := f.truncateBlocks(in, 0); e != 0 {
		return e
	}
	in.Dtime = uint32(t.Sec)
	in.Size = 0
	if e := f.writeInode(in, false); e != 0 {
		return e
	}
	return f.freeInode(in.Ino, in.IsDir())
}

// Unlink removes name (not a directory: EISDIR) from dir. An inode the
// kernel still has open stays, an orphan, until ReapOrphans after its
// last close.
func (f *FS[E]) Unlink(dir uint32, name []byte) Errno {
	return f.remove(dir, name, false)
}

// Rmdir removes empty directory name from dir.
func (f *FS[E]) Rmdir(dir uint32, name []byte) Errno {
	switch string(name) {
	case ".":
		return EINVAL
	case "..":
		return ENOTEMPTY
	}
	return f.remove(dir, name, true)
}

func (f *FS[E]) remove(dir uint32, name []byte, isDir bool) Errno {
	d, e := f.dirForChange(dir, name)
	if e != 0 {
		return e
	}
	ino, e := f.lookup(&d, name)
	if e != 0 {
		return e
	}
	in, e := f.live(ino)
	if e != 0 {
		return e
	}
	if in.IsDir() != isDir {
		if isDir {
			return ENOTDIR
		}
		return EISDIR
	}
	if isDir {
		if empty, e := f.dirEmpty(&in); e != 0 || !empty {
			if e == 0 {
				e = ENOTEMPTY
			}
			return e
		}
	}
	if e := f.begin(); e != 0 {
		return e
	}
	if _, e = f.removeEntry(&d, name); e == 0 {
		if isDir && d.Links > 2 {
			d.Links--
		}
		f.touch(&d)
		if e = f.writeInode(&d, false); e == 0 {
			e = f.drop(&in)
		}
	}
	return f.finish(e)
}

// Rename moves oname in odir to nname in ndir, replacing what nname
// named (a file by a file, an empty directory by a directory).
func (f *FS[E]) Rename(odir uint32, oname []byte, ndir uint32, nname []byte) Errno {
	od, e := f.dirForChange(odir, oname)
	if e != 0 {
		return e
	}
	nd, e := f.dirForChange(ndir, nname)
	if e != 0 {
		return e
	}
	if e := checkName(oname); e != 0 {
		return EINVAL
	}
	if e := checkName(nname); e != 0 {
		if e == EEXIST {
			e = EINVAL
		}
		return e
	}
	ino, e := f.lookup(&od, oname)
	if e != 0 {
		return e
	}
	src, e := f.live(ino)
	if e != 0 {
		return e
	}
	old, e := f.lookup(&nd, nname)
	if e != 0 && e != ENOENT {
		return e
	}
	var dst Inode
	if e == 0 {
		if old == ino {
			return 0
		}
		if dst, e = f.live(old); e != 0 {
			return e
		}
		switch {
		case src.IsDir() && !dst.IsDir():
			return ENOTDIR
		case !src.IsDir() && dst.IsDir():
			return EISDIR
		case dst.IsDir():
			if empty, e := f.dirEmpty(&dst); e != 0 || !empty {
				if e == 0 {
					e = ENOTEMPTY
				}
				return e
			}
		}
	}
	if src.IsDir() && odir != ndir {
		// Not into itself: walk up from ndir.
		for at, n := ndir, 0; at != RootIno; n++ {
			if at == ino || n > 4096 {
				return EINVAL
			}
			p, e := f.inode(at)
			if e != 0 {
				return e
			}
			if at, e = f.lookup(&p, dots[:]); e != 0 {
				return e
			}
		}
	}
	if e := f.begin(); e != 0 {
		return e
	}
	e = f.renameTx(&od, oname, &nd, nname, &src, &dst, old != 0 && dst.Ino != 0)
	return f.finish(e)
}

func (f *FS[E]) renameTx(od *Inode, oname []byte, nd *Inode, nname []byte, src, dst *Inode, replace bool) Errno {
	same := od.Ino == nd.Ino
	var e Errno
	if replace {
		_, e = f.changeEntry(nd, nname, src.Ino, modeFT(src.Mode), false)
	} else {
		e = f.addEntry(nd, nname, src.Ino, modeFT(src.Mode))
	}
	if e != 0 {
		return e
	}
	if same {
		*od = *nd // the entry added may have changed the directory
	}
	if _, e := f.removeEntry(od, oname); e != 0 {
		return e
	}
	if same {
		nd = od // one directory: one copy of its inode from here
	}
	if src.IsDir() && !same {
		if _, e := f.changeEntry(src, dots[:], nd.Ino, ftDir, false); e != 0 {
			return e
		}
		if od.Links > 2 {
			od.Links--
		}
		if !replace && nd.Links != 1 {
			nd.Links++
		}
	} else if src.IsDir() && replace && nd.Links > 2 {
		nd.Links-- // the replaced directory's ".." is gone
	}
	src.Ctime = f.now()
	if e := f.writeInode(src, false); e != 0 {
		return e
	}
	f.touch(od)
	if e := f.writeInode(od, false); e != 0 {
		return e
	}
	if !same {
		f.touch(nd)
		if e := f.writeInode(nd, false); e != 0 {
			return e
		}
	}
	if replace {
		return f.drop(dst)
	}
	return 0
}

// fileForChange reads regular file ino for a change of its data.
func (f *FS[E]) fileForChange(ino uint32) (Inode, Errno) {
	if !f.mounted {
		return Inode{}, EIO
	}
	if f.ro {
		return Inode{}, EROFS
	}
	in, e := f.inode(ino)
	if e != 0 {
		return in, e
	}
	if in.IsDir() {
		return in, EISDIR
	}
	if !in.IsReg() {
		return in, EINVAL
	}
	if in.Flags&FlagInlineData != 0 {
		return in, EOPNOTSUPP // inline data is read only
	}
	return in, 0
}

// maxFileBlocks is the largest logical block an extent maps (2^32 - 1).
const maxFileBlocks = 1<<32 - 1

// chunkBlocks is the most blocks one transaction of a write allocates.
const chunkBlocks = 1024
