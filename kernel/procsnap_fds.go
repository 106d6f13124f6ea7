package kernel

import (
	"encoding/binary"
	"sync/atomic"
	"yolk/kernel/fs"
	"yolk/kernel/procfs"

	"golang.org/x/sys/unix"
)

// /proc/self/fd and fdinfo: each descriptor as its kind describes it
// (fdViews), and the paths of the in-memory tree's open files,
// found by walking the tree, as kernel/fs keeps no path for an open file.

// procFDs fills the descriptors. Each is looked at as fdGet does, under
// fileLock with a reference of the fill's own on its handle, which its
// kind's calls then use without fileLock.
func procFDs(s *procfs.Snapshot) {
	procState.nwant = 0
	for fd := 0; fd < len(files); fd++ {
		if atomic.LoadUint32(&files[fd].kind) == fileFree {
			continue // a hint: checked again under fileLock
		}
		fileLock.Lock()
		f := &files[fd]
		o := ofile{fd: fd, kind: f.kind, h: int(f.h)}
		cloexec := f.fdfl&unix.FD_CLOEXEC != 0
		refHandle(o.kind, o.h)
		fileLock.Unlock()
		if o.kind == fileFree {
			continue
		}
		d := procfs.FD{FD: int32(fd), CloExec: cloexec, Ino: 1, MntID: procMntAnon}
		d.Flags = unix.O_RDWR
		v := &fdViews[o.kind]
		if v.getfl != nil {
			fl, _ := v.getfl(o)
			d.Flags = uint32(fl)
		}
		if v.view != nil {
			v.view(o, noEscapeP(s), noEscapeP(&d))
		}
		fdPut(o)
		if !s.AddFD(d) {
			break
		}
	}
	procFSNames(s)
	for i := 0; i < int(s.NumFDs); i++ {
		d := &s.FDs[i]
		if d.Kind == procfs.FDFile && d.MntID == procMntRoot && d.Path.Len == 0 {
			d.Path = procPathOf(s, d.Ino)
			if p := s.Bytes(d.Path); len(p) > 5 && string(p[:5]) == "/dev/" {
				d.MntID = procMntDev
			}
		}
	}
}

// procSharePath is share file h's mount ID and path: the guest path kept
// for a directory (shares.DirPath), else its mount's guest path (the share
// keeps no path of a file).
func procSharePath(s *procfs.Snapshot, h int) (int32, procfs.Str) {
	dev := int(shares.File(h).Dev)
	m := 0
	for i := 0; i < shares.NumMounts(); i++ {
		if shares.Mount(i).Dev == dev {
			m = i
		}
	}
	if n := shares.DirPath(h, procState.path[:]); n > 0 {
		return int32(procMntShare + m), s.Put(procState.path[:n])
	}
	return int32(procMntShare + m), s.Put(shares.Mount(m).Path())
}

// procWantIno asks procFSNames for a path of inode ino.
func procWantIno(ino uint64) {
	ps := &procState
	for i := 0; i < ps.nwant; i++ {
		if ps.want[i].ino == ino {
			return
		}
	}
	if ps.nwant < len(ps.want) {
		ps.want[ps.nwant] = procWant{ino: ino}
		ps.nwant++
	}
}

// procPathOf is the path procFSNames found for inode ino, "/" if none.
func procPathOf(s *procfs.Snapshot, ino uint64) procfs.Str {
	for i := 0; i < procState.nwant; i++ {
		if w := &procState.want[i]; w.ino == ino && w.found {
			return w.path
		}
	}
	return s.PutString("/")
}

// procFSNames finds a path of each inode procWantIno asked for, by
// walking the in-memory file system from its root with the calls a
// program would make (open, getdents64), each under fs's lock: fs keeps
// no path of an open file, only each inode's first name and parent, out
// of the kernel's reach. The walk deepens a level at a time (files sit
// near the root: /dev/null, /tmp/x), and stops when all are found.
func procFSNames(s *procfs.Snapshot) {
	ps := &procState
	if ps.nwant == 0 {
		return
	}
	var st unix.Stat_t
	if vfs.Stat(fs.AtCWD, procSlash[:], 0, &st) == 0 {
		procFound(s, st.Ino, procSlash[:])
	}
	for lim := 1; lim <= procMaxDepth && procMissing(); lim++ {
		if !procWalkFS(s, lim) {
			break
		}
	}
}

func procMissing() bool {
	for i := 0; i < procState.nwant; i++ {
		if !procState.want[i].found {
			return true
		}
	}
	return false
}

func procFound(s *procfs.Snapshot, ino uint64, path []byte) {
	for i := 0; i < procState.nwant; i++ {
		if w := &procState.want[i]; w.ino == ino && !w.found {
			w.path, w.found = s.Put(path), true
		}
	}
}

// procWalkFS looks at the entries lim levels below the root (the root's
// own are level 1) and reports whether there are directories deeper.
func procWalkFS(s *procfs.Snapshot, lim int) (deeper bool) {
	ps := &procState
	type level struct{ h, n, pos, plen int }
	var lv [procMaxDepth]level
	h, e := vfs.Open(fs.AtCWD, procSlash[:], unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if e != 0 {
		return false
	}
	lv[0] = level{h: h}
	for d := 0; d >= 0; {
		l := &lv[d]
		if l.pos >= l.n {
			n, e := vfs.Getdents(l.h, ps.dents[d][:])
			if e != 0 || n <= 0 {
				vfs.Close(l.h)
				d--
				continue
			}
			l.n, l.pos = n, 0
		}
		// struct linux_dirent64: d_ino, d_off, d_reclen, d_type, d_name.
		b := ps.dents[d][l.pos:l.n]
		reclen := int(binary.LittleEndian.Uint16(b[16:]))
		if reclen < 20 || reclen > len(b) {
			l.pos = l.n
			continue
		}
		l.pos += reclen
		ino, typ, name := binary.LittleEndian.Uint64(b), b[18], b[19:reclen]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if len(name) == 0 || name[0] == '.' && (len(name) == 1 || len(name) == 2 && name[1] == '.') {
			continue
		}
		np := l.plen + 1 + len(name)
		if np > len(ps.path) {
			continue
		}
		ps.path[l.plen] = '/'
		copy(ps.path[l.plen+1:], name)
		if d+1 == lim {
			procFound(s, ino, ps.path[:np])
			if !procMissing() {
				for ; d >= 0; d-- {
					vfs.Close(lv[d].h)
				}
				return false
			}
		}
		if typ == unix.DT_DIR {
			if d+1 < lim && d+1 < len(lv) {
				if c, e := vfs.Open(l.h, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0); e == 0 {
					d++
					lv[d] = level{h: c, plen: np}
				}
			} else {
				deeper = true
			}
		}
	}
	return deeper
}
