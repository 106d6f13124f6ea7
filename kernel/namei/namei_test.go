package namei

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/fs"
)

// fakeEnv models the tree: an in-memory root with a share mounted at
// /mnt (mount 1, its mount point in directory 7); the share's "abs" is a
// link to /tmp/x, its "loop" a link to /mnt/loop.
type fakeEnv struct{}

var (
	visits []string
	dones  int
)

func (fakeEnv) Start(dirfd int, path []byte) (Place, abi.Errno) { return At(fs.AtCWD, path), 0 }
func (fakeEnv) Mem(op int, pl *Place, a *Args) (uintptr, abi.Errno) {
	p := string(pl.Path)
	if strings.HasPrefix(p, "/mnt") && pl.D == fs.AtCWD {
		return 0, abi.Errno(fs.ECross)
	}
	visits = append(visits, "mem:"+itoa(pl.D)+":"+p)
	return 0, 0
}
func (fakeEnv) Share(op int, pl *Place, a *Args) (uintptr, abi.Errno) {
	visits = append(visits, "share:"+string(pl.R.Rel))
	var t string
	switch string(pl.R.Rel) {
	case "abs":
		t = "/tmp/x"
	case "loop":
		t = "/mnt/loop"
	default:
		return 0, 0
	}
	pl.R.LinkLen = copy(pl.R.Link, t)
	return 0, ErrMoved
}
func (fakeEnv) Proc(op int, pl *Place, a *Args, b []byte) (Place, uintptr, abi.Errno) {
	return Place{}, 0, abi.ENOSYS
}
func (fakeEnv) Disk(op int, pl *Place, a *Args, b []byte) (Place, uintptr, abi.Errno) {
	return Place{}, 0, abi.ENOSYS
}
func (fakeEnv) DiskPoint(pl *Place, b []byte) (Place, bool) { return Place{}, false }
func (fakeEnv) Cross(d int, path []byte, flags int, rest []byte) (int32, int, fs.Errno) {
	return 1, copy(rest, strings.TrimLeft(strings.TrimPrefix(string(path), "/mnt"), "/")), 0
}
func (fakeEnv) ShareDev(m int32) int { return 0 }
func (fakeEnv) Done(pl *Place)       { dones++ }

func itoa(d int) string {
	if d >= 0 && d < 10 {
		return string(rune('0' + d))
	}
	if d == fs.AtCWD {
		return "cwd"
	}
	if d == fs.AtIno(7) {
		return "ino7"
	}
	if d == fs.AtIno(6) {
		return "ino6"
	}
	return "?"
}

// TestWalk: the loop crosses into a mount, climbs out of it by "..",
// follows a link out of it through the root, stops a link loop at 40
// moves with ELOOP, and drops every place's references.
func TestWalk(t *testing.T) {
	SetParent(1, 7)
	for _, c := range []struct {
		path  string
		want  []string
		err   abi.Errno
		moves int
	}{
		{"/tmp/a", []string{"mem:cwd:/tmp/a"}, 0, 1},
		{"/mnt/a/b", []string{"share:a/b"}, 0, 2},
		{"/mnt", []string{"share:"}, 0, 2},
		{"/mnt/a/../../tmp", []string{"mem:ino7:tmp"}, 0, 3},
		{"/mnt/..", []string{"mem:ino7:."}, 0, 3},
		{"/mnt/abs", []string{"share:abs", "mem:cwd:/tmp/x"}, 0, 3},
		{"/mnt/loop", nil, abi.Errno(unix.ELOOP), 0},
	} {
		visits, dones = nil, 0
		var a Args
		_, err := Walk[fakeEnv](unix.AT_FDCWD, []byte(c.path), OpStat, &a)
		if err != c.err {
			t.Errorf("%s: %v, want %v", c.path, err, c.err)
			continue
		}
		if c.err != 0 {
			if dones < fs.MaxSymlinks {
				t.Errorf("%s: %d places dropped, want all of the loop's", c.path, dones)
			}
			continue
		}
		if strings.Join(visits, ",") != strings.Join(c.want, ",") || dones != c.moves {
			t.Errorf("%s: visited %q, %d places dropped; want %q, %d", c.path, visits, dones, c.want, c.moves)
		}
	}
}

func TestClimb(t *testing.T) {
	for _, c := range []struct {
		path  string
		depth int
		rest  string
		up    bool
	}{
		{"a/b", 0, "", false},
		{"..", 0, "", true},
		{"../x/y", 0, "x/y", true},
		{"a/../../x", 0, "x", true},
		{"a/../x", 0, "", false},
		{"../x", 1, "", false},
		{"../../x", 1, "x", true},
		{"./..//x", 0, "x", true},
		{"..", -1, "", false},
	} {
		rest, up := Climb([]byte(c.path), c.depth)
		if string(rest) != c.rest || up != c.up {
			t.Errorf("Climb(%q, %d) = %q, %v; want %q, %v", c.path, c.depth, rest, up, c.rest, c.up)
		}
	}
}

