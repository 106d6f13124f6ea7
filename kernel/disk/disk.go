// Package disk puts the disks' file systems into the file layer
// (docs/disks.md): ext4 (kernel/ext4) mounted at boot on the block
// devices yolk.disk names, the path operations on such a mount (Walk:
// within one file system, saying where namei goes on when a path leaves
// it), the open files on a disk and their calls, and the page cache of
// the mapped inodes that mmap of a disk file maps (mmap.go, pagetab.go):
// filled at mmap, never by a page fault, which may not wait for the disk.
//
// Kernel context: nothing here allocates, stores a Go pointer in memory
// the kernel writes, or holds an interface value; the kernel is reached
// through the type parameter (Env). Each mount's calls are serialised by
// its blocking mutex (ext4's calls wait for the disk); the program's
// memory is copied through a page of the Env's outside it.
package disk

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/ext4"
	"yolk/kernel/namei"
	"yolk/sched"
)

// Env is the kernel below the disks: each mount's device (the ext4
// environment the file system keeps: At gives the one of a block device)
// and the descriptors and process state the calls need.
type Env[E any] interface {
	ext4.Env
	// At is the environment of block device dev.
	At(dev int) E
	// Install gives open file h a descriptor (releasing h if none is
	// free).
	Install(h int) (uintptr, abi.Errno)
	// Umask is the process's umask.
	Umask() uint32
	// CwdEntered: the working directory is on a disk now (the other
	// kinds forget theirs). Point is disk mount i's mount point.
	CwdEntered()
	Point(i int) []byte
	// Print writes to the console (mount messages).
	Print(s string)
	PrintBytes(b []byte)
	// Unback takes the pages of mapped inode slot from file offset off
	// (page-aligned) on from the address space's mappings (a
	// truncation). It takes the address space's locks: no mount's lock
	// is held.
	Unback(slot int, off int64)
}

// mount is one mounted file system.
type mount[E Env[E]] struct {
	mu   sched.Mutex // serialises the calls on fs
	fs   ext4.FS[E]
	on   bool
	reap uint32 // atomic: an open file was closed (Unref): look at the orphans
	dev  int    // the block device
	rd   uint64 // st_dev: the block device's number

	// stage is where read and write move the program's bytes, up to
	// stageSize a call into ext4 (one transaction a run of blocks, one
	// device request a run), copied outside mu (a copy may fault and
	// wait); stageMu is held across the copy and the call, before mu.
	stageMu sched.Mutex
	stage   [stageSize]byte
}

// stageSize is the most bytes one read or write hands ext4 at a time
// (BSS, demand-paged: a mount that moves no data costs nothing).
const stageSize = 512 << 10

// Disks is the table of disk mounts and of the open files on them. Its
// zero value has none.
type Disks[E Env[E]] struct {
	m      [namei.MaxDisks]mount[E]
	files  [NumFiles]File
	cwd    cwd
	points points           // the root disk's mount points (points.go)
	maps   [NumMaps]mapSlot // the mapped inodes (mmap.go)
	tabMu  sched.TWALock    // the page cache's index and pages' contents
	tab    pageTab
	// fullSaid: the console was told that the index was full (atomic).
	fullSaid uint32
}

// env is E's zero value, for the calls that need no device.
func env[E any]() E { var e E; return e }

// Mount mounts the ext4 file system of block device dev (its number rdev,
// its name for messages) as disk mount i (namei.MountDisk+i), read-only
// if ro or the device is (roDev: then a journal that needs recovery
// refuses the mount, as Linux's). It prints what it did, or why not: a
// refused feature by name. It runs at boot, before tasks: the mount's
// lock is not taken.
func (d *Disks[E]) Mount(i, dev int, rdev uint64, name []byte, ro, roDev bool) abi.Errno {
	m := &d.m[i]
	opts := 0
	if ro {
		opts |= ext4.MountRO
	}
	if roDev {
		opts |= ext4.MountRODevice
	}
	r, e := m.fs.Mount(env[E]().At(dev), opts)
	p := env[E]()
	p.Print("yolk: disk: ")
	p.PrintBytes(name)
	if e != 0 {
		p.Print(": not mounted: ")
		p.Print(r.Msg)
		printFeatures(p, r.Incompat, ext4.IncompatName)
		p.Print("\n")
		return e
	}
	m.on, m.dev, m.rd = true, dev, rdev
	m.fs.ReapOrphans(true) // a crash's: nothing is open yet
	p.Print(": ext4")
	if j := &r.Journal; j.Transactions != 0 {
		p.Print(", journal replayed: transactions ")
		printNum(p, uint64(j.First))
		p.Print("-")
		printNum(p, uint64(j.End-1))
		p.Print(", blocks ")
		printNum(p, uint64(j.Blocks))
		p.Print(", revoked ")
		printNum(p, uint64(j.Revoked))
	}
	if m.fs.ReadOnly() {
		p.Print(", read-only")
	}
	if r.Msg != "" {
		p.Print(" (")
		p.Print(r.Msg)
		printFeatures(p, r.RoCompat, ext4.RoCompatName)
		p.Print(")")
	}
	p.Print("\n")
	return 0
}

// printNum prints n in decimal (a digit at a time, slices of a constant:
// a buffer handed to PrintBytes would escape to the heap).
func printNum[E Env[E]](p E, n uint64) {
	const digits = "0123456789"
	d := uint64(1)
	for n/d >= 10 {
		d *= 10
	}
	for ; d > 0; d /= 10 {
		k := n / d % 10
		p.Print(digits[k : k+1])
	}
}

