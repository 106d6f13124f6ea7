package procsnap

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
	"yolk/kernel/mm"
	"yolk/kernel/procfs"
)

// abi.SysProcRender, for test images: a /proc or /sys node looked up in
// kernel/procfs's tree (the walk the mounts use, procfs.Walk), its
// snapshot filled, and its contents, link target or entries copied to
// the program.

// Render is abi.SysProcRender: op on the node path names in
// kernel/procfs's tree, with the snapshot filled for it, into the
// program's buffer buf (n bytes); it returns the whole answer's length
// (more than n: only n bytes were copied).
func (st *State[E]) Render(path, lenOp, buf, n uintptr) (uintptr, abi.Errno) {
	plen, op := uintptr(uint32(lenOp)), int(lenOp>>32)
	if plen > fs.PathMax {
		return 0, abi.ENAMETOOLONG
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	p := st.arg[:plen]
	if e := mm.CopyIn(p, path); e != 0 {
		return 0, e
	}
	s := st.Begin()
	node, e := st.lookup(s, p, op != abi.ProcReadlink)
	if e != 0 {
		return 0, e
	}
	st.Fill(s, procfs.Needs(node))
	out := st.out[:]
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
		k = procfs.List(node, s, out)
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

// lookup walks path, "/proc/..." or "/sys/...", in procfs's tree
// (procfs.Walk); ".." at a root stays there, and links leading out of
// the tree (fd/, exe, cwd, root) are EXDEV.
func (st *State[E]) lookup(s *procfs.Snapshot, path []byte, follow bool) (procfs.Node, abi.Errno) {
	name, rest := procfs.Split(path)
	var root procfs.Node
	switch string(name) {
	case "proc":
		root = procfs.ProcRoot
	case "sys":
		root = procfs.SysRoot
	default:
		return 0, abi.ENOENT
	}
	for {
		// What is left after ".." at a root goes to the front of the
		// path's own buffer (path lies in it; fills do not use it).
		b := st.arg[:]
		n, k, out, e := procfs.Walk(st, s, root, rest, follow, b)
		switch {
		case e != 0:
			return 0, e
		case out == procfs.WalkUp:
			rest = b[:k]
		case out == procfs.WalkLink:
			return 0, abi.Errno(unix.EXDEV) // out of the tree
		default:
			return n, 0
		}
	}
}
