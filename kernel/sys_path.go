package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/kernel/namei"
	"yolk/sched"
)

// The path calls: each reads its path and runs its operation through
// onPath (pathwalk.go), which finds the file system the path leads to
// and calls that kind's operation: memPathOp here for the in-memory file
// system, sharePathOp (share.go), procPath (procfiles.go).

// pathCall is onPath on a path in the program's memory.
func pathCall(dirfd int, p uintptr, op int, a *namei.Args) (uintptr, abi.Errno) {
	var pb userPath
	path, e := mm.UserPath(p, &pb)
	if e != 0 {
		return 0, e
	}
	return onPath(dirfd, path, op, a)
}

func sysOpenat(dirfd int, p uintptr, flags int, mode uint32) (uintptr, abi.Errno) {
	return pathCall(dirfd, p, namei.OpOpen, &namei.Args{Flags: flags, Mode: mode})
}

func sysNewfstatat(dirfd int, p, sp uintptr, flags int) abi.Errno {
	var pb userPath
	path, e := mm.UserPath(p, &pb)
	if e != 0 {
		return e
	}
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH|unix.AT_NO_AUTOMOUNT) != 0 {
		return abi.EINVAL
	}
	if len(path) == 0 && flags&unix.AT_EMPTY_PATH != 0 {
		if int32(dirfd) != unix.AT_FDCWD {
			return sysFstat(dirfd, sp)
		}
		path = dotPath[:] // the working directory itself
	}
	a := namei.Args{Flags: flags &^ unix.AT_EMPTY_PATH}
	if _, e := onPath(dirfd, path, namei.OpStat, &a); e != 0 {
		return e
	}
	return mm.Put(sp, a.St)
}

// sysFaccessat is faccessat2 (and faccessat with flags 0, access with
// AT_FDCWD): whether the program may read, write or execute path, as Linux
// answers a process of uid 0 (yolk's only one), which may read and write
// everything: F_OK and R_OK ask only that the path resolves; W_OK is EROFS
// on a read-only file system (one whose statfs says ST_RDONLY: a
// read-only disk) for a regular file, directory or symbolic link; X_OK is
// EACCES for a file that is no directory and has no execute bit.
// AT_EACCESS changes nothing (the real and effective ids are the same).
func sysFaccessat(dirfd int, p uintptr, mode uint32, flags int) abi.Errno {
	const rwx = unix.R_OK | unix.W_OK | unix.X_OK
	if mode&^rwx != 0 || flags&^(unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return abi.EINVAL
	}
	var pb userPath
	path, e := mm.UserPath(p, &pb)
	if e != 0 {
		return e
	}
	var st unix.Stat_t
	if len(path) == 0 && flags&unix.AT_EMPTY_PATH != 0 {
		if int32(dirfd) != unix.AT_FDCWD {
			if e := onFD(dirfd, func(o ofile) abi.Errno { return o.stat(&st) }); e != 0 {
				return e
			}
			if mode&unix.X_OK != 0 && st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Mode&0o111 == 0 {
				return abi.EACCES
			}
			return 0
		}
		path = dotPath[:]
	} else if len(path) == 0 {
		return abi.ENOENT
	}
	a := namei.Args{Flags: flags & unix.AT_SYMLINK_NOFOLLOW}
	if _, e := onPath(dirfd, path, namei.OpStat, &a); e != 0 {
		return e
	}
	st = a.St
	typ := st.Mode & unix.S_IFMT
	if mode&unix.W_OK != 0 && (typ == unix.S_IFREG || typ == unix.S_IFDIR || typ == unix.S_IFLNK) {
		var fa namei.Args
		if _, e := onPath(dirfd, path, namei.OpStatfs, &fa); e == 0 && fa.Sfs.Flags&unix.ST_RDONLY != 0 {
			return abi.Errno(unix.EROFS)
		}
	}
	if mode&unix.X_OK != 0 && typ != unix.S_IFDIR && st.Mode&0o111 == 0 {
		return abi.EACCES
	}
	return 0
}

// sysStatfs is statfs: the figures of the file system path is on (it
// follows a last symbolic link, as Linux's user_statfs).
func sysStatfs(p, sp uintptr) abi.Errno {
	var a namei.Args
	if _, e := pathCall(unix.AT_FDCWD, p, namei.OpStatfs, &a); e != 0 {
		return e
	}
	return mm.Put(sp, a.Sfs)
}

func sysMkdirat(dirfd int, p uintptr, mode uint32) abi.Errno {
	_, e := pathCall(dirfd, p, namei.OpMkdir, &namei.Args{Mode: mode})
	return e
}

