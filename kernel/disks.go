package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/cmdline"
	"yolk/kernel/disk"
	"yolk/kernel/fs"
	"yolk/kernel/namei"
	"yolk/kernel/procfs"
	"yolk/kernel/procsnap"
)

// The disks' file systems are package disk's (kernel/disk, docs/disks.md):
// ext4 on the block devices yolk.disk names, mounted at boot. The glue:
// diskenv (the package's environment and each mount's device), diskOps
// (kind fileDisk: an open file of disk's table), diskMount at boot.
var dsk disk.Disks[diskenv]

type diskenv struct {
	pageSupplier
	blkDisk
}

func (diskenv) Now() int64                         { return walltime() } // the files' times
func (diskenv) At(dev int) diskenv                 { return diskenv{blkDisk: blkDisk{dev}} }
func (diskenv) Install(h int) (uintptr, abi.Errno) { return installHandle(fileDisk, h) }
func (e diskenv) InUse(ino uint32) bool            { return dsk.InUse(e.i, ino) }
func (diskenv) Umask() uint32                      { return atomic.LoadUint32(&shareUmask) }
func (diskenv) CwdEntered()                        { procCwd.on = false; shares.LeaveCwd() }
func (diskenv) Point(i int) []byte                 { return disks.D[i].Path() }
func (diskenv) Print(s string)                     { kprint(s) }
func (diskenv) PrintBytes(b []byte)                { kprintBytes(b) }
func (diskenv) Unback(c int, off int64)            { vm.UnbackFile(disk.Area(c), off) }

// diskMount mounts the file system of each disk yolk.disk names on its
// path (at boot, the devices still polled): the root's first (yolk.root).
func diskMount() {
	root := disks.Root()
	if root >= 0 && root < namei.MaxDisks {
		rootMount(root)
	}
	for k := 0; k < disks.N && k < namei.MaxDisks; k++ {
		if k == root {
			continue
		}
		if _, ok := mountDisk(k); ok {
			o := &disks.D[k]
			if e := (shareenv{}).Mount(o.Path(), namei.MountDisk+int32(k)); e != 0 {
				klogErrno("disk: cannot mount on ", o.Path(), int64(e))
			}
		}
	}
}

// mountDisk mounts the file system of the disk yolk.disk option k names
// as disk mount k, or says why not: its block device.
func mountDisk(k int) (int, bool) {
	o := &disks.D[k]
	dev := diskByName(o)
	if dev < 0 {
		kprint("yolk: disk: ")
		kprintBytes(o.Name())
		kprint(": no such disk: not mounted\n")
		return -1, false
	}
	if dsk.Mounted(blks.Rdev(dev)) {
		kprint("yolk: disk: ")
		kprintBytes(o.Name())
		kprint(": mounted already: not mounted again\n")
		return -1, false
	}
	return dev, dsk.Mount(k, dev, blks.Rdev(dev), blks.Name(dev), o.ReadOnly, blks.ReadOnly(dev)) == 0
}

// rootMount mounts disk k's file system as the root (yolk.root): the
// working directory goes to its root, and what was mounted on the
// in-memory root — /proc, /sys, the shares — is mounted on the disk's
// directories of the same paths, beside the in-memory file system's
// /dev and /tmp (docs/disks.md, "The root on a disk"). A disk that is
// missing or cannot be mounted leaves the root in memory, saying so.
func rootMount(k int) {
	dev, ok := mountDisk(k)
	if !ok {
		kprint("yolk: root: the root stays in memory\n")
		return
	}
	var st [2]unix.Stat_t
	vfs.Stat(fs.AtCWD, devDir[:4], 0, &st[0])
	vfs.Stat(fs.AtCWD, tmpDir[:], 0, &st[1])
	dsk.SetRoot(k)
	namei.SetRoot(namei.MountDisk+int32(k), int32(st[0].Ino-1), int32(st[1].Ino-1))
	vfs.Hide()
	for i, path := range procDirs {
		p := copy(etcPath[:], path)
		rootPoint(etcPath[:p], int32(namei.MountProc+i))
	}
	rootPoint(devDir[:4], namei.MountDev)
	rootPoint(tmpDir[:], namei.MountTmp)
	for i := 0; i < shares.NumMounts(); i++ {
		if m := shares.Mount(i); m.Dev >= 0 && !memPath(m.Path()) {
			rootPoint(m.Path(), int32(i+1)) // one below /tmp or /dev stays where it is
		}
	}
	kprint("yolk: root: ")
	kprintBytes(blks.Name(dev))
	kprint(" is /\n")
	if cwdLen != 0 {
		if e := chdirPath(cwdPath[:cwdLen]); e != 0 {
			klogErrno("yolk.cwd: cannot change to ", cwdPath[:cwdLen], int64(e))
		}
	}
}

