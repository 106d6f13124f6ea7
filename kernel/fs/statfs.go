package fs

import "golang.org/x/sys/unix"

// Linux's magic numbers (statfs's f_type) for what this package serves:
// the tree is tmpfs's, the pipes pipe(2) makes are pipefs's.
const (
	TmpfsMagic  = 0x01021994
	PipefsMagic = 0x50495045
)

// Statfs fills st for open file h as Linux's fstatfs: an end of a pipe
// pipe(2) made is on pipefs, anything else on this tmpfs.
func (f *FS[E]) Statfs(h int, st *unix.Statfs_t) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	fl := f.file(h)
	if fl == nil {
		return unix.EBADF
	}
	if fl.kind == kindPipe && fl.ino < 0 {
		*st = unix.Statfs_t{Type: PipefsMagic, Bsize: PageSize, Namelen: NameMax, Frsize: PageSize, Flags: stValid}
		return 0
	}
	f.statfs(st)
	return 0
}

// StatfsPath is statfs of path, as Stat resolves it.
func (f *FS[E]) StatfsPath(dir int, path []byte, st *unix.Statfs_t) Errno {
	f.env.Lock()
	defer f.env.Unlock()
	if _, e := f.walkExisting(dir, path, followMode(0)); e != 0 {
		return e
	}
	f.statfs(st)
	return 0
}

// Linux's statfs flags: ST_VALID, and relatime, which tmpfs is mounted
// with by default.
const (
	stValid    = 0x20
	stRelatime = 0x1000
)

// statfs is the tree's figures, as tmpfs's shmem_statfs gives them: pages
// as blocks (the size Init bounds, those file data hold), inodes; f.env's
// lock is held.
func (f *FS[E]) statfs(st *unix.Statfs_t) {
	free := int64(0)
	for i := range f.inodes {
		if f.inodes[i].mode == 0 {
			free++
		}
	}
	blocks := uint64(max(f.maxPages, 0))
	used := uint64(min(f.pages, f.maxPages))
	*st = unix.Statfs_t{Type: TmpfsMagic, Bsize: PageSize, Blocks: blocks, Bfree: blocks - used, Bavail: blocks - used,
		Files: NumInodes, Ffree: uint64(free), Namelen: NameMax, Frsize: PageSize, Flags: stValid | stRelatime}
	st.Fsid.Val[0] = Dev
}