func sysUnlinkat(dirfd int, p uintptr, flags int) abi.Errno {
	_, e := pathCall(dirfd, p, namei.OpUnlink, &namei.Args{Flags: flags})
	return e
}

func sysMknodat(dirfd int, p uintptr, mode uint32, dev uint64) abi.Errno {
	_, e := pathCall(dirfd, p, namei.OpMknod, &namei.Args{Mode: mode, Dev: dev})
	return e
}

func sysSymlinkat(tp uintptr, dirfd int, p uintptr) abi.Errno {
	var tb userPath
	target, e := mm.UserPath(tp, &tb)
	if e != 0 {
		return e
	}
	_, e = pathCall(dirfd, p, namei.OpSymlink, &namei.Args{Target: noEscape(target)})
	return e
}

func sysReadlinkat(dirfd int, p, bp, n uintptr) (uintptr, abi.Errno) {
	if int(n) <= 0 {
		return 0, abi.EINVAL
	}
	var target userPath
	c, e := pathCall(dirfd, p, namei.OpReadlink, &namei.Args{Out: noEscape(target[:min(n, uintptr(len(target)))])})
	if e == 0 && mm.CopyOut(bp, target[:c]) != 0 {
		return 0, abi.EFAULT
	}
	return c, e
}

func sysTruncate(p uintptr, size int64) abi.Errno {
	_, e := pathCall(unix.AT_FDCWD, p, namei.OpTruncate, &namei.Args{Size: size})
	return e
}

func sysChdir(p uintptr) abi.Errno {
	_, e := pathCall(unix.AT_FDCWD, p, namei.OpChdir, &namei.Args{})
	return e
}

// chdirPath makes path the working directory.
func chdirPath(path []byte) abi.Errno {
	_, e := onPath(unix.AT_FDCWD, path, namei.OpChdir, &namei.Args{})
	return e
}

func sysGetcwd(p, n uintptr) (uintptr, abi.Errno) {
	if !userRange(p, n, true) {
		return 0, abi.EFAULT
	}
	var b userPath
	buf := b[:min(n, uintptr(len(b)))]
	c, fe, on := shares.Getcwd(buf)
	if !on {
		c, fe, on = procGetcwd(buf)
	}
	if !on {
		c, fe, on = dsk.Getcwd(buf)
	}
	if !on {
		var fse fs.Errno
		c, fse = vfs.Getcwd(buf)
		fe = abi.Errno(fse)
	}
	if fe == 0 && mm.CopyOut(p, buf[:c]) != 0 {
		return 0, abi.EFAULT
	}
	return uintptr(c), fe
}

// sysFchmodat is fchmodat, and fchmodat2 with its flags
// (AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH).
func sysFchmodat(dirfd int, p uintptr, mode uint32, flags int) abi.Errno {
	return setPath(dirfd, p, namei.OpChmod, &namei.Args{Flags: flags, Mode: mode})
}

// sysFchownat is chown, lchown and fchownat (flags: AT_SYMLINK_NOFOLLOW,
// AT_EMPTY_PATH). Owners are kept, never enforced (see package fs).
func sysFchownat(dirfd int, p uintptr, uid, gid int, flags int) abi.Errno {
	return setPath(dirfd, p, namei.OpChown, &namei.Args{Flags: flags, UID: uid, GID: gid})
}

// setPath is chmod's and chown's path call: an empty path with
// AT_EMPTY_PATH is the open file dirfd itself.
func setPath(dirfd int, p uintptr, op int, a *namei.Args) abi.Errno {
	if a.Flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return abi.EINVAL
	}
	var pb userPath
	path, e := mm.UserPath(p, &pb)
	if e != 0 {
		return e
	}
	if len(path) == 0 && a.Flags&unix.AT_EMPTY_PATH != 0 {
		if int32(dirfd) != unix.AT_FDCWD {
			mode, uid, gid := a.Mode, a.UID, a.GID
			return onFD(dirfd, func(o ofile) abi.Errno {
				if op == namei.OpChmod {
					return o.chmod(mode)
				}
				return o.chown(uid, gid)
			})
		}
		path = dotPath[:] // the working directory itself
	}
	a.Flags &^= unix.AT_EMPTY_PATH
	_, e = onPath(dirfd, path, op, a)
	return e
}

var dotPath = [...]byte{'.'}