// printFeatures prints the names of the feature bits set in bits.
func printFeatures[E Env[E]](p E, bits uint32, name func(uint32) string) {
	for b := uint32(1); b != 0; b <<= 1 {
		if bits&b != 0 {
			p.Print(" ")
			p.Print(name(b))
		}
	}
}

// On reports whether disk mount i is mounted.
func (d *Disks[E]) On(i int) bool { return d.m[i].on }

// labelSB is the superblock ByLabel reads (at boot, one CPU).
var labelSB [1024]byte

// ByLabel is the first of block devices 0 to n-1 not yet mounted whose
// ext4 file system has label (yolk.disk=LABEL=L); -1 if none. rdev is a
// device's number.
func (d *Disks[E]) ByLabel(label []byte, n int, rdev func(int) uint64) int {
	for i := 0; i < n; i++ {
		if d.Mounted(rdev(i)) || env[E]().At(i).ReadAt(labelSB[:], 1024) != 0 {
			continue
		}
		if l, ext := ext4.SuperLabel(&labelSB); ext && string(l) == string(label) {
			return i
		}
	}
	return -1
}

// Mounted says whether the block device numbered rdev is mounted.
func (d *Disks[E]) Mounted(rdev uint64) bool {
	for i := range d.m {
		if d.m[i].on && d.m[i].rd == rdev {
			return true
		}
	}
	return false
}

// Dev is disk mount i's st_dev.
func (d *Disks[E]) Dev(i int) uint64 { return d.m[i].rd }

// ReadOnly reports whether disk mount i is read-only.
func (d *Disks[E]) ReadOnly(i int) bool { return d.m[i].fs.ReadOnly() }

// SyncAll writes the shared writable mappings' pages back to their files
// and makes every mounted disk's calls durable (sync(2), syncfs).
func (d *Disks[E]) SyncAll() abi.Errno { return d.syncAll(false) }

// CommitOld commits every mounted disk's running journal transaction
// that is older than ext4's commit interval (the kernel's committer,
// once a second). It waits for each mount's lock in turn.
func (d *Disks[E]) CommitOld() {
	for i := range d.m {
		m := &d.m[i]
		m.mu.Lock()
		if m.on {
			m.fs.CommitOld()
		}
		m.mu.Unlock()
	}
}

// Journaled reports whether a disk is mounted read-write with a journal
// (for which the committer runs).
func (d *Disks[E]) Journaled() bool {
	for i := range d.m {
		if m := &d.m[i]; m.on && m.fs.Journaled() && !m.fs.ReadOnly() {
			return true
		}
	}
	return false
}

// EndAll is SyncAll at the program's end: the journals are checkpointed
// too, so the disks read right without a replay (debugfs, a mount that
// does not replay); they stay mounted for the calls still running.
func (d *Disks[E]) EndAll() abi.Errno { return d.syncAll(true) }

func (d *Disks[E]) syncAll(end bool) abi.Errno {
	err := d.WriteBackAll()
	for i := range d.m {
		m := &d.m[i]
		m.mu.Lock()
		if m.on {
			sync := m.fs.Sync
			if end {
				sync = m.fs.Checkpoint
			}
			if e := sync(); e != 0 {
				err = e
			}
		}
		m.mu.Unlock()
	}
	return err
}

// index is the disk mount index of mount ID m.
func index(m int32) int { return int(m - namei.MountDisk) }

// stat fills st from ext4's st for mount m.
func (d *Disks[E]) stat(m int, s *ext4.Stat, st *unix.Stat_t) {
	*st = unix.Stat_t{Dev: d.m[m].rd, Ino: s.Ino, Mode: s.Mode, Uid: s.Uid, Gid: s.Gid,
		Rdev: s.Rdev, Size: int64(s.Size), Blocks: int64(s.Blocks)}
	set(&st.Nlink, int64(s.Nlink)) // the types of these differ between architectures
	set(&st.Blksize, int64(s.Blksize))
	st.Atim = unix.Timespec{Sec: s.Atime.Sec, Nsec: int64(s.Atime.Nsec)}
	st.Mtim = unix.Timespec{Sec: s.Mtime.Sec, Nsec: int64(s.Mtime.Nsec)}
	st.Ctim = unix.Timespec{Sec: s.Ctime.Sec, Nsec: int64(s.Ctime.Nsec)}
}

func set[T ~int32 | ~int64 | ~uint32 | ~uint64](p *T, v int64) { *p = T(v) }

// statfs fills st from mount m's ext4 Statfs.
func (d *Disks[E]) statfs(m int, st *unix.Statfs_t) abi.Errno {
	s, e := d.m[m].fs.Statfs()
	if e != 0 {
		return e
	}
	*st = unix.Statfs_t{Type: s.Type, Bsize: s.Bsize, Blocks: s.Blocks, Bfree: s.Bfree, Bavail: s.Bavail,
		Files: s.Files, Ffree: s.Ffree, Namelen: s.Namelen, Frsize: s.Frsize, Flags: stValid | stRelatime}
	st.Fsid.Val = s.Fsid
	if d.m[m].fs.ReadOnly() {
		st.Flags |= unix.ST_RDONLY
	}
	return 0
}

// Statfs flags as Linux reports a default ext4 mount's.
const (
	stValid    = 0x20
	stRelatime = 0x1000
)
