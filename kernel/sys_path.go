package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"yolk/drivers/virtio9p"
	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/sched"
)

func sysOpenat(dirfd int, p uintptr, flags int, mode uint32) (uintptr, abi.Errno) {
	var pb userPath
	var lb shareTarget
	r, path, on, e := sharePathArgs(dirfd, p, &pb)
	if !on && flags&unix.O_NOFOLLOW == 0 && flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL {
		r, on, e = shareFollow(dirfd, path, &lb)
	}
	if on {
		if e == 0 {
			var fd uintptr
			fd, e = shareOpen(&r, flags, mode)
			shareDone(&r)
			if e == 0 {
				shareDirRemember(int(fd), dirfd, path)
			}
			return fd, e
		}
		return 0, e
	}
	d, path, e := pathArgs(dirfd, p, &pb)
	if e != 0 {
		return 0, e
	}
	h, fe := vfs.Open(d, path, flags&^unix.O_CLOEXEC, mode)
	fsPut(d)
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

func sysNewfstatat(dirfd int, p, sp uintptr, flags int) abi.Errno {
	var pb userPath
	path, e := mm.UserPath(p, &pb)
	if e != 0 {
		return e
	}
	if len(path) == 0 && flags&unix.AT_EMPTY_PATH != 0 {
		if int32(dirfd) != unix.AT_FDCWD {
			return sysFstat(dirfd, sp)
		}
		path = dotPath[:] // the working directory itself
	}
	var lb shareTarget
	r, on, e := shareAt(dirfd, path)
	if !on && flags&unix.AT_SYMLINK_NOFOLLOW == 0 {
		r, on, e = shareFollow(dirfd, path, &lb)
	}
	if on {
		if e == 0 && !mm.UserW(sp, statSize) {
			e = abi.EFAULT
		}
		var st unix.Stat_t
		if e == 0 {
			e = sharePathStat(&r, &st, flags&unix.AT_SYMLINK_NOFOLLOW == 0)
		}
		shareDone(&r)
		if e == 0 {
			e = mm.Put(sp, st)
		}
		return e
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

// sysStatfs is statfs: the figures of the file system path is on (it
// follows a last symbolic link, as Linux's user_statfs).
func sysStatfs(p, sp uintptr) abi.Errno {
	var pb userPath
	path, e := mm.UserPath(p, &pb)
	if e != 0 {
		return e
	}
	var lb shareTarget
	var st unix.Statfs_t
	r, on, e := shareAt(unix.AT_FDCWD, path)
	if !on {
		r, on, e = shareFollow(unix.AT_FDCWD, path, &lb)
	}
	switch {
	case on && e == 0:
		e = sharePathStatfs(&r, &st)
		shareDone(&r)
	case e == 0:
		e = abi.Errno(vfs.StatfsPath(fs.AtCWD, path, &st))
	}
	if e != 0 {
		return e
	}
	return mm.Put(sp, st)
}

func sysMkdirat(dirfd int, p uintptr, mode uint32) abi.Errno {
	var pb userPath
	if r, _, on, e := sharePathArgs(dirfd, p, &pb); on {
		if e == 0 {
			e = shareParentOp(&r, func(c *virtio9p.Client[shareEnv], dir virtio9p.Fid, name []byte) virtio9p.Errno {
				return c.Mkdir(dir, name, mode&^atomic.LoadUint32(&shareUmask)&0o7777)
			})
			if e == abi.Errno(unix.EBUSY) {
				e = abi.Errno(unix.EEXIST)
			}
		}
		shareDone(&r)
		return e
	}
	return atPath(dirfd, p, func(d int, path []byte) fs.Errno { return vfs.Mkdir(d, path, mode) })
}

func sysUnlinkat(dirfd int, p uintptr, flags int) abi.Errno {
	var pb userPath
	if r, path, on, e := sharePathArgs(dirfd, p, &pb); on {
		if e == 0 && flags&^unix.AT_REMOVEDIR != 0 {
			e = abi.EINVAL
		}
		if _, name := splitName(path); e == 0 && flags&unix.AT_REMOVEDIR == 0 && len(name) < len(path) && path[len(path)-1] == '/' {
			e = abi.Errno(unix.ENOTDIR) // unlink("file/"), as Linux: EISDIR for a directory comes from the host
		}
		if e == 0 {
			e = shareParentOp(&r, func(c *virtio9p.Client[shareEnv], dir virtio9p.Fid, name []byte) virtio9p.Errno {
				return c.Unlinkat(dir, name, uint32(flags&unix.AT_REMOVEDIR))
			})
			if e == abi.Errno(unix.EBUSY) && flags&unix.AT_REMOVEDIR != 0 {
				e = abi.EINVAL // rmdir(".")
			}
		}
		shareDone(&r)
		return e
	}
	return atPath(dirfd, p, func(d int, path []byte) fs.Errno { return vfs.Unlink(d, path, flags) })
}

func sysRenameat2(odirfd int, op uintptr, ndirfd int, np uintptr, flags int) abi.Errno {
	var pb userPath
	if nshares > 0 {
		var nb userPath
		opath, e1 := mm.UserPath(op, &pb)
		npath, e2 := mm.UserPath(np, &nb)
		if e1 == 0 && e2 == 0 {
			if o, n, on, e := shareTwo(odirfd, noEscape(opath), ndirfd, noEscape(npath)); on {
				if e == 0 {
					e = shareRename(&o, &n, flags)
					shareDone(&o)
					shareDone(&n)
				}
				return e
			}
		}
	}
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
	var nb userPath
	if npath, e2 := mm.UserPath(np, &nb); nshares > 0 && e2 == 0 && len(opath) > 0 {
		if o, n, on, e := shareTwo(odirfd, noEscape(opath), ndirfd, noEscape(npath)); on {
			if e == 0 {
				e = shareLink(&o, &n)
				shareDone(&o)
				shareDone(&n)
			}
			return e
		}
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
	var pb userPath
	if r, _, on, e := sharePathArgs(dirfd, p, &pb); on {
		shareDone(&r)
		if e == 0 {
			e = abi.EPERM // not done: device nodes, FIFOs and sockets on a share
		}
		return e
	}
	return atPath(dirfd, p, func(d int, path []byte) fs.Errno { return vfs.Mknod(d, path, mode, dev) })
}

func sysSymlinkat(tp uintptr, dirfd int, p uintptr) abi.Errno {
	var pb userPath
	tb, e := mm.UserPath(tp, &pb)
	if e != 0 {
		return e
	}
	target := noEscape(tb) // the share's func value would move pb to the heap
	var sb userPath
	if r, _, on, e := sharePathArgs(dirfd, p, &sb); on {
		if e == 0 {
			e = shareParentOp(&r, func(c *virtio9p.Client[shareEnv], dir virtio9p.Fid, name []byte) virtio9p.Errno {
				return c.Symlink(dir, name, target)
			})
			if e == abi.Errno(unix.EBUSY) {
				e = abi.Errno(unix.EEXIST)
			}
		}
		shareDone(&r)
		return e
	}
	return atPath(dirfd, p, func(d int, path []byte) fs.Errno { return vfs.Symlink(target, d, path) })
}

func sysReadlinkat(dirfd int, p, bp, n uintptr) (uintptr, abi.Errno) {
	if int(n) <= 0 {
		return 0, abi.EINVAL
	}
	var pb, target userPath
	if r, _, on, e := sharePathArgs(dirfd, p, &pb); on {
		var c uintptr
		if e == 0 {
			c, e = shareReadlink(&r, target[:min(n, uintptr(len(target)))])
		}
		shareDone(&r)
		if e == 0 && mm.CopyOut(bp, target[:c]) != 0 {
			return 0, abi.EFAULT
		}
		return c, e
	}
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
	if r, on, e := shareAt(unix.AT_FDCWD, path); on {
		if e == 0 && size < 0 {
			e = abi.EINVAL
		}
		if e == 0 {
			e = shareSetattr(&r, -1, &virtio9p.SetAttr{Valid: virtio9p.SetSize, Size: uint64(size)}, true)
		}
		shareDone(&r)
		return e
	}
	e = abi.Errno(vfs.Truncate(fs.AtCWD, path, size))
	fileCut()
	return e
}

func sysGetcwd(p, n uintptr) (uintptr, abi.Errno) {
	if !userRange(p, n, true) {
		return 0, abi.EFAULT
	}
	var b userPath
	buf := b[:min(n, uintptr(len(b)))]
	c, fe, on := shareGetcwd(buf)
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

func sysChdir(p uintptr) abi.Errno {
	var pb userPath
	path, e := mm.UserPath(p, &pb)
	if e != 0 {
		return e
	}
	if nshares > 0 {
		if _, on, _ := shareAt(unix.AT_FDCWD, path); on {
			return shareChdir(unix.AT_FDCWD, path)
		}
		if shareCwd.on {
			// Back to the in-memory file system: a relative path is
			// from the share's directory, whose path vfs resolves.
			if path[0] != '/' {
				return abi.Errno(unix.EXDEV) // not done (see share.go)
			}
			e := abi.Errno(vfs.Chdir(fs.AtCWD, path))
			if e == 0 {
				shareChdir(unix.AT_FDCWD, path) // leaves the share
			}
			return e
		}
	}
	return abi.Errno(vfs.Chdir(fs.AtCWD, path))
}

// sysFchmodat is fchmodat, and fchmodat2 with its flags
// (AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH).
func sysFchmodat(dirfd int, p uintptr, mode uint32, flags int) abi.Errno {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return abi.EINVAL
	}
	if e, on := shareSetPath(dirfd, p, flags, &virtio9p.SetAttr{Valid: virtio9p.SetMode, Mode: mode & 0o7777}); on {
		return e
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
	if e, on := shareSetPath(dirfd, p, flags, shareOwner(uid, gid)); on {
		return e
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
	a := virtio9p.SetAttr{}
	for i, v := range t {
		if v == fs.UtimeOmit {
			continue
		}
		sec, nsec, valid := &a.Atime, &a.AtimeNs, uint32(virtio9p.SetAtime)
		if i == 1 {
			sec, nsec, valid = &a.Mtime, &a.MtimeNs, virtio9p.SetMtime
		}
		a.Valid |= valid
		if v != fs.UtimeNow {
			a.Valid |= valid << 3 // SetAtimeSet, SetMtimeSet
			*sec, *nsec = uint64(v/1e9), uint64(v%1e9)
		}
	}
	if e, on := shareSetPath(dirfd, p, flags, &a); on {
		return e
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

// shareSetPath is a path call setting attributes a (chmod, chown,
// utimensat) when the path is on a share: an empty path with
// AT_EMPTY_PATH is the open file dirfd itself.
func shareSetPath(dirfd int, p uintptr, flags int, a *virtio9p.SetAttr) (abi.Errno, bool) {
	if nshares == 0 {
		return 0, false
	}
	var pb userPath
	path, e := mm.UserPath(p, &pb)
	if e != 0 {
		return 0, false
	}
	if len(path) == 0 && flags&unix.AT_EMPTY_PATH != 0 {
		if int32(dirfd) == unix.AT_FDCWD {
			path = dotPath[:] // the working directory itself
		}
	}
	if len(path) == 0 && flags&unix.AT_EMPTY_PATH != 0 {
		h := shareGet(dirfd)
		if h < 0 {
			return 0, false
		}
		e = shareSetattr(nil, h, a, false)
		sharePut(h)
		return e, true
	}
	r, on, e := shareAt(dirfd, path)
	if !on {
		return 0, false
	}
	if e == 0 {
		e = shareSetattr(&r, -1, a, flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	}
	shareDone(&r)
	return e, true
}