// sysUtimensat sets the access and modification times of a path (times:
// two timespecs, 0 for now; UTIME_NOW and UTIME_OMIT as Linux). A NULL
// path (futimens) is not supported: EINVAL.
func sysUtimensat(dirfd int, p, times uintptr, flags int) abi.Errno {
	if p == 0 || flags&^unix.AT_SYMLINK_NOFOLLOW != 0 {
		return abi.EINVAL
	}
	a := namei.Args{Flags: flags}
	for i := range a.Times {
		a.Times[i] = fs.UtimeNow
		if times == 0 {
			continue
		}
		ts, e := mm.Get[timespec](times + uintptr(i)*16)
		if e != 0 {
			return e
		}
		switch {
		case ts.nsec == unix.UTIME_NOW:
		case ts.nsec == unix.UTIME_OMIT:
			a.Times[i] = fs.UtimeOmit
		case ts.nsec < 0 || ts.nsec >= 1e9:
			return abi.EINVAL
		default:
			a.Times[i] = ts.sec*1e9 + ts.nsec
		}
	}
	_, e := pathCall(dirfd, p, namei.OpUtimes, &a)
	return e
}

// twoBufs are rename's and link's buffers when their paths leave the
// in-memory file system (rare: the kernel stack is small).
var twoBufs struct {
	mu   sched.Mutex
	bufs [2][2]userPath
}

// twoPlaces runs op on the places of rename's or link's two paths, which
// must be on one mount (EXDEV).
func twoPlaces(odirfd int, opath []byte, ndirfd int, npath []byte, op func(o, n *namei.Place) abi.Errno) abi.Errno {
	t := &twoBufs
	t.mu.Lock()
	defer t.mu.Unlock()
	o, e := namei.Where[nameienv](odirfd, opath, &t.bufs[0])
	if e != 0 {
		placeDone(&o)
		return e
	}
	n, e := namei.Where[nameienv](ndirfd, npath, &t.bufs[1])
	if e == 0 && o.M != n.M {
		e = abi.Errno(unix.EXDEV)
	}
	if e == 0 {
		e = op(noEscapeP(&o), noEscapeP(&n))
	}
	placeDone(&o)
	placeDone(&n)
	return e
}

// twoPaths reads rename's and link's paths.
func twoPaths(op, np uintptr, pb, nb *userPath) (opath, npath []byte, e abi.Errno) {
	if opath, e = mm.UserPath(op, pb); e == 0 {
		npath, e = mm.UserPath(np, nb)
	}
	return noEscape(opath), noEscape(npath), e
}

// memTwo runs op on rename's or link's paths when both start on the
// in-memory file system; fs.ECross if either does not stay there.
func memTwo(odirfd int, opath []byte, ndirfd int, npath []byte, op func(od, nd int) fs.Errno) abi.Errno {
	if !memStart(odirfd, opath) || !memStart(ndirfd, npath) {
		return abi.Errno(fs.ECross)
	}
	od, e := dirHandle(odirfd, opath)
	if e != 0 {
		return abi.Errno(fs.ECross) // perhaps a share's or /proc's directory: twoPlaces says
	}
	nd, e := dirHandle(ndirfd, npath)
	if e == 0 {
		e = abi.Errno(op(od, nd))
	} else {
		e = abi.Errno(fs.ECross)
	}
	fsPut(od)
	fsPut(nd)
	return e
}

// memStart reports whether a path call on dirfd and path may start in
// the in-memory file system (dirHandle's): an absolute path while the
// root is in memory, a relative one while the working directory is
// there, or one from an in-memory directory's descriptor.
func memStart(dirfd int, path []byte) bool {
	if len(path) > 0 && path[0] == '/' {
		_, disk := namei.RootOnDisk()
		return !disk
	}
	if int32(dirfd) == unix.AT_FDCWD {
		_, _, _, disk := dsk.Cwd()
		return !disk && !shares.CwdOn() && !procCwd.on
	}
	return true // dirHandle says
}

func sysRenameat2(odirfd int, op uintptr, ndirfd int, np uintptr, flags int) abi.Errno {
	var pb, nb userPath
	opath, npath, e := twoPaths(op, np, &pb, &nb)
	if e != 0 {
		return e
	}
	e = memTwo(odirfd, opath, ndirfd, npath, func(od, nd int) fs.Errno { return vfs.Rename(od, opath, nd, npath, flags) })
	if e != abi.Errno(fs.ECross) {
		return e
	}
	return twoPlaces(odirfd, opath, ndirfd, npath, func(o, n *namei.Place) abi.Errno {
		switch namei.Kind(o.M) {
		case namei.Mem:
			return abi.Errno(vfs.Rename(o.D, o.Path, n.D, n.Path, flags))
		case namei.Share:
			return shares.Rename(&o.R, &n.R, flags)
		case namei.Disk:
			return dsk.Rename(o, n, flags)
		}
		return abi.Errno(unix.EACCES) // /proc, /sys
	})
}

