package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/sched"
)

// The path calls: each reads its path and runs its operation through
// onPath (pathwalk.go), which finds the file system the path leads to
// and calls that kind's operation: memPathOp here for the in-memory file
// system, sharePathOp (share.go), procPath (procfiles.go).

// pathCall is onPath on a path in the program's memory.
func pathCall(dirfd int, p uintptr, op int, a *pathArgs) (uintptr, abi.Errno) {
	var pb userPath
	path, e := mm.UserPath(p, &pb)
	if e != 0 {
		return 0, e
	}
	return onPath(dirfd, path, op, a)
}

func sysOpenat(dirfd int, p uintptr, flags int, mode uint32) (uintptr, abi.Errno) {
	return pathCall(dirfd, p, opOpen, &pathArgs{flags: flags, mode: mode})
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
	a := pathArgs{flags: flags &^ unix.AT_EMPTY_PATH}
	if _, e := onPath(dirfd, path, opStat, &a); e != 0 {
		return e
	}
	return mm.Put(sp, a.st)
}

// sysStatfs is statfs: the figures of the file system path is on (it
// follows a last symbolic link, as Linux's user_statfs).
func sysStatfs(p, sp uintptr) abi.Errno {
	var a pathArgs
	if _, e := pathCall(unix.AT_FDCWD, p, opStatfs, &a); e != 0 {
		return e
	}
	return mm.Put(sp, a.sfs)
}

func sysMkdirat(dirfd int, p uintptr, mode uint32) abi.Errno {
	_, e := pathCall(dirfd, p, opMkdir, &pathArgs{mode: mode})
	return e
}

func sysUnlinkat(dirfd int, p uintptr, flags int) abi.Errno {
	_, e := pathCall(dirfd, p, opUnlink, &pathArgs{flags: flags})
	return e
}

func sysMknodat(dirfd int, p uintptr, mode uint32, dev uint64) abi.Errno {
	_, e := pathCall(dirfd, p, opMknod, &pathArgs{mode: mode, dev: dev})
	return e
}

func sysSymlinkat(tp uintptr, dirfd int, p uintptr) abi.Errno {
	var tb userPath
	target, e := mm.UserPath(tp, &tb)
	if e != 0 {
		return e
	}
	_, e = pathCall(dirfd, p, opSymlink, &pathArgs{target: noEscape(target)})
	return e
}

func sysReadlinkat(dirfd int, p, bp, n uintptr) (uintptr, abi.Errno) {
	if int(n) <= 0 {
		return 0, abi.EINVAL
	}
	var target userPath
	c, e := pathCall(dirfd, p, opReadlink, &pathArgs{out: noEscape(target[:min(n, uintptr(len(target)))])})
	if e == 0 && mm.CopyOut(bp, target[:c]) != 0 {
		return 0, abi.EFAULT
	}
	return c, e
}

func sysTruncate(p uintptr, size int64) abi.Errno {
	_, e := pathCall(unix.AT_FDCWD, p, opTruncate, &pathArgs{size: size})
	return e
}

func sysChdir(p uintptr) abi.Errno {
	_, e := pathCall(unix.AT_FDCWD, p, opChdir, &pathArgs{})
	return e
}

// chdirPath makes path the working directory.
func chdirPath(path []byte) abi.Errno {
	_, e := onPath(unix.AT_FDCWD, path, opChdir, &pathArgs{})
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
	return setPath(dirfd, p, opChmod, &pathArgs{flags: flags, mode: mode})
}

// sysFchownat is chown, lchown and fchownat (flags: AT_SYMLINK_NOFOLLOW,
// AT_EMPTY_PATH). Owners are kept, never enforced (see package fs).
func sysFchownat(dirfd int, p uintptr, uid, gid int, flags int) abi.Errno {
	return setPath(dirfd, p, opChown, &pathArgs{flags: flags, uid: uid, gid: gid})
}

