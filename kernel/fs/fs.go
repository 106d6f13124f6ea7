// Package fs is the architecture-neutral core of yolk's in-memory file
// system and pipes: a writable tree of directories, regular files and
// symbolic links (tmpfs-like), parts of which can be made read-only (a
// package's testdata), and pipes, with Linux's semantics errno for errno.
//
// Kernel-context Go: nothing here allocates on the Go heap or stores a Go
// pointer into memory. Inodes, open files and pipes are fixed-size pools
// inside the FS value, named by indices; file data, symbolic link targets
// and pipe buffers live in whole 4 KiB pages the kernel supplies through
// Env, named by their addresses (uintptr). kernel/kcontext_test.go checks
// this on a built image.
//
// Nothing blocks: a pipe read or write that would have to wait returns
// EAGAIN, and every change of a pipe's state bumps a counter (see Wait) and
// calls Env.Wake, so the kernel can block on a wait queue with that counter
// as its condition and never lose a wake-up. The same counter and Poll give
// epoll its readiness events; opening a FIFO that has to wait for its other
// end returns at once, and OpenWait says what to wait for.
//
// Handles: an open file (Linux's "open file description": offset, flags,
// the inode or pipe end) is a small integer the kernel's descriptor table
// maps file descriptors to; Ref and Close count the descriptors sharing it
// (dup). Calls that take a directory and a path take a handle or AtCWD, as
// the *at system calls do. Paths and buffers are byte slices the kernel
// makes over user memory.
//
// Hard links: a directory entry is an inode slot too. The first name of a
// file lives in its inode (name, parent, siblings); every further name is
// an entry slot whose link field names the inode. The inode outlives its
// first name while other names or open files hold it (then it is in no
// directory). Directories are never linked.
//
// Device nodes: the memory devices null, zero and full work (the kernel
// makes /dev/null, /dev/zero, /dev/full); a node of any other device can
// be made but not opened (ENXIO, as Linux for a missing driver).
//
// Memory mappings (mmap.go): a shared mapping maps the file's own pages,
// so they never move or go while it is mapped.
//
// Not supported: extended attributes, O_PATH, O_TMPFILE,
// RENAME_EXCHANGE/WHITEOUT, file locks (the kernel keeps them).
// Permission bits and owners are kept but not enforced: the one process
// runs as root, for which Linux does not enforce them either.
package fs

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/internal/pages"
)

// Env is what the kernel supplies. It must be a value type without
// pointers (in the kernel an empty struct): the FS stores it, and a stored
// pointer would need a write barrier.
type Env interface {
	pages.Supplier // file data, link targets, pipe buffers
	// Now is the wall clock, nanoseconds since the Unix epoch.
	Now() int64
	// Lock and Unlock guard the whole FS (one lock: the operations are
	// short and memory-bound).
	Lock()
	Unlock()
	// Wake is called, with the lock held, after pipe's state changed
	// (data, space, an end closed): wake the tasks waiting on it.
	Wake(pipe int)
}

// Errno is a Linux error number.
type Errno = unix.Errno

const (
	PageSize    = pages.Size
	NameMax     = 255  // bytes in a path component
	PathMax     = 4096 // bytes in a path, including its NUL
	MaxSymlinks = 40   // symbolic links followed in one resolution

	NumInodes = 4096 // files, directories, symbolic and hard links in the tree
	NumFiles  = 1024 // open files (descriptions), pipe ends included
	NumPipes  = 128

	PipeSize = 64 << 10 // a pipe's buffer
	PipeBuf  = 4096     // writes up to this size are atomic

	nDirect     = 8
	ptrsPerPage = PageSize / 8
	// MaxFileSize: 8 direct pages, one indirect and one double-indirect
	// page of page addresses.
	MaxFileSize = (nDirect + ptrsPerPage + ptrsPerPage*ptrsPerPage) * PageSize

	// AtCWD in place of a directory handle means the working directory.
	AtCWD = unix.AT_FDCWD
	// atIno and below in place of a directory handle name a directory
	// by its inode (AtIno): where a walk that left a mounted file system
	// by ".." goes on.
	atIno = -1 << 20

	// Dev is st_dev of every file.
	Dev = 0x16
)

