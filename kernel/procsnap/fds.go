package procsnap

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"yolk/kernel/fs"
	"yolk/kernel/procfs"
)

// /proc/self/fd and fdinfo: each descriptor as its kind describes it
// (Env.FD), and the paths of the in-memory tree's open files, found by
// walking the tree, as kernel/fs keeps no path for an open file.

var slash = [...]byte{'/'}

// fillFDs fills the descriptors.
func (st *State[E]) fillFDs(s *procfs.Snapshot) {
	st.nwant = 0
	for fd := 0; fd < st.env.Files(); fd++ {
		if !st.env.FD(fd, s, &st.fd) {
			continue
		}
		if !s.AddFD(st.fd) {
			break
		}
	}
	st.fsNames(s)
	for i := 0; i < int(s.NumFDs); i++ {
		d := &s.FDs[i]
		if d.Kind == procfs.FDFile && d.MntID == MntRoot && d.Path.Len == 0 {
			d.Path = st.pathOf(s, d.Ino)
			if p := s.Bytes(d.Path); len(p) > 5 && string(p[:5]) == "/dev/" {
				d.MntID = MntDev
			}
		}
	}
}

// SharePath is the mount ID and path /proc shows of a file on the host
// share of device dev: dir, the guest path kept for a directory, else
// the share's guest path (the share keeps no path of a file).
func (st *State[E]) SharePath(s *procfs.Snapshot, dev int, dir []byte) (int32, procfs.Str) {
	m, point := 0, []byte(nil)
	for i := 0; ; i++ {
		d, p, _, ok := st.env.Share(i)
		if !ok {
			break
		}
		if i == 0 || d == dev {
			m, point = i, p
		}
	}
	if len(dir) > 0 {
		return int32(MntShare + m), s.Put(dir)
	}
	return int32(MntShare + m), s.Put(point)
}

// WantIno asks the fill for a path of the in-memory file system's inode
// ino (an open file's: Env.FD).
func (st *State[E]) WantIno(ino uint64) {
	for i := 0; i < st.nwant; i++ {
		if st.want[i].ino == ino {
			return
		}
	}
	if st.nwant < len(st.want) {
		st.want[st.nwant] = want{ino: ino}
		st.nwant++
	}
}

// pathOf is the path fsNames found for inode ino, "/" if none.
func (st *State[E]) pathOf(s *procfs.Snapshot, ino uint64) procfs.Str {
	for i := 0; i < st.nwant; i++ {
		if w := &st.want[i]; w.ino == ino && w.found {
			return w.path
		}
	}
	return s.PutString("/")
}

// fsNames finds a path of each inode WantIno asked for, by walking the
// in-memory file system from its root with the calls a program would
// make (open, getdents64), each under fs's lock: fs keeps no path of an
// open file, only each inode's first name and parent, out of the
// kernel's reach. The walk deepens a level at a time (files sit near the
// root: /dev/null, /tmp/x), and stops when all are found.
func (st *State[E]) fsNames(s *procfs.Snapshot) {
	if st.nwant == 0 {
		return
	}
	if ino, ok := st.env.FSRootIno(); ok {
		st.found(s, ino, slash[:])
	}
	for lim := 1; lim <= maxDepth && st.missing(); lim++ {
		if !st.walkFS(s, lim) {
			break
		}
	}
}

func (st *State[E]) missing() bool {
	for i := 0; i < st.nwant; i++ {
		if !st.want[i].found {
			return true
		}
	}
	return false
}

func (st *State[E]) found(s *procfs.Snapshot, ino uint64, path []byte) {
	for i := 0; i < st.nwant; i++ {
		if w := &st.want[i]; w.ino == ino && !w.found {
			w.path, w.found = s.Put(path), true
		}
	}
}

// walkFS looks at the entries lim levels below the root (the root's own
// are level 1) and reports whether there are directories deeper.
func (st *State[E]) walkFS(s *procfs.Snapshot, lim int) (deeper bool) {
	type level struct{ h, n, pos, plen int }
	var lv [maxDepth]level
	h, e := st.env.FSOpen(fs.AtCWD, slash[:], unix.O_RDONLY|unix.O_DIRECTORY)
	if e != 0 {
		return false
	}
	lv[0] = level{h: h}
	for d := 0; d >= 0; {
		l := &lv[d]
		if l.pos >= l.n {
			n := st.env.FSGetdents(l.h, st.dents[d][:])
			if n <= 0 {
				st.env.FSClose(l.h)
				d--
				continue
			}
			l.n, l.pos = n, 0
		}
		// struct linux_dirent64: d_ino, d_off, d_reclen, d_type, d_name.
		b := st.dents[d][l.pos:l.n]
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
		if np > len(st.path) {
			continue
		}
		st.path[l.plen] = '/'
		copy(st.path[l.plen+1:], name)
		if d+1 == lim {
			st.found(s, ino, st.path[:np])
			if !st.missing() {
				for ; d >= 0; d-- {
					st.env.FSClose(lv[d].h)
				}
				return false
			}
		}
		if typ == unix.DT_DIR {
			if d+1 < lim && d+1 < len(lv) {
				if c, e := st.env.FSOpen(l.h, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW); e == 0 {
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
