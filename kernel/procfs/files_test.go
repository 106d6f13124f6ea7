package procfs_test

import (
	"encoding/binary"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/procfs"
)

// filler records the parts a walk or read asks for; the fake snapshot
// has them all already. If restore is set, the first fill brings back
// the threads a test took away (a fresh snapshot has them).
type filler struct {
	parts   procfs.Part
	restore int32
}

func (f *filler) Fill(s *procfs.Snapshot, parts procfs.Part) {
	f.parts |= parts
	if f.restore != 0 {
		s.NumThreads, f.restore = f.restore, 0
	}
}

func TestSplit(t *testing.T) {
	for _, c := range []struct{ path, name, rest string }{
		{"", "", ""}, {"/", "", ""}, {"//a//b", "a", "//b"}, {"././/./a/b", "a", "/b"}, {"..", "..", ""}, {".x/y", ".x", "/y"},
	} {
		name, rest := procfs.Split([]byte(c.path))
		if string(name) != c.name || string(rest) != c.rest {
			t.Errorf("Split(%q) = %q, %q; want %q, %q", c.path, name, rest, c.name, c.rest)
		}
	}
}

func TestWalk(t *testing.T) {
	s := fake()
	for _, c := range []struct {
		from   procfs.Node
		path   string
		follow bool
		node   string // WalkIn: the node's path (procfs.Path)
		out    int
		left   string // WalkUp, WalkLink: what is left
		e      syscall.Errno
	}{
		{procfs.ProcRoot, "", true, "/proc", procfs.WalkIn, "", 0},
		{procfs.ProcRoot, "1/stat", true, "/proc/1/stat", procfs.WalkIn, "", 0},
		{procfs.ProcRoot, "self/stat", false, "/proc/1/stat", procfs.WalkIn, "", 0},
		{procfs.ProcRoot, "self", false, "/proc/self", procfs.WalkIn, "", 0},
		{procfs.ProcRoot, "self", true, "/proc/1", procfs.WalkIn, "", 0},
		{procfs.ProcRoot, "self/", false, "/proc/self", procfs.WalkIn, "", 0},
		{procfs.ProcRoot, "thread-self/fd/8", false, "/proc/1/task/2/fd/8", procfs.WalkIn, "", 0},
		{procfs.ProcRoot, "self/net/../stat", true, "/proc/1/stat", procfs.WalkIn, "", 0},
		{procfs.ProcRoot, "1/task/3/../../..", true, "/proc", procfs.WalkIn, "", 0},
		{procfs.ProcRoot, "1/task/3/../../../..", true, "", procfs.WalkUp, "", 0},
		{procfs.ProcRoot, "../tmp//x", true, "", procfs.WalkUp, "tmp//x", 0},
		{procfs.SysRoot, "fs/cgroup/../../../etc", true, "", procfs.WalkUp, "etc", 0},
		{procfs.ProcRoot, "self/exe", true, "", procfs.WalkLink, "/hello", 0},
		{procfs.ProcRoot, "self/cwd/a/b", false, "", procfs.WalkLink, "/tmp/a/b", 0},
		{procfs.ProcRoot, "self/fd/8", true, "", procfs.WalkLink, "/tmp/a file", 0},
		{procfs.ProcRoot, "self/fd/8", false, "/proc/1/fd/8", procfs.WalkIn, "", 0},
		{procfs.ProcRoot, "nope", true, "", 0, "", syscall.ENOENT},
		{procfs.ProcRoot, "1/fd/9", true, "", 0, "", syscall.ENOENT},
		{procfs.ProcRoot, "meminfo/x", true, "", 0, "", syscall.ENOTDIR},
	} {
		var f filler
		b := make([]byte, 64)
		n, k, out, e := procfs.Walk(&f, s, c.from, []byte(c.path), c.follow, b)
		what := c.path
		if e != abi.Errno(c.e) || out != c.out {
			t.Errorf("%q: out %d, errno %v; want %d, %v", what, out, syscall.Errno(e), c.out, c.e)
			continue
		}
		if e != 0 {
			continue
		}
		if out == procfs.WalkIn {
			p := make([]byte, 256)
			if got := string(p[:procfs.Path(n, s, p)]); got != c.node {
				t.Errorf("%q: at %q, want %q", what, got, c.node)
			}
		} else if got := string(b[:k]); got != c.left {
			t.Errorf("%q: left %q, want %q", what, got, c.left)
		}
	}

	// Each directory's entries are filled before they are looked at.
	var f filler
	if _, _, _, e := procfs.Walk(&f, s, procfs.ProcRoot, []byte("self/fd/8"), false, make([]byte, 64)); e != 0 || f.parts&procfs.PartFDs == 0 || f.parts&procfs.PartProc == 0 {
		t.Errorf("fills %b, errno %v", f.parts, e)
	}

	// A link's target that does not fit what is left: ENAMETOOLONG.
	if _, _, _, e := procfs.Walk(&f, s, procfs.ProcRoot, []byte("self/cwd/"+strings.Repeat("x", 100)), true, make([]byte, 64)); e != abi.ENAMETOOLONG {
		t.Errorf("long: %v", syscall.Errno(e))
	}

	// exe without a path: ENOENT, as its readlink.
	s.Proc.Exe = procfs.Str{}
	if _, _, _, e := procfs.Walk(&f, s, procfs.ProcRoot, []byte("self/exe"), true, make([]byte, 64)); e != abi.ENOENT {
		t.Errorf("exe without a path: %v", syscall.Errno(e))
	}

	s = fake()
	b := make([]byte, 64)
	path := []byte("thread-self/fdinfo/../fd/../../../self/net/netstat")
	if a := testing.AllocsPerRun(10, func() {
		procfs.Walk(&f, s, procfs.ProcRoot, path, true, b)
	}); a != 0 {
		t.Errorf("Walk: %v allocations", a)
	}
}

