package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/sched"
)

func sysOpenat(dirfd int, p uintptr, flags int, mode uint32) (uintptr, abi.Errno) {
	var pb userPath
	d, path, e := pathArgs(dirfd, p, &pb)
	if e != 0 {
		return 0, e
	}
	h, fe := vfs.Open(d, path, flags&^unix.O_CLOEXEC, mode)
	fsPut(d)
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

func sysNewfstatat(dirfd int, p, sp uintptr, flags int) abi.Errno {
	var pb userPath
	path, e := mm.UserPath(p, &pb)
	if e != 0 {
		return e
	}
	if len(path) == 0 && flags&unix.AT_EMPTY_PATH != 0 && int32(dirfd) != unix.AT_FDCWD {
		return sysFstat(dirfd, sp)
	}
	d, e := dirHandle(dirfd, path)
	if e == 0 && !mm.UserW(sp, statSize) {
		e = abi.EFAULT
	}
	var st unix.Stat_t
	if e == 0 {
		e = abi.Errno(vfs.Stat(d, path, flags, &st))
	}
	fsPut(d)
	if e == 0 {
		e = mm.Put(sp, st)
	}
	return e
}

func sysMkdirat(dirfd int, p uintptr, mode uint32) abi.Errno {
	return atPath(dirfd, p, func(d int, path []byte) fs.Errno { return vfs.Mkdir(d, path, mode) })
}

func sysUnlinkat(dirfd int, p uintptr, flags int) abi.Errno {
	return atPath(dirfd, p, func(d int, path []byte) fs.Errno { return vfs.Unlink(d, path, flags) })
}

func sysRenameat2(odirfd int, op uintptr, ndirfd int, np uintptr, flags int) abi.Errno {
	var pb userPath
	od, opath, e := pathArgs(odirfd, op, &pb)
	if e != 0 {
		return e
	}
	e = atPath(ndirfd, np, func(nd int, npath []byte) fs.Errno { return vfs.Rename(od, opath, nd, npath, flags) })
	fsPut(od)
	return e
}

func sysLinkat(odirfd int, op uintptr, ndirfd int, np uintptr, flags int) abi.Errno {
	var pb userPath
	opath, e := mm.UserPath(op, &pb)
	if e != 0 {
		return e
	}
	// AT_EMPTY_PATH links the open file odirfd itself.
	od := fs.AtCWD
	if len(opath) > 0 || flags&unix.AT_EMPTY_PATH == 0 {
		od, e = dirHandle(odirfd, opath)
	} else if int32(odirfd) != unix.AT_FDCWD {
		if od = fsGet(odirfd); od < 0 {
			od, e = fs.AtCWD, badFD(odirfd, abi.Errno(unix.EPERM)) // the console, epoll, eventfd: no inode to name
		}
	}
	if e != 0 {
		return e
	}
	e = atPath(ndirfd, np, func(nd int, npath []byte) fs.Errno { return vfs.Link(od, opath, nd, npath, flags) })
	fsPut(od)
	return e
}

func sysMknodat(dirfd int, p uintptr, mode uint32, dev uint64) abi.Errno {
	return atPath(dirfd, p, func(d int, path []byte) fs.Errno { return vfs.Mknod(d, path, mode, dev) })
}

func sysSymlinkat(tp uintptr, dirfd int, p uintptr) abi.Errno {
	var pb userPath
	target, e := mm.UserPath(tp, &pb)
	if e != 0 {
		return e
	}
	return atPath(dirfd, p, func(d int, path []byte) fs.Errno { return vfs.Symlink(target, d, path) })
}

func sysReadlinkat(dirfd int, p, bp, n uintptr) (uintptr, abi.Errno) {
	if int(n) <= 0 {
		return 0, abi.EINVAL
	}
	var pb, target userPath
	d, path, e := pathArgs(dirfd, p, &pb)
	if e == 0 && !mm.UserW(bp, n) {
		e = abi.EFAULT
	}
	var c int
	if e == 0 {
		var fe fs.Errno
		c, fe = vfs.Readlink(d, path, target[:min(n, uintptr(len(target)))])
		e = abi.Errno(fe)
	}
	fsPut(d)
	if e == 0 && mm.CopyOut(bp, target[:c]) != 0 {
		return 0, abi.EFAULT
	}
	return uintptr(c), e
}

func sysTruncate(p uintptr, size int64) abi.Errno {
	var pb userPath
	path, e := mm.UserPath(p, &pb)
	if e != 0 {
		return e
	}
	return abi.Errno(vfs.Truncate(fs.AtCWD, path, size))
}

func sysGetcwd(p, n uintptr) (uintptr, abi.Errno) {
	if !userRange(p, n, true) {
		return 0, abi.EFAULT
	}
	var b userPath
	c, fe := vfs.Getcwd(b[:min(n, uintptr(len(b)))])
	if fe == 0 && mm.CopyOut(p, b[:c]) != 0 {
		return 0, abi.EFAULT
	}
	return uintptr(c), abi.Errno(fe)
}

func sysChdir(p uintptr) abi.Errno {
	var pb userPath
	path, e := mm.UserPath(p, &pb)
	if e != 0 {
		return e
	}
	return abi.Errno(vfs.Chdir(fs.AtCWD, path))
}

// sysFchmodat is fchmodat, and fchmodat2 with its flags
// (AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH).
func sysFchmodat(dirfd int, p uintptr, mode uint32, flags int) abi.Errno {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return abi.EINVAL
	}
	return atPath(dirfd, p, func(d int, path []byte) fs.Errno {
		if len(path) == 0 && flags&unix.AT_EMPTY_PATH != 0 {
			if d == fs.AtCWD {
				return vfs.Chmod(fs.AtCWD, dotPath[:], mode, 0)
			}
			return vfs.Fchmod(d, mode)
		}
		return vfs.Chmod(d, path, mode, flags&^unix.AT_EMPTY_PATH)
	})
}