// setPath is chmod's and chown's path call: an empty path with
// AT_EMPTY_PATH is the open file dirfd itself.
func setPath(dirfd int, p uintptr, op int, a *pathArgs) abi.Errno {
	if a.flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return abi.EINVAL
	}
	var pb userPath
	path, e := mm.UserPath(p, &pb)
	if e != 0 {
		return e
	}
	if len(path) == 0 && a.flags&unix.AT_EMPTY_PATH != 0 {
		if int32(dirfd) != unix.AT_FDCWD {
			mode, uid, gid := a.mode, a.uid, a.gid
			return onFD(dirfd, func(o ofile) abi.Errno {
				if op == opChmod {
					return o.chmod(mode)
				}
				return o.chown(uid, gid)
			})
		}
		path = dotPath[:] // the working directory itself
	}
	a.flags &^= unix.AT_EMPTY_PATH
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
	a := pathArgs{flags: flags}
	for i := range a.times {
		a.times[i] = fs.UtimeNow
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
			a.times[i] = fs.UtimeOmit
		case ts.nsec < 0 || ts.nsec >= 1e9:
			return abi.EINVAL
		default:
			a.times[i] = ts.sec*1e9 + ts.nsec
		}
	}
	_, e := pathCall(dirfd, p, opUtimes, &a)
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
func twoPlaces(odirfd int, opath []byte, ndirfd int, npath []byte, op func(o, n *place) abi.Errno) abi.Errno {
	t := &twoBufs
	t.mu.Lock()
	defer t.mu.Unlock()
	o, e := pathPlace(odirfd, opath, &t.bufs[0])
	if e != 0 {
		placeDone(&o)
		return e
	}
	n, e := pathPlace(ndirfd, npath, &t.bufs[1])
	if e == 0 && o.m != n.m {
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
	if shares.CwdOn() {
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
	return twoPlaces(odirfd, opath, ndirfd, npath, func(o, n *place) abi.Errno {
		switch mountKind(o.m) {
		case pathMem:
			return abi.Errno(vfs.Rename(o.d, o.path, n.d, n.path, flags))
		case pathShare:
			return shares.Rename(&o.r, &n.r, flags)
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
		if !shares.CwdOn() || len(npath) > 0 && npath[0] == '/' || int32(ndirfd) != unix.AT_FDCWD {
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
	return twoPlaces(odirfd, opath, ndirfd, npath, func(o, n *place) abi.Errno {
		switch mountKind(o.m) {
		case pathMem:
			return abi.Errno(vfs.Link(o.d, o.path, n.d, n.path, flags))
		case pathShare:
			return shares.Link(&o.r, &n.r)
		}
		return abi.Errno(unix.EPERM) // /proc, /sys
	})
}

// memPathOp is path operation op on the in-memory file system
// (pathKinds).
func memPathOp(op int, pl *place, a *pathArgs) (uintptr, abi.Errno) {
	d, path := pl.d, pl.path
	var e fs.Errno
	switch op {
	case opOpen:
		return memOpen(d, path, a.flags, a.mode)
	case opStat:
		e = vfs.Stat(d, path, a.flags, &a.st)
	case opStatfs:
		e = vfs.StatfsPath(d, path, &a.sfs)
	case opMkdir:
		e = vfs.Mkdir(d, path, a.mode)
	case opUnlink:
		e = vfs.Unlink(d, path, a.flags)
	case opMknod:
		e = vfs.Mknod(d, path, a.mode, a.dev)
	case opSymlink:
		e = vfs.Symlink(a.target, d, path)
	case opReadlink:
		n, e := vfs.Readlink(d, path, a.out)
		return uintptr(n), abi.Errno(e)
	case opTruncate:
		e = vfs.Truncate(d, path, a.size)
		fileCut()
	case opChdir:
		if e = vfs.Chdir(d, path); e == 0 {
			leaveCwd()
		}
	case opChmod:
		e = vfs.Chmod(d, path, a.mode, a.flags)
	case opChown:
		e = vfs.Chown(d, path, a.uid, a.gid, a.flags)
	case opUtimes:
		e = vfs.Utimes(d, path, a.times[0], a.times[1], a.flags)
	}
	return 0, abi.Errno(e)
}

// leaveCwd forgets a working directory on a share or /proc: the in-memory
// file system's is the working directory again.
func leaveCwd() {
	procCwd.on = false
	shares.LeaveCwd()
}

// memOpen is openat on the in-memory file system.
func memOpen(d int, path []byte, flags int, mode uint32) (uintptr, abi.Errno) {
	h, fe := vfs.Open(d, path, flags&^unix.O_CLOEXEC, mode)
	if flags&unix.O_TRUNC != 0 {
		fileCut()
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