// dirents parses getdents64 records.
func dirents(t *testing.T, b []byte) (names []string, types []byte, offs []uint64) {
	t.Helper()
	for len(b) > 0 {
		reclen := int(binary.LittleEndian.Uint16(b[16:]))
		if reclen < 20 || reclen%8 != 0 || reclen > len(b) {
			t.Fatalf("reclen %d of %d", reclen, len(b))
		}
		name := b[19:reclen]
		name = name[:strings.IndexByte(string(name), 0)]
		names, types, offs = append(names, string(name)), append(types, b[18]), append(offs, binary.LittleEndian.Uint64(b[8:]))
		b = b[reclen:]
	}
	return
}

func TestGetdents(t *testing.T) {
	s := fake()
	dir := at(t, s, procfs.ProcRoot, "1")
	var want []string
	name := make([]byte, 256)
	for i := 0; ; i++ {
		_, n, ok := procfs.ReadDir(dir, s, i, name)
		if !ok {
			break
		}
		want = append(want, string(name[:n]))
	}

	// In pieces of a small buffer, each call going on where the last ended.
	var got []string
	buf := make([]byte, 100)
	pos := int64(0)
	for {
		n, next, e := procfs.Getdents(dir, s, pos, buf)
		if e != 0 {
			t.Fatalf("at %d: %v", pos, syscall.Errno(e))
		}
		if n == 0 {
			break
		}
		names, types, offs := dirents(t, buf[:n])
		for i, nm := range names {
			if offs[i] != uint64(pos)+uint64(i)+1 {
				t.Errorf("%s: d_off %d", nm, offs[i])
			}
			wantType := byte(unix.DT_REG)
			switch nm {
			case "task", "fd", "fdinfo", "net":
				wantType = unix.DT_DIR
			case "exe", "cwd", "root":
				wantType = unix.DT_LNK
			}
			if types[i] != wantType {
				t.Errorf("%s: d_type %d, want %d", nm, types[i], wantType)
			}
		}
		got = append(got, names...)
		if next != pos+int64(len(names)) {
			t.Fatalf("next %d after %d entries from %d", next, len(names), pos)
		}
		pos = next
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("getdents %q, ReadDir %q", got, want)
	}

	// Not even one record fits: EINVAL, and the position stays.
	if n, next, e := procfs.Getdents(dir, s, 2, make([]byte, 20)); n != 0 || next != 2 || e != abi.EINVAL {
		t.Errorf("tiny buffer: %d, %d, %v", n, next, syscall.Errno(e))
	}
	if a := testing.AllocsPerRun(10, func() { procfs.Getdents(dir, s, 0, buf) }); a != 0 {
		t.Errorf("Getdents: %v allocations", a)
	}
}

func TestRead(t *testing.T) {
	s := fake()
	whole := render(t, s, procfs.ProcRoot, "1/status")
	n := at(t, s, procfs.ProcRoot, "1/status")
	out := make([]byte, 64<<10)
	var f filler
	for _, off := range []int64{0, 1, 100, int64(len(whole)) - 1, int64(len(whole)), int64(len(whole)) + 5} {
		text, e := procfs.Read(&f, s, n, out, off)
		want := ""
		if off < int64(len(whole)) {
			want = whole[off:]
		}
		if e != 0 || string(text) != want {
			t.Errorf("off %d: %v, %d bytes, want %d", off, syscall.Errno(e), len(text), len(want))
		}
	}
	if f.parts != procfs.Needs(n) {
		t.Errorf("filled %b, needs %b", f.parts, procfs.Needs(n))
	}

	// A thread not in the snapshot: there after a fill, or gone (ESRCH).
	th3 := at(t, s, procfs.ProcRoot, "1/task/3/stat")
	s.NumThreads--
	f = filler{restore: s.NumThreads + 1}
	if text, e := procfs.Read(&f, s, th3, out, 0); e != 0 || len(text) == 0 {
		t.Errorf("thread filled: %v", syscall.Errno(e))
	}
	s.NumThreads--
	if _, e := procfs.Read(&f, s, th3, out, 0); e != abi.Errno(syscall.ESRCH) {
		t.Errorf("gone thread: %v", syscall.Errno(e))
	}
	s = fake()
	// A directory is no file.
	if _, e := procfs.Read(&f, s, at(t, s, procfs.ProcRoot, "1/task"), out, 0); e != abi.ENOENT {
		t.Errorf("a directory: %v", syscall.Errno(e))
	}
	if a := testing.AllocsPerRun(10, func() { procfs.Read(&f, s, n, out, 10) }); a != 0 {
		t.Errorf("Read: %v allocations", a)
	}
}