// rootPoint mounts m on path of the root disk, or says why not.
func rootPoint(path []byte, m int32) {
	if e := mountAt(path, m); e != 0 {
		klogErrno("root: cannot mount on ", path, int64(e))
	}
}

// diskByName is the block device yolk.disk option o names: by its name,
// or (LABEL=L) the first not yet mounted whose ext4 label is L; -1 if
// none.
func diskByName(o *cmdline.Disk) int {
	if label, ok := o.Label(); ok {
		return dsk.ByLabel(label, blks.Count(), blks.Rdev)
	}
	for i := 0; i < blks.Count(); i++ {
		if string(blks.Name(i)) == string(o.Name()) {
			return i
		}
	}
	return -1
}

func diskRW(o ofile, u *uio, off int64, write bool) (uintptr, abi.Errno) {
	if e := u.check(!write); e != 0 {
		return 0, e
	}
	return u.eachAt(off, func(p, n uintptr, at int64) (uintptr, abi.Errno) {
		if write {
			return dsk.Write(o.h, p, n, at)
		}
		return dsk.Read(o.h, p, n, at)
	})
}

var diskOps = fileOps{
	dupOK:    true,
	read:     func(o ofile, u *uio) (uintptr, abi.Errno) { return diskRW(o, u, -1, false) },
	write:    func(o ofile, u *uio) (uintptr, abi.Errno) { return diskRW(o, u, -1, true) },
	pread:    diskRW,
	mmap:     diskMmap,
	seek:     func(o ofile, off int64, whence int) (uintptr, abi.Errno) { return dsk.Seek(o.h, off, whence) },
	stat:     func(o ofile, st *unix.Stat_t) abi.Errno { return dsk.Stat(o.h, st) },
	statfs:   func(o ofile, st *unix.Statfs_t) abi.Errno { return dsk.Statfs(o.h, st) },
	getdents: func(o ofile, b []byte) (uintptr, abi.Errno) { return dsk.Getdents(o.h, b) },
	truncate: func(o ofile, size int64) abi.Errno { return dsk.Truncate(o.h, size) },
	allocate: func(o ofile, mode int, off, n int64) abi.Errno { return dsk.Allocate(o.h, mode, off, n) },
	sync:     func(o ofile, datasync bool) abi.Errno { return dsk.Sync(o.h, datasync) },
	syncfs:   func(ofile) abi.Errno { return dsk.SyncAll() }, // mapped pages written back, the disks flushed
	chmod:    func(o ofile, mode uint32) abi.Errno { return dsk.Setattr(o.h, mode, 0, 0, true) },
	chown:    func(o ofile, uid, gid int) abi.Errno { return dsk.Setattr(o.h, 0, uid, gid, false) },
	getfl:    func(o ofile) (uintptr, abi.Errno) { return dsk.Getfl(o.h), 0 },
	setfl:    func(o ofile, fl int) abi.Errno { dsk.Setfl(o.h, fl); return 0 },
	at:       diskAt,
	chdir:    func(o ofile) abi.Errno { return dsk.Chdir(o.h) },
	lock:     func(o ofile, cmd int, arg uintptr) abi.Errno { return fcntlLock(diskLocks+o.h, cmd, arg) },
	release:  func(fd, h int) { locksOnClose(fd, diskLocks+h) },
}

// diskAt is where a path relative to a directory on a disk starts: the
// place names the directory's inode, so the call's reference is dropped.
func diskAt(o ofile, path []byte) (namei.Place, abi.Errno) {
	pl, e := dsk.At(o.h, path)
	fdPut(o)
	if e != 0 {
		return nowhere(), e
	}
	return pl, 0
}

func diskProcFD(o ofile, s *procfs.Snapshot, d *procfs.FD) {
	m, ino := dsk.Where(o.h)
	d.Kind, d.Ino, d.MntID = procfs.FDFile, uint64(ino), procsnap.MntDisk+int32(m)
}