type inode struct {
	mode       uint32 // type and permission bits; 0: free
	nlink      uint32
	refs       int32 // open files and the working directory
	ro         bool
	nameLen    uint8
	link       int32 // a further name (hard link) of inode link-1; 0: the inode itself
	uid, gid   uint32
	rdev       uint64 // a device node's device number
	sock       uint64 // a socket node bind made: the socket's ID (see BindSocket)
	fifo       int32  // a FIFO: 1 + its pipe while open, else 0
	mount      int32  // a directory another file system is mounted on: its mount (Mount), else 0
	parent     int32  // directory holding it; -1 once removed
	prev, next int32  // siblings, in creation order
	head, tail int32  // directory: children
	seq        int64  // position in the parent's listing
	nextSeq    int64  // directory: the next child's seq
	size       int64
	pages      int64 // pages held, index pages included
	maps       int32 // memory mappings of it (MapOpen, MapRef): its pages stay put
	cut        bool  // shrunk while mapped since the kernel last took the pages past the end from the mappings (TakeCut)
	cutEnd     int64 // shrunk while mapped: the end of the pages kept past the size (ZeroPast); 0 if none
	direct     [nDirect]uintptr
	ind, dind  uintptr
	atime      int64
	mtime      int64
	ctime      int64
	name       [NameMax]byte
}

const (
	kindInode = 1 + iota
	kindPipe  // an end of a pipe, or both (a FIFO opened O_RDWR): by the access mode
)

type file struct {
	refs    int32 // 0: free
	kind    uint8
	waitFor uint8  // a FIFO end opened blocking: waitReader, waitWriter until the other end opens
	flags   int32  // access mode, O_APPEND, O_NONBLOCK
	obj     int32  // inode or pipe
	ino     int32  // a pipe end: the FIFO it was opened as, -1 for pipe(2)
	partner uint32 // a pipe end: the other end's open count when it opened
	id      uint64 // unique among the opens of this FS (see Pollable)
	off     int64
}

// What a FIFO end opened blocking waits for.
const (
	waitReader = 1 + iota
	waitWriter
)

type pipe struct {
	used             bool
	fifo             int32 // 1 + the FIFO's inode, 0 for pipe(2)
	readers, writers int32
	rOpens, wOpens   uint32 // read and write ends ever opened (Linux's r_counter, w_counter)
	r, n             int    // read position, bytes buffered
	seq              uint32
	pages            [PipeSize / PageSize]uintptr
}

// FS is one file system and its pipes. The zero value is not usable: call
// Init. It is large (a few MiB): the kernel keeps it in a global.
type FS[E Env] struct {
	env      E
	root     int32
	cwd      int32
	umask    uint32
	pages    int64 // file pages held
	maxPages int64
	cuts     bool // some inode's cut may be set (TakeCut)
	hidden   bool // the root is hidden (Hide)
	lastID   uint64
	inodes   [NumInodes]inode
	files    [NumFiles]file
	pipes    [NumPipes]pipe
}

// Init makes an empty file system with a root directory (mode 0755) and
// the working directory at the root. maxPages bounds the pages file data
// may hold (tmpfs's size); writes beyond it fail with ENOSPC.
func (f *FS[E]) Init(env E, maxPages int64) {
	f.env = env
	f.maxPages = maxPages
	f.umask = 0o022
	now := env.Now()
	ip := &f.inodes[0]
	*ip = inode{mode: unix.S_IFDIR | 0o755, nlink: 2, refs: 1, parent: 0, prev: -1, next: -1,
		head: -1, tail: -1, nextSeq: 2, atime: now, mtime: now, ctime: now}
	f.root, f.cwd = 0, 0
}

// Pages returns the pages file data holds (index pages included) and
// the pages pipes' buffers hold (for the kernel's accounting).
func (f *FS[E]) Pages() (files, pipes int64) {
	f.env.Lock()
	defer f.env.Unlock()
	for i := range f.pipes {
		for _, a := range f.pipes[i].pages {
			if a != 0 {
				pipes++
			}
		}
	}
	return f.pages, pipes
}

// Umask sets the file mode creation mask and returns the previous one.
func (f *FS[E]) Umask(m uint32) uint32 {
	f.env.Lock()
	defer f.env.Unlock()
	old := f.umask
	f.umask = m & 0o777
	return old
}

// PagesUsed is the number of pages file data holds.
func (f *FS[E]) PagesUsed() int64 {
	f.env.Lock()
	defer f.env.Unlock()
	return f.pages
}

// mem is the n bytes at address a.
func mem(a uintptr, n int) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&a))), n)
}

// word is the page-address slot at address a.
func word(a uintptr) *uintptr { return (*uintptr)(*(*unsafe.Pointer)(unsafe.Pointer(&a))) }

func isDir(m uint32) bool  { return m&unix.S_IFMT == unix.S_IFDIR }
func isReg(m uint32) bool  { return m&unix.S_IFMT == unix.S_IFREG }
func isLink(m uint32) bool { return m&unix.S_IFMT == unix.S_IFLNK }
func isFIFO(m uint32) bool { return m&unix.S_IFMT == unix.S_IFIFO }
func isChr(m uint32) bool  { return m&unix.S_IFMT == unix.S_IFCHR }

// The memory devices' numbers, 1:3, 1:5 and 1:7 (unix.Mkdev's encoding).
const (
	DevNull = 1<<8 | 3
	DevZero = 1<<8 | 5
	DevFull = 1<<8 | 7
)