func TestOpenStatSeek(t *testing.T) {
	for _, c := range []struct {
		mode  uint32
		flags int
		e     syscall.Errno
	}{
		{procfs.ModeReg | 0o444, unix.O_RDONLY, 0},
		{procfs.ModeReg | 0o444, unix.O_RDWR, 0},
		{procfs.ModeReg | 0o444, unix.O_CREAT, 0},
		{procfs.ModeReg | 0o444, unix.O_CREAT | unix.O_EXCL, syscall.EEXIST},
		{procfs.ModeReg | 0o444, unix.O_DIRECTORY, syscall.ENOTDIR},
		{procfs.ModeLink | 0o777, unix.O_NOFOLLOW, syscall.ELOOP},
		{procfs.ModeDir | 0o555, unix.O_DIRECTORY, 0},
		{procfs.ModeDir | 0o555, unix.O_WRONLY, syscall.EISDIR},
	} {
		if e := procfs.Open(c.mode, c.flags); e != abi.Errno(c.e) {
			t.Errorf("open %o with %#x: %v, want %v", c.mode, c.flags, syscall.Errno(e), c.e)
		}
	}
	for _, c := range []struct {
		mode  uint32
		flags int
		write bool
		e     syscall.Errno
	}{
		{procfs.ModeReg, unix.O_RDONLY, false, 0},
		{procfs.ModeReg, unix.O_RDWR, true, syscall.EINVAL},
		{procfs.ModeReg, unix.O_WRONLY, false, syscall.EBADF},
		{procfs.ModeDir, unix.O_RDONLY, false, syscall.EISDIR},
	} {
		if e := procfs.ReadCheck(c.mode, c.flags, c.write); e != abi.Errno(c.e) {
			t.Errorf("read %o with %#x (write %v): %v, want %v", c.mode, c.flags, c.write, syscall.Errno(e), c.e)
		}
	}

	s := fake()
	var st unix.Stat_t
	dir := at(t, s, procfs.ProcRoot, "1/fd")
	procfs.Stat(dir, procfs.Mode(dir, s), 0x17, 1_700_000_000_123_456_789, &st)
	if st.Dev != 0x17 || st.Ino != procfs.Ino(dir) || st.Nlink != 2 || st.Mode != procfs.ModeDir|0o500 || st.Blksize != 1024 ||
		st.Mtim.Sec != 1_700_000_000 || st.Ctim.Nsec != 123_456_789 || st.Size != 0 {
		t.Errorf("stat fd/: %+v", st)
	}
	// statfs: each node on its file system, as Linux mounts them
	// (cgroup2 at /sys/fs/cgroup).
	for _, c := range []struct {
		root procfs.Node
		path string
		typ  int64
	}{
		{procfs.SysRoot, "", 0x62656572}, {procfs.SysRoot, "devices/system/cpu/online", 0x62656572},
		{procfs.SysRoot, "fs/cgroup", 0x63677270}, {procfs.SysRoot, "fs/cgroup/cpu.max", 0x63677270},
		{procfs.ProcRoot, "", 0x9fa0}, {procfs.ProcRoot, "1/fd", 0x9fa0},
	} {
		n := c.root
		if c.path != "" {
			n = at(t, s, c.root, c.path)
		}
		var sfs unix.Statfs_t
		procfs.Statfs(n, &sfs)
		if sfs.Type != c.typ || sfs.Bsize != 4096 || sfs.Namelen != 255 || sfs.Flags&unix.ST_NOEXEC == 0 {
			t.Errorf("statfs %s: %+v, want type %#x", c.path, sfs, c.typ)
		}
	}

	for _, c := range []struct {
		cur, off int64
		whence   int
		want     int64
		e        syscall.Errno
	}{
		{10, 5, unix.SEEK_SET, 5, 0}, {10, 5, unix.SEEK_CUR, 15, 0}, {10, -11, unix.SEEK_CUR, 0, syscall.EINVAL},
		{10, -1, unix.SEEK_SET, 0, syscall.EINVAL}, {10, 0, unix.SEEK_END, 0, syscall.EINVAL},
	} {
		if got, e := procfs.Seek(c.cur, c.off, c.whence); got != c.want || e != abi.Errno(c.e) {
			t.Errorf("seek %d %d from %d: %d, %v", c.off, c.whence, c.cur, got, syscall.Errno(e))
		}
	}

	// An open file of /proc as fd/ shows it.
	var d procfs.FD
	n := at(t, s, procfs.ProcRoot, "1/task/2/stat")
	procfs.NodeFD(s, &d, n, 3, 7)
	if d.Kind != procfs.FDFile || d.MntID != 3 || d.Pos != 7 || d.Ino != procfs.Ino(n) || string(s.Bytes(d.Path)) != "/proc/1/task/2/stat" {
		t.Errorf("NodeFD: %+v %q", d, s.Bytes(d.Path))
	}
}
