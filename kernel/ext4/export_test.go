package ext4

// Hooks for the tests.

// DirHash is dirHash.
func DirHash(name []byte, v uint8, seed *[4]uint32) (uint32, Errno) { return dirHash(name, v, seed) }

// DxLookup looks name up in directory dir through its htree index only.
func (f *FS[E]) DxLookup(dir uint32, name []byte) (uint32, bool, Errno) {
	in, e := f.inode(dir)
	if e != 0 {
		return 0, false, e
	}
	if in.Flags&FlagIndex == 0 {
		return 0, false, 0
	}
	ino, e := f.dxLookup(&in, name, nil)
	if e == errBadDx {
		return 0, false, 0
	}
	return ino, true, e
}

// Crc32c is the standard crc32c of b.
func Crc32c(b []byte) uint32 { return ^crc32c(^uint32(0), b) }

// Pinned is the number of pinned or dirty buffers (none between calls).
func (f *FS[E]) Pinned() int {
	n := 0
	for i := range f.c.bufs {
		if f.c.bufs[i].pins != 0 || f.c.bufs[i].dirty {
			n++
		}
	}
	return n
}

// DxLeaf is the leaf block of directory dir that name's hash leads to
// through its index; ok false if it is not indexed.
func (f *FS[E]) DxLeaf(dir uint32, name []byte) (uint64, bool) {
	in, e := f.inode(dir)
	if e != 0 || in.Flags&FlagIndex == 0 {
		return 0, false
	}
	var w dxWhere
	if _, e := f.dxLookup(&in, name, &w); e != 0 {
		return 0, false
	}
	return w.leaf, true
}