func sysLinkat(odirfd int, op uintptr, ndirfd int, np uintptr, flags int) abi.Errno {
	var pb, nb userPath
	opath, npath, e := twoPaths(op, np, &pb, &nb)
	if e != 0 {
		return e
	}
	if len(opath) == 0 && flags&unix.AT_EMPTY_PATH != 0 && int32(odirfd) != unix.AT_FDCWD {
		// AT_EMPTY_PATH links the open file odirfd itself.
		od := fsGet(odirfd)
		if od < 0 {
			return badFD(odirfd, abi.Errno(unix.EPERM)) // the console, epoll, eventfd: no inode to name
		}
		e = abi.Errno(fs.ECross)
		if memStart(ndirfd, npath) {
			nd, de := dirHandle(ndirfd, npath)
			if e = de; e == 0 {
				e = abi.Errno(vfs.Link(od, opath, nd, npath, flags))
			}
			fsPut(nd)
		}
		fsPut(od)
		if e == abi.Errno(fs.ECross) {
			e = abi.Errno(unix.EXDEV)
		}
		return e
	}
	e = memTwo(odirfd, opath, ndirfd, npath, func(od, nd int) fs.Errno { return vfs.Link(od, opath, nd, npath, flags) })
	if e != abi.Errno(fs.ECross) {
		return e
	}
	if flags&^(unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return abi.EINVAL
	}
	return twoPlaces(odirfd, opath, ndirfd, npath, func(o, n *namei.Place) abi.Errno {
		switch namei.Kind(o.M) {
		case namei.Mem:
			return abi.Errno(vfs.Link(o.D, o.Path, n.D, n.Path, flags))
		case namei.Share:
			return shares.Link(&o.R, &n.R)
		case namei.Disk:
			return dsk.Link(o, n)
		}
		return abi.Errno(unix.EPERM) // /proc, /sys
	})
}

// memPathOp is path operation op on the in-memory file system
// (pathKinds).
func memPathOp(op int, pl *namei.Place, a *namei.Args) (uintptr, abi.Errno) {
	d, path := pl.D, pl.Path
	var e fs.Errno
	switch op {
	case namei.OpOpen:
		return memOpen(d, path, a.Flags, a.Mode)
	case namei.OpStat:
		e = vfs.Stat(d, path, a.Flags, &a.St)
	case namei.OpStatfs:
		e = vfs.StatfsPath(d, path, &a.Sfs)
	case namei.OpMkdir:
		e = vfs.Mkdir(d, path, a.Mode)
	case namei.OpUnlink:
		e = vfs.Unlink(d, path, a.Flags)
	case namei.OpMknod:
		e = vfs.Mknod(d, path, a.Mode, a.Dev)
	case namei.OpSymlink:
		e = vfs.Symlink(a.Target, d, path)
	case namei.OpReadlink:
		n, e := vfs.Readlink(d, path, a.Out)
		return uintptr(n), abi.Errno(e)
	case namei.OpTruncate:
		e = vfs.Truncate(d, path, a.Size)
		fileCut()
	case namei.OpChdir:
		if e = vfs.Chdir(d, path); e == 0 {
			leaveCwd()
		}
	case namei.OpChmod:
		e = vfs.Chmod(d, path, a.Mode, a.Flags)
	case namei.OpChown:
		e = vfs.Chown(d, path, a.UID, a.GID, a.Flags)
	case namei.OpUtimes:
		e = vfs.Utimes(d, path, a.Times[0], a.Times[1], a.Flags)
	}
	return 0, abi.Errno(e)
}

// leaveCwd forgets a working directory on a share or /proc: the in-memory
// file system's is the working directory again.
func leaveCwd() {
	procCwd.on = false
	shares.LeaveCwd()
	dsk.LeaveCwd()
}

// memOpen is openat on the in-memory file system.
func memOpen(d int, path []byte, flags int, mode uint32) (uintptr, abi.Errno) {
	h, fe := vfs.Open(d, path, flags&^unix.O_CLOEXEC, mode)
	if flags&unix.O_TRUNC != 0 {
		fileCut()
	}
	if fe == unix.ENXIO {
		return blkOpen(d, path, flags)
	}
	if fe != 0 {
		return 0, abi.Errno(fe)
	}
	// A FIFO opened blocking waits for its other end, or a signal
	// (made again under SA_RESTART), as Linux.
	for {
		pipe, addr, val, wait := vfs.OpenWait(h)
		if !wait {
			break
		}
		if blockIntr(&pipeWQ[pipe], 0, addr, val, 0) == sched.WakeSignal {
			vfs.Close(h)
			return 0, errRestartSys
		}
	}
	return installFS(h)
}