func TestFollows(t *testing.T) {
	for _, c := range []struct {
		op, flags int
		want      bool
	}{
		{OpOpen, 0, true}, {OpOpen, unix.O_NOFOLLOW, false}, {OpOpen, unix.O_CREAT, true},
		{OpOpen, unix.O_CREAT | unix.O_EXCL, false}, {OpStat, 0, true}, {OpStat, unix.AT_SYMLINK_NOFOLLOW, false},
		{OpStatfs, 0, true}, {OpChdir, 0, true}, {OpMkdir, 0, false}, {OpUnlink, 0, false}, {OpReadlink, 0, false},
	} {
		if got := Follows(c.op, c.flags); got != c.want {
			t.Errorf("Follows(%d, %#x) = %v", c.op, c.flags, got)
		}
	}
}

// rootEnv models a disk as the root (SetRoot): the in-memory /tmp
// (directory 6) and /proc are mounted on the disk's directories of those
// names; the disk's "link" is a link to /tmp/y.
type rootEnv struct{ fakeEnv }

func (rootEnv) Start(dirfd int, path []byte) (Place, abi.Errno) { return Abs(path), 0 }
func (rootEnv) Mem(op int, pl *Place, a *Args) (uintptr, abi.Errno) {
	visits = append(visits, "mem:"+itoa(pl.D)+":"+string(pl.Path))
	if strings.HasPrefix(string(pl.Path), "..") {
		return 0, abi.Errno(fs.ECross) // ".." into the hidden root
	}
	return 0, 0
}
func (rootEnv) Cross(d int, path []byte, flags int, rest []byte) (int32, int, fs.Errno) {
	if !strings.HasPrefix(string(path), "..") {
		return 0, 0, 0
	}
	return fs.MountUp, copy(rest, strings.TrimLeft(strings.TrimPrefix(string(path), ".."), "/")), 0
}
func (rootEnv) Proc(op int, pl *Place, a *Args, b []byte) (Place, uintptr, abi.Errno) {
	visits = append(visits, "proc:"+string(pl.Path))
	if p := string(pl.Path); strings.HasPrefix(p, "..") {
		n := copy(b, strings.TrimLeft(p[2:], "/"))
		return Up(pl.M, b[:n]), 0, ErrMoved
	}
	return Place{}, 0, 0
}
func (rootEnv) Disk(op int, pl *Place, a *Args, b []byte) (Place, uintptr, abi.Errno) {
	visits = append(visits, "disk:"+itoa(int(pl.Ino))+":"+itoa(pl.Depth)+":"+string(pl.Path))
	p := strings.TrimLeft(string(pl.Path), "/")
	for _, m := range []struct {
		name string
		id   int32
	}{{"proc", MountProc}, {"tmp", MountTmp}} {
		if p == m.name || strings.HasPrefix(p, m.name+"/") {
			n := copy(b, p[len(m.name):])
			return Mounted(m.id, b[:n]), 0, ErrMoved
		}
	}
	if p == "link" {
		return Abs(b[:copy(b, "/tmp/y")]), 0, ErrMoved
	}
	return Place{}, 0, 0
}
func (rootEnv) DiskPoint(pl *Place, b []byte) (Place, bool) {
	if p := strings.TrimLeft(string(pl.Path), "/"); strings.HasPrefix(p, "tmp/") {
		return Mounted(MountTmp, pl.Path[len(pl.Path)-len(p)+3:]), true
	}
	return Place{}, false
}

// TestWalkRootDisk: with a disk as the root, absolute paths start on
// it, cross into the mounts on its directories, and come back to it by
// ".." from a mounted root (the in-memory file system's hidden root
// included) and by absolute link targets; Where finds the in-memory
// file system under /tmp.
func TestWalkRootDisk(t *testing.T) {
	SetRoot(MountDisk, 5, 6)
	SetDiskParent(MountProc, DiskRoot, 0)
	defer SetRoot(0, 0, 0)
	for _, c := range []struct {
		path string
		want []string
	}{
		{"/a/b", []string{"disk:2:0:/a/b"}},
		{"/proc/self", []string{"disk:2:0:/proc/self", "proc:self"}},
		{"/proc", []string{"disk:2:0:/proc", "proc:"}},
		{"/tmp/x", []string{"disk:2:0:/tmp/x", "mem:ino6:x"}},
		{"/tmp/../a", []string{"disk:2:0:/tmp/../a", "mem:ino6:../a", "disk:2:0:a"}},
		{"/proc/../a", []string{"disk:2:0:/proc/../a", "proc:../a", "disk:2:0:a"}},
		{"/link", []string{"disk:2:0:/link", "disk:2:0:/tmp/y", "mem:ino6:y"}},
	} {
		visits = nil
		var a Args
		if _, err := Walk[rootEnv](unix.AT_FDCWD, []byte(c.path), OpStat, &a); err != 0 {
			t.Errorf("%s: %v", c.path, err)
		}
		if strings.Join(visits, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: visited %q, want %q", c.path, visits, c.want)
		}
	}
	var bufs [2][fs.PathMax]byte
	pl, err := Where[rootEnv](unix.AT_FDCWD, []byte("/tmp/x"), &bufs)
	if err != 0 || Kind(pl.M) != Mem || pl.D != fs.AtIno(6) || string(pl.Path) != "x" {
		t.Errorf("Where(/tmp/x) = mount %d, dir %d, %q, %v", pl.M, pl.D, pl.Path, err)
	}
	pl, err = Where[rootEnv](unix.AT_FDCWD, []byte("/a/b"), &bufs)
	if err != 0 || pl.M != MountDisk || string(pl.Path) != "/a/b" {
		t.Errorf("Where(/a/b) = mount %d, %q, %v", pl.M, pl.Path, err)
	}
}