// memDev reports whether ip is a device node of one of the memory
// devices.
func memDev(ip *inode) bool {
	return isChr(ip.mode) && (ip.rdev == DevNull || ip.rdev == DevZero || ip.rdev == DevFull)
}

// inodeOf is the inode directory entry ent names (itself unless it is a
// hard link).
func (f *FS[E]) inodeOf(ent int32) int32 {
	if l := f.inodes[ent].link; l != 0 {
		return l - 1
	}
	return ent
}

func (ip *inode) nameBytes() []byte { return ip.name[:ip.nameLen] }

// allocPage takes a page for file data, within maxPages.
func (f *FS[E]) allocPage() (uintptr, Errno) {
	if f.pages >= f.maxPages {
		return 0, unix.ENOSPC
	}
	a := f.env.AllocPage()
	if a == 0 {
		return 0, unix.ENOSPC
	}
	f.pages++
	return a, 0
}

func (f *FS[E]) freePage(a uintptr) {
	f.env.FreePage(a)
	f.pages--
}

// newInode takes a free inode and links it into directory dir as name.
func (f *FS[E]) newInode(dir int32, name []byte, mode uint32) (int32, Errno) {
	return f.newEntry(dir, name, mode, -1)
}

// newEntry takes a free inode slot and links it into directory dir as
// name: a new inode, or (target >= 0) a further name of inode target.
func (f *FS[E]) newEntry(dir int32, name []byte, mode uint32, target int32) (int32, Errno) {
	for i := range f.inodes {
		ip := &f.inodes[i]
		if ip.mode != 0 {
			continue
		}
		now := f.env.Now()
		*ip = inode{mode: mode, nlink: 1, prev: -1, next: -1, head: -1, tail: -1, nextSeq: 2,
			atime: now, mtime: now, ctime: now}
		if target >= 0 {
			ip.link, ip.nlink = target+1, 0
			t := &f.inodes[target]
			t.nlink++
			t.ctime = now
		} else if d := &f.inodes[dir]; d.mode&unix.S_ISGID != 0 {
			ip.gid = d.gid // the directory's group, as Linux
			if isDir(mode) {
				ip.mode |= unix.S_ISGID // inherited
			}
		}
		if target < 0 && isDir(mode) {
			ip.nlink = 2
			f.inodes[dir].nlink++
		}
		f.link(dir, int32(i), name)
		return int32(i), 0
	}
	return -1, unix.ENOSPC
}

// link appends ino to dir's listing as name.
func (f *FS[E]) link(dir, ino int32, name []byte) {
	d, ip := &f.inodes[dir], &f.inodes[ino]
	ip.nameLen = uint8(copy(ip.name[:], name))
	ip.parent = dir
	ip.seq = d.nextSeq
	d.nextSeq++
	ip.prev, ip.next = d.tail, -1
	if d.tail >= 0 {
		f.inodes[d.tail].next = ino
	} else {
		d.head = ino
	}
	d.tail = ino
	now := f.env.Now()
	d.mtime, d.ctime = now, now
}

// unlinkEntry takes ino out of its directory's listing.
func (f *FS[E]) unlinkEntry(ino int32) {
	ip := &f.inodes[ino]
	d := &f.inodes[ip.parent]
	if ip.prev >= 0 {
		f.inodes[ip.prev].next = ip.next
	} else {
		d.head = ip.next
	}
	if ip.next >= 0 {
		f.inodes[ip.next].prev = ip.prev
	} else {
		d.tail = ip.prev
	}
	ip.prev, ip.next, ip.parent = -1, -1, -1
	now := f.env.Now()
	d.mtime, d.ctime = now, now
}

// remove takes directory entry ent out of the tree and frees the inode it
// names unless another name or an open file holds it.
func (f *FS[E]) remove(ent int32) {
	ino := f.inodeOf(ent)
	ip := &f.inodes[ino]
	parent := f.inodes[ent].parent
	f.unlinkEntry(ent)
	ip.ctime = f.env.Now()
	if isDir(ip.mode) {
		ip.nlink = 0
		f.inodes[parent].nlink--
	} else {
		ip.nlink--
	}
	if ent != ino {
		f.inodes[ent].mode = 0 // a hard link's entry
	}
	f.put(ino)
}

// put frees ino if nothing names or holds it.
func (f *FS[E]) put(ino int32) {
	ip := &f.inodes[ino]
	if ip.nlink != 0 || ip.refs != 0 || ip.maps != 0 {
		return
	}
	f.truncPages(ip, 0)
	ip.mode = 0
}

// now is the clock as a timespec.
func ts(ns int64) unix.Timespec { return unix.NsecToTimespec(ns) }

// bump records a change of pipe p and wakes its waiters.
func (f *FS[E]) bump(p int) {
	atomic.AddUint32(&f.pipes[p].seq, 1)
	f.env.Wake(p)
}
