package kernel

import (
	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/kernel/procfs"

	"golang.org/x/sys/unix"
)

// abi.SysProcRender, for test images: a /proc or /sys node looked up in
// kernel/procfs's tree, its snapshot filled, and its contents, link
// target or entries copied to the program.

// sysProcRender is abi.SysProcRender: op on the node path names in
// kernel/procfs's tree, with the snapshot filled for it, into the
// program's buffer buf (n bytes); it returns the whole answer's length
// (more than n: only n bytes were copied).
func sysProcRender(path, lenOp, buf, n uintptr) (uintptr, abi.Errno) {
	plen, op := uintptr(uint32(lenOp)), int(lenOp>>32)
	if plen > fs.PathMax {
		return 0, abi.ENAMETOOLONG
	}
	ps := &procState
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.arg[:plen]
	if e := mm.CopyIn(p, path); e != 0 {
		return 0, e
	}
	s := &ps.s
	procBegin(s)
	node, e := procLookup(s, p, op != abi.ProcReadlink)
	if e != 0 {
		return 0, e
	}
	procFill(s, procfs.Needs(node))
	out := ps.out[:]
	k, ok := 0, true
	typ := procfs.Mode(node, s) &^ 0o7777
	switch op {
	case abi.ProcRender:
		if typ == procfs.ModeDir {
			return 0, abi.Errno(unix.EISDIR)
		}
		k, ok = procfs.Render(node, s, out)
	case abi.ProcReadlink:
		if typ != procfs.ModeLink {
			return 0, abi.EINVAL
		}
		k, ok = procfs.Readlink(node, s, out) // false: exe without a path
	case abi.ProcReadDir:
		if typ != procfs.ModeDir {
			return 0, abi.ENOTDIR
		}
		k = procList(s, node, out)
	default:
		return 0, abi.EINVAL
	}
	switch {
	case !ok:
		return 0, abi.ENOENT
	case k > len(out):
		return 0, abi.EOVERFLOW
	}
	return uintptr(k), mm.CopyOut(buf, out[:min(uintptr(k), n)])
}

// procList writes directory dir's entries into out, each a type byte
// ('d', 'f' or 'l'), the name and a NUL; it returns their length, more
// than len(out) if they do not fit.
func procList(s *procfs.Snapshot, dir procfs.Node, out []byte) int {
	var name [256]byte
	k := 0
	for i := 0; ; i++ {
		c, n, ok := procfs.ReadDir(dir, s, i, name[:])
		if !ok {
			return k
		}
		t := byte('f')
		switch procfs.Mode(c, s) &^ 0o7777 {
		case procfs.ModeDir:
			t = 'd'
		case procfs.ModeLink:
			t = 'l'
		}
		if k+n+2 <= len(out) {
			out[k] = t
			copy(out[k+1:], name[:n])
			out[k+1+n] = 0
		}
		k += n + 2
	}
}

// procLookup walks path, "/proc/..." or "/sys/...", in procfs's tree,
// filling what each directory's entries need; symbolic links inside the
// tree are followed (self, thread-self, net; the last name's only if
// follow), those leading out of it (fd/, exe, cwd, root) are EXDEV.
func procLookup(s *procfs.Snapshot, path []byte, follow bool) (procfs.Node, abi.Errno) {
	var bufs [2][256]byte // a link's target and the rest of the path, alternately
	name, rest := procSplit(path)
	var n procfs.Node
	switch string(name) {
	case "proc":
		n = procfs.ProcRoot
	case "sys":
		n = procfs.SysRoot
	default:
		return 0, abi.ENOENT
	}
	for links := 0; ; {
		name, rest = procSplit(rest)
		if len(name) == 0 {
			return n, 0
		}
		if string(name) == ".." {
			n = procfs.Parent(n)
			continue
		}
		procFill(s, procfs.Needs(n))
		if procfs.Mode(n, s)&^0o7777 != procfs.ModeDir {
			return 0, abi.ENOTDIR
		}
		c, ok := procfs.Lookup(n, name, s)
		if !ok {
			return 0, abi.ENOENT
		}
		if next, _ := procSplit(rest); procfs.Mode(c, s)&^0o7777 != procfs.ModeLink || len(next) == 0 && !follow {
			n = c
			continue
		}
		if links++; links > 8 {
			return 0, abi.Errno(unix.ELOOP)
		}
		procFill(s, procfs.Needs(c))
		b := &bufs[links%2]
		k, ok := procfs.Readlink(c, s, b[:])
		if !ok || k == 0 || b[0] == '/' || k+1+len(rest) > len(b) {
			return 0, abi.Errno(unix.EXDEV) // out of the tree (or exe without a path)
		}
		b[k] = '/'
		rest = b[:k+1+copy(b[k+1:], rest)]
		n = procfs.Parent(c)
	}
}

// procSplit splits path's first name (none: empty) from the rest,
// skipping slashes and ".".
func procSplit(path []byte) (name, rest []byte) {
	for {
		for len(path) > 0 && path[0] == '/' {
			path = path[1:]
		}
		i := 0
		for i < len(path) && path[i] != '/' {
			i++
		}
		name, path = path[:i], path[i:]
		if len(name) != 1 || name[0] != '.' {
			return name, path
		}
	}
}