var dotPath = [...]byte{'.'}

// sysFchownat is chown, lchown and fchownat (flags: AT_SYMLINK_NOFOLLOW,
// AT_EMPTY_PATH). Owners are kept, never enforced (see package fs).
func sysFchownat(dirfd int, p uintptr, uid, gid int, flags int) abi.Errno {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return abi.EINVAL
	}
	return atPath(dirfd, p, func(d int, path []byte) fs.Errno {
		if len(path) == 0 && flags&unix.AT_EMPTY_PATH != 0 {
			if d == fs.AtCWD {
				return vfs.Chown(fs.AtCWD, dotPath[:], uid, gid, 0)
			}
			return vfs.Fchown(d, uid, gid)
		}
		return vfs.Chown(d, path, uid, gid, flags&^unix.AT_EMPTY_PATH)
	})
}

// sysUtimensat sets the access and modification times of a path (times:
// two timespecs, 0 for now; UTIME_NOW and UTIME_OMIT as Linux). A NULL
// path (futimens) is not supported: EINVAL.
func sysUtimensat(dirfd int, p, times uintptr, flags int) abi.Errno {
	if p == 0 || flags&^unix.AT_SYMLINK_NOFOLLOW != 0 {
		return abi.EINVAL
	}
	var t [2]int64
	for i := range t {
		t[i] = fs.UtimeNow
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
			t[i] = fs.UtimeOmit
		case ts.nsec < 0 || ts.nsec >= 1e9:
			return abi.EINVAL
		default:
			t[i] = ts.sec*1e9 + ts.nsec
		}
	}
	return atPath(dirfd, p, func(d int, path []byte) fs.Errno { return vfs.Utimes(d, path, t[0], t[1], flags) })
}

// atPath runs op on a *at call's directory and path, holding the
// directory's reference while it runs. op does not escape: the closures
// the handlers pass live on their stacks.
func atPath(dirfd int, p uintptr, op func(d int, path []byte) fs.Errno) abi.Errno {
	var pb userPath
	d, path, e := pathArgs(dirfd, p, &pb)
	if e == 0 {
		e = abi.Errno(op(d, noEscape(path)))
	}
	fsPut(d)
	return e
}
