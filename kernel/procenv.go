package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/kernel/disk"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/kernel/net"
	"yolk/kernel/procfs"
	"yolk/kernel/procsnap"
	"yolk/kernel/share"
)

// /proc's and /sys's numbers are kernel/procsnap's fill of a
// kernel/procfs snapshot (procState); procenv is what the kernel supplies
// to it (procsnap.Env). The files themselves are procfiles.go's.

type procenv struct{}

var procState procsnap.State[procenv]

// Mount IDs, as procsnap numbers them, for the kinds' fdViews entries.
const (
	procMntRoot = procsnap.MntRoot
	procMntDev  = procsnap.MntDev
	procMntPipe = procsnap.MntPipe
	procMntSock = procsnap.MntSock
)

// procRlimit is resource res's limit (sysPrlimit's and /proc/self/limits').
func procRlimit(res int) (cur, max uint64) { return procsnap.Rlimit(res, len(files)) }

func (procenv) Now() int64                     { return nanotime() }
func (procenv) WallBase() int64                { return wallBase }
func (procenv) Hostname() string               { return nodename }
func (procenv) Exe() []byte                    { return exePath[:exeLen] }
func (procenv) Args() (int, []byte)            { return nargs, cstr(argOff[0]) }
func (procenv) Stack() (top, size uintptr)     { return stackTop, stackSize }
func (procenv) Umask() uint32                  { return atomic.LoadUint32(&shareUmask) } // vfs's, which has no getter
func (procenv) Files() int                     { return len(files) }
func (procenv) FilePages() int64               { n, _ := vfs.Pages(); return n }
func (procenv) Iface(i int, p *net.Iface) bool { return sockets.Iface(i, p) }

func (procenv) Image() (lo, ro, bss, end uintptr) {
	lo = textStart()&^(mm.PageSize-1) - mm.PageSize
	bss, end = bssStart(), imageEnd()
	ro = imageRO()
	if ro == 0 {
		ro = bss
	}
	return lo, ro, bss, end
}

func (procenv) SigActions() (ignored, caught uint64) {
	sigLock.Lock()
	for sig := 1; sig < len(sigs.Acts); sig++ {
		switch h := sigs.Acts[sig].Handler; {
		case h == 1: // SIG_IGN
			ignored |= 1 << (sig - 1)
		case h > 1:
			caught |= 1 << (sig - 1)
		}
	}
	sigLock.Unlock()
	return ignored, caught
}

func (procenv) SigThread(i int) (pending, blocked uint64) {
	return atomic.LoadUint64(&sigs.Pending[i]), sigs.Mask[i] // the thread's own, read racily as Linux's status
}

// Cwd: a working directory on /proc or /sys, on a share (read without
// its lock: a chdir meanwhile may leave a stale or mixed path, never a
// fault), on a disk, or the in-memory file system's.
func (procenv) Cwd(s *procfs.Snapshot, b []byte) (int, bool) {
	if procCwd.on {
		return procfs.Path(procCwd.node, s, b), true
	} else if shares.CwdOn() {
		return copy(b, shares.CwdPath()), true
	} else if n, e, on := dsk.Getcwd(b); on {
		return n - 1, e == 0 && n > 1
	} else if n, e := vfs.Getcwd(b); e == 0 && n > 1 {
		return n - 1, true
	}
	return 0, false
}

// FD looks at descriptor fd as fdGet does, under fileLock with a
// reference of its own on its handle, which its kind's view then uses
// without fileLock.
func (procenv) FD(fd int, s *procfs.Snapshot, d *procfs.FD) bool {
	if atomic.LoadUint32(&files[fd].kind) == fileFree {
		return false // a hint: checked again under fileLock
	}
	fileLock.Lock()
	f := &files[fd]
	o := ofile{fd: fd, kind: f.kind, h: int(f.h)}
	cloexec := f.fdfl&unix.FD_CLOEXEC != 0
	refHandle(o.kind, o.h)
	fileLock.Unlock()
	if o.kind == fileFree {
		return false
	}
	*d = procfs.FD{FD: int32(fd), CloExec: cloexec, Ino: 1, MntID: procsnap.MntAnon}
	d.Flags = unix.O_RDWR
	v := &fdViews[o.kind]
	if v.getfl != nil {
		fl, _ := v.getfl(o)
		d.Flags = uint32(fl)
	}
	if v.view != nil {
		v.view(o, noEscapeP(s), noEscapeP(d))
	}
	fdPut(o)
	return true
}

func (procenv) ShareArea(s *procfs.Snapshot, a *procfs.Area) {
	if c, ok := disk.Slot(int32(-int64(a.Ino))); ok {
		dev, ino := dsk.MapSlot(c) // a disk file's (its path: not yet)
		a.Ino, a.Major, a.Minor = uint64(ino), uint32(unix.Major(dev)), uint32(unix.Minor(dev))
		return
	}
	h := share.AreaFile(int32(-int64(a.Ino)))
	_, a.Name = procSharePath(s, h)
	f := shares.File(h)
	a.Ino, a.Major, a.Minor = f.Qpath, 0x90, uint32(f.Dev)
}

// procSharePath is share file h's mount ID and path in /proc.
func procSharePath(s *procfs.Snapshot, h int) (int32, procfs.Str) {
	b := procState.Scratch()
	return procState.SharePath(s, int(shares.File(h).Dev), b[:max(shares.DirPath(h, b), 0)])
}

func (procenv) Share(i int) (dev int, point, tag []byte, ok bool) {
	if i >= shares.NumMounts() {
		return 0, nil, nil, false
	}
	m := shares.Mount(i)
	return m.Dev, m.Path(), m.Tag(), true
}

func (procenv) Disk(i int) (rdev uint64, name, point []byte, ro, on, ok bool) {
	if i >= disks.N {
		return 0, nil, nil, false, false, false
	}
	d := &disks.D[i]
	name = d.Name()
	if j := blks.ByRdev(dsk.Dev(i)); dsk.On(i) && j >= 0 {
		name = blks.Name(j) // the device, for one mounted by its label
	}
	return dsk.Dev(i), name, d.Path(), dsk.ReadOnly(i), dsk.On(i), true
}

func (procenv) FSRootIno() (uint64, bool) {
	var st unix.Stat_t
	if vfs.Stat(fs.AtCWD, slashPath[:], 0, &st) != 0 {
		return 0, false
	}
	return st.Ino, true
}

func (procenv) FSOpen(dir int, path []byte, flags int) (int, fs.Errno) {
	return vfs.Open(dir, path, flags, 0)
}

func (procenv) FSGetdents(h int, b []byte) int {
	n, e := vfs.Getdents(h, b)
	if e != 0 {
		return 0
	}
	return n
}

func (procenv) FSClose(h int) { vfs.Close(h) }

var slashPath = [...]byte{'/'}
